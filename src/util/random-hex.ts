import { randomUUID } from 'node:crypto';

/** `digits` (at most 32) random hex digits for an id: a UUID's, without its dashes (sliced out: no regex per id). */
export function randomHex(digits: number): string {
  const u = randomUUID();
  return (u.slice(0, 8) + u.slice(9, 13) + u.slice(14, 18) + u.slice(19, 23) + u.slice(24)).slice(0, digits);
}

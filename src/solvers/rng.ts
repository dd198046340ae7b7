// The generator for a solver run (solvers.md §1): the same inputs give the same stream on every node.
import { canonicalJson } from '../kernel/canonical.js';
import { Xoshiro128, stateFromText } from '../numerics/prng.js';

export type { Xoshiro128 } from '../numerics/prng.js';

/**
 * Seeded from the decimal string of `inputs.seed` when it is an integer, otherwise from the RFC 8785 JSON of the
 * resolved inputs.
 */
export function rngForInputs(inputs: Record<string, unknown>): Xoshiro128 {
  const seed = inputs.seed;
  const text = typeof seed === 'number' && Number.isInteger(seed) ? String(seed) : canonicalJson(inputs);
  return new Xoshiro128(stateFromText(text));
}

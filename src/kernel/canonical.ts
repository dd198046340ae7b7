// RFC 8785 (JSON Canonicalization Scheme) through the `canonicalize` package, plus the digests built on it.
import { createHash } from 'node:crypto';
import canonicalizeImpl from 'canonicalize';

const canonicalizeFn = canonicalizeImpl as unknown as (value: unknown) => string | undefined;

/** RFC 8785 canonical JSON text of a JSON value. Throws on values JSON cannot carry (undefined at top, NaN). */
export function canonicalJson(value: unknown): string {
  const text = canonicalizeFn(value);
  if (text === undefined) throw new TypeError('value has no canonical JSON form');
  return text;
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** SHA-256 (hex) of the canonical JSON of a value. */
export function canonicalDigest(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

// SHA-256 of a text's UTF-8 or of bytes, as hex: the digests the kernel and the ledgers take (canonical.ts's
// canonicalDigest, chain rows, envelope hashes, key digests).
import crypto, { createHash } from 'node:crypto';

/** One-shot crypto.hash (Node ≥ 20.12): no Hash object per digest. */
const oneShot = (crypto as unknown as { hash?: (algorithm: string, data: string | Uint8Array, encoding: 'hex') => string }).hash;

export function sha256Hex(data: string | Uint8Array): string {
  if (oneShot !== undefined) return oneShot('sha256', data, 'hex');
  return createHash('sha256').update(data).digest('hex');
}

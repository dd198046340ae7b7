// ECVRF-EDWARDS25519-SHA512-TAI (RFC 9381, suite 0x03) over the node's own Ed25519 key: a verifiable random function.
// For one key and one input there is exactly one output (beta) any proof can show, so a node cannot try outputs the
// way it can try bodies or Ed25519 nonces (an Ed25519 signature is deterministic only by the signer's choice: any
// nonce verifies). A challenge's committee is ranked by the draw event's VRF output over its tick (challenge-wire.ts).
// The key is the node key (RFC 9381 §5.5: the secret scalar and public key as RFC 8032 derives them); the proof's
// nonce is SHA-512(the key's prefix | a 32-byte point encoding), an input no Ed25519 signature of this node hashes,
// since every text it signs is longer than 32 bytes. Pure: no clock, no randomness.
import { createHash } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519';

const Point = ed25519.Point;
type Point = InstanceType<typeof Point>;
const L = ed25519.Point.CURVE().n;
const SUITE = 0x03;
/** A proof as hex: Gamma (32 bytes), c (16), s (32). */
export const VRF_PROOF_PATTERN = /^[0-9a-f]{160}$/;

function sha512(...parts: Uint8Array[]): Buffer {
  const h = createHash('sha512');
  for (const p of parts) h.update(p);
  return h.digest();
}

function leInt(bytes: Uint8Array): bigint {
  let n = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) n = (n << 8n) | BigInt(bytes[i]!);
  return n;
}

function leBytes(n: bigint, length: number): Uint8Array {
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) {
    out[i] = Number(n & 0xffn);
    n >>= 8n;
  }
  return out;
}

/** RFC 8032 §5.1.3 decoding, strict (y < p; x = 0 with the sign bit set fails); null when the bytes are no point. */
function pointOf(bytes: Uint8Array): Point | null {
  try {
    return Point.fromBytes(bytes, false);
  } catch {
    return null;
  }
}

/** RFC 9381 §5.4.1.1, try-and-increment: the first counter whose hash is a point, times the cofactor. */
function encodeToCurve(salt: Uint8Array, alpha: Uint8Array): Point {
  for (let ctr = 0; ctr < 256; ctr++) {
    const hash = sha512(Uint8Array.of(SUITE, 0x01), salt, alpha, Uint8Array.of(ctr, 0x00));
    const p = pointOf(hash.subarray(0, 32));
    if (p) return p.clearCofactor();
  }
  // Each try succeeds with probability about 1/2: 256 failures do not happen.
  throw new Error('ECVRF encode_to_curve found no point');
}

/** RFC 9381 §5.4.3: c, the first 16 bytes of SHA-512 over the five points, little-endian. */
function challenge(points: Point[]): bigint {
  const hash = sha512(Uint8Array.of(SUITE, 0x02), ...points.map((p) => p.toBytes()), Uint8Array.of(0x00));
  return leInt(hash.subarray(0, 16));
}

/** beta (64 bytes, hex) of a proof's Gamma: RFC 9381 §5.2. */
function betaOf(gamma: Point): string {
  return sha512(Uint8Array.of(SUITE, 0x03), gamma.clearCofactor().toBytes(), Uint8Array.of(0x00)).toString('hex');
}

/** A prover for one Ed25519 seed (32 bytes): its public key and proofs over inputs. */
export interface VrfProver {
  publicKey: Uint8Array;
  /** pi (80 bytes, hex) and beta (64 bytes, hex) for `alpha`. */
  prove(alpha: Uint8Array): { proof: string; output: string };
}

export function vrfProver(seed: Uint8Array): VrfProver {
  if (seed.length !== 32) throw new Error('an Ed25519 seed is 32 bytes');
  const hashed = sha512(seed);
  const head = Uint8Array.from(hashed.subarray(0, 32));
  head[0]! &= 248;
  head[31]! &= 127;
  head[31]! |= 64;
  const x = leInt(head) % L;
  const prefix = hashed.subarray(32, 64);
  const Y = Point.BASE.multiply(x);
  const publicKey = Y.toBytes();
  return {
    publicKey,
    prove(alpha) {
      const H = encodeToCurve(publicKey, alpha);
      const gamma = H.multiply(x);
      const k = leInt(sha512(prefix, H.toBytes())) % L;
      const c = challenge([Y, H, gamma, Point.BASE.multiply(k), H.multiply(k)]);
      const s = (k + c * x) % L;
      const pi = Buffer.concat([gamma.toBytes(), leBytes(c, 16), leBytes(s, 32)]);
      return { proof: pi.toString('hex'), output: betaOf(gamma) };
    },
  };
}

/**
 * RFC 9381 §5.3 with the key validated (§5.4.5: a small-order key would let one proof serve any input): beta, hex, of
 * a valid proof of `alpha` under the Ed25519 public key; null for anything else.
 */
export function vrfVerify(publicKey: Uint8Array, alpha: Uint8Array, proofHex: string): string | null {
  if (!VRF_PROOF_PATTERN.test(proofHex)) return null;
  const Y = pointOf(publicKey);
  if (!Y || Y.isSmallOrder()) return null;
  const pi = Buffer.from(proofHex, 'hex');
  const gamma = pointOf(pi.subarray(0, 32));
  if (!gamma) return null;
  const c = leInt(pi.subarray(32, 48));
  const s = leInt(pi.subarray(48, 80));
  if (s >= L) return null;
  const H = encodeToCurve(publicKey, alpha);
  // U = s·B − c·Y, V = s·H − c·Gamma (s or c may be 0: the unchecked multiplication takes it).
  const U = Point.BASE.multiplyUnsafe(s).subtract(Y.multiplyUnsafe(c));
  const V = H.multiplyUnsafe(s).subtract(gamma.multiplyUnsafe(c));
  if (challenge([Y, H, gamma, U, V]) !== c) return null;
  return betaOf(gamma);
}

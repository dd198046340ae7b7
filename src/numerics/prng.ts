// The house generator of solvers.md §1: xoshiro128** seeded from SHA-256 of a text. solvers/rng.ts seeds it
// from a run's inputs (it needs the kernel's canonical JSON, and numerics/ imports nothing from the kernel).
import { createHash } from 'node:crypto';

const TWO_POW_53 = 9007199254740992;

export class Xoshiro128 {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  constructor(state: readonly [number, number, number, number]) {
    let [a, b, c, d] = state.map((w) => w | 0) as [number, number, number, number];
    if ((a | b | c | d) === 0) [a, b, c, d] = [1, 0, 0, 0];
    this.s0 = a;
    this.s1 = b;
    this.s2 = c;
    this.s3 = d;
  }

  /** Next 32-bit output (unsigned). State words are kept as signed int32 (`| 0`): V8 keeps them as small ints. */
  nextU32(): number {
    const s0 = this.s0;
    const s1 = this.s1;
    const r = Math.imul(s1, 5);
    const result = Math.imul((r << 7) | (r >>> 25), 9);
    const t = s1 << 9;
    let s2 = this.s2 ^ s0;
    const s3 = this.s3 ^ s1;
    this.s1 = s1 ^ s2;
    this.s0 = s0 ^ s3;
    s2 ^= t;
    this.s2 = s2;
    this.s3 = (s3 << 11) | (s3 >>> 21);
    return result >>> 0;
  }

  /** Uniform in [0, 1) with 53 random bits, from two draws. */
  uniform(): number {
    const a = this.nextU32();
    const b = this.nextU32();
    return ((a >>> 5) * 67108864 + (b >>> 6)) / TWO_POW_53;
  }

  /** Uniform in [lo, hi). */
  range(lo: number, hi: number): number {
    return lo + (hi - lo) * this.uniform();
  }

  /** Integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.uniform() * n);
  }

  /** Standard normal by Box–Muller, one normal per two uniforms (the sine is discarded). */
  gaussian(): number {
    const u1 = this.uniform();
    const u2 = this.uniform();
    return Math.sqrt(-2 * Math.log(1 - u1)) * Math.cos(2 * Math.PI * u2);
  }
}

/** State words: the first 16 bytes (big-endian) of SHA-256 of the given text. */
export function stateFromText(text: string): [number, number, number, number] {
  const digest = createHash('sha256').update(text).digest();
  return [digest.readUInt32BE(0), digest.readUInt32BE(4), digest.readUInt32BE(8), digest.readUInt32BE(12)];
}

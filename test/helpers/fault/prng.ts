// A seeded pseudo-random generator for the fault harness (test code): the same seed draws the same operations and the
// same faults. mulberry32: 32 bits of state, full period, enough for choosing among a few options.

export interface Prng {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [0, n). */
  int(n: number): number;
  /** An integer in [lo, hi]. */
  between(lo: number, hi: number): number;
  pick<T>(items: readonly T[]): T;
}

export function prng(seed: number): Prng {
  let s = seed >>> 0;
  const next = (): number => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  const int = (n: number): number => Math.floor(next() * n);
  return { next, int, between: (lo, hi) => lo + int(hi - lo + 1), pick: (items) => items[int(items.length)]! };
}

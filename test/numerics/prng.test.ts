// The house generator against the xoshiro128** reference outputs and an independent unsigned implementation.
import { describe, expect, it } from 'vitest';
import { Xoshiro128, stateFromText } from '../../src/numerics/prng.js';
import { rngForInputs } from '../../src/solvers/rng.js';
import { createHash } from 'node:crypto';

function reference(state: number[]): () => number {
  let [a, b, c, d] = state.map((x) => x >>> 0) as [number, number, number, number];
  const rotl = (x: number, k: number) => ((x << k) | (x >>> (32 - k))) >>> 0;
  return () => {
    const r = Math.imul(rotl(Math.imul(b, 5) >>> 0, 7), 9) >>> 0;
    const t = (b << 9) >>> 0;
    c = (c ^ a) >>> 0;
    d = (d ^ b) >>> 0;
    b = (b ^ c) >>> 0;
    a = (a ^ d) >>> 0;
    c = (c ^ t) >>> 0;
    d = rotl(d, 11);
    return r;
  };
}

describe('xoshiro128**', () => {
  it('gives the reference outputs for state [1, 2, 3, 4]', () => {
    const g = new Xoshiro128([1, 2, 3, 4]);
    expect([g.nextU32(), g.nextU32(), g.nextU32()]).toEqual([11520, 0, 5927040]);
  });

  it('matches an unsigned-arithmetic implementation for 100 000 outputs from a hashed state', () => {
    const state = stateFromText('any text');
    const g = new Xoshiro128(state);
    const f = reference(state);
    for (let i = 0; i < 100_000; i++) expect(g.nextU32()).toBe(f());
  });

  it('seeds from the first 16 bytes of SHA-256, big-endian; an explicit integer seed uses its decimal string', () => {
    const d = createHash('sha256').update('42').digest();
    expect(stateFromText('42')).toEqual([d.readUInt32BE(0), d.readUInt32BE(4), d.readUInt32BE(8), d.readUInt32BE(12)]);
    const a = rngForInputs({ seed: 42, other: 1 });
    const b = new Xoshiro128(stateFromText('42'));
    expect(a.uniform()).toBe(b.uniform());
  });

  it('an all-zero state is replaced by [1, 0, 0, 0]', () => {
    const z = new Xoshiro128([0, 0, 0, 0]);
    const f = reference([1, 0, 0, 0]);
    expect(z.nextU32()).toBe(f());
  });

  it('uniform() uses 53 bits from two draws and has mean 1/2, variance 1/12; gaussian() mean 0, variance 1', () => {
    const g = new Xoshiro128([9, 8, 7, 6]);
    const f = reference([9, 8, 7, 6]);
    const a = f();
    const b = f();
    expect(g.uniform()).toBe(((a >>> 5) * 67108864 + (b >>> 6)) / 2 ** 53);
    let s = 0;
    let s2 = 0;
    const n = 200_000;
    for (let i = 0; i < n; i++) {
      const u = g.uniform();
      s += u;
      s2 += u * u;
    }
    expect(s / n).toBeCloseTo(0.5, 2);
    expect(s2 / n - (s / n) ** 2).toBeCloseTo(1 / 12, 3);
    let m = 0;
    let v = 0;
    for (let i = 0; i < n; i++) {
      const x = g.gaussian();
      m += x;
      v += x * x;
    }
    expect(m / n).toBeCloseTo(0, 1);
    expect(v / n).toBeCloseTo(1, 1);
  });
});

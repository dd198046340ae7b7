import { describe, expect, it } from 'vitest';
import { gramPoint, hardyZEulerMaclaurin, hardyZRiemannSiegel, zeta } from '../../src/solvers/zeta.js';
import { expectGateRefusesPerturbed, inputErrorOnResolve } from '../helpers/solver.js';

const run = (raw: unknown) => zeta.run(zeta.resolve(raw));

const expectInputError = inputErrorOnResolve(zeta);

// Published zeros (Odlyzko's tables; Lehmer's close pair 6709/6710; 126/127 straddle the first bad Gram point).
const PUBLISHED: Record<number, number> = {
  1: 14.134725141734693,
  2: 21.022039638771555,
  10: 49.773832477672302,
  20: 77.144840068874805,
  100: 236.524229665816205,
  126: 279.229250927745189,
  127: 282.465114765230621,
  1000: 1419.422480945995,
  6709: 7005.062866175,
  6710: 7005.100564674,
};

describe('zeta building blocks', () => {
  it('Gram points solve θ(g) = kπ (g_0 = 17.8455995404, g_-1 = 9.6669080561)', () => {
    expect(gramPoint(0)).toBeCloseTo(17.8455995404, 9);
    expect(gramPoint(-1)).toBeCloseTo(9.6669080561, 9);
  });

  it('Euler–Maclaurin and Riemann–Siegel agree on Z(t) away from zeros', () => {
    // Z(0 < t < t_1) < 0; the two formulas agree to the Riemann–Siegel truncation error.
    expect(hardyZEulerMaclaurin(10)).toBeLessThan(0);
    for (const t of [50, 300, 1500, 5000]) {
      expect(Math.abs(hardyZEulerMaclaurin(t) - hardyZRiemannSiegel(t))).toBeLessThan(1e-3);
    }
  });
});

describe('zeta solver', () => {
  it('finds t_1 by default', () => {
    const out = run({});
    expect(out.mode).toBeNull();
    expect(out.unit).toBe('1');
    expect(out.output_class).toBe('spectrum');
    expect(out.rule8_array).toBe('zeros');
    expect(out.rule8).toEqual([out.value]);
    expect(Math.abs(out.value - PUBLISHED[1]!)).toBeLessThan(1e-12);
    expect(out.outputs.gram_block).toEqual([-1, 0]);
    expect(out.check.passed).toBe(true);
    expect(out.check.rel_error).toBeLessThan(1e-3);
  });

  for (const n of [2, 10, 100, 1000]) {
    it(`matches the published t_${n}`, () => {
      const out = run({ n });
      expect(Math.abs(out.value - PUBLISHED[n]!) / PUBLISHED[n]!).toBeLessThan(1e-13);
      expect(out.check.passed).toBe(true);
    });
  }

  it('counts correctly across the first bad Gram point (zeros 126, 127)', () => {
    const out = run({ n: 126, count: 2 });
    const zeros = out.outputs.zeros as number[];
    expect(Math.abs(zeros[0]! - PUBLISHED[126]!)).toBeLessThan(1e-9);
    expect(Math.abs(zeros[1]! - PUBLISHED[127]!)).toBeLessThan(1e-9);
    const [a, b] = out.outputs.gram_block as number[];
    expect(b! - a!).toBeGreaterThan(2); // a bad Gram point widened the block
    expect(out.check.passed).toBe(true);
  });

  it('separates Lehmer’s close pair (zeros 6709, 6710)', () => {
    const out = run({ n: 6709, count: 2 });
    const zeros = out.outputs.zeros as number[];
    expect(Math.abs(zeros[0]! - PUBLISHED[6709]!)).toBeLessThan(1e-8);
    expect(Math.abs(zeros[1]! - PUBLISHED[6710]!)).toBeLessThan(1e-8);
    expect(out.check.passed).toBe(true);
    expect(out.check.parts).toHaveLength(2);
  });

  it('returns count consecutive zeros', () => {
    const out = run({ n: 1, count: 20 });
    const zeros = out.outputs.zeros as number[];
    expect(zeros).toHaveLength(20);
    expect(out.rule8).toHaveLength(20);
    expect(Math.abs(zeros[1]! - PUBLISHED[2]!)).toBeLessThan(1e-12);
    expect(Math.abs(zeros[9]! - PUBLISHED[10]!)).toBeLessThan(1e-11);
    expect(Math.abs(zeros[19]! - PUBLISHED[20]!)).toBeLessThan(1e-11);
    for (let i = 1; i < 20; i++) expect(zeros[i]!).toBeGreaterThan(zeros[i - 1]!);
    expect(out.check.parts).toHaveLength(20);
    expect(out.check.passed).toBe(true);
  });

  it('rejects bad inputs with the right field', () => {
    expectInputError({ k: 1 }, 'k');
    expectInputError({ n: '1' }, 'n');
    expectInputError({ n: 0 }, 'n');
    expectInputError({ n: 10_001 }, 'n');
    expectInputError({ n: 1.5 }, 'n');
    expectInputError({ count: 21 }, 'count');
  });

  it('resolves {} to the defaults', () => {
    expect(zeta.resolve({})).toEqual({ n: 1, count: 1 });
  });

  it('is deterministic', () => {
    const a = run({ n: 500, count: 3 });
    const b = run({ n: 500, count: 3 });
    expect(Object.is(a.value, b.value)).toBe(true);
    expect(JSON.stringify(a.outputs)).toBe(JSON.stringify(b.outputs));
  });

  it('a 1 % wrong zero fails the gate', () => {
    expect(expectGateRefusesPerturbed(run({ n: 10, count: 2 }))).toHaveLength(2);
  });
});

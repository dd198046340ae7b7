import { describe, expect, it } from 'vitest';
import { cosSmall, gauge, sinSmall, torusMeanPlaquette } from '../../src/solvers/gauge.js';
import { besselI } from '../../src/numerics/special.js';
import { expectGateRefusesPerturbed, inputErrorOnResolve } from '../helpers/solver.js';

const run = (raw: unknown) => gauge.run(gauge.resolve(raw));

const expectInputError = inputErrorOnResolve(gauge);

describe('besselI', () => {
  it('matches tabulated values (Abramowitz & Stegun table 9.8; mpmath)', () => {
    const cases: [number, number, number][] = [
      [0, 1, 1.2660658777520082],
      [1, 1, 0.5651591039924851],
      [0, 4, 11.30192195213633],
      [1, 4, 9.75946515370445],
      [0, 20, 4.355828255955353e7],
      [1, 20, 4.245497338512777e7],
      [5, 2, 0.009825679323131702],
    ];
    for (const [n, x, ref] of cases) expect(Math.abs(besselI(n, x) - ref) / ref).toBeLessThan(1e-14);
    expect(besselI(-3, 4)).toBe(besselI(3, 4));
    expect(besselI(0, 0)).toBe(1);
    expect(besselI(2, 0)).toBe(0);
  });

  it('satisfies the recurrence I_{n−1} − I_{n+1} = (2n/x) I_n', () => {
    for (const x of [2, 7.5, 20]) {
      for (const n of [1, 5, 20]) {
        const lhs = besselI(n - 1, x) - besselI(n + 1, x);
        expect(Math.abs(lhs - ((2 * n) / x) * besselI(n, x)) / Math.abs(lhs)).toBeLessThan(1e-12);
      }
    }
  });
});

describe('torus reference', () => {
  it('equals (1/V) d ln Z/dβ with Z = Σ_n I_n(β)^V (finite difference, independent path)', () => {
    for (const [beta, L] of [
      [4, 8],
      [20, 8],
      [2, 16],
    ] as const) {
      const V = L * L;
      const lnZ = (b: number) => {
        const logs = Array.from({ length: 81 }, (_, k) => V * Math.log(besselI(k - 40, b)));
        const m = Math.max(...logs);
        return m + Math.log(logs.reduce((s, l) => s + Math.exp(l - m), 0));
      };
      const h = 1e-4;
      const derivative = (lnZ(beta + h) - lnZ(beta - h)) / (2 * h) / V;
      expect(Math.abs(torusMeanPlaquette(beta, L) - derivative)).toBeLessThan(1e-7);
    }
  });

  it('tends to I1/I0 on large lattices and differs by ~4e-4 at β = 20, L = 8', () => {
    expect(Math.abs(torusMeanPlaquette(4, 32) - besselI(1, 4) / besselI(0, 4))).toBeLessThan(1e-10);
    const diff = torusMeanPlaquette(20, 8) - besselI(1, 20) / besselI(0, 20);
    expect(diff).toBeGreaterThan(3e-4);
    expect(diff).toBeLessThan(5e-4);
  });

  it('small-angle cos/sin are accurate to an ulp or two', () => {
    for (let d = -Math.SQRT2; d <= Math.SQRT2; d += 0.001) {
      expect(Math.abs(cosSmall(d) - Math.cos(d))).toBeLessThan(4e-16);
      expect(Math.abs(sinSmall(d) - Math.sin(d))).toBeLessThan(4e-16);
    }
  });
});

describe('gauge solver', () => {
  it('default run: ⟨cos θ_P⟩ at β = 4, L = 32 within the gate of the torus value', () => {
    const out = run({});
    expect(out.mode).toBeNull();
    expect(out.unit).toBe('1');
    expect(out.output_class).toBe('field');
    expect(out.rule8_array).toBe('plaquette');
    const field = out.rule8 as number[][];
    expect(field).toHaveLength(32);
    expect(field[0]).toHaveLength(32);
    for (const row of field) for (const a of row) expect(Math.abs(a)).toBeLessThanOrEqual(Math.PI);
    expect(out.outputs.plaquette).toEqual(field);
    const ref = besselI(1, 4) / besselI(0, 4); // 0.86352261102…
    expect(Math.abs(out.value - ref) / ref).toBeLessThan(1e-3);
    expect(out.check.passed).toBe(true);
    const sweeps = out.outputs.sweeps as number;
    expect(sweeps).toBeGreaterThanOrEqual(1000);
    expect(sweeps % 500).toBe(0);
    expect(out.uncertainty).toBe(out.outputs.std_error);
    expect(out.uncertainty!).toBeLessThanOrEqual(2.5e-4 * out.value);
    expect(out.outputs.acceptance as number).toBeGreaterThan(0.3);
    expect(out.outputs.wilson_action_density).toBeCloseTo(-4 * out.value, 12);
    // The final field is an equilibrium configuration: its mean cosine is near the ensemble value.
    const cosMean = field.flat().reduce((s, a) => s + Math.cos(a), 0) / 1024;
    expect(Math.abs(cosMean - ref)).toBeLessThan(0.02);
  });

  for (const raw of [
    { beta: 20, L: 8 },
    { beta: 8, L: 16 },
    { beta: 12, L: 12, seed: 11 },
  ]) {
    it(`matches the exact torus sum at ${JSON.stringify(raw)}`, () => {
      const out = run(raw);
      const ref = torusMeanPlaquette(raw.beta, raw.L);
      expect(out.check.reference).toBe(ref);
      expect(Math.abs(out.value - ref) / ref).toBeLessThan(1e-3);
      // Statistically consistent: within 4 standard errors.
      expect(Math.abs(out.value - ref)).toBeLessThan(4 * out.uncertainty!);
      expect(out.check.passed).toBe(true);
      expect((out.rule8 as number[][]).length).toBe(raw.L);
    });
  }

  it('stops at max_sweeps when the target is not reached', () => {
    const out = run({ beta: 4, L: 8, max_sweeps: 600, target_rel_error: 1e-5 });
    expect(out.outputs.sweeps).toBe(600);
    expect(Number.isFinite(out.uncertainty!)).toBe(true);
  });

  it('rejects bad inputs with the right field', () => {
    expectInputError({ mass: 1 }, 'mass');
    expectInputError({ beta: 1.5 }, 'beta');
    expectInputError({ beta: 'hot' }, 'beta');
    expectInputError({ L: 33 }, 'L');
    expectInputError({ L: 6 }, 'L');
    expectInputError({ max_sweeps: 400 }, 'max_sweeps');
    expectInputError({ target_rel_error: 1e-2 }, 'target_rel_error');
    expectInputError({ therm_sweeps: 6000 }, 'therm_sweeps');
    expectInputError({ L: 64, max_sweeps: 20_000 }, 'max_sweeps'); // 8.3e7 > 2.1e7 link-sweeps
    expectInputError({ L: 32, therm_sweeps: 5000, max_sweeps: 25_000 }, 'max_sweeps'); // thermalisation counts: 32² × 30 000 > 2.1e7
  });

  it('resolves {} to the defaults', () => {
    expect(gauge.resolve({})).toEqual({ beta: 4, L: 32, therm_sweeps: 200, max_sweeps: 20_000, target_rel_error: 2.5e-4 });
  });

  it('is deterministic, and an explicit seed changes the stream', () => {
    const a = run({ beta: 6, L: 8, max_sweeps: 500 });
    const b = run({ beta: 6, L: 8, max_sweeps: 500 });
    expect(Object.is(a.value, b.value)).toBe(true);
    expect(JSON.stringify(a.outputs)).toBe(JSON.stringify(b.outputs));
    const c = run({ beta: 6, L: 8, max_sweeps: 500, seed: 1 });
    expect(c.value).not.toBe(a.value);
  });

  it('a 1 % wrong plaquette fails the gate', () => {
    expectGateRefusesPerturbed(run({ beta: 20, L: 8 }));
  });
});

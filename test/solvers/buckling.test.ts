import { describe, expect, it } from 'vitest';
import { buckling, exactKL } from '../../src/solvers/buckling.js';
import { expectGateRefusesPerturbed, inputErrorOnResolve } from '../helpers/solver.js';

const EI = 200e9 * 8e-6;
const L = 3;

function runRaw(raw: Record<string, unknown>) {
  const inputs = buckling.resolve(raw);
  return { inputs, out: buckling.run(inputs) };
}
const rel = (a: number, b: number) => Math.abs(a - b) / Math.abs(b);

const expectInputError = inputErrorOnResolve(buckling);

// Published roots of tan x = x (Abramowitz & Stegun table 4.19): 4.4934094579, 7.7252518369, 10.9041216594.
const TAN_ROOTS = [4.493409457909064, 7.725251836937707, 10.904121659428899];

describe('buckling', () => {
  it('defaults: pinned-pinned Euler load π²EI/L²', () => {
    const { inputs, out } = runRaw({});
    expect(inputs).toEqual({ length_m: 3, youngs_modulus_Pa: 200e9, second_moment_m4: 8e-6, area_m2: null, supports: 'pinned-pinned', elements: 20, mode: 1 });
    expect(out.unit).toBe('N');
    expect(out.mode).toBe('pinned-pinned');
    expect(out.output_class).toBe('profile');
    expect(out.rule8_array).toBe('mode_shape');
    expect(rel(out.value, (Math.PI ** 2 * EI) / L ** 2)).toBeLessThan(5e-6);
    expect(out.check.passed).toBe(true);
    const s = out.outputs.mode_shape as { x_m: number[]; w: number[] };
    expect(s.w).toHaveLength(21);
    expect(s.x_m).toHaveLength(21);
    expect(s.w[0]).toBe(0);
    expect(s.w[20]).toBe(0);
    // Half sine: sin(πx/L), peak 1 at mid-span.
    s.x_m.forEach((x, j) => expect(Math.abs(s.w[j]! - Math.sin((Math.PI * x) / L))).toBeLessThan(1e-4));
    expect(out.rule8).toEqual(s.w);
    expect(Math.abs((out.outputs.effective_length_factor as number) - 1)).toBeLessThan(1e-5);
    expect(out.outputs.critical_stress_Pa).toBeNull();
    expect(out.outputs.slenderness).toBeNull();
  });

  it('exact kL against published values', () => {
    expect(exactKL('fixed-pinned', 1)).toBeCloseTo(TAN_ROOTS[0]!, 13);
    expect(exactKL('fixed-pinned', 3)).toBeCloseTo(TAN_ROOTS[2]!, 12);
    expect(exactKL('fixed-fixed', 1)).toBeCloseTo(2 * Math.PI, 14);
    expect(exactKL('fixed-fixed', 2)).toBeCloseTo(2 * TAN_ROOTS[0]!, 12);
    expect(exactKL('fixed-fixed', 3)).toBeCloseTo(4 * Math.PI, 14);
    expect(exactKL('fixed-fixed', 4)).toBeCloseTo(2 * TAN_ROOTS[1]!, 12);
  });

  it('fixed-free: π²EI/(4L²), other length and section', () => {
    const { out } = runRaw({ supports: 'fixed-free', length_m: 1.5, youngs_modulus_Pa: 70e9, second_moment_m4: 2e-7 });
    expect(rel(out.value, (Math.PI ** 2 * 70e9 * 2e-7) / (4 * 1.5 ** 2))).toBeLessThan(1e-6);
    expect(Math.abs((out.outputs.effective_length_factor as number) - 2)).toBeLessThan(1e-6);
    expect(out.check.passed).toBe(true);
  });

  it('fixed-pinned uses the exact K = 0.699155…, not 0.7', () => {
    const { out } = runRaw({ supports: 'fixed-pinned' });
    const exact = (TAN_ROOTS[0]! ** 2 * EI) / L ** 2;
    expect(rel(out.value, exact)).toBeLessThan(1e-5);
    expect(out.check.passed).toBe(true);
    expect(Math.abs((out.outputs.effective_length_factor as number) - Math.PI / TAN_ROOTS[0]!)).toBeLessThan(1e-5);
    // The design value 0.7 would be outside the gate.
    expect(rel((Math.PI / 0.7) ** 2 * (EI / L ** 2), exact)).toBeGreaterThan(1e-3);
  });

  it('fixed-fixed modes 1 and 2; pinned-pinned mode 2 = 4 π²EI/L²', () => {
    const m1 = runRaw({ supports: 'fixed-fixed' }).out;
    expect(rel(m1.value, (4 * Math.PI ** 2 * EI) / L ** 2)).toBeLessThan(5e-5);
    const m2 = runRaw({ supports: 'fixed-fixed', mode: 2, elements: 40 }).out;
    expect(rel(m2.value, ((2 * TAN_ROOTS[0]!) ** 2 * EI) / L ** 2)).toBeLessThan(1e-5);
    expect(m2.check.passed).toBe(true);
    const p2 = runRaw({ mode: 2 }).out;
    expect(rel(p2.value, (4 * Math.PI ** 2 * EI) / L ** 2)).toBeLessThan(5e-5);
    expect(p2.check.passed).toBe(true);
    expect((p2.outputs.buckling_loads_N as number[]).length).toBe(5);
  });

  it('area given: critical stress and slenderness, σ = π²E/λ²', () => {
    const { out } = runRaw({ area_m2: 4e-3 });
    expect(rel(out.outputs.critical_stress_Pa as number, out.value / 4e-3)).toBeLessThan(1e-15);
    const lambda = out.outputs.slenderness as number;
    expect(rel(lambda, L / Math.sqrt(8e-6 / 4e-3))).toBeLessThan(1e-5);
    expect(rel(out.outputs.critical_stress_Pa as number, (Math.PI ** 2 * 200e9) / lambda ** 2)).toBeLessThan(1e-12);
  });

  it('200 elements: bounded profile, converged', () => {
    const { out } = runRaw({ elements: 200, supports: 'fixed-pinned', mode: 5 });
    expect((out.outputs.mode_shape as { w: number[] }).w.length).toBeLessThanOrEqual(512);
    expect(out.check.passed).toBe(true);
    expect(out.check.rel_error).toBeLessThan(1e-6);
  });

  it('rejects bad inputs', () => {
    expectInputError({ load_N: 1 }, 'load_N');
    expectInputError({ length_m: 'long' }, 'length_m');
    expectInputError({ length_m: 0.001 }, 'length_m');
    expectInputError({ second_moment_m4: -1 }, 'second_moment_m4');
    expectInputError({ area_m2: 0 }, 'area_m2');
    expectInputError({ supports: 'free-free' }, 'supports');
    expectInputError({ elements: 1 }, 'elements');
    expectInputError({ elements: 201 }, 'elements');
    expectInputError({ mode: 6 }, 'mode');
    expectInputError({ elements: 2, supports: 'fixed-fixed', mode: 3 }, 'mode');
    expect(buckling.resolve({ area_m2: null }).area_m2).toBeNull();
  });

  it('second_moment_m4 and area_m2 have finite ranges: the corners give the Euler load π²EI/L², outside is a 400', () => {
    // Old code: "> 0" let 1e-300 and 1e300 through and the eigen solve failed (500); area 5e-324 gave σ_cr = ∞.
    for (const I of [1e-24, 1e4]) {
      for (const E of [1e6, 1e12]) {
        for (const Lc of [0.01, 1000]) {
          for (const A of [1e-12, 1e4]) {
            const { out } = runRaw({ second_moment_m4: I, youngs_modulus_Pa: E, length_m: Lc, area_m2: A });
            const euler = (Math.PI ** 2 * E * I) / Lc ** 2;
            expect(rel(out.value, euler)).toBeLessThan(5e-6);
            expect(out.check.passed).toBe(true);
            expect(rel(out.outputs.critical_stress_Pa as number, euler / A)).toBeLessThan(5e-6);
            expect(Number.isFinite(out.outputs.slenderness as number)).toBe(true);
          }
        }
      }
    }
    for (const I of [5e-324, 1e-300, 1e-25, 1.01e4, 1e300, Number.MAX_VALUE]) {
      expectInputError({ second_moment_m4: I }, 'second_moment_m4', {
        status: 400,
        allowed: I < 1 ? { min: 1e-24, inclusive: true } : { max: 1e4, inclusive: true },
      });
    }
    for (const A of [5e-324, 1e-13, 1e5, Number.MAX_VALUE]) expectInputError({ area_m2: A }, 'area_m2', { status: 400 });
  });

  it('deterministic; a 1 % wrong result fails the gate', () => {
    const a = runRaw({ supports: 'fixed-fixed', mode: 3 }).out;
    const b = runRaw({ supports: 'fixed-fixed', mode: 3 }).out;
    expect(Object.is(a.value, b.value)).toBe(true);
    expect(JSON.stringify(a.outputs)).toBe(JSON.stringify(b.outputs));
    expectGateRefusesPerturbed(a);
  });
});

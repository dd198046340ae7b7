import { describe, expect, it } from 'vitest';
import { fea } from '../../src/solvers/fea.js';
import { expectGateRefusesPerturbed, inputErrorOnResolve } from '../helpers/solver.js';

const E = 200e9;
const b = 0.05;
const h = 0.1;
const I = (b * h ** 3) / 12;
const A = b * h;
const EI = E * I;

function runRaw(raw: Record<string, unknown>) {
  const inputs = fea.resolve(raw);
  return { inputs, out: fea.run(inputs) };
}

function rel(a: number, b: number): number {
  return Math.abs(a - b) / Math.abs(b);
}

const expectInputError = inputErrorOnResolve(fea);

describe('fea static', () => {
  it('defaults: tip deflection PL³/3EI = 4e-4 m, exact at the nodes', () => {
    const { inputs, out } = runRaw({});
    expect(inputs).toEqual({
      analysis: 'static',
      length_m: 1,
      youngs_modulus_Pa: 200e9,
      width_m: 0.05,
      height_m: 0.1,
      density_kg_m3: 7850,
      tip_load_N: 1000,
      distributed_load_N_m: 0,
      elements: 20,
      mode_number: 1,
    });
    expect(out.mode).toBe('static');
    expect(out.unit).toBe('m');
    expect(out.output_class).toBe('profile');
    expect(out.rule8_array).toBe('deflection');
    expect(rel(out.value, (1000 * 1) / (3 * EI))).toBeLessThan(1e-9);
    expect(out.check.passed).toBe(true);
    expect(out.check.rel_error).toBeLessThan(1e-9);
    const d = out.outputs.deflection as { x_m: number[]; w_m: number[] };
    expect(d.x_m).toHaveLength(21);
    expect(d.w_m).toHaveLength(21);
    expect(out.rule8).toEqual(d.w_m);
    // Whole deflection line against w(x) = P x²(3L − x)/(6EI).
    d.x_m.forEach((x, j) => expect(Math.abs(d.w_m[j]! - (1000 * x * x * (3 - x)) / (6 * EI))).toBeLessThan(1e-12));
    expect(rel(out.outputs.root_moment_N_m as number, 1000)).toBeLessThan(1e-9);
    expect(rel(out.outputs.max_bending_stress_Pa as number, (1000 * h) / 2 / I)).toBeLessThan(1e-9);
  });

  it('distributed load only: wL⁴/8EI and root moment wL²/2', () => {
    const { out } = runRaw({ tip_load_N: 0, distributed_load_N_m: 2500, length_m: 2.5, elements: 7 });
    expect(rel(out.value, (2500 * 2.5 ** 4) / (8 * EI))).toBeLessThan(1e-9);
    expect(rel(out.outputs.root_moment_N_m as number, (2500 * 2.5 ** 2) / 2)).toBeLessThan(1e-9);
    expect(out.check.passed).toBe(true);
    // Uniform-load deflection line q x²(6L² − 4Lx + x²)/(24EI) at the nodes.
    const d = out.outputs.deflection as { x_m: number[]; w_m: number[] };
    d.x_m.forEach((x, j) => {
      const exact = (2500 * x * x * (6 * 2.5 ** 2 - 4 * 2.5 * x + x * x)) / (24 * EI);
      expect(Math.abs(d.w_m[j]! - exact)).toBeLessThan(1e-12 + 1e-9 * Math.abs(exact));
    });
  });

  it('combined loads, one element, other section and modulus', () => {
    const raw = { tip_load_N: -300, distributed_load_N_m: 800, elements: 1, youngs_modulus_Pa: 70e9, width_m: 0.02, height_m: 0.04, length_m: 0.6 };
    const { out } = runRaw(raw);
    const ei = (70e9 * 0.02 * 0.04 ** 3) / 12;
    expect(rel(out.value, (-300 * 0.6 ** 3) / (3 * ei) + (800 * 0.6 ** 4) / (8 * ei))).toBeLessThan(1e-9);
    expect(rel(out.outputs.root_moment_N_m as number, -300 * 0.6 + (800 * 0.36) / 2)).toBeLessThan(1e-9);
    expect(out.check.passed).toBe(true);
  });

  it('1000 elements: profile bounded to 512 samples, still exact', () => {
    const { out } = runRaw({ elements: 1000 });
    const d = out.outputs.deflection as { x_m: number[]; w_m: number[] };
    expect(d.w_m.length).toBeLessThanOrEqual(512);
    expect(d.x_m.length).toBe(d.w_m.length);
    expect(d.x_m[0]).toBe(0);
    expect(d.x_m[d.x_m.length - 1]).toBe(1);
    expect(out.check.passed).toBe(true);
  });

  it('no load: the check refuses (nothing to compare)', () => {
    const { out } = runRaw({ tip_load_N: 0 });
    expect(out.value).toBe(0);
    expect(out.check.passed).toBe(false);
    expect(out.check.refused).toBeTruthy();
  });
});

describe('fea modal', () => {
  const fExact = (betaL: number, L: number, ei: number, rhoA: number) => ((betaL * betaL) / (2 * Math.PI * L * L)) * Math.sqrt(ei / rhoA);

  it('defaults modal: f1 = (1.8751)²/(2πL²)·√(EI/ρA)', () => {
    const { out } = runRaw({ analysis: 'modal' });
    expect(out.mode).toBe('modal');
    expect(out.unit).toBe('Hz');
    expect(out.rule8_array).toBe('mode_shape');
    // 81.538 Hz for the default steel section.
    expect(rel(out.value, fExact(1.875104068712, 1, EI, 7850 * A))).toBeLessThan(1e-6);
    expect(out.check.passed).toBe(true);
    const s = out.outputs.mode_shape as { x_m: number[]; w: number[] };
    expect(s.w).toHaveLength(21);
    expect(s.w[0]).toBe(0);
    expect(s.w[20]).toBe(1);
    // First mode has no interior node: monotone rising.
    for (let j = 1; j < s.w.length; j++) expect(s.w[j]!).toBeGreaterThan(s.w[j - 1]!);
    expect(out.outputs.root_moment_N_m).toBeNull();
  });

  it('mode 2 and mode 3 at 40 elements, other geometry', () => {
    const L = 2.0;
    const ei = (110e9 * 0.03 * 0.02 ** 3) / 12;
    const rhoA = 8900 * 0.03 * 0.02;
    const base = { analysis: 'modal', elements: 40, length_m: L, youngs_modulus_Pa: 110e9, width_m: 0.03, height_m: 0.02, density_kg_m3: 8900 };
    const m2 = runRaw({ ...base, mode_number: 2 }).out;
    expect(rel(m2.value, fExact(4.694091132974, L, ei, rhoA))).toBeLessThan(1e-6);
    expect(m2.check.passed).toBe(true);
    const m3 = runRaw({ ...base, mode_number: 3 }).out;
    expect(rel(m3.value, fExact(7.854757438238, L, ei, rhoA))).toBeLessThan(1e-5);
    expect(m3.check.passed).toBe(true);
    // Mode n has n − 1 interior nodes: count sign changes of the shape.
    const w = (m3.outputs.mode_shape as { w: number[] }).w;
    let changes = 0;
    for (let j = 2; j < w.length; j++) if (w[j]! * w[j - 1]! < 0) changes++;
    expect(changes).toBe(2);
  });

  it('mode 5 at 200 elements (subspace iteration on 400 DOF)', () => {
    const { out } = runRaw({ analysis: 'modal', elements: 200, mode_number: 5 });
    expect(rel(out.value, fExact(14.137168391046, 1, EI, 7850 * A))).toBeLessThan(1e-7);
    expect(out.check.passed).toBe(true);
  });

  it('one element: the discretisation error (0.48 %) is above the gate', () => {
    const { out } = runRaw({ analysis: 'modal', elements: 1 });
    expect(out.check.passed).toBe(false);
  });
});

describe('fea inputs', () => {
  it('rejects unknown keys, wrong types, out-of-range values', () => {
    expectInputError({ span_m: 1 }, 'span_m');
    expectInputError({ length_m: '1' }, 'length_m');
    expectInputError({ length_m: 2000 }, 'length_m');
    expectInputError({ youngs_modulus_Pa: 1e5 }, 'youngs_modulus_Pa');
    expectInputError({ width_m: 0 }, 'width_m');
    expectInputError({ elements: 0 }, 'elements');
    expectInputError({ elements: 1001 }, 'elements');
    expectInputError({ elements: 2.5 }, 'elements');
    expectInputError({ mode_number: 6 }, 'mode_number');
    expectInputError({ analysis: 'dynamic' }, 'analysis');
    expectInputError({ analysis: 'modal', elements: 2, mode_number: 5 }, 'mode_number');
    // Keys the other analysis reads: refused by name, not ignored (a modal run with a tip load is not what was asked).
    expectInputError({ analysis: 'static', mode_number: 2 }, 'mode_number');
    expectInputError({ density_kg_m3: 2700 }, 'density_kg_m3');
    expectInputError({ analysis: 'modal', tip_load_N: 5 }, 'tip_load_N');
    expectInputError({ analysis: 'modal', distributed_load_N_m: 5 }, 'distributed_load_N_m');
    expect(fea.resolve({ analysis: 'modal', mode_number: 2, density_kg_m3: 2700 }).mode_number).toBe(2);
  });
});

describe('fea input ranges', () => {
  // Old code: width/height/density "> 0" and loads "any" — a subnormal or huge section made the stiffness matrix
  // lose positive definiteness (500) and a ±MAX_VALUE load gave an ∞/NaN root moment.
  const corners = (lo: number, hi: number) => [lo, hi];

  it('static corners: tip deflection PL³/3EI + wL⁴/8EI, root moment PL + wL²/2, all finite', () => {
    for (const bw of corners(1e-6, 100))
      for (const hh of corners(1e-6, 100))
        for (const Ec of corners(1e6, 1e12))
          for (const Lc of corners(1e-3, 1e3))
            for (const [P, q] of [
              [1e-9, 0],
              [-1e12, 1e12],
              [0, -1e-9],
            ] as const) {
              const { out } = runRaw({ width_m: bw, height_m: hh, youngs_modulus_Pa: Ec, length_m: Lc, tip_load_N: P, distributed_load_N_m: q, elements: 20 });
              const EIc = (Ec * bw * hh ** 3) / 12;
              const tip = (P * Lc ** 3) / (3 * EIc) + (q * Lc ** 4) / (8 * EIc);
              expect(rel(out.value, tip)).toBeLessThan(1e-9);
              expect(out.check.passed).toBe(true);
              const M = out.outputs.root_moment_N_m as number;
              expect(rel(M, P * Lc + (q * Lc ** 2) / 2)).toBeLessThan(1e-6);
              expect(rel(out.outputs.max_bending_stress_Pa as number, (Math.abs(M) * hh) / 2 / ((bw * hh ** 3) / 12))).toBeLessThan(1e-12);
            }
  });

  it('modal corners: f1 = (β1L)²/(2πL²)·√(EI/ρA)', () => {
    for (const bw of corners(1e-6, 100))
      for (const hh of corners(1e-6, 100))
        for (const rho of corners(1, 1e5))
          for (const Lc of corners(1e-3, 1e3)) {
            const { out } = runRaw({ analysis: 'modal', width_m: bw, height_m: hh, density_kg_m3: rho, length_m: Lc });
            const f1 = (1.875104068712 ** 2 / (2 * Math.PI * Lc ** 2)) * Math.sqrt((E * bw * hh ** 3) / 12 / (rho * bw * hh));
            expect(rel(out.value, f1)).toBeLessThan(1e-6);
            expect(out.check.passed).toBe(true);
          }
  });

  it('outside the ranges: a 400 naming the field', () => {
    for (const field of ['width_m', 'height_m']) {
      expectInputError({ [field]: 5e-324 }, field, { status: 400, allowed: { min: 1e-6, inclusive: true } });
      expectInputError({ [field]: 1e300 }, field, { status: 400, allowed: { max: 100, inclusive: true } });
    }
    expectInputError({ density_kg_m3: 1e-300 }, 'density_kg_m3', { allowed: { min: 1, inclusive: true } });
    expectInputError({ density_kg_m3: 1e6 }, 'density_kg_m3', { allowed: { max: 1e5, inclusive: true } });
    for (const field of ['tip_load_N', 'distributed_load_N_m']) {
      expectInputError({ [field]: Number.MAX_VALUE }, field, { status: 400, allowed: { max: 1e12, inclusive: true } });
      expectInputError({ [field]: -Number.MAX_VALUE }, field, { status: 400, allowed: { min: -1e12, inclusive: true } });
      expectInputError({ [field]: -5e-324 }, field, { status: 400, reason: /must be 0 or have magnitude 1e-9 … 1e12/ });
    }
    expect(fea.resolve({ tip_load_N: 0, distributed_load_N_m: -1e-9 }).distributed_load_N_m).toBe(-1e-9);
  });
});

describe('fea determinism and gate', () => {
  it('same inputs, same bits', () => {
    for (const raw of [{}, { analysis: 'modal', mode_number: 3 }]) {
      const a = runRaw(raw).out;
      const b2 = runRaw(raw).out;
      expect(Object.is(a.value, b2.value)).toBe(true);
      expect(JSON.stringify(a.outputs)).toBe(JSON.stringify(b2.outputs));
    }
  });

  it('a 1 % wrong result fails the gate', () => {
    for (const raw of [{}, { analysis: 'modal' }]) expectGateRefusesPerturbed(runRaw(raw).out);
  });
});

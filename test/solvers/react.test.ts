import { describe, expect, it } from 'vitest';
import { react } from '../../src/solvers/react.js';
import { expectGateRefusesPerturbed, expectInputError } from '../helpers/solver.js';

// Exact Nagumo travelling wave: u = 1/(1 + e^((x − x0 − ct)/w)), w = √(2D/k), c = √(kD/2)(1 − 2a).
const exactSpeed = (D: number, k: number, a: number) => Math.sqrt((k * D) / 2) * (1 - 2 * a);

const cases: Record<string, unknown>[] = [
  {},
  { threshold: 0.4 },
  { threshold: 0, c_max_mol_m3: 5 },
  { diffusivity_m2_s: 1e-5, rate_constant_1_s: 100, threshold: 0.1 },
  { cfl: 0.2, nx: 601 },
];

describe('react', () => {
  for (const raw of cases) {
    it(`front speed matches √(kD/2)(1 − 2a): ${JSON.stringify(raw)}`, () => {
      const inputs = react.resolve(raw);
      const out = react.run(inputs);
      const c = exactSpeed(inputs.diffusivity_m2_s, inputs.rate_constant_1_s, inputs.threshold);
      expect(out.check.passed).toBe(true);
      expect(out.check.reference).toBeCloseTo(c, 15);
      expect(Math.abs(out.value - c) / c).toBeLessThan(3e-4);
      expect(out.check.computed).toBe(out.value);
      expect(out.unit).toBe('m/s');
      expect(out.mode).toBeNull();
      expect(out.output_class).toBe('profile');
      expect(out.rule8_array).toBe('concentration');
      const conc = out.outputs.concentration as number[];
      const rate = out.outputs.reaction_rate as number[];
      const x = out.outputs.x_m as number[];
      expect(out.rule8).toEqual(conc);
      expect(conc.length).toBeLessThanOrEqual(512);
      expect(rate.length).toBe(conc.length);
      expect(x.length).toBe(conc.length);
      expect(x[0]).toBe(0);
      expect(x[x.length - 1]).toBeCloseTo(inputs.length_m, 12);
      // The whole profile follows the exact wave translated by c·t_end.
      const w = Math.sqrt((2 * inputs.diffusivity_m2_s) / inputs.rate_constant_1_s);
      const shift = inputs.length_m / 4 + c * inputs.t_end_s;
      x.forEach((xi, i) => {
        const exact = inputs.c_max_mol_m3 / (1 + Math.exp((xi - shift) / w));
        expect(Math.abs(conc[i]! - exact)).toBeLessThan(2e-3 * inputs.c_max_mol_m3);
      });
      expect(Math.abs((out.outputs.front_position_m as number) - shift) / w).toBeLessThan(0.02);
      // Receipt: the explicit reaction-diffusion set only (velocity comes from the unit rule in the kernel).
      expect(Object.keys(out.receipt_fields!).sort()).toEqual(['concentration_field', 'reaction_rate_field']);
      expect(out.receipt_fields!.concentration_field).toEqual({ value: Math.max(...conc), unit: 'mol/m^3' });
      expect(out.receipt_fields!.reaction_rate_field!.unit).toBe('mol/(m^3*s)');
      expect(out.receipt_fields!.reaction_rate_field!.value).toBeGreaterThanOrEqual(Math.max(...rate.map(Math.abs)));
    });
  }

  it('defaults: w = √(2D/k), L = 40 w, nx = 401, t_end = 10 w/c', () => {
    const i = react.resolve({});
    const w = Math.sqrt(2e-9);
    expect(i).toEqual({
      diffusivity_m2_s: 1e-9,
      rate_constant_1_s: 1,
      threshold: 0.25,
      c_max_mol_m3: 1,
      length_m: 40 * w,
      nx: 401,
      t_end_s: (10 * w) / exactSpeed(1e-9, 1, 0.25),
      cfl: 0.4,
    });
    expect(react.resolve({ length_m: 80 * w }).nx).toBe(801);
  });

  const w = Math.sqrt(2e-9);
  const bad: [Record<string, unknown>, string][] = [
    [{ colour: 1 }, 'colour'],
    [{ diffusivity_m2_s: 'fast' }, 'diffusivity_m2_s'],
    [{ diffusivity_m2_s: 2 }, 'diffusivity_m2_s'],
    [{ rate_constant_1_s: 1e7 }, 'rate_constant_1_s'],
    [{ threshold: 0.5 }, 'threshold'],
    [{ threshold: -0.1 }, 'threshold'],
    [{ c_max_mol_m3: 0 }, 'c_max_mol_m3'],
    [{ length_m: 10 * w }, 'length_m'],
    [{ nx: 100 }, 'nx'], // < 5 per w
    [{ nx: 2000 }, 'nx'], // > 40 per w
    [{ nx: 20.5 }, 'nx'],
    [{ t_end_s: 1e5 }, 't_end_s'], // front would leave the domain
    [{ cfl: 0.7 }, 'cfl'],
    [{ length_m: 2000 * w, nx: 20001, t_end_s: 1e3 }, 'nx'], // work limit nx × steps
    [{ length_m: 500 * w, cfl: 0.05, nx: 4700 }, 'nx'], // 1.66e8 > 1.5e8: the largest allowed run stays under 5 s
  ];
  for (const [raw, field] of bad) {
    it(`rejects ${JSON.stringify(raw)} on ${field}`, () => {
      expectInputError(() => react.resolve(raw), field);
    });
  }

  it('is deterministic', () => {
    const a = react.run(react.resolve({}));
    const b = react.run(react.resolve({}));
    expect(Object.is(a.value, b.value)).toBe(true);
    expect(JSON.stringify(a.outputs)).toBe(JSON.stringify(b.outputs));
  });

  it('a result 1 % off fails the gate', () => {
    expectGateRefusesPerturbed(react.run(react.resolve({})));
  });
});

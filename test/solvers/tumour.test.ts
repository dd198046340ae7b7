import { describe, expect, it } from 'vitest';
import { tumour } from '../../src/solvers/tumour.js';
import { expectGateRefusesPerturbed, expectInputError } from '../helpers/solver.js';

// Ablowitz–Zeppetella (1979): u = K/(1 + e^((x − x0 − ct)/(√6 ℓ)))², c = 5√(Dρ)/√6, ℓ = √(D/ρ).
const azSpeed = (D: number, rho: number) => (5 * Math.sqrt(D * rho)) / Math.sqrt(6);

const cases: Record<string, unknown>[] = [
  {},
  { diffusivity_m2_s: 1e-9, proliferation_rate_1_s: 1e-5, carrying_capacity_cells_m3: 3e12 },
  { nx: 401, cfl: 0.25 },
  { diffusivity_m2_s: 4e-12, proliferation_rate_1_s: 2e-6, t_end_s: 5e6 },
];

describe('tumour', () => {
  for (const raw of cases) {
    it(`front speed matches 5√(Dρ)/√6: ${JSON.stringify(raw)}`, () => {
      const inputs = tumour.resolve(raw);
      const out = tumour.run(inputs);
      const D = inputs.diffusivity_m2_s;
      const rho = inputs.proliferation_rate_1_s;
      const c = azSpeed(D, rho);
      expect(out.check.passed).toBe(true);
      expect(Math.abs(out.check.reference - c) / c).toBeLessThan(1e-14);
      expect(Math.abs(out.value - c) / c).toBeLessThan(2e-4);
      expect(out.check.computed).toBe(out.value);
      expect(out.unit).toBe('m/s');
      expect(out.output_class).toBe('profile');
      expect(out.rule8_array).toBe('density');
      expect(out.receipt_fields).toBeUndefined(); // velocity comes from the unit rule
      const dens = out.outputs.density as number[];
      const x = out.outputs.x_m as number[];
      expect(out.rule8).toEqual(dens);
      expect(dens.length).toBeLessThanOrEqual(512);
      expect(x.length).toBe(dens.length);
      // The profile stays on the exact wave.
      const K = inputs.carrying_capacity_cells_m3;
      const ell = Math.sqrt(D / rho);
      x.forEach((xi, i) => {
        const s = 1 + Math.exp((xi - inputs.length_m / 4 - c * inputs.t_end_s) / (Math.sqrt(6) * ell));
        expect(Math.abs(dens[i]! - K / (s * s))).toBeLessThan(1e-3 * K);
      });
      expect(out.outputs.minimal_speed_m_s).toBeCloseTo(2 * Math.sqrt(D * rho), 20);
      expect((out.outputs.speed_mm_per_year as number) / (out.value * 1e3 * 365.25 * 86400)).toBeCloseTo(1, 12);
    });
  }

  it('defaults: ℓ = √(D/ρ), L = 60 ℓ, nx = 601, t_end = 10 ℓ/c', () => {
    const i = tumour.resolve({});
    const ell = Math.sqrt(1.5e-11 / 1.4e-7);
    expect(i.nx).toBe(601);
    expect(i.length_m).toBeCloseTo(60 * ell, 15);
    expect(i.t_end_s / ((10 * ell) / azSpeed(1.5e-11, 1.4e-7))).toBeCloseTo(1, 14);
    expect(Object.keys(i).sort()).toEqual(['carrying_capacity_cells_m3', 'cfl', 'diffusivity_m2_s', 'length_m', 'nx', 'proliferation_rate_1_s', 't_end_s']);
  });

  const bad: [Record<string, unknown>, string][] = [
    [{ colour: 1 }, 'colour'],
    [{ diffusivity_m2_s: '1e-11' }, 'diffusivity_m2_s'],
    [{ diffusivity_m2_s: 1e-5 }, 'diffusivity_m2_s'],
    [{ proliferation_rate_1_s: 1e-2 }, 'proliferation_rate_1_s'],
    [{ carrying_capacity_cells_m3: -1 }, 'carrying_capacity_cells_m3'],
    [{ length_m: 0.1 }, 'length_m'], // ℓ ≈ 1.04 cm: < 30 ℓ
    [{ nx: 200 }, 'nx'],
    [{ nx: 3000 }, 'nx'],
    [{ t_end_s: 1e9 }, 't_end_s'],
    [{ cfl: 0.01 }, 'cfl'],
    [{ length_m: 100, nx: 300_000 }, 'nx'], // work limit nx × steps
    [{ length_m: 500 * Math.sqrt(1.5e-11 / 1.4e-7), cfl: 0.05, nx: 7000 }, 'nx'], // 1.3e8 > 8e7: the largest allowed run stays under 5 s
  ];
  for (const [raw, field] of bad) {
    it(`rejects ${JSON.stringify(raw)} on ${field}`, () => {
      expectInputError(() => tumour.resolve(raw), field);
    });
  }

  it('is deterministic', () => {
    const a = tumour.run(tumour.resolve({}));
    const b = tumour.run(tumour.resolve({}));
    expect(Object.is(a.value, b.value)).toBe(true);
    expect(JSON.stringify(a.outputs)).toBe(JSON.stringify(b.outputs));
  });

  it('a result 1 % off fails the gate', () => {
    expectGateRefusesPerturbed(tumour.run(tumour.resolve({})));
  });
});

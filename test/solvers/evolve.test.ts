import { describe, expect, it } from 'vitest';
import { evolve, type EvolveState } from '../../src/solvers/evolve.js';
import { expectGateRefusesPerturbed, expectInputError } from '../helpers/solver.js';

const KB = 1.380649e-23;
const U = 1.6605390666e-27;

/**
 * E(0) = U_lattice + 1.5(N − 1) kB T, with U_lattice from the infinite FCC lattice: each atom sees the lattice
 * vectors (a/2)(i, j, k), i + j + k even, inside r_c (valid for r_c ≤ L/2, where the minimum image holds them all).
 */
function expectedInitialEnergy(p: { nCells: number; density: number; T: number; epsK?: number; sigma?: number; cutoff?: number }): number {
  const eps = (p.epsK ?? 119.8) * KB;
  const sigma = p.sigma ?? 3.405e-10;
  const mass = 39.948 * U;
  const atoms = 4 * p.nCells ** 3;
  const box = Math.cbrt((atoms * mass) / p.density);
  const a = box / p.nCells;
  const rc = Math.min((p.cutoff ?? 2.5) * sigma, box / 2);
  const lj = (r: number) => 4 * eps * ((sigma / r) ** 12 - (sigma / r) ** 6);
  let perAtom = 0;
  const m = Math.ceil((2 * rc) / a) + 1;
  for (let i = -m; i <= m; i++)
    for (let j = -m; j <= m; j++)
      for (let k = -m; k <= m; k++) {
        if ((i + j + k) % 2 !== 0 || (i === 0 && j === 0 && k === 0)) continue;
        const r = (a / 2) * Math.hypot(i, j, k);
        if (r < rc) perAtom += lj(r) - lj(rc);
      }
  return (atoms / 2) * perAtom + 1.5 * (atoms - 1) * KB * p.T;
}

describe('evolve', () => {
  it('defaults: 108 argon atoms conserve energy; E(0) equals the FCC lattice energy + 1.5(N−1) kB T', () => {
    const inputs = evolve.resolve({});
    expect(inputs).toEqual({
      n_cells: 3,
      density_kg_m3: 1400,
      temperature_K: 90,
      timestep_s: 4e-15,
      steps: 500,
      epsilon_K: 119.8,
      sigma_m: 3.405e-10,
      atomic_mass_u: 39.948,
      cutoff_sigma: 2.5,
    });
    const out = evolve.run(inputs);
    expect(out.check.passed).toBe(true);
    expect(out.check.rel_error).toBeLessThan(1e-4);
    const e0 = expectedInitialEnergy({ nCells: 3, density: 1400, T: 90 });
    expect(Math.abs((out.outputs.initial_energy_J as number) / e0 - 1)).toBeLessThan(1e-12);
    expect(Math.abs(out.value / e0 - 1)).toBeLessThan(1e-4);
    expect(out.unit).toBe('J');
    expect(out.mode).toBeNull();
    expect(out.output_class).toBe('profile');
    expect(out.rule8_array).toBe('energy_series');
    const series = out.outputs.energy_series as { t_s: number[]; E_J: number[]; T_K: number[] };
    expect(series.t_s.length).toBe(501);
    expect(series.E_J).toEqual(out.rule8);
    expect(series.T_K[0]).toBeCloseTo(90, 10);
    expect(series.t_s[500]).toBeCloseTo(2e-12, 25);
    // The melting FCC lattice converts kinetic into potential energy: T drops to about half.
    const T = out.outputs.temperature_K as number;
    expect(T > 30 && T < 70).toBe(true);
    const p = out.outputs.momentum_kg_m_s as number[];
    expect(Math.hypot(...p)).toBeLessThan(1e-30);
    const rf = out.receipt_fields!;
    expect(Object.keys(rf).sort()).toEqual(['internal_energy', 'momentum_density', 'temperature', 'virial_pressure']);
    expect(rf.temperature).toEqual({ value: T, unit: 'K' });
    expect(rf.internal_energy).toEqual({ value: out.value, unit: 'J' });
    expect(rf.virial_pressure).toEqual({ value: out.outputs.virial_pressure_Pa, unit: 'Pa' });
    const box = out.outputs.box_m as number;
    expect(rf.momentum_density!.value).toBeCloseTo(Math.hypot(...p) / box ** 3, 20);
    expect((out.state as EvolveState).positions_m).toHaveLength(108);
  });

  it('other inputs: 32 atoms (r_c = L/2), a hot dilute gas, a long step', () => {
    const small = evolve.run(evolve.resolve({ n_cells: 2 }));
    expect(small.check.passed).toBe(true);
    expect(small.outputs.n_atoms).toBe(32);
    const box = small.outputs.box_m as number;
    expect(small.outputs.cutoff_m).toBeCloseTo(box / 2, 20);
    const e0small = expectedInitialEnergy({ nCells: 2, density: 1400, T: 90 });
    expect(Math.abs((small.outputs.initial_energy_J as number) / e0small - 1)).toBeLessThan(1e-12);

    const gas = evolve.run(evolve.resolve({ density_kg_m3: 200, temperature_K: 500, steps: 300 }));
    expect(gas.check.passed).toBe(true);
    const e0gas = expectedInitialEnergy({ nCells: 3, density: 200, T: 500 });
    expect(Math.abs((gas.outputs.initial_energy_J as number) / e0gas - 1)).toBeLessThan(1e-12);
    // Nearly ideal: P ≈ ρ kB T/m within the second-virial correction.
    const ideal = (200 / (39.948 * U)) * KB * (gas.outputs.temperature_K as number);
    const ratio = (gas.outputs.virial_pressure_Pa as number) / ideal;
    expect(ratio > 0.9 && ratio < 1.3).toBe(true);

    const coarse = evolve.run(evolve.resolve({ timestep_s: 1e-14, steps: 200 }));
    expect(coarse.check.passed).toBe(true);
  });

  it('rejects bad inputs with the right field', () => {
    expectInputError(() => evolve.resolve({ thermostat: 'nose' }), 'thermostat');
    expectInputError(() => evolve.resolve({ n_cells: 'three' }), 'n_cells');
    expectInputError(() => evolve.resolve({ n_cells: 6 }), 'n_cells');
    expectInputError(() => evolve.resolve({ density_kg_m3: 100 }), 'density_kg_m3');
    expectInputError(() => evolve.resolve({ timestep_s: 1e-13 }), 'timestep_s');
    expectInputError(() => evolve.resolve({ epsilon_K: 0 }), 'epsilon_K');
    expectInputError(() => evolve.resolve({ seed: 1.5 }), 'seed');
    // 500 atoms × 20 000 steps: 124 750 pairs × 2e4 > 2.5e8.
    expectInputError(() => evolve.resolve({ n_cells: 5, steps: 20_000 }), 'steps');
    const inputs = evolve.resolve({});
    expectInputError(() => evolve.resolveState!({ positions_m: [[0, 0, 0]], velocities_m_s: [[0, 0, 0]], box_m: 1e-9 }, inputs), 'initialState');
    // A speed at or above c is outside a massive atom's domain.
    const fast = {
      positions_m: [
        [0, 0, 0],
        [1e-9, 0, 0],
      ],
      velocities_m_s: [
        [0, 0, 0],
        [2.5e8, 2.5e8, 0],
      ],
      box_m: 1e-8,
    };
    expect(expectInputError(() => evolve.resolveState!(fast, inputs), 'initialState').reason).toMatch(/speed \|v\| must be below c/);
    expectInputError(
      () =>
        evolve.resolveState!(
          {
            positions_m: [
              [0, 0, 0],
              [1e-10, 0, 0],
            ],
            velocities_m_s: [[0, 0, 0]],
            box_m: 1e-9,
          },
          inputs,
        ),
      'initialState',
    );
  });

  it('is deterministic; a seed changes the velocities but not E(0)', () => {
    const a = evolve.run(evolve.resolve({ steps: 50 }));
    const b = evolve.run(evolve.resolve({ steps: 50 }));
    expect(Object.is(a.value, b.value)).toBe(true);
    expect(JSON.stringify(a.outputs)).toBe(JSON.stringify(b.outputs));
    const c = evolve.run(evolve.resolve({ steps: 50, seed: 11 }));
    expect(c.value).not.toBe(a.value);
    expect(Math.abs((c.outputs.initial_energy_J as number) / (a.outputs.initial_energy_J as number) - 1)).toBeLessThan(1e-12);
  });

  it('two half runs equal one whole run bit for bit', () => {
    // The velocity seed derives from the inputs, and steps differ: fix it so both start alike.
    const whole = evolve.run(evolve.resolve({ steps: 300, seed: 2026 }));
    const half = evolve.resolve({ steps: 150, seed: 2026 });
    const first = evolve.run(half);
    const state = evolve.resolveState!(JSON.parse(JSON.stringify(first.state)), half);
    const second = evolve.run(half, state);
    expect(second.state).toEqual(whole.state);
    expect(Object.is(second.value, whole.value)).toBe(true);
    expect(second.check.passed).toBe(true);
  });

  it('a 1 % error in the computed quantity fails the gate', () => {
    expectGateRefusesPerturbed(evolve.run(evolve.resolve({})));
  });
});

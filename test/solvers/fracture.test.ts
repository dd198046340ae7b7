import { describe, expect, it } from 'vitest';
import { contactPairs, fracture } from '../../src/solvers/fracture.js';
import { expectGateRefusesPerturbed, inputErrorOnResolve } from '../helpers/solver.js';

function runRaw(raw: Record<string, unknown>) {
  const inputs = fracture.resolve(raw);
  return { inputs, out: fracture.run(inputs) };
}
const rel = (a: number, b: number) => Math.abs(a - b) / Math.abs(b);

const expectInputError = inputErrorOnResolve(fracture);

const E = 72e9;
const RHO = 2440;
const G0 = 8;

// Computed once: the default runs are the most expensive part of this file.
const plateDefault = runRaw({});
const barDefault = runRaw({ mode: 'bar' });

describe('fracture plate', () => {
  it('defaults: energy balance within the gate, dissipated energy > 0, field output', () => {
    const { inputs, out } = plateDefault;
    expect(inputs).toEqual({
      mode: 'plate',
      side_m: 0.05,
      thickness_m: 1e-3,
      youngs_modulus_Pa: 72e9,
      density_kg_m3: 2440,
      fracture_energy_J_m2: 8,
      crack_length_m: 0.01,
      n: 40,
      horizon_factor: 3.015,
      strain_rate_1_s: 50,
      t_end_s: 1e-5,
      cfl: 0.1,
    });
    expect(out.mode).toBe('plate');
    expect(out.unit).toBe('J');
    expect(out.output_class).toBe('field');
    expect(out.rule8_array).toBe('damage');
    expect(out.check.passed).toBe(true);
    expect(out.check.rel_error).toBeLessThan(1e-3);
    expect(out.value).toBeGreaterThan(0);
    expect(out.value).toBe(out.outputs.dissipated_energy_J);
    expect(out.outputs.broken_bonds as number).toBeGreaterThan(0);
    const dmg = out.outputs.damage as { x_m: number[]; y_m: number[]; phi: number[][] };
    expect(dmg.phi).toHaveLength(40);
    for (const row of dmg.phi) expect(row).toHaveLength(40);
    expect(dmg.x_m).toHaveLength(40);
    expect(out.rule8).toEqual(dmg.phi);
    // Final balance KE + SE + D = E0 at t_end, from the reported parts.
    const o = out.outputs as Record<string, number>;
    expect(Math.abs(o.kinetic_energy_J! + o.strain_energy_J! + o.dissipated_energy_J! - o.initial_energy_J!) / o.initial_energy_J!).toBeLessThan(1e-3);
    expect(o.first_failure_time_s!).toBeGreaterThan(0);
    expect(o.first_failure_time_s!).toBeLessThan(1e-5);
    expect(o.crack_length_m!).toBeGreaterThanOrEqual(0.01 - 2 * (0.05 / 40));
  });

  it('defaults: model constants and E0 against closed forms', () => {
    const o = plateDefault.out.outputs as Record<string, number>;
    const dx = 0.05 / 40;
    const delta = 3.015 * dx;
    expect(rel(o.micromodulus!, (9 * E) / (Math.PI * 1e-3 * delta ** 3))).toBeLessThan(1e-14);
    expect(rel(o.critical_stretch!, Math.sqrt((4 * Math.PI * G0) / (9 * E * delta)))).toBeLessThan(1e-14);
    // E0 = ½ ρ h dx² ε̇² · n · Σ_k ((k + ½)dx − a/2)², and Σ_{k=0}^{n−1} (k + ½ − n/2)² = n(n² − 1)/12.
    const n = 40;
    const e0 = 0.5 * RHO * 1e-3 * dx * dx * 50 ** 2 * n * dx * dx * ((n * (n * n - 1)) / 12);
    expect(rel(o.initial_energy_J!, e0)).toBeLessThan(1e-12);
    // dt = t_end / ceil(t_end / (cfl·dt_stable)) ≤ cfl·dt_stable.
    expect(o.dt_s!).toBeLessThanOrEqual(0.1 * o.stable_dt_s! * (1 + 1e-12));
    expect(rel(o.dt_s! * o.time_steps!, 1e-5)).toBeLessThan(1e-12);
  });

  it('pre-crack: bonds cut equal a brute-force count of lattice pairs crossing the segment', () => {
    const n = 40;
    const dx = 0.05 / n;
    const hf2 = 3.015 ** 2;
    let count = 0;
    let family = 0;
    for (let i = 0; i < n * n; i++) {
      for (let j = i + 1; j < n * n; j++) {
        const xi = (i % n) + 0.5;
        const yi = Math.floor(i / n) + 0.5;
        const xj = (j % n) + 0.5;
        const yj = Math.floor(j / n) + 0.5;
        if ((xj - xi) ** 2 + (yj - yi) ** 2 > hf2) continue;
        family++;
        if (yi < n / 2 === yj < n / 2) continue;
        const xc = xi + ((n / 2 - yi) / (yj - yi)) * (xj - xi);
        if (Math.abs(xc * dx - 0.025) <= 0.005 + 1e-15) count++;
      }
    }
    const o = plateDefault.out.outputs as Record<string, number>;
    expect(o.bonds).toBe(family);
    expect(o.precrack_bonds).toBe(count);
  });

  it('receipt fields: exactly the six of §3.7 with their units', () => {
    const r = plateDefault.out.receipt_fields!;
    expect(Object.keys(r).sort()).toEqual(['contact', 'damage', 'elasticity', 'strain', 'stress', 'traction']);
    expect(r.elasticity).toEqual({ value: 72e9, unit: 'Pa' });
    expect(r.stress!.unit).toBe('Pa');
    expect(r.traction!.unit).toBe('Pa');
    expect(r.strain!.unit).toBe('1');
    expect(r.damage!.unit).toBe('1');
    expect(r.contact!.unit).toBe('1');
    expect(r.contact!.value).toBe(plateDefault.out.outputs.contact_pairs);
    expect(r.stress!.value).toBeGreaterThan(0);
    // Intact bonds are at or below their critical stretch after removal.
    expect(r.strain!.value).toBeLessThanOrEqual((plateDefault.out.outputs as Record<string, number>).critical_stretch!);
    const phi = (plateDefault.out.outputs.damage as { phi: number[][] }).phi.flat();
    expect(r.damage!.value).toBe(Math.max(...phi));
  });

  it('no crack, slow loading: nothing breaks, balance still holds', () => {
    const { out } = runRaw({ crack_length_m: 0, strain_rate_1_s: 10, n: 24 });
    expect(out.value).toBe(0);
    expect(out.outputs.broken_bonds).toBe(0);
    expect(out.outputs.first_failure_time_s).toBeNull();
    expect(out.outputs.crack_length_m).toBe(0);
    expect(out.check.passed).toBe(true);
  });

  it('fast loading shatters the plate; energy still balances', () => {
    const { out } = runRaw({ n: 30, strain_rate_1_s: 3000, t_end_s: 2e-5 });
    expect(out.outputs.broken_bonds as number).toBeGreaterThan(1000);
    expect(out.check.passed).toBe(true);
  });

  it('no loading: the check refuses (E0 = 0)', () => {
    const { out } = runRaw({ strain_rate_1_s: 0, n: 20, t_end_s: 1e-6 });
    expect(out.check.passed).toBe(false);
    expect(out.check.refused).toBeTruthy();
  });
});

describe('fracture bar', () => {
  it('defaults: only the m(m+1)/2 notch bonds break, at t_f = notch·s0·L/(2v)', () => {
    const { inputs, out } = barDefault;
    expect(inputs).toEqual({
      mode: 'bar',
      length_m: 1,
      area_m2: 1e-4,
      youngs_modulus_Pa: 72e9,
      density_kg_m3: 2440,
      fracture_energy_J_m2: 8,
      n: 400,
      horizon_cells: 3,
      notch_factor: 0.5,
      end_velocity_m_s: 1,
      t_end_s: 2e-4,
      cfl: 0.2,
    });
    expect(out.output_class).toBe('profile');
    expect(out.check.passed).toBe(true);
    expect(out.outputs.broken_bonds).toBe(6);
    const dx = 1 / 400;
    const delta = 3 * dx;
    const s0 = Math.sqrt((3 * G0) / (E * delta));
    const tf = (0.5 * s0 * 1) / (2 * 1);
    expect(rel(out.outputs.first_failure_time_s as number, tf)).toBeLessThan(1e-6);
    // Each crossing bond of length k·dx (k of them) breaks just past s = notch·s0: D ≈ ½ c (notch s0)² V² dx Σ k².
    const c = (2 * E) / (1e-4 * delta * delta);
    const V = 1e-4 * dx;
    const dEstimate = 0.5 * c * (0.5 * s0) ** 2 * V * V * dx * (1 + 4 + 9);
    expect(out.value).toBeGreaterThanOrEqual(dEstimate);
    expect(rel(out.value, dEstimate)).toBeLessThan(0.01);
    const dmg = out.outputs.damage as { x_m: number[]; phi: number[] };
    expect(dmg.phi).toHaveLength(400);
    expect(dmg.x_m).toHaveLength(400);
    expect(out.rule8).toEqual(dmg.phi);
    // The notch points lose half their family (3 of 6 bonds) at most; far points are intact.
    expect(Math.max(...dmg.phi)).toBe(0.5);
    expect(dmg.phi[0]).toBe(0);
    // Both halves separated: no bond carries force across mid-span.
    expect(out.receipt_fields!.traction!.value).toBe(0);
  });

  it('horizon 2, notch 0.3, n 500: 3 notch bonds, analytic failure time', () => {
    // Failure must come before the unloading wave from the free ends reaches mid-span (discrete modulus 1.5 E for m = 2).
    const { out } = runRaw({ mode: 'bar', horizon_cells: 2, notch_factor: 0.3, n: 500, t_end_s: 1e-4 });
    expect(out.outputs.broken_bonds).toBe(3);
    const delta = 2 * (1 / 500);
    const s0 = Math.sqrt((3 * G0) / (E * delta));
    expect(rel(out.outputs.first_failure_time_s as number, (0.3 * s0 * 1) / 2)).toBeLessThan(1e-6);
    expect(out.check.passed).toBe(true);
  });

  it('end_velocity/c above s0: damage spreads beyond the notch, balance holds', () => {
    const { out } = runRaw({ mode: 'bar', horizon_cells: 4, notch_factor: 0.4, n: 800, length_m: 2, end_velocity_m_s: 2, t_end_s: 1e-4 });
    expect(out.outputs.broken_bonds as number).toBeGreaterThan(10);
    const delta = 4 * (2 / 800);
    const s0 = Math.sqrt((3 * G0) / (E * delta));
    expect(rel(out.outputs.first_failure_time_s as number, (0.4 * s0 * 2) / (2 * 2))).toBeLessThan(1e-6);
    expect(out.check.passed).toBe(true);
  });

  it('before failure: no dissipation, first_failure_time null', () => {
    const { out } = runRaw({ mode: 'bar', t_end_s: 2e-5 });
    expect(out.value).toBe(0);
    expect(out.outputs.first_failure_time_s).toBeNull();
    expect(out.check.passed).toBe(true);
  });

  it('no loading: the check refuses', () => {
    const { out } = runRaw({ mode: 'bar', end_velocity_m_s: 0, t_end_s: 1e-5 });
    expect(out.check.passed).toBe(false);
  });
});

describe('contact search', () => {
  it('cell list finds exactly the brute-force pairs', () => {
    // A jittered lattice (deterministic) with pairs pushed together.
    const N = 300;
    const pos = new Float64Array(2 * N);
    for (let i = 0; i < N; i++) {
      pos[2 * i] = (i % 20) + 0.45 * Math.sin(i * 1.7);
      pos[2 * i + 1] = Math.floor(i / 20) + 0.45 * Math.cos(i * 2.3);
    }
    const dc = 0.9;
    const found = contactPairs(pos, N, dc);
    const brute: string[] = [];
    for (let a = 0; a < N; a++) {
      for (let b = a + 1; b < N; b++) {
        const dx = pos[2 * b]! - pos[2 * a]!;
        const dy = pos[2 * b + 1]! - pos[2 * a + 1]!;
        if (dx * dx + dy * dy < dc * dc) brute.push(`${a},${b}`);
      }
    }
    const got: string[] = [];
    for (let k = 0; k < found.length; k += 2) got.push(`${found[k]},${found[k + 1]}`);
    expect(brute.length).toBeGreaterThan(10);
    expect(got.sort()).toEqual(brute.sort());
  });
});

describe('fracture inputs', () => {
  it('thickness, area and fracture energy have finite ranges: the corners match E0, t_f and the notch energy closed forms', () => {
    // Old code: "> 0" — a MAX_VALUE thickness made E0 ∞, a 1e300 J/m² fracture energy an infinite critical stretch.
    for (const h of [1e-6, 10]) {
      for (const g0 of [1e-3, 1e6]) {
        const { out } = runRaw({ thickness_m: h, fracture_energy_J_m2: g0, n: 20 });
        expect(out.check.passed).toBe(true);
        const o = out.outputs as Record<string, number>;
        const dx = 0.05 / 20;
        const e0 = 0.5 * RHO * h * dx * dx * 50 ** 2 * 20 * dx * dx * ((20 * (20 * 20 - 1)) / 12);
        expect(rel(o.initial_energy_J!, e0)).toBeLessThan(1e-12);
        expect(rel(o.critical_stretch!, Math.sqrt((4 * Math.PI * g0) / (9 * E * 3.015 * dx)))).toBeLessThan(1e-14);
      }
    }
    for (const A of [1e-10, 100]) {
      // The bar's notch: t_f = notch·s0·L/(2v) and D ≈ ½ c (notch s0)² V² dx (1 + 4 + 9), c V² ∝ A.
      const { out } = runRaw({ mode: 'bar', area_m2: A });
      expect(out.check.passed).toBe(true);
      expect(out.outputs.broken_bonds).toBe(6);
      const dx = 1 / 400;
      const delta = 3 * dx;
      const s0 = Math.sqrt((3 * G0) / (E * delta));
      expect(rel(out.outputs.first_failure_time_s as number, (0.5 * s0) / 2)).toBeLessThan(1e-6);
      const dEstimate = 0.5 * ((2 * E) / (A * delta * delta)) * (0.5 * s0) ** 2 * (A * dx) ** 2 * dx * 14;
      expect(rel(out.value, dEstimate)).toBeLessThan(0.01);
      // A fracture energy no loading here can reach: nothing breaks, the balance still holds.
      const tough = runRaw({ mode: 'bar', area_m2: A, fracture_energy_J_m2: 1e6 }).out;
      expect(tough.check.passed).toBe(true);
      expect([tough.value, tough.outputs.first_failure_time_s]).toEqual([0, null]);
    }
    expectInputError({ thickness_m: Number.MAX_VALUE }, 'thickness_m', { status: 400, allowed: { max: 10, inclusive: true } });
    expectInputError({ thickness_m: 5e-324 }, 'thickness_m', { status: 400, allowed: { min: 1e-6, inclusive: true } });
    expectInputError({ mode: 'bar', area_m2: 1e300 }, 'area_m2', { status: 400, allowed: { max: 100, inclusive: true } });
    expectInputError({ fracture_energy_J_m2: 1e300 }, 'fracture_energy_J_m2', { status: 400, allowed: { max: 1e6, inclusive: true } });
    expectInputError({ fracture_energy_J_m2: 1e-300 }, 'fracture_energy_J_m2', { status: 400, allowed: { min: 1e-3, inclusive: true } });
  });

  it('rejects bad inputs with the right field', () => {
    expectInputError({ width_m: 1 }, 'width_m');
    expectInputError({ n: 'forty' }, 'n');
    expectInputError({ n: 101 }, 'n');
    expectInputError({ mode: 'bar', n: 49 }, 'n');
    expectInputError({ mode: 'bar', n: 5001 }, 'n');
    expectInputError({ mode: 'bar', side_m: 0.1 }, 'side_m');
    expectInputError({ length_m: 1 }, 'length_m');
    expectInputError({ crack_length_m: 0.041 }, 'crack_length_m');
    expectInputError({ horizon_factor: 1.5 }, 'horizon_factor');
    expectInputError({ mode: 'bar', horizon_cells: 2.5 }, 'horizon_cells');
    expectInputError({ mode: 'bar', notch_factor: 0 }, 'notch_factor');
    expectInputError({ mode: 'bar', end_velocity_m_s: 2000 }, 'end_velocity_m_s');
    expectInputError({ cfl: 0.6 }, 'cfl');
    expectInputError({ density_kg_m3: 5 }, 'density_kg_m3');
    expectInputError({ mode: 'shell' }, 'mode');
    // Work limit: bonds × steps ≤ 2e8, checked before any work.
    expectInputError({ t_end_s: 1 }, 't_end_s');
    expectInputError({ mode: 'bar', n: 5000, horizon_cells: 6, t_end_s: 1e-2 }, 't_end_s');
  });
});

describe('fracture determinism and gate', () => {
  it('same inputs, same bits', () => {
    const again = runRaw({ mode: 'bar' }).out;
    expect(Object.is(again.value, barDefault.out.value)).toBe(true);
    expect(JSON.stringify(again.outputs)).toBe(JSON.stringify(barDefault.out.outputs));
    expect(JSON.stringify(again.receipt_fields)).toBe(JSON.stringify(barDefault.out.receipt_fields));
  });

  it('a 1 % wrong result fails the gate', () => {
    for (const { out } of [plateDefault, barDefault]) expectGateRefusesPerturbed(out);
  });
});

import { describe, expect, it } from 'vitest';
import { blackhole } from '../../src/solvers/blackhole.js';
import { expectGateRefusesPerturbed, expectInputError } from '../helpers/solver.js';

const G = 6.6743e-11;
const C = 299792458;

/** Proper time of radial free fall from rest at r0 to r (cycloid), in seconds. */
function cycloidTau(massKg: number, r0Rs: number, rEndRs: number): number {
  const rs = (2 * G * massKg) / (C * C);
  const r0 = r0Rs * rs;
  const eta = Math.acos((2 * rEndRs) / r0Rs - 1);
  return Math.sqrt(r0 ** 3 / (8 * G * massKg)) * (eta + Math.sin(eta));
}

describe('blackhole', () => {
  it('defaults: 10 solar masses from 10 r_s to the horizon matches the cycloid', () => {
    const inputs = blackhole.resolve({});
    expect(inputs).toEqual({ mass_kg: 1.98847e31, r0_rs: 10, r_end_rs: 1, steps: 2000 });
    const out = blackhole.run(inputs);
    expect(out.check.passed).toBe(true);
    expect(out.check.rel_error).toBeLessThan(1e-8);
    const tau = cycloidTau(1.98847e31, 10, 1);
    expect(Math.abs(out.value - tau) / tau).toBeLessThan(1e-8);
    expect(out.value).toBeCloseTo(4.8257e-3, 6);
    expect(out.unit).toBe('s');
    expect(out.mode).toBeNull();
    expect(out.output_class).toBe('profile');
    expect(out.rule8_array).toBe('r_of_tau');
    const r = out.rule8 as number[];
    const t = out.outputs.tau_s as number[];
    expect(r.length).toBe(512);
    expect(t.length).toBe(512);
    const rs = out.outputs.schwarzschild_radius_m as number;
    expect(rs).toBeCloseTo((2 * G * 1.98847e31) / (C * C), 6);
    expect(r[0]).toBeCloseTo(10 * rs, 6);
    expect(Math.abs(r[511]! - rs) / rs).toBeLessThan(1e-12);
    expect(t[511]).toBe(out.value);
    for (let i = 1; i < r.length; i++) expect(r[i]! < r[i - 1]!).toBe(true);
    // At (and inside) the horizon the coordinate time diverges: not reported.
    expect(out.outputs.coordinate_time_s).toBeNull();
    expect(out.outputs.speed_at_end_c).toBeNull();
  });

  it('outside the horizon: coordinate time exceeds proper time; static-observer speed closed form', () => {
    const out = blackhole.run(blackhole.resolve({ r_end_rs: 2 }));
    expect(out.check.passed).toBe(true);
    expect(Math.abs(out.value - cycloidTau(1.98847e31, 10, 2)) / out.value).toBeLessThan(1e-8);
    expect(out.outputs.coordinate_time_s as number).toBeGreaterThan(out.value);
    expect(out.outputs.speed_at_end_c).toBeCloseTo(Math.sqrt((0.5 - 0.1) / 0.9), 14);
  });

  it('deep fall from 1e6 r_s to 1e-3 r_s approaches the Newtonian free-fall time', () => {
    const mass = 5e35;
    const out = blackhole.run(blackhole.resolve({ mass_kg: mass, r0_rs: 1e6, r_end_rs: 1e-3 }));
    expect(out.check.passed).toBe(true);
    const rs = (2 * G * mass) / (C * C);
    const r0 = 1e6 * rs;
    const freeFall = (Math.PI / 2) * Math.sqrt(r0 ** 3 / (2 * G * mass));
    expect(Math.abs(out.value - freeFall) / freeFall).toBeLessThan(1e-12);
    expect(Math.abs(out.value - cycloidTau(mass, 1e6, 1e-3)) / out.value).toBeLessThan(1e-10);
  });

  it('coarse and short runs still pass', () => {
    const coarse = blackhole.run(blackhole.resolve({ steps: 100 }));
    expect(coarse.check.passed).toBe(true);
    expect(Math.abs(coarse.value - cycloidTau(1.98847e31, 10, 1)) / coarse.value).toBeLessThan(1e-5);
    const short = blackhole.run(blackhole.resolve({ r0_rs: 3, r_end_rs: 2.9, mass_kg: 1e30 }));
    expect(short.check.passed).toBe(true);
    expect(Math.abs(short.value - cycloidTau(1e30, 3, 2.9)) / short.value).toBeLessThan(1e-4);
  });

  it('rejects bad inputs with the right field', () => {
    expectInputError(() => blackhole.resolve({ spin: 0.5 }), 'spin');
    expectInputError(() => blackhole.resolve({ mass_kg: 'heavy' }), 'mass_kg');
    expectInputError(() => blackhole.resolve({ mass_kg: 1e19 }), 'mass_kg');
    expectInputError(() => blackhole.resolve({ r0_rs: 2e6 }), 'r0_rs');
    expectInputError(() => blackhole.resolve({ r_end_rs: 1e-4 }), 'r_end_rs');
    expectInputError(() => blackhole.resolve({ r0_rs: 3, r_end_rs: 4 }), 'r_end_rs');
    // At rest at r0 means E² = 1 − r_s/r0: no observer is at rest on or inside the horizon.
    for (const r0 of [0.5, 1]) expectInputError(() => blackhole.resolve({ r0_rs: r0, r_end_rs: 0.1 }), 'r0_rs', { status: 400, reason: /outside the horizon/ });
    expectInputError(() => blackhole.resolve({ steps: 99 }), 'steps');
    expectInputError(() => blackhole.resolve({ steps: 1000.5 }), 'steps');
  });

  it('is deterministic', () => {
    const a = blackhole.run(blackhole.resolve({ r_end_rs: 0.5 }));
    const b = blackhole.run(blackhole.resolve({ r_end_rs: 0.5 }));
    expect(Object.is(a.value, b.value)).toBe(true);
    expect(JSON.stringify(a.outputs)).toBe(JSON.stringify(b.outputs));
  });

  it('a 1 % error in the computed quantity fails the gate', () => {
    expectGateRefusesPerturbed(blackhole.run(blackhole.resolve({})));
  });
});

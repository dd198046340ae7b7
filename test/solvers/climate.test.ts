import { describe, expect, it } from 'vitest';
import { climate } from '../../src/solvers/climate.js';
import { expectGateRefusesPerturbed, expectInputError } from '../helpers/solver.js';

// Poincaré (inertia–gravity) wave dispersion ω² = f² + gH|k|², f = 2Ω sin φ: phase speed ω/|k|.
function poincare(raw: Record<string, unknown>): { speed: number; omega: number; f: number } {
  const i = climate.resolve(raw);
  const f = 2 * i.rotation_rad_s * Math.sin((i.latitude_deg * Math.PI) / 180);
  const k = 2 * Math.PI * Math.hypot(i.mode_x / i.length_x_m, i.mode_y / i.length_y_m);
  const omega = Math.sqrt(f * f + i.gravity_m_s2 * i.depth_m * k * k);
  return { speed: omega / k, omega, f };
}

const cases: [Record<string, unknown>, number][] = [
  [{}, 1e-5],
  [{ mode_x: 3, mode_y: 2 }, 5e-4],
  [{ latitude_deg: 0, periods: 2 }, 1e-5],
  [{ latitude_deg: -60, nx: 64, ny: 16, length_x_m: 4e6, mode_x: 5, mode_y: 1, periods: 2, amplitude_m: 1 }, 2e-4],
  [{ mode_x: 0, mode_y: 2, amplitude_m: 40, depth_m: 5000, gravity_m_s2: 3.7, rotation_rad_s: 2e-4 }, 1e-4],
];

describe('climate', () => {
  for (const [raw, tol] of cases) {
    it(`phase speed follows the Poincaré dispersion relation: ${JSON.stringify(raw)}`, () => {
      const inputs = climate.resolve(raw);
      const out = climate.run(inputs);
      const ref = poincare(raw);
      expect(out.check.passed).toBe(true);
      expect(Math.abs(out.check.reference - ref.speed) / ref.speed).toBeLessThan(1e-14);
      expect(Math.abs(out.value - ref.speed) / ref.speed).toBeLessThan(tol);
      expect(Math.abs((out.outputs.omega_rad_s as number) - ref.omega) / ref.omega).toBeLessThan(tol);
      expect(out.outputs.coriolis_1_s).toBeCloseTo(ref.f, 18);
      if (ref.f === 0) expect(out.outputs.rossby_radius_m).toBeNull();
      else expect(out.outputs.rossby_radius_m).toBeCloseTo(Math.sqrt(inputs.gravity_m_s2 * inputs.depth_m) / Math.abs(ref.f), 6);
      expect(Math.abs(out.outputs.mass_drift as number)).toBeLessThan(1e-12);
      expect(out.unit).toBe('m/s');
      expect(out.mode).toBeNull();
      expect(out.output_class).toBe('field');
      expect(out.rule8_array).toBe('height_anomaly');
      const h = out.outputs.height_anomaly as { eta_m: number[][]; x_m: number[]; y_m: number[] };
      expect(h.eta_m.length).toBe(Math.min(inputs.ny, 64));
      expect(h.eta_m[0]!.length).toBe(Math.min(inputs.nx, 64));
      expect(h.x_m.length).toBe(h.eta_m[0]!.length);
      expect(h.y_m.length).toBe(h.eta_m.length);
      expect(out.rule8).toEqual(h.eta_m);
      // After whole periods the wave is back near its start, η ≈ A cos φ: half its crest-to-trough height is ≈ A
      // (the crest/trough asymmetry of the weakly nonlinear wave cancels in the half-range).
      let hi = -Infinity;
      let lo = Infinity;
      for (const row of h.eta_m) for (const x of row) [hi, lo] = [Math.max(hi, x), Math.min(lo, x)];
      expect(Math.abs((hi - lo) / (2 * inputs.amplitude_m) - 1)).toBeLessThan(0.02);
      expect((out.outputs.u as { u_m_s: number[][] }).u_m_s.length).toBe(h.eta_m.length);
      expect((out.outputs.v as { v_m_s: number[][] }).v_m_s.length).toBe(h.eta_m.length);
    });
  }

  it('defaults resolve', () => {
    expect(climate.resolve({})).toEqual({
      latitude_deg: 45,
      depth_m: 4000,
      gravity_m_s2: 9.81,
      length_x_m: 2e6,
      length_y_m: 2e6,
      nx: 32,
      ny: 32,
      mode_x: 1,
      mode_y: 0,
      amplitude_m: 0.1,
      periods: 3,
      cfl: 0.5,
      rotation_rad_s: 7.2921159e-5,
    });
  });

  const bad: [Record<string, unknown>, string][] = [
    [{ beta: 1 }, 'beta'],
    [{ latitude_deg: '45' }, 'latitude_deg'],
    [{ latitude_deg: 91 }, 'latitude_deg'],
    [{ depth_m: 0.5 }, 'depth_m'],
    [{ nx: 48 }, 'nx'],
    [{ ny: 512 }, 'ny'],
    [{ mode_x: 6 }, 'mode_x'],
    [{ mode_y: 6 }, 'mode_y'],
    [{ mode_x: 0, mode_y: 0 }, 'mode_x'],
    [{ amplitude_m: 0 }, 'amplitude_m'],
    [{ amplitude_m: 50 }, 'amplitude_m'],
    [{ periods: 0.5 }, 'periods'],
    [{ cfl: 0 }, 'cfl'],
    [{ rotation_rad_s: 0.01 }, 'rotation_rad_s'],
    [{ nx: 256, ny: 256, periods: 50, cfl: 0.05 }, 'periods'],
    [{ nx: 128, ny: 128, periods: 2 }, 'periods'], // 8.3e6 > 5e6: the largest allowed run stays under 5 s (5e7 allowed 32 s here)
  ];
  for (const [raw, field] of bad) {
    it(`rejects ${JSON.stringify(raw)} on ${field}`, () => {
      expectInputError(() => climate.resolve(raw), field);
    });
  }

  it('is deterministic', () => {
    const a = climate.run(climate.resolve({}));
    const b = climate.run(climate.resolve({}));
    expect(Object.is(a.value, b.value)).toBe(true);
    expect(JSON.stringify(a.outputs)).toBe(JSON.stringify(b.outputs));
  });

  it('a result perturbed by 1 % fails the gate', () => {
    expectGateRefusesPerturbed(climate.run(climate.resolve({})));
  });
});

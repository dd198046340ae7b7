import { describe, expect, it } from 'vitest';
import { action, type ActionState } from '../../src/solvers/action.js';
import { expectGateRefusesPerturbed, expectInputError } from '../helpers/solver.js';

/**
 * W = ∮ p dθ = 4 ∫₀^θa √(2 m² g L³ (cos θ − cos θa)) dθ by composite Simpson after θ = θa sin u (removes the
 * square-root endpoint singularity) — independent of the AGM elliptic integrals the solver's check uses.
 */
function actionByQuadrature(m: number, L: number, g: number, amplitude: number): number {
  const n = 4000;
  const du = Math.PI / 2 / n;
  const f = (u: number) => {
    const th = amplitude * Math.sin(u);
    return Math.sqrt(Math.max(0, 2 * m * m * g * L ** 3 * (Math.cos(th) - Math.cos(amplitude)))) * amplitude * Math.cos(u);
  };
  let sum = f(0) + f(Math.PI / 2);
  for (let i = 1; i < n; i++) sum += (i % 2 ? 4 : 2) * f(i * du);
  return (4 * sum * du) / 3;
}

describe('action', () => {
  it('defaults: W over one period matches the closed form and an independent quadrature', () => {
    const inputs = action.resolve({});
    expect(inputs).toEqual({ mass_kg: 1, length_m: 1, gravity_m_s2: 9.80665, theta0_rad: 1, steps_per_period: 2000 });
    const out = action.run(inputs);
    expect(out.check.passed).toBe(true);
    expect(out.check.rel_error).toBeLessThan(1e-6);
    const w = actionByQuadrature(1, 1, 9.80665, 1);
    expect(Math.abs(out.value - w) / w).toBeLessThan(1e-6);
    expect(out.unit).toBe('J*s');
    expect(out.mode).toBeNull();
    expect(out.output_class).toBe('profile');
    expect(out.rule8_array).toBe('trajectory');
    const traj = out.outputs.trajectory as { t_s: number[]; theta_rad: number[]; p_J_s: number[] };
    expect(traj.t_s.length).toBe(512);
    expect(traj.theta_rad).toEqual(out.rule8);
    expect(traj.p_J_s.length).toBe(512);
    expect(traj.t_s[511]).toBe(out.outputs.period_s);
    const period = out.outputs.period_s as number;
    expect(Math.abs(period / (out.outputs.period_reference_s as number) - 1)).toBeLessThan(1e-5);
    const energy = out.outputs.energy_J as number;
    expect(energy).toBeCloseTo(-9.80665 * Math.cos(1), 12);
    expect(out.outputs.hamilton_action_J_s).toBeCloseTo(out.value - energy * period, 12);
    expect(out.outputs.max_energy_drift as number).toBeLessThan(1e-5);
  });

  it('small amplitude tends to the harmonic W = π m √(g L³) θ0²; large amplitude and other units', () => {
    const small = action.run(action.resolve({ theta0_rad: 1e-3, mass_kg: 3, length_m: 0.5 }));
    expect(small.check.passed).toBe(true);
    const harmonic = Math.PI * 3 * Math.sqrt(9.80665 * 0.125) * 1e-6;
    expect(Math.abs(small.value - harmonic) / harmonic).toBeLessThan(1e-6);

    const big = action.run(action.resolve({ theta0_rad: 3.1 }));
    expect(big.check.passed).toBe(true);
    const wBig = actionByQuadrature(1, 1, 9.80665, 3.1);
    expect(Math.abs(big.value - wBig) / wBig).toBeLessThan(1e-5);

    const moon = action.run(action.resolve({ mass_kg: 2, length_m: 3, gravity_m_s2: 1.62, theta0_rad: 0.3 }));
    expect(moon.check.passed).toBe(true);
    const wMoon = actionByQuadrature(2, 3, 1.62, 0.3);
    expect(Math.abs(moon.value - wMoon) / wMoon).toBeLessThan(1e-6);
  });

  it('continuing from the returned state runs the next period and reproduces the closed form', () => {
    const inputs = action.resolve({});
    const first = action.run(inputs);
    const s1 = first.state as ActionState;
    expect(s1.p_J_s).toBe(0);
    expect(s1.t_s).toBe(first.outputs.period_s);
    const state = action.resolveState!(JSON.parse(JSON.stringify(s1)), inputs) as ActionState;
    const second = action.run(inputs, state);
    expect(second.check.passed).toBe(true);
    const w = actionByQuadrature(1, 1, 9.80665, state.theta_rad);
    expect(Math.abs(second.value - w) / w).toBeLessThan(1e-6);
    expect((second.state as ActionState).t_s).toBeCloseTo(2 * (first.outputs.period_s as number), 5);
  });

  it('a moving start state returns through θ_s with the sign of p_s after one period', () => {
    const inputs = action.resolve({});
    // Bottom of the swing with the energy of a 1-rad release: the same orbit, so the same W.
    const p = Math.sqrt(2 * 1 * 9.80665 * (1 - Math.cos(1)));
    for (const sign of [1, -1]) {
      const state = action.resolveState!({ theta_rad: 0, p_J_s: sign * p, t_s: 5 }, inputs);
      const out = action.run(inputs, state);
      expect(out.check.passed).toBe(true);
      // Started mid-swing the discrete (shadow) energy differs from E by O(h²): agreement to a few 1e-6.
      const w = actionByQuadrature(1, 1, 9.80665, 1);
      expect(Math.abs(out.value - w) / w).toBeLessThan(5e-6);
      const end = out.state as ActionState;
      expect(Math.abs(end.theta_rad)).toBeLessThan(1e-12);
      expect(Math.sign(end.p_J_s)).toBe(sign);
      expect(end.t_s - 5).toBeCloseTo(out.outputs.period_s as number, 12);
    }
  });

  it('rejects bad inputs with the right field', () => {
    expectInputError(() => action.resolve({ damping: 0.1 }), 'damping');
    expectInputError(() => action.resolve({ mass_kg: '1' }), 'mass_kg');
    expectInputError(() => action.resolve({ theta0_rad: 3.2 }), 'theta0_rad');
    expectInputError(() => action.resolve({ theta0_rad: 0 }), 'theta0_rad');
    expectInputError(() => action.resolve({ length_m: 2000 }), 'length_m');
    expectInputError(() => action.resolve({ steps_per_period: 99 }), 'steps_per_period');
    expectInputError(() => action.resolve({ steps_per_period: 2000.5 }), 'steps_per_period');
    const inputs = action.resolve({});
    // Energy above the separatrix: the pendulum rotates, there is no libration period.
    expectInputError(() => action.resolveState!({ theta_rad: 0, p_J_s: 10, t_s: 0 }, inputs), 'initialState');
    expectInputError(() => action.resolveState!({ theta_rad: 0, t_s: 0 }, inputs), 'initialState');
    // At rest at the bottom (or below theta0_rad's 1e-4 rad): no period to find, refused before any run.
    expectInputError(() => action.resolveState!({ theta_rad: 0, p_J_s: 0, t_s: 0 }, inputs), 'initialState', { allowed: { min_amplitude_rad: 1e-4 } });
    expectInputError(() => action.resolveState!({ theta_rad: 5e-5, p_J_s: 0, t_s: 0 }, inputs), 'initialState');
    expect(action.run(inputs, action.resolveState!({ theta_rad: 2e-4, p_J_s: 0, t_s: 0 }, inputs)).check.passed).toBe(true);
    // An angle beyond ±1e6 rad has no phase left in a double (1e300 was a 500): refused; 1e6 is taken modulo 2π.
    expectInputError(() => action.resolveState!({ theta_rad: 1e300, p_J_s: 0, t_s: 0 }, inputs), 'initialState', { status: 400, reason: /theta_rad/ });
    expect(action.run(inputs, action.resolveState!({ theta_rad: 1e6, p_J_s: 0, t_s: 0 }, inputs)).check.passed).toBe(true);
  });

  it('is deterministic', () => {
    const a = action.run(action.resolve({ theta0_rad: 2 }));
    const b = action.run(action.resolve({ theta0_rad: 2 }));
    expect(Object.is(a.value, b.value)).toBe(true);
    expect(JSON.stringify(a.outputs)).toBe(JSON.stringify(b.outputs));
  });

  it('a 1 % error in the computed quantity fails the gate', () => {
    expectGateRefusesPerturbed(action.run(action.resolve({})));
  });
});

import { describe, expect, it } from 'vitest';
import { predatorPrey, type PredatorPreyState } from '../../src/solvers/predator-prey.js';
import { dormandPrince45 } from '../../src/numerics/ode.js';
import { bisect } from '../../src/numerics/roots.js';
import { expectGateRefusesPerturbed, expectInputError } from '../helpers/solver.js';

/**
 * Independent period: start on the orbit's upward crossing of y = α/β (x from the conserved V by bisection),
 * integrate with adaptive Dormand–Prince (rtol 1e-12) and bisect on the return time of y to α/β.
 */
function referencePeriod(a: number, b: number, d: number, g: number, x0: number, y0: number, guess: number): number {
  const V = (x: number, y: number) => d * x - g * Math.log(x) + b * y - a * Math.log(y);
  const v0 = V(x0, y0);
  const level = a / b;
  const xc = bisect((x) => V(x, level) - v0, g / d, 1e6, 1e-14);
  const rhs = (_t: number, s: Float64Array, ds: Float64Array) => {
    ds[0] = a * s[0]! - b * s[0]! * s[1]!;
    ds[1] = d * s[0]! * s[1]! - g * s[1]!;
  };
  const yAt = (t: number) => dormandPrince45(rhs, 0, [xc, level], t, { rtol: 1e-12, atol: 1e-14 }).y[1]! - level;
  return bisect(yAt, 0.95 * guess, 1.05 * guess, 1e-12);
}

describe('predator_prey', () => {
  it('defaults: the period averages match γ/δ and α/β, the period matches an independent integration', () => {
    const inputs = predatorPrey.resolve({});
    expect(inputs).toEqual({
      prey0: 10,
      predator0: 10,
      alpha_per_day: 1.1,
      beta_per_day: 0.4,
      delta_per_day: 0.1,
      gamma_per_day: 0.4,
      dt_days: 0.01,
      max_days: 1000,
    });
    const out = predatorPrey.run(inputs);
    expect(out.check.passed).toBe(true);
    expect(out.check.parts).toHaveLength(2);
    expect(out.check.rel_error).toBeLessThan(2e-5);
    expect(out.unit).toBe('d');
    expect(out.mode).toBeNull();
    expect(out.output_class).toBe('profile');
    expect(out.rule8_array).toBe('prey');
    const prey = out.rule8 as number[];
    expect(prey.length).toBe(512);
    expect((out.outputs.t_days as number[]).length).toBe(512);
    expect((out.outputs.predators as number[]).length).toBe(512);
    expect(out.outputs.invariant_drift as number).toBeLessThan(1e-7);
    const T = referencePeriod(1.1, 0.4, 0.1, 0.4, 10, 10, out.value);
    expect(Math.abs(out.value - T) / T).toBeLessThan(1e-5);
  });

  it('near the equilibrium the period tends to 2π/√(αγ)', () => {
    const out = predatorPrey.run(predatorPrey.resolve({ prey0: 4.01, predator0: 2.75 }));
    expect(out.check.passed).toBe(true);
    const small = (2 * Math.PI) / Math.sqrt(1.1 * 0.4);
    expect(Math.abs(out.value - small) / small).toBeLessThan(1e-5);
  });

  it('other parameters: large orbits and another parameter set', () => {
    const big = predatorPrey.run(predatorPrey.resolve({ prey0: 40, predator0: 1 }));
    expect(big.check.passed).toBe(true);
    const Tbig = referencePeriod(1.1, 0.4, 0.1, 0.4, 40, 1, big.value);
    expect(Math.abs(big.value - Tbig) / Tbig).toBeLessThan(1e-5);

    const p = { alpha_per_day: 0.5, beta_per_day: 0.02, delta_per_day: 0.01, gamma_per_day: 0.8, prey0: 50, predator0: 20 };
    const other = predatorPrey.run(predatorPrey.resolve(p));
    expect(other.check.passed).toBe(true);
    const T = referencePeriod(0.5, 0.02, 0.01, 0.8, 50, 20, other.value);
    expect(Math.abs(other.value - T) / T).toBeLessThan(1e-6);
    expect(Math.abs((other.outputs.mean_prey as number) - 80) / 80).toBeLessThan(1e-5);
  });

  it('rejects bad inputs; too short a run is a 400 on max_days', () => {
    expectInputError(() => predatorPrey.resolve({ wolves: 3 }), 'wolves');
    expectInputError(() => predatorPrey.resolve({ prey0: '10' }), 'prey0');
    expectInputError(() => predatorPrey.resolve({ prey0: 0 }), 'prey0');
    expectInputError(() => predatorPrey.resolve({ gamma_per_day: -1 }), 'gamma_per_day');
    expectInputError(() => predatorPrey.resolve({ dt_days: 2 }), 'dt_days');
    expectInputError(() => predatorPrey.resolve({ max_days: 2e5 }), 'max_days');
    expectInputError(() => predatorPrey.resolve({ max_days: 1e5, dt_days: 1e-4 }), 'max_days');
    expectInputError(() => predatorPrey.resolveState!({ prey: -1, predators: 2, t_days: 0 }, predatorPrey.resolve({})), 'initialState');
    // Shorter than 2π/√(αγ) = 9.47 d: refused before any work. Longer, but shorter than this orbit's cycle: refused by the run.
    expectInputError(() => predatorPrey.resolve({ max_days: 5 }), 'max_days', {
      status: 400,
      allowed: { min: (2 * Math.PI) / Math.sqrt(1.1 * 0.4), max: 1e5 },
    });
    expectInputError(() => predatorPrey.run(predatorPrey.resolve({ max_days: 10 })), 'max_days', { status: 400, reason: /raise max_days/ });
    // At the largest max_days there is nothing to raise: the refusal names the rates instead.
    const slow = { alpha_per_day: 1e-4, beta_per_day: 1e-4, delta_per_day: 1e-4, gamma_per_day: 1e-4, dt_days: 1, max_days: 1e5 };
    expectInputError(() => predatorPrey.run(predatorPrey.resolve(slow)), 'max_days', {
      status: 400,
      reason: /raise alpha_per_day or gamma_per_day/,
      allowed: { max: 1e5 },
    });
  });

  it('rates and populations have finite ranges: at the corners the period tends to 2π/√(αγ) and the averages are γ/δ, α/β', () => {
    // Old code: "> 0" — rates of 1e30 or 1e-300 and populations of 1e30 or 5e-324 were a 500 (no crossing, or the
    // populations left the positive quadrant).
    // Start points (u, v) relative to the equilibrium, small enough that the orbit is nearly elliptic (ΔV ≪ min(α, γ)).
    const corners = [
      { alpha_per_day: 1e-4, gamma_per_day: 1e-4, beta_per_day: 1e-12, delta_per_day: 1e-12, dt_days: 1, max_days: 1e5, u: 1, v: 0.999 },
      { alpha_per_day: 1e3, gamma_per_day: 1e3, beta_per_day: 1e4, delta_per_day: 1e4, dt_days: 1e-5, max_days: 1, u: 1, v: 0.999 },
      { alpha_per_day: 1e3, gamma_per_day: 1e-4, beta_per_day: 1e4, delta_per_day: 1e-12, dt_days: 5e-5, max_days: 100, u: 0.99, v: 1 },
      { alpha_per_day: 1e-4, gamma_per_day: 1e3, beta_per_day: 1e-12, delta_per_day: 1e4, dt_days: 5e-5, max_days: 100, u: 1, v: 0.99 },
    ];
    for (const { u, v, ...c } of corners) {
      const xs = c.gamma_per_day / c.delta_per_day;
      const ys = c.alpha_per_day / c.beta_per_day;
      const out = predatorPrey.run(predatorPrey.resolve({ ...c, prey0: u * xs, predator0: v * ys }));
      expect(out.check.passed).toBe(true);
      const small = (2 * Math.PI) / Math.sqrt(c.alpha_per_day * c.gamma_per_day);
      expect(Math.abs(out.value - small) / small).toBeLessThan(1e-5);
      expect(Math.abs((out.outputs.mean_prey as number) - xs) / xs).toBeLessThan(1e-4);
      expect(Math.abs((out.outputs.mean_predators as number) - ys) / ys).toBeLessThan(1e-4);
    }
    // The deepest orbit allowed (ΔV/min(α,γ) ≈ 190: prey fall to ~e^-190 of γ/δ) still matches the exact averages.
    const deep = predatorPrey.run(predatorPrey.resolve({ prey0: 4 * 196, predator0: 2.75, dt_days: 5e-4, max_days: 2e3 }));
    expect(deep.check.passed).toBe(true);
    expect(Math.abs((deep.outputs.mean_prey as number) - 4) / 4).toBeLessThan(1e-3);
    expect(Math.abs((deep.outputs.mean_predators as number) - 2.75) / 2.75).toBeLessThan(1e-3);

    for (const field of ['prey0', 'predator0']) {
      expectInputError(() => predatorPrey.resolve({ [field]: 5e-324 }), field, { status: 400, allowed: { min: 1e-6, inclusive: true } });
      expectInputError(() => predatorPrey.resolve({ [field]: 1e30 }), field, { status: 400, allowed: { max: 1e12, inclusive: true } });
    }
    for (const field of ['alpha_per_day', 'gamma_per_day']) {
      expectInputError(() => predatorPrey.resolve({ [field]: 1e-300 }), field, { status: 400, allowed: { min: 1e-4, inclusive: true } });
      expectInputError(() => predatorPrey.resolve({ [field]: 1e30 }), field, { status: 400, allowed: { max: 1e3, inclusive: true } });
    }
    for (const field of ['beta_per_day', 'delta_per_day']) {
      expectInputError(() => predatorPrey.resolve({ [field]: 5e-324 }), field, { status: 400, allowed: { min: 1e-12, inclusive: true } });
      expectInputError(() => predatorPrey.resolve({ [field]: Number.MAX_VALUE }), field, { status: 400, allowed: { max: 1e4, inclusive: true } });
    }
  });

  it('combinations the run cannot resolve are a 400 before any work', () => {
    // Exactly at the equilibrium (4, 2.75): no cycle.
    expectInputError(() => predatorPrey.resolve({ prey0: 4, predator0: 2.75 }), 'prey0', { reason: /no cycle to measure/ });
    // Far from it: the prey would fall to ~e^-1000 of γ/δ (the old code: fewer than two crossings, a 500).
    expectInputError(() => predatorPrey.resolve({ prey0: 1e4 }), 'prey0', { reason: /would fall to ~e\^-/ });
    expectInputError(() => predatorPrey.resolve({ predator0: 1e6 }), 'predator0', { reason: /would fall to ~e\^-/ });
    // A step too coarse for the fastest phase (rate 1e3/d with dt 0.01: the old code left the positive quadrant).
    const coarse = expectInputError(() => predatorPrey.resolve({ alpha_per_day: 1e3, prey0: 4, predator0: (1e3 * 0.999) / 0.4 }), 'dt_days');
    expect((coarse.allowed as { max: number }).max).toBeCloseTo(0.1 / (1e3 + 1e3 * (0.999 - 1 - Math.log(0.999))), 12);
    expect(() => predatorPrey.run(predatorPrey.resolve({ alpha_per_day: 1e3, prey0: 4, predator0: (1e3 * 0.999) / 0.4, dt_days: 5e-5 }))).not.toThrow();
    // The same guard holds for a continued run's state.
    const inputs = predatorPrey.resolve({});
    expectInputError(() => predatorPrey.resolveState!({ prey: 1e5, predators: 1, t_days: 0 }, inputs), 'initialState', { reason: /would fall to/ });
    expectInputError(() => predatorPrey.resolveState!({ prey: 1e30, predators: 1, t_days: 0 }, inputs), 'initialState');
  });

  it('is deterministic', () => {
    const a = predatorPrey.run(predatorPrey.resolve({}));
    const b = predatorPrey.run(predatorPrey.resolve({}));
    expect(Object.is(a.value, b.value)).toBe(true);
    expect(JSON.stringify(a.outputs)).toBe(JSON.stringify(b.outputs));
  });

  it('a state replaces the initial conditions bit for bit; continuing measures the same cycle', () => {
    const inputs = predatorPrey.resolve({});
    const fromInputs = predatorPrey.run(inputs);
    const asState = predatorPrey.resolveState!({ prey: 10, predators: 10, t_days: 0 }, inputs);
    const fromState = predatorPrey.run(inputs, asState);
    expect(Object.is(fromState.value, fromInputs.value)).toBe(true);
    expect(fromState.state).toEqual(fromInputs.state);

    const state = predatorPrey.resolveState!(JSON.parse(JSON.stringify(fromInputs.state)), inputs) as PredatorPreyState;
    const next = predatorPrey.run(inputs, state);
    expect(next.check.passed).toBe(true);
    expect(Math.abs(next.value - fromInputs.value) / fromInputs.value).toBeLessThan(1e-4);
    expect((next.outputs.cycle_start_days as number) > state.t_days).toBe(true);
  });

  it('a 1 % error in the computed quantities fails the gate', () => {
    expectGateRefusesPerturbed(predatorPrey.run(predatorPrey.resolve({})));
  });
});

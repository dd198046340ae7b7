import { describe, expect, it } from 'vitest';
import { predatorPrey, type PredatorPreyState } from '../../src/solvers/predator-prey.js';
import { SolverFailure } from '../../src/solvers/errors.js';
import { dormandPrince45 } from '../../src/numerics/ode.js';
import { bisect } from '../../src/numerics/roots.js';
import { expectInputError, perturbedErrors } from '../helpers/solver.js';

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

  it('rejects bad inputs; too short a run is a solver failure', () => {
    expectInputError(() => predatorPrey.resolve({ wolves: 3 }), 'wolves');
    expectInputError(() => predatorPrey.resolve({ prey0: '10' }), 'prey0');
    expectInputError(() => predatorPrey.resolve({ prey0: 0 }), 'prey0');
    expectInputError(() => predatorPrey.resolve({ gamma_per_day: -1 }), 'gamma_per_day');
    expectInputError(() => predatorPrey.resolve({ dt_days: 2 }), 'dt_days');
    expectInputError(() => predatorPrey.resolve({ max_days: 2e5 }), 'max_days');
    expectInputError(() => predatorPrey.resolve({ max_days: 1e5, dt_days: 1e-4 }), 'max_days');
    expectInputError(() => predatorPrey.resolveState!({ prey: -1, predators: 2, t_days: 0 }, predatorPrey.resolve({})), 'initialState');
    expect(() => predatorPrey.run(predatorPrey.resolve({ max_days: 5 }))).toThrow(SolverFailure);
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
    const out = predatorPrey.run(predatorPrey.resolve({}));
    for (const e of perturbedErrors(out.check)) expect(e).toBeGreaterThan(1e-3);
  });
});

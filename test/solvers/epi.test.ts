import { describe, expect, it } from 'vitest';
import { epi, type EpiState } from '../../src/solvers/epi.js';
import { expectGateRefusesPerturbed, expectInputError } from '../helpers/solver.js';

/**
 * Final size z = 1 − s∞ − r0 from ln(s∞/s0) = −R0(1 − s∞ − r0), solved by bisection on s∞ ∈ (0, min(s0, 1/R0))
 * — independent of the Lambert W evaluation the solver's check uses.
 */
function finalSizeByBisection(r0Number: number, s0: number, rec0: number): number {
  const g = (s: number) => Math.log(s / s0) + r0Number * (1 - s - rec0);
  let lo = 1e-300;
  let hi = Math.min(s0, 1 / r0Number);
  for (let k = 0; k < 200; k++) {
    const mid = 0.5 * (lo + hi);
    if (g(mid) > 0) hi = mid;
    else lo = mid;
  }
  return 1 - 0.5 * (lo + hi) - rec0;
}

describe('epi', () => {
  it('defaults (SIR, R0 = 3): final size matches the final-size relation', () => {
    const inputs = epi.resolve({});
    expect(inputs).toEqual({
      model: 'sir',
      population: 1e6,
      beta_per_day: 0.3,
      gamma_per_day: 0.1,
      sigma_per_day: 0.2,
      infected0: 10,
      exposed0: 0,
      recovered0: 0,
      t_end_days: 1000,
      dt_days: 0.05,
    });
    const out = epi.run(inputs);
    expect(out.check.passed).toBe(true);
    expect(out.check.rel_error).toBeLessThan(1e-9);
    const expected = finalSizeByBisection(3, 1 - 1e-5, 0);
    expect(Math.abs(out.value - expected) / expected).toBeLessThan(1e-9);
    expect(out.value).toBeCloseTo(0.9405, 4);
    expect(out.mode).toBe('sir');
    expect(out.unit).toBe('1');
    expect(out.output_class).toBe('profile');
    expect(out.rule8_array).toBe('I');
    const rule8 = out.rule8 as number[];
    expect(rule8.length).toBeLessThanOrEqual(512);
    expect(rule8.length).toBeGreaterThan(100);
    const t = out.outputs.t_days as number[];
    expect(t.length).toBe(rule8.length);
    expect((out.outputs.S as number[]).length).toBe(t.length);
    expect((out.outputs.R as number[]).length).toBe(t.length);
    expect(out.outputs.E).toBeUndefined();
    expect(out.outputs.R0).toBeCloseTo(3, 14);
    // The epidemic stops early once E + I < 1e-12.
    expect(out.outputs.stopped_early).toBe(true);
    // Peak prevalence of SIR: i_max = 1 − (1 + ln R0)/R0 for s0 → 1.
    expect(Math.abs((out.outputs.peak_prevalence as number) - (1 - (1 + Math.log(3)) / 3))).toBeLessThan(1e-4);
  });

  it('SEIR has the same final size as SIR, later peak', () => {
    const sir = epi.run(epi.resolve({}));
    const seir = epi.run(epi.resolve({ model: 'seir' }));
    expect(seir.check.passed).toBe(true);
    expect(seir.mode).toBe('seir');
    expect(Math.abs(seir.value - sir.value)).toBeLessThan(1e-9);
    expect(seir.outputs.peak_day as number).toBeGreaterThan(sir.outputs.peak_day as number);
    expect((seir.outputs.E as number[]).length).toBe((seir.outputs.I as number[]).length);
  });

  it('other inputs: R0 = 4 in a large population, SEIR with immunity, R0 < 1, β = 0', () => {
    const big = epi.run(epi.resolve({ beta_per_day: 2, gamma_per_day: 0.5, population: 1e10, infected0: 1 }));
    expect(big.check.passed).toBe(true);
    expect(Math.abs(big.value - finalSizeByBisection(4, 1 - 1e-10, 0))).toBeLessThan(1e-8);

    const immune = epi.run(epi.resolve({ model: 'seir', exposed0: 100, infected0: 0, recovered0: 3e5, sigma_per_day: 0.5 }));
    expect(immune.check.passed).toBe(true);
    const zImmune = finalSizeByBisection(3, 0.7 - 1e-4, 0.3);
    expect(Math.abs(immune.value - zImmune) / zImmune).toBeLessThan(1e-8);

    const sub = epi.run(epi.resolve({ beta_per_day: 0.05 }));
    expect(sub.check.passed).toBe(true);
    const zSub = finalSizeByBisection(0.5, 1 - 1e-5, 0);
    expect(Math.abs(sub.value - zSub) / zSub).toBeLessThan(1e-6);

    // No transmission: only the initial cases are ever infected.
    const none = epi.run(epi.resolve({ beta_per_day: 0 }));
    expect(none.check.passed).toBe(true);
    expect(Math.abs(none.value - 1e-5)).toBeLessThan(1e-15);
  });

  it('rates and the seed have finite ranges: at the corners the final size matches the final-size relation', () => {
    // Old code: γ 5e-324 made R0 = ∞ and the reference NaN; β 5e-324 underflowed the reference to 0; a seed of 1e-30
    // persons stopped the run at t = 0 while the relation predicted a full epidemic (a check 100 % off).
    const corners: [Record<string, unknown>, number][] = [
      [{ gamma_per_day: 1e-3, beta_per_day: 10, t_end_days: 1e5, dt_days: 0.1 }, 1e4],
      [{ gamma_per_day: 1e-3, beta_per_day: 3e-3, t_end_days: 1e5, dt_days: 1 }, 3],
      [{ gamma_per_day: 10, beta_per_day: 5, dt_days: 0.1 }, 0.5],
      [{ model: 'seir', sigma_per_day: 1e-3, gamma_per_day: 1, beta_per_day: 10, t_end_days: 1e5, dt_days: 0.1 }, 10],
      [{ beta_per_day: 1e-12 }, 1e-11],
    ];
    for (const [raw, r0] of corners) {
      const out = epi.run(epi.resolve(raw));
      expect(out.check.passed, JSON.stringify(raw)).toBe(true);
      const z = finalSizeByBisection(r0, 1 - 1e-5, 0);
      expect(Math.abs(out.value - z) / z).toBeLessThan(1e-6);
    }
    // The smallest seed allowed: one person in 1e10 (1e-10 of the population).
    expectInputError(() => epi.resolve({ population: 1e10, infected0: 0.99 }), 'infected0', { status: 400, allowed: { min: 1, inclusive: true } });
    expectInputError(() => epi.resolve({ infected0: 1e-30 }), 'infected0', { status: 400, allowed: { min: 1e-4, inclusive: true } });
    expectInputError(() => epi.resolve({ beta_per_day: 5e-324 }), 'beta_per_day', { status: 400, reason: 'must be 0 or 1e-12 … 10' });
    expectInputError(() => epi.resolve({ gamma_per_day: 5e-324 }), 'gamma_per_day', { status: 400, allowed: { min: 1e-3, inclusive: true } });
    expectInputError(() => epi.resolve({ model: 'seir', sigma_per_day: 1e-300 }), 'sigma_per_day', { status: 400, allowed: { min: 1e-3, inclusive: true } });
    // RK4 at β·dt = 10 went unstable (a final size of −0.77, a 422); now a 400 on dt_days before any work.
    expectInputError(() => epi.resolve({ beta_per_day: 10, dt_days: 1, t_end_days: 1e5 }), 'dt_days', { status: 400, allowed: { min: 1e-4, max: 0.1 } });
  });

  it('refuses when the epidemic has not finished by t_end', () => {
    const out = epi.run(epi.resolve({ t_end_days: 100 }));
    expect(out.check.passed).toBe(false);
    expect(out.check.refused).toBe('not finished: raise t_end_days');
  });

  it('rejects bad inputs with the right field', () => {
    expectInputError(() => epi.resolve({ delta: 1 }), 'delta');
    expectInputError(() => epi.resolve({ model: 'sis' }), 'model');
    expectInputError(() => epi.resolve({ population: '1e6' }), 'population');
    expectInputError(() => epi.resolve({ gamma_per_day: 0 }), 'gamma_per_day');
    expectInputError(() => epi.resolve({ beta_per_day: 11 }), 'beta_per_day');
    expectInputError(() => epi.resolve({ infected0: -1 }), 'infected0');
    expectInputError(() => epi.resolve({ infected0: 0 }), 'infected0');
    expectInputError(() => epi.resolve({ infected0: 1e6 }), 'infected0');
    expectInputError(() => epi.resolve({ exposed0: 5 }), 'exposed0');
    // The seir model's keys are refused by name with sir, not ignored.
    expectInputError(() => epi.resolve({ exposed0: 0 }), 'exposed0');
    expectInputError(() => epi.resolve({ model: 'sir', sigma_per_day: 0.5 }), 'sigma_per_day');
    expect(epi.resolve({ model: 'seir', sigma_per_day: 0.5, exposed0: 5 }).sigma_per_day).toBe(0.5);
    expectInputError(() => epi.resolve({ t_end_days: 1e5, dt_days: 1e-3 }), 'dt_days');
    const inputs = epi.resolve({});
    expectInputError(() => epi.resolveState!({ S: 0.5, E: 0, I: 0.1, R: 0.1, t_days: 0 }, inputs), 'initialState');
    expectInputError(() => epi.resolveState!({ S: 0.5, I: 0.5, R: 0, t_days: 0 }, inputs), 'initialState');
    // No one infected or exposed: the inputs' seed rule (I + E ≥ 1e-10 N) holds for a state too (it was a 422 whose
    // reference predicted a full epidemic).
    for (const state of [
      { S: 1, E: 0, I: 0, R: 0, t_days: 0 },
      { S: 0.5, E: 0, I: 5e-11, R: 0.5 - 5e-11, t_days: 3 },
    ])
      expectInputError(() => epi.resolveState!(state, inputs), 'initialState', { status: 400, reason: /I \+ E must be ≥ 1e-10/ });
    expect(epi.run(inputs, epi.resolveState!({ S: 1 - 1e-10, E: 0, I: 1e-10, R: 0, t_days: 0 }, inputs)).check.passed).toBe(true);
  });

  it('is deterministic', () => {
    const a = epi.run(epi.resolve({ model: 'seir' }));
    const b = epi.run(epi.resolve({ model: 'seir' }));
    expect(Object.is(a.value, b.value)).toBe(true);
    expect(JSON.stringify(a.outputs)).toBe(JSON.stringify(b.outputs));
  });

  it('two half runs equal one whole run bit for bit; the continued check uses the given compartments', () => {
    for (const model of ['sir', 'seir'] as const) {
      const whole = epi.run(epi.resolve({ model, t_end_days: 400 }));
      const half = epi.resolve({ model, t_end_days: 200 });
      const first = epi.run(half);
      expect(first.check.refused).toBe('not finished: raise t_end_days');
      const state = epi.resolveState!(JSON.parse(JSON.stringify(first.state)), half) as EpiState;
      const second = epi.run(half, state);
      expect(second.state).toEqual(whole.state);
      expect(second.check.passed).toBe(true);
      const z = finalSizeByBisection(3, state.S, state.R);
      expect(Math.abs(second.value - z) / z).toBeLessThan(1e-6);
      expect(second.check.rel_error).toBeLessThan(1e-6);
    }
  });

  it('a 1 % error in the computed quantity fails the gate', () => {
    expectGateRefusesPerturbed(epi.run(epi.resolve({})));
  });
});

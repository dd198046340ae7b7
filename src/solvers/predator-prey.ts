// `predator_prey` — Lotka–Volterra (solvers.md §4.1). RK4 at dt_days until the second upward crossing of
// y = α/β; the cycle period is the time between the two crossings. Checked against the exact period averages
// ⟨x⟩ = γ/δ and ⟨y⟩ = α/β (they follow from integrating d ln y/dt and d ln x/dt over one closed orbit).
import { z } from 'zod';
import { DecimatingRecorder, Rk4Stepper } from '../numerics/ode.js';
import { SolverFailure } from './errors.js';
import type { SolverDef, SolverOutput } from './types.js';
import { boundProfile, checkPart, checkWorkLimit, combineChecks, parseInputs, parseState } from './util.js';

export interface PredatorPreyInputs extends Record<string, unknown> {
  prey0: number;
  predator0: number;
  alpha_per_day: number;
  beta_per_day: number;
  delta_per_day: number;
  gamma_per_day: number;
  dt_days: number;
  max_days: number;
}

export interface PredatorPreyState {
  prey: number;
  predators: number;
  t_days: number;
}

const MAX_STEPS = 2e7;

const pos = () => z.number().positive();
const schema = z
  .object({
    prey0: pos().default(10),
    predator0: pos().default(10),
    alpha_per_day: pos().default(1.1),
    beta_per_day: pos().default(0.4),
    delta_per_day: pos().default(0.1),
    gamma_per_day: pos().default(0.4),
    dt_days: z.number().min(1e-5).max(1).default(0.01),
    max_days: z.number().positive().max(1e5).default(1000),
  })
  .strict();

const stateSchema = z.object({ prey: pos(), predators: pos(), t_days: z.number() }).strict();

function run(inputs: PredatorPreyInputs, initialState?: unknown): SolverOutput {
  const start = initialState as PredatorPreyState | undefined;
  const { alpha_per_day: alpha, beta_per_day: beta, delta_per_day: delta, gamma_per_day: gamma } = inputs;
  const h = inputs.dt_days;
  const maxSteps = Math.ceil((inputs.max_days / h) * (1 - 1e-12));
  const t0 = start ? start.t_days : 0;
  const y = start ? Float64Array.of(start.prey, start.predators) : Float64Array.of(inputs.prey0, inputs.predator0);
  const level = alpha / beta; // predator level at which prey growth stops: the crossing level
  const invariant = (x: number, p: number) => delta * x - gamma * Math.log(x) + beta * p - alpha * Math.log(p);
  const v0 = invariant(y[0]!, y[1]!);
  let maxDrift = 0;

  const stepper = new Rk4Stepper(2, (_t, s, d) => {
    const x = s[0]!;
    const p = s[1]!;
    d[0] = alpha * x - beta * x * p;
    d[1] = delta * x * p - gamma * p;
  });
  const recorder = new DecimatingRecorder(2);
  recorder.offer(0, t0, y);

  let crossings = 0;
  let tFirst = NaN;
  let tSecond = NaN;
  let sumX = 0; // ∫ x dt since the first crossing (trapezoid)
  let sumY = 0;
  let step = 0;
  while (crossings < 2) {
    if (step >= maxSteps) {
      throw new SolverFailure('predator_prey: fewer than two upward crossings of y = α/β within max_days', {
        crossings,
        max_days: inputs.max_days,
      });
    }
    const xPrev = y[0]!;
    const pPrev = y[1]!;
    const tPrev = t0 + step * h;
    stepper.step(tPrev, y, h);
    step++;
    const x = y[0]!;
    const p = y[1]!;
    if (!(x > 0 && p > 0 && Number.isFinite(x) && Number.isFinite(p))) {
      throw new SolverFailure('predator_prey: populations left the positive quadrant (step too large)', { step, dt_days: h });
    }
    const drift = Math.abs(invariant(x, p) - v0) / Math.abs(v0);
    if (drift > maxDrift) maxDrift = drift;

    const upward = pPrev < level && p >= level;
    if (upward) {
      // Crossing inside this step at fraction f (linear interpolation); split the trapezoid there.
      const f = (level - pPrev) / (p - pPrev);
      const xc = xPrev + f * (x - xPrev);
      const tc = tPrev + f * h;
      if (crossings === 1) {
        sumX += 0.5 * (xPrev + xc) * f * h;
        sumY += 0.5 * (pPrev + level) * f * h;
        tSecond = tc;
      } else {
        sumX += 0.5 * (xc + x) * (1 - f) * h;
        sumY += 0.5 * (level + p) * (1 - f) * h;
        tFirst = tc;
      }
      crossings++;
    } else if (crossings === 1) {
      sumX += 0.5 * (xPrev + x) * h;
      sumY += 0.5 * (pPrev + p) * h;
    }
    recorder.offer(step, t0 + step * h, y);
  }
  const tEnd = t0 + step * h;
  recorder.finish(step, tEnd, y);

  const period = tSecond - tFirst;
  const meanPrey = sumX / period;
  const meanPredators = sumY / period;
  const check = combineChecks([
    checkPart('exact period average ⟨x⟩_T = γ/δ', 'mean prey over one cycle', meanPrey, gamma / delta),
    checkPart('exact period average ⟨y⟩_T = α/β', 'mean predators over one cycle', meanPredators, alpha / beta),
  ]);

  const prey = boundProfile(recorder.channels[0]!);
  const state: PredatorPreyState = { prey: y[0]!, predators: y[1]!, t_days: tEnd };
  return {
    mode: null,
    value: period,
    unit: 'd',
    output_class: 'profile',
    rule8: prey,
    rule8_array: 'prey',
    outputs: {
      t_days: boundProfile(recorder.t),
      prey,
      predators: boundProfile(recorder.channels[1]!),
      cycle_start_days: tFirst,
      cycle_end_days: tSecond,
      mean_prey: meanPrey,
      mean_predators: meanPredators,
      invariant_drift: maxDrift,
      steps: step,
    },
    check,
    state,
  };
}

export const predatorPrey: SolverDef<PredatorPreyInputs> = {
  id: 'predator_prey',
  kind: 'predator-prey',
  endpoint: null,
  catalogue: true,
  modes: null,
  stateful: true,
  inputs: [
    { key: 'prey0', unit: 'individuals', default: 10, range: '> 0' },
    { key: 'predator0', unit: 'individuals', default: 10, range: '> 0' },
    { key: 'alpha_per_day', unit: '1/d', default: 1.1, range: '> 0' },
    { key: 'beta_per_day', unit: '1/d', default: 0.4, range: '> 0' },
    { key: 'delta_per_day', unit: '1/d', default: 0.1, range: '> 0' },
    { key: 'gamma_per_day', unit: '1/d', default: 0.4, range: '> 0' },
    { key: 'dt_days', unit: 'd', default: 0.01, range: '1e-5 … 1' },
    { key: 'max_days', unit: 'd', default: 1000, range: '> 0 … 1e5; max_days/dt_days ≤ 2e7' },
  ],
  resolve(raw) {
    const inputs = parseInputs(schema, raw) as PredatorPreyInputs;
    checkWorkLimit('max_days', inputs.max_days / inputs.dt_days, MAX_STEPS);
    return inputs;
  },
  resolveState(raw) {
    return parseState(stateSchema, raw);
  },
  run,
};

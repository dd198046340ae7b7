// `predator_prey` — Lotka–Volterra (solvers.md §4.1). RK4 at dt_days until the second upward crossing of
// y = α/β; the cycle period is the time between the two crossings. Checked against the exact period averages
// ⟨x⟩ = γ/δ and ⟨y⟩ = α/β (they follow from integrating d ln y/dt and d ln x/dt over one closed orbit).
import { z } from 'zod';
import { DecimatingRecorder, Rk4Stepper } from '../numerics/ode.js';
import { InputError } from './errors.js';
import type { SolverDef, SolverOutput } from './types.js';
import { boundProfile, checkPart, checkWorkLimit, combineChecks, num, numIn, parseInputs, parseState } from './util.js';

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
/** The longest run max_days takes, in days. */
const MAX_DAYS = 1e5;

// Finite ranges (solvers.md had "> 0"): rates from one cycle in ~170 years to 1e3 per day (dt ≥ 1e-5 must resolve them), populations (or densities)
// 1e-6 … 1e12. One value alone no longer breaks the run; the combinations that still can are refused by orbitGuard.
const POPULATION = [1e-6, 1e12] as const;
const RATE = [1e-4, 1e3] as const;
const INTERACTION = [1e-12, 1e4] as const;
const schema = z
  .object({
    prey0: numIn(...POPULATION).default(10),
    predator0: numIn(...POPULATION).default(10),
    alpha_per_day: numIn(...RATE).default(1.1),
    beta_per_day: numIn(...INTERACTION).default(0.4),
    delta_per_day: numIn(...INTERACTION).default(0.1),
    gamma_per_day: numIn(...RATE).default(0.4),
    dt_days: z.number().min(1e-5).max(1).default(0.01),
    max_days: z.number().positive().max(MAX_DAYS).default(1000),
  })
  .strict();

/** Largest dt·(max(α, γ) + ΔV): beyond it RK4 misses the orbit's fast phases (measured: all of 366 sampled runs pass at ≤ 0.1). */
const MAX_STEP_RATE = 0.1;
/** Largest ΔV/min(α, γ): a population falls to about e^(−that) of its equilibrium (e^(−200) ≈ 1e-87 of it). */
const MAX_DEPTH = 200;
/** Smallest ΔV/max(α, γ): closer to the equilibrium (relative amplitude ≲ 1e-6) there is no cycle to measure. */
const MIN_DEPTH = 1e-12;

/**
 * Refuse the combinations of rates, start point and step that the run cannot resolve, before any work.
 * ΔV = γ(u − 1 − ln u) + α(v − 1 − ln v), u = x δ/γ, v = y β/α, is the orbit's conserved invariant above the
 * equilibrium's: the orbit's smallest populations are ≈ e^(−ΔV/γ) and e^(−ΔV/α) of the equilibrium values and its
 * fastest rate ≈ max(α, γ) + ΔV. The period is at least 2π/√(αγ) (the small-orbit limit; it grows with ΔV).
 * `at` names the field that carries the start point ('prey0' or 'initialState').
 */
function orbitGuard(inputs: PredatorPreyInputs, x: number, y: number, at: 'inputs' | 'initialState'): void {
  const { alpha_per_day: alpha, beta_per_day: beta, delta_per_day: delta, gamma_per_day: gamma } = inputs;
  const u = (x * delta) / gamma;
  const v = (y * beta) / alpha;
  const preyPart = gamma * (u - 1 - Math.log(u));
  const predatorPart = alpha * (v - 1 - Math.log(v));
  const dV = preyPart + predatorPart;
  const startField = at === 'initialState' ? 'initialState' : preyPart >= predatorPart ? 'prey0' : 'predator0';
  const equilibrium = `the equilibrium (γ/δ, α/β) = (${(gamma / delta).toPrecision(4)}, ${(alpha / beta).toPrecision(4)})`;
  if (!(dV / Math.max(alpha, gamma) >= MIN_DEPTH)) {
    throw new InputError(startField, `the start lies on ${equilibrium} (relative distance below ~1e-6): there is no cycle to measure`, null);
  }
  const depth = dV / Math.min(alpha, gamma);
  if (!(depth <= MAX_DEPTH)) {
    throw new InputError(
      startField,
      `the start is so far from ${equilibrium} that a population would fall to ~e^-${depth.toPrecision(3)} of its equilibrium value (allowed down to e^-${MAX_DEPTH})`,
      null,
    );
  }
  const dtMax = MAX_STEP_RATE / (Math.max(alpha, gamma) + dV);
  if (inputs.dt_days > dtMax) {
    throw new InputError('dt_days', `too coarse for this orbit (fastest rate ≈ ${(Math.max(alpha, gamma) + dV).toPrecision(3)}/d)`, { min: 1e-5, max: dtMax });
  }
  const shortest = (2 * Math.PI) / Math.sqrt(alpha * gamma);
  if (inputs.max_days < shortest) {
    throw new InputError('max_days', `shorter than one cycle: the period is at least 2π/√(αγ) = ${shortest.toPrecision(4)} d`, {
      min: shortest,
      max: MAX_DAYS,
    });
  }
}

const stateSchema = z.object({ prey: numIn(...POPULATION), predators: numIn(...POPULATION), t_days: num() }).strict();

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
      // The caller's max_days (≥ the shortest possible period, checked in resolve) was shorter than this orbit's cycle.
      if (inputs.max_days < MAX_DAYS)
        throw new InputError('max_days', `fewer than two upward crossings of y = α/β within max_days (${crossings} found): raise max_days`, {
          min: inputs.max_days,
          max: MAX_DAYS,
          inclusive: false,
        });
      throw new InputError(
        'max_days',
        `fewer than two upward crossings of y = α/β within ${MAX_DAYS} d, the most max_days takes (${crossings} found): this orbit's cycle is too slow; raise alpha_per_day or gamma_per_day`,
        { max: MAX_DAYS },
      );
    }
    const xPrev = y[0]!;
    const pPrev = y[1]!;
    const tPrev = t0 + step * h;
    stepper.step(tPrev, y, h);
    step++;
    const x = y[0]!;
    const p = y[1]!;
    if (!(x > 0 && p > 0 && Number.isFinite(x) && Number.isFinite(p))) {
      throw new InputError('dt_days', 'populations left the positive quadrant: the step is too large for this orbit', { min: 1e-5, max: h, inclusive: false });
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
    { key: 'prey0', unit: 'individuals', default: 10, range: '1e-6 … 1e12; orbit depth ΔV/min(α,γ) 1e-12·max(α,γ)/min(α,γ) … 200' },
    { key: 'predator0', unit: 'individuals', default: 10, range: '1e-6 … 1e12 (as prey0)' },
    { key: 'alpha_per_day', unit: '1/d', default: 1.1, range: '1e-4 … 1e3' },
    { key: 'beta_per_day', unit: '1/d', default: 0.4, range: '1e-12 … 1e4' },
    { key: 'delta_per_day', unit: '1/d', default: 0.1, range: '1e-12 … 1e4' },
    { key: 'gamma_per_day', unit: '1/d', default: 0.4, range: '1e-4 … 1e3' },
    { key: 'dt_days', unit: 'd', default: 0.01, range: '1e-5 … 1; dt·(max(α,γ) + ΔV) ≤ 0.1' },
    { key: 'max_days', unit: 'd', default: 1000, range: '2π/√(αγ) … 1e5; max_days/dt_days ≤ 2e7' },
  ],
  schema,
  resolve(raw) {
    const inputs = parseInputs(schema, raw) as PredatorPreyInputs;
    checkWorkLimit('max_days', inputs.max_days / inputs.dt_days, MAX_STEPS);
    orbitGuard(inputs, inputs.prey0, inputs.predator0, 'inputs');
    return inputs;
  },
  resolveState(raw, inputs) {
    const state = parseState(stateSchema, raw);
    orbitGuard(inputs as PredatorPreyInputs, state.prey, state.predators, 'initialState');
    return state;
  },
  run,
};

// `kalman` — linear Kalman filter (solvers.md §4.3): constant-velocity (x, v) tracking or a scalar random walk,
// predict/update with the Joseph-form covariance update, measurements given or synthesized from a noisy truth
// (house PRNG). The covariance recursion does not depend on the data; its steady state is checked against the
// closed-form solution of the discrete algebraic Riccati equation (Kalata's α for constant velocity).
import { z } from 'zod';
import { rngForInputs } from './rng.js';
import { InputError } from './errors.js';
import type { SolverDef, SolverOutput } from './types.js';
import { C_LIGHT } from '../kernel/operators/constants.js';
import { boundProfile, makeCheck, numIn, parseInputs, parseState, refuseCheck, refuseOtherModeKeys, seedSchema } from './util.js';

export type KalmanModel = 'constant_velocity' | 'random_walk';

export interface KalmanInputs extends Record<string, unknown> {
  model: KalmanModel;
  dt_s: number;
  accel_noise_m_s2: number;
  process_noise_m2: number;
  measurement_noise_m: number;
  steps: number;
  measurements?: number[];
  true_x0_m: number;
  true_v0_m_s: number;
  seed?: number;
}

/** Filter state: estimate x ([x, v] or [x]) and its covariance P (2×2 or 1×1). */
export interface KalmanState {
  x: number[];
  P: number[][];
}

const DIFFUSE_FACTOR = 1e3; // initial covariance = 10³ × measurement variance per state
/** A state's estimate and covariance entries: well above anything the ranges produce, far below overflow. */
const STATE_MAX_X = 1e20;
const STATE_MAX_P = 1e40;
/**
 * From a diffuse prior the covariance reaches the 1e-3 gate after ≈ 4.67/√λ steps (constant velocity, tracking index
 * λ = σ_a T²/σ_v) or ≈ 3.45/√(q/σ_v²) (random walk), measured from λ = 3e-9 to 0.1; these factors add ~30 %.
 */
const CONVERGENCE_FACTOR = { constant_velocity: 6, random_walk: 4.5 } as const;
const MAX_STEPS = 100_000;

const schema = z
  .object({
    model: z.enum(['constant_velocity', 'random_walk']).default('constant_velocity'),
    // Finite ranges (solvers.md had "> 0" and none for the truth): with them Q = σ_a²T⁴/4 ≤ 1e36 and the truth stays
    // ≤ ~1e20 m, where ±MAX_VALUE, 1e300 or 5e-324 made the covariance, the truth or the rmse ∞ or NaN.
    dt_s: numIn(1e-6, 1e6).default(1),
    accel_noise_m_s2: numIn(1e-9, 1e6).default(0.5),
    process_noise_m2: numIn(1e-12, 1e12).default(1),
    measurement_noise_m: numIn(1e-9, 1e9).default(10),
    steps: z.number().int().min(10).max(MAX_STEPS).optional(),
    measurements: z.array(z.number()).min(10).max(MAX_STEPS).optional(),
    true_x0_m: numIn(-1e12, 1e12).default(0),
    true_v0_m_s: numIn(-C_LIGHT, C_LIGHT).default(10),
    seed: seedSchema().optional(),
  })
  .strict();

const stateSchema = z
  .object({
    x: z.array(numIn(-STATE_MAX_X, STATE_MAX_X)).min(1).max(2),
    P: z
      .array(z.array(numIn(-STATE_MAX_P, STATE_MAX_P)).min(1).max(2))
      .min(1)
      .max(2),
  })
  .strict();

/** Closed-form steady posterior position variance (DARE). */
export function steadyPositionVariance(inputs: KalmanInputs): number {
  const r = inputs.measurement_noise_m ** 2;
  if (inputs.model === 'random_walk') {
    const q = inputs.process_noise_m2;
    const prior = (q + Math.sqrt(q * q + 4 * q * r)) / 2;
    return (prior * r) / (prior + r);
  }
  // Kalata's tracking index λ = σ_a T²/σ_v; the steady position gain α is the posterior P_xx / σ_v².
  const lambda = (inputs.accel_noise_m_s2 * inputs.dt_s ** 2) / inputs.measurement_noise_m;
  // α = ((λ + 4)s − λ² − 8λ)/8 with s = √(λ² + 8λ), written without the cancellation (s² = (λ + 4)² − 16):
  // α = 2s/(λ + 4 + s). The textbook form loses every digit above λ ≈ 1e8 and λ² overflows above 1e154.
  const s = Math.sqrt(lambda) * Math.sqrt(lambda + 8);
  const alpha = (2 * s) / (lambda + 4 + s);
  return alpha * r;
}

function synthesize(inputs: KalmanInputs): { truth: Float64Array; z: Float64Array } {
  const rng = rngForInputs(inputs);
  const n = inputs.steps;
  const T = inputs.dt_s;
  const sigmaV = inputs.measurement_noise_m;
  const truth = new Float64Array(n);
  const meas = new Float64Array(n);
  let x = inputs.true_x0_m;
  let v = inputs.true_v0_m_s;
  const sqrtQ = Math.sqrt(inputs.process_noise_m2);
  for (let k = 0; k < n; k++) {
    if (inputs.model === 'constant_velocity') {
      // Piecewise-constant white acceleration over each interval: the model behind Q = σ_a² G Gᵀ, G = [T²/2, T].
      const a = inputs.accel_noise_m_s2 * rng.gaussian();
      x += v * T + 0.5 * a * T * T;
      v += a * T;
    } else {
      x += sqrtQ * rng.gaussian();
    }
    truth[k] = x;
    meas[k] = x + sigmaV * rng.gaussian();
  }
  return { truth, z: meas };
}

/** Steps a diffuse prior needs to reach the steady covariance: CONVERGENCE_FACTOR/√(ratio), at least 10. */
export function stepsToConverge(inputs: KalmanInputs): number {
  const ratio =
    inputs.model === 'constant_velocity'
      ? (inputs.accel_noise_m_s2 * inputs.dt_s ** 2) / inputs.measurement_noise_m
      : inputs.process_noise_m2 / inputs.measurement_noise_m ** 2;
  return Math.max(10, Math.ceil(CONVERGENCE_FACTOR[inputs.model] / Math.sqrt(ratio)));
}

/**
 * From the diffuse prior (no state) too few steps cannot reach the steady state the check needs: a 400 before any
 * work, naming steps, or the noise when no allowed step count would do. (A continued run starts from its state's
 * covariance, which may already be steady, so it is left to the check.)
 */
function convergenceGuard(inputs: KalmanInputs): void {
  const needed = stepsToConverge(inputs);
  if (needed > MAX_STEPS) {
    const cv = inputs.model === 'constant_velocity';
    const what = cv
      ? `tracking index λ = σ_a·dt²/σ_v = ${((inputs.accel_noise_m_s2 * inputs.dt_s ** 2) / inputs.measurement_noise_m).toExponential(3)}`
      : `q/σ_v² = ${(inputs.process_noise_m2 / inputs.measurement_noise_m ** 2).toExponential(3)}`;
    throw new InputError(
      cv ? 'accel_noise_m_s2' : 'process_noise_m2',
      `${what} is so small that the filter needs ~${needed.toExponential(2)} steps to reach its steady state (at most ${MAX_STEPS}); raise the process noise${cv ? ' or dt_s' : ''} or lower measurement_noise_m`,
      null,
    );
  }
  if (inputs.steps < needed) {
    throw new InputError(
      inputs.measurements !== undefined ? 'measurements' : 'steps',
      `the filter needs at least ${needed} steps to reach its steady state from the diffuse prior`,
      {
        min: needed,
        max: MAX_STEPS,
      },
    );
  }
}

function run(inputs: KalmanInputs, initialState?: unknown): SolverOutput {
  const start = initialState as KalmanState | undefined;
  if (!start) convergenceGuard(inputs);
  const cv = inputs.model === 'constant_velocity';
  const n = inputs.steps;
  const T = inputs.dt_s;
  const r = inputs.measurement_noise_m ** 2;
  const given = inputs.measurements !== undefined;
  const synth = given ? null : synthesize(inputs);
  const meas = given ? Float64Array.from(inputs.measurements!) : synth!.z;

  let x0: number;
  let x1: number;
  let p00: number;
  let p01: number;
  let p11: number;
  if (start) {
    x0 = start.x[0]!;
    x1 = cv ? start.x[1]! : 0;
    p00 = start.P[0]![0]!;
    p01 = cv ? start.P[0]![1]! : 0;
    p11 = cv ? start.P[1]![1]! : 0;
  } else {
    // Diffuse prior centred at zero.
    x0 = 0;
    x1 = 0;
    p00 = DIFFUSE_FACTOR * r;
    p01 = 0;
    p11 = cv ? DIFFUSE_FACTOR * r : 0;
  }
  const sa2 = inputs.accel_noise_m_s2 ** 2;
  const q00 = cv ? (sa2 * T ** 4) / 4 : inputs.process_noise_m2;
  const q01 = cv ? (sa2 * T ** 3) / 2 : 0;
  const q11 = cv ? sa2 * T * T : 0;

  const estX = new Float64Array(n);
  const estV = new Float64Array(n);
  let k0 = 0;
  let k1 = 0;
  let sqErr = 0;
  for (let k = 0; k < n; k++) {
    // Predict.
    if (cv) {
      x0 += T * x1;
      const a00 = p00 + 2 * T * p01 + T * T * p11 + q00;
      const a01 = p01 + T * p11 + q01;
      p00 = a00;
      p01 = a01;
      p11 = p11 + q11;
    } else {
      p00 += q00;
    }
    // Update (Joseph form keeps P symmetric positive semidefinite).
    const s = p00 + r;
    k0 = p00 / s;
    k1 = cv ? p01 / s : 0;
    const innovation = meas[k]! - x0;
    x0 += k0 * innovation;
    x1 += k1 * innovation;
    const om = 1 - k0;
    const n00 = om * om * p00 + r * k0 * k0;
    const n01 = -om * k1 * p00 + om * p01 + r * k0 * k1;
    const n11 = k1 * k1 * p00 - 2 * k1 * p01 + p11 + r * k1 * k1;
    p00 = n00;
    p01 = cv ? n01 : 0;
    p11 = cv ? n11 : 0;
    estX[k] = x0;
    estV[k] = x1;
    if (synth) sqErr += (x0 - synth.truth[k]!) ** 2;
  }

  const sigmaX = Math.sqrt(p00);
  const sigmaRef = Math.sqrt(steadyPositionVariance(inputs));
  let check = makeCheck(
    cv ? 'DARE closed form: Kalata α, P_xx = α σ_v²' : 'DARE closed form: scalar Riccati P = P⁻R/(P⁻ + R)',
    'steady posterior position σ_x',
    sigmaX,
    sigmaRef,
  );
  if (!check.passed) check = refuseCheck(check, 'covariance not converged to the steady state: raise steps');

  const t = Array.from({ length: n }, (_, k) => (k + 1) * T);
  const estimate: Record<string, number[]> = { t_s: boundProfile(t), x_m: boundProfile(estX) };
  if (cv) estimate.v_m_s = boundProfile(estV);
  const outputs: Record<string, unknown> = {
    estimate,
    measurements: { t_s: estimate.t_s, z_m: boundProfile(meas) },
    gain: cv ? [k0, k1] : [k0],
    steady_sigma_x_reference_m: sigmaRef,
  };
  if (cv) outputs.posterior_sigma_v_m_s = Math.sqrt(p11);
  if (synth) outputs.rmse_m = Math.sqrt(sqErr / n);
  const state: KalmanState = cv
    ? {
        x: [x0, x1],
        P: [
          [p00, p01],
          [p01, p11],
        ],
      }
    : { x: [x0], P: [[p00]] };
  return {
    mode: inputs.model,
    value: sigmaX,
    unit: 'm',
    output_class: 'profile',
    rule8: estimate.x_m!,
    rule8_array: 'estimate',
    outputs,
    check,
    state,
  };
}

export const kalman: SolverDef<KalmanInputs> = {
  id: 'kalman',
  kind: 'Kalman filter',
  endpoint: null,
  catalogue: true,
  modes: ['constant_velocity', 'random_walk'],
  stateful: true,
  inputs: [
    { key: 'model', unit: '—', default: 'constant_velocity', range: 'constant_velocity, random_walk' },
    { key: 'dt_s', unit: 's', default: 1, range: '1e-6 … 1e6' },
    { key: 'accel_noise_m_s2', unit: 'm/s²', default: 0.5, range: '1e-9 … 1e6 (constant_velocity); λ = σ_a·dt²/σ_v ≥ 3.6e-9' },
    { key: 'process_noise_m2', unit: 'm²', default: 1, range: '1e-12 … 1e12 (random_walk); q/σ_v² ≥ 2.03e-9' },
    { key: 'measurement_noise_m', unit: 'm', default: 10, range: '1e-9 … 1e9' },
    {
      key: 'steps',
      unit: '1',
      default: 200,
      range: '10 … 100 000 (defaults to the length of measurements); from the diffuse prior ≥ 6/√λ (constant_velocity), ≥ 4.5/√(q/σ_v²) (random_walk)',
    },
    { key: 'measurements', unit: 'm', default: 'synthesized', range: 'array, length = steps' },
    { key: 'true_x0_m', unit: 'm', default: 0, range: '−1e12 … 1e12' },
    { key: 'true_v0_m_s', unit: 'm/s', default: 10, range: '|v0| ≤ c (299 792 458) (constant_velocity)' },
    { key: 'seed', unit: '1', default: 'from inputs', range: 'integer 0 … 2^53−1' },
  ],
  schema,
  resolve(raw) {
    const parsed = parseInputs(schema, raw);
    refuseOtherModeKeys(raw, 'model', parsed.model, { constant_velocity: ['accel_noise_m_s2', 'true_v0_m_s'], random_walk: ['process_noise_m2'] });
    const { measurements, seed, steps, ...rest } = parsed;
    const resolvedSteps = steps ?? measurements?.length ?? 200;
    if (measurements !== undefined && measurements.length !== resolvedSteps) {
      throw new InputError('measurements', `length ${measurements.length} differs from steps ${resolvedSteps}`, {
        length: resolvedSteps,
      });
    }
    const inputs: KalmanInputs = { ...rest, steps: resolvedSteps };
    if (measurements !== undefined) inputs.measurements = measurements;
    if (seed !== undefined) inputs.seed = seed;
    return inputs;
  },
  resolveState(raw, inputs) {
    const s = parseState(stateSchema, raw);
    const dim = inputs.model === 'constant_velocity' ? 2 : 1;
    if (s.x.length !== dim || s.P.length !== dim || s.P.some((row) => row.length !== dim)) {
      throw new InputError('initialState', `x must have ${dim} entries and P must be ${dim}×${dim} for ${inputs.model}`, {
        dim,
      });
    }
    const symmetric = dim === 1 || s.P[0]![1] === s.P[1]![0];
    const psd = s.P[0]![0]! >= 0 && (dim === 1 || (s.P[1]![1]! >= 0 && s.P[0]![0]! * s.P[1]![1]! - s.P[0]![1]! ** 2 >= 0));
    if (!symmetric || !psd) {
      throw new InputError('initialState', 'P must be a symmetric positive semidefinite covariance', null);
    }
    return s;
  },
  run,
};

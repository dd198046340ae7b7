// `blackhole` — radial infall into a Schwarzschild black hole (solvers.md §4.7). The radial timelike geodesic
// from rest at r0 obeys d²r/dτ² = −GM/r² exactly in proper time. Integrated with RK4 in a Sundman-rescaled
// variable s (dτ/ds = (r/r0)^(3/2)·√(r0³/GM), step h = (π/2)/steps) so the step shrinks with the local free-fall
// time; checked against the cycloid closed form τ = √(r0³/8GM)(η + sin η).
import { z } from 'zod';
import { DecimatingRecorder, Rk4Stepper } from '../numerics/ode.js';
import { InputError, SolverFailure } from './errors.js';
import type { SolverDef, SolverOutput } from './types.js';
import { boundProfile, checkWorkLimit, makeCheck, parseInputs } from './util.js';

export interface BlackholeInputs extends Record<string, unknown> {
  mass_kg: number;
  r0_rs: number;
  r_end_rs: number;
  steps: number;
}

const G = 6.6743e-11;
const C = 299792458;
const SOLAR_MASS = 1.98847e30;
const MAX_TOTAL_STEPS = 2e7;

const schema = z
  .object({
    mass_kg: z
      .number()
      .min(1e20)
      .max(1e42)
      .default(10 * SOLAR_MASS),
    // At rest at r0 means E² = 1 − r_s/r0: inside the horizon no observer is at rest (E² < 0).
    r0_rs: z.number().gt(1, 'must be > 1: an observer at rest exists only outside the horizon (r0 > r_s)').max(1e6).default(10),
    r_end_rs: z.number().min(1e-3).default(1),
    steps: z.number().int().min(100).max(1e6).default(2000),
  })
  .strict();

/**
 * Sundman parameter needed to fall from rest at r0 to ρ_end = r_end/r0: ds = −dρ/(ρ√(2(1 − ρ))), so
 * s_end = (1/√2) ln((1 + w)/(1 − w)), w = √(1 − ρ_end) (1 − w written as ρ_end/(1 + w) to avoid cancellation).
 */
export function sundmanSpan(rhoEnd: number): number {
  const w = Math.sqrt(1 - rhoEnd);
  return Math.log((1 + w) / (rhoEnd / (1 + w))) / Math.SQRT2;
}

function run(inputs: BlackholeInputs): SolverOutput {
  const { mass_kg: mass, r0_rs: r0Rs, r_end_rs: rEndRs, steps } = inputs;
  const gm = G * mass;
  const rs = (2 * gm) / (C * C);
  const r0 = r0Rs * rs;
  const timeUnit = Math.sqrt((r0 * r0 * r0) / gm); // √(r0³/GM)
  const rhoEnd = rEndRs / r0Rs;
  const a = 1 / r0Rs; // r_s/r0
  const energy = Math.sqrt(1 - a); // conserved E per unit rest energy, from rest at r0
  const outsideHorizon = rEndRs > 1;
  const h = Math.PI / 2 / steps;

  // Dimensionless y = [ρ = r/r0, u = dρ/dτ̃, τ̃, t̃] with τ̃ = τ/√(r0³/GM), t̃ likewise for coordinate time.
  const stepper = new Rk4Stepper(4, (_s, y, d) => {
    const rho = y[0]!;
    const sqrtRho = Math.sqrt(rho);
    const dTauDs = rho * sqrtRho;
    d[0] = y[1]! * dTauDs;
    d[1] = -1 / sqrtRho;
    d[2] = dTauDs;
    // Coordinate time dt/dτ = E/(1 − r_s/r): only meaningful (and only used) outside the horizon.
    d[3] = outsideHorizon ? (energy / (1 - a / rho)) * dTauDs : 0;
  });

  const expected = sundmanSpan(rhoEnd) / h;
  const maxSteps = Math.ceil(1.1 * expected) + 100;
  const y = Float64Array.of(1, 0, 0, 0);
  const prev = new Float64Array(4);
  const recorder = new DecimatingRecorder(1);
  recorder.offer(0, 0, y);
  let n = 0;
  for (;;) {
    if (n >= maxSteps) throw new SolverFailure('blackhole: r_end not reached within the expected number of steps', { steps: n });
    prev.set(y);
    stepper.step(n * h, y, h);
    n++;
    if (!(y[0]! > rhoEnd)) break;
    recorder.offer(n, y[2]!, y);
  }
  // Cross r_end inside the last step: τ by linear interpolation in ρ (as specified).
  const f = (prev[0]! - rhoEnd) / (prev[0]! - y[0]!);
  const tauScaled = prev[2]! + f * (y[2]! - prev[2]!);
  const tau = tauScaled * timeUnit;
  recorder.finish(n + 1, tauScaled, [rhoEnd]);

  let coordinateTime: number | null = null;
  if (outsideHorizon) {
    // The integrand steepens towards the horizon, so take a partial RK4 step of f·h from the last state inside.
    const partial = Float64Array.from(prev);
    stepper.step((n - 1) * h, partial, f * h);
    coordinateTime = partial[3]! * timeUnit;
  }

  const eta = Math.acos(2 * rhoEnd - 1);
  const tauReference = Math.sqrt((r0 * r0 * r0) / (8 * gm)) * (eta + Math.sin(eta));
  const check = makeCheck('cycloid closed form τ = √(r0³/8GM)(η + sin η), η = arccos(2r_end/r0 − 1)', 'proper time r0 → r_end', tau, tauReference);

  const rOfTau = boundProfile(recorder.channels[0]!.map((rho) => rho * r0));
  return {
    mode: null,
    value: tau,
    unit: 's',
    output_class: 'profile',
    rule8: rOfTau,
    rule8_array: 'r_of_tau',
    outputs: {
      r_of_tau: rOfTau,
      tau_s: boundProfile(recorder.t.map((t) => t * timeUnit)),
      schwarzschild_radius_m: rs,
      r0_m: r0,
      r_end_m: rEndRs * rs,
      coordinate_time_s: coordinateTime,
      speed_at_end_c: outsideHorizon ? Math.sqrt((1 / rEndRs - 1 / r0Rs) / (1 - 1 / r0Rs)) : null,
      free_fall_time_s: (Math.PI / 2) * Math.sqrt((r0 * r0 * r0) / (2 * gm)),
      integration_steps: n,
    },
    check,
  };
}

export const blackhole: SolverDef<BlackholeInputs> = {
  id: 'blackhole',
  kind: 'black-hole infall',
  endpoint: null,
  catalogue: true,
  modes: null,
  stateful: false,
  inputs: [
    { key: 'mass_kg', unit: 'kg', default: 10 * SOLAR_MASS, range: '1e20 … 1e42' },
    { key: 'r0_rs', unit: 'r_s', default: 10, range: '> 1 and > r_end_rs, ≤ 1e6' },
    { key: 'r_end_rs', unit: 'r_s', default: 1, range: '1e-3 … < r0_rs' },
    { key: 'steps', unit: '1', default: 2000, range: '100 … 1e6 (Sundman step h = (π/2)/steps)' },
  ],
  schema,
  resolve(raw) {
    const inputs = parseInputs(schema, raw) as BlackholeInputs;
    if (!(inputs.r_end_rs < inputs.r0_rs)) {
      throw new InputError('r_end_rs', `must be < r0_rs (${inputs.r0_rs})`, { min: 1e-3, max: inputs.r0_rs, inclusive: false });
    }
    checkWorkLimit('steps', (sundmanSpan(inputs.r_end_rs / inputs.r0_rs) * inputs.steps) / (Math.PI / 2), MAX_TOTAL_STEPS);
    return inputs;
  },
  run,
};

// `lorenz` — chaotic attractor (solvers.md §3.4). Classical RK4 at a fixed step; checked against an
// independent adaptive Dormand–Prince 5(4) integration of the same initial value problem.
import { z } from 'zod';
import { dormandPrince45, Rk4Stepper, type OdeRhs } from '../numerics/ode.js';
import { SolverFailure } from './errors.js';
import type { SolverDef, SolverOutput } from './types.js';
import { checkWorkLimit, makeCheck, numIn, parseInputs, parseState, strideIndices } from './util.js';

export interface LorenzInputs extends Record<string, unknown> {
  sigma: number;
  rho: number;
  beta: number;
  x0: number;
  y0: number;
  z0: number;
  t_end: number;
  dt: number;
}

export interface LorenzState {
  x: number;
  y: number;
  z: number;
  t: number;
}

const MAX_STEPS = 2_000_000;
const TRAJECTORY_SAMPLES = 2000; // §3.4 allows the attractor up to 2000 samples
const RULE8_SAMPLES = 512;
// Two-trajectory Lyapunov estimate: separation renormalised to this after every step.
const LYAPUNOV_SEPARATION = 1e-8;

const schema = z
  .object({
    sigma: numIn(0, 100).default(10),
    rho: numIn(0, 100).default(28),
    beta: numIn(0, 100).default(8 / 3),
    x0: numIn(-100, 100).default(1),
    y0: numIn(-100, 100).default(1),
    z0: numIn(-100, 100).default(1),
    // At t_end = 5e-324 the Lyapunov estimate divided by ~0 (−∞); a thousandth of a time unit is at least one step.
    t_end: z.number().min(1e-3).max(20).default(10),
    dt: numIn(1e-5, 1e-2).default(1e-3),
  })
  .strict();

// A state the solver reached from its inputs (|x0|, |y0|, |z0| ≤ 100) stays far inside ±STATE_MAX; one far outside
// only made the adaptive step underflow (a 500).
const STATE_MAX = 1e4;
const stateSchema = z
  .object({
    x: numIn(-STATE_MAX, STATE_MAX),
    y: numIn(-STATE_MAX, STATE_MAX),
    z: numIn(-STATE_MAX, STATE_MAX),
    t: z.number(),
  })
  .strict();

/** Number of RK4 steps: dt is shrunk (never grown) so that t_end/dt is an integer. */
export function lorenzStepCount(tEnd: number, dt: number): number {
  return Math.max(1, Math.ceil((tEnd / dt) * (1 - 1e-12)));
}

function lorenzRhs(sigma: number, rho: number, beta: number): OdeRhs {
  return (_t, s, ds) => {
    const x = s[0]!;
    const y = s[1]!;
    const zc = s[2]!;
    ds[0] = sigma * (y - x);
    ds[1] = x * (rho - zc) - y;
    ds[2] = x * y - beta * zc;
  };
}

function run(inputs: LorenzInputs, initialState?: unknown): SolverOutput {
  const start = initialState as LorenzState | undefined;
  const { sigma, rho, beta, t_end: tEnd } = inputs;
  const steps = lorenzStepCount(tEnd, inputs.dt);
  const h = tEnd / steps;
  const t0 = start ? start.t : 0;
  const s0 = start ? [start.x, start.y, start.z] : [inputs.x0, inputs.y0, inputs.z0];

  const rhs = lorenzRhs(sigma, rho, beta);
  const stepper = new Rk4Stepper(3, rhs);
  const shadowStepper = new Rk4Stepper(3, rhs);
  const s = Float64Array.from(s0);
  const shadow = Float64Array.from(s0);
  shadow[0] = shadow[0]! + LYAPUNOV_SEPARATION;
  let logGrowth = 0;

  const trajIdx = strideIndices(steps + 1, TRAJECTORY_SAMPLES);
  const ruleIdx = strideIndices(steps + 1, RULE8_SAMPLES);
  const trajT: number[] = [];
  const trajX: number[] = [];
  const trajY: number[] = [];
  const trajZ: number[] = [];
  const rule8: number[] = [];
  let nextTraj = 0;
  let nextRule = 0;
  const record = (i: number, t: number) => {
    if (trajIdx[nextTraj] === i) {
      trajT.push(t);
      trajX.push(s[0]!);
      trajY.push(s[1]!);
      trajZ.push(s[2]!);
      nextTraj++;
    }
    if (ruleIdx[nextRule] === i) {
      rule8.push(s[2]!);
      nextRule++;
    }
  };

  record(0, t0);
  for (let i = 0; i < steps; i++) {
    const t = t0 + i * h;
    stepper.step(t, s, h);
    shadowStepper.step(t, shadow, h);
    const dx: number = shadow[0]! - s[0]!;
    const dy = shadow[1]! - s[1]!;
    const dz = shadow[2]! - s[2]!;
    const d = Math.sqrt(dx * dx + dy * dy + dz * dz);
    if (d > 0) {
      logGrowth += Math.log(d / LYAPUNOV_SEPARATION);
      const f = LYAPUNOV_SEPARATION / d;
      shadow[0] = s[0]! + f * dx;
      shadow[1] = s[1]! + f * dy;
      shadow[2] = s[2]! + f * dz;
    }
    record(i + 1, t0 + (i + 1) * h);
  }
  const tFinal = t0 + steps * h;

  // Independent reference: adaptive Dormand–Prince 5(4) on the same IVP.
  let reference: Float64Array;
  try {
    reference = dormandPrince45(rhs, t0, s0, tFinal, { rtol: 1e-10, atol: 1e-12 }).y;
  } catch (e) {
    throw new SolverFailure('lorenz: the Dormand–Prince reference integration failed', { reason: String(e) });
  }
  const ex = s[0]! - reference[0]!;
  const ey = s[1]! - reference[1]!;
  const ez = s[2]! - reference[2]!;
  const distance = Math.sqrt(ex * ex + ey * ey + ez * ez);
  const refNorm = Math.hypot(reference[0]!, reference[1]!, reference[2]!);
  // The gate compares |computed − reference|/|reference|: with reference = ‖s_DP‖ and computed = ‖s_DP‖ + ‖s_RK4 − s_DP‖
  // that ratio is exactly the relative distance of the final state vectors.
  const check = makeCheck(
    'Dormand–Prince 5(4) reference (rtol 1e-10, atol 1e-12)',
    '‖s_DP‖ + ‖s_RK4 − s_DP‖ vs ‖s_DP‖ (final state vector)',
    refNorm + distance,
    refNorm,
  );

  const state: LorenzState = { x: s[0]!, y: s[1]!, z: s[2]!, t: tFinal };
  return {
    mode: null,
    value: s[2]!,
    unit: '1',
    output_class: 'profile',
    rule8,
    rule8_array: 'trajectory',
    outputs: {
      state: { x: s[0]!, y: s[1]!, z: s[2]! },
      reference_state: { x: reference[0]!, y: reference[1]!, z: reference[2]! },
      steps,
      dt_used: h,
      t_start: t0,
      t_final: tFinal,
      trajectory: { t: trajT, x: trajX, y: trajY, z: trajZ },
      max_lyapunov_estimate: logGrowth / (tFinal - t0),
    },
    check,
    state,
  };
}

export const lorenz: SolverDef<LorenzInputs> = {
  id: 'lorenz',
  kind: 'chaotic attractor',
  endpoint: '/api/svc/lorenz',
  catalogue: true,
  modes: null,
  stateful: true,
  inputs: [
    { key: 'sigma', unit: '1', default: 10, range: '0 … 100' },
    { key: 'rho', unit: '1', default: 28, range: '0 … 100' },
    { key: 'beta', unit: '1', default: 8 / 3, range: '0 … 100' },
    { key: 'x0', unit: '1', default: 1, range: '|x0| ≤ 100' },
    { key: 'y0', unit: '1', default: 1, range: '|y0| ≤ 100' },
    { key: 'z0', unit: '1', default: 1, range: '|z0| ≤ 100' },
    { key: 't_end', unit: '1', default: 10, range: '1e-3 … 20' },
    { key: 'dt', unit: '1', default: 1e-3, range: '1e-5 … 1e-2 (shrunk so t_end/dt is an integer)' },
  ],
  schema,
  resolve(raw) {
    const inputs = parseInputs(schema, raw) as LorenzInputs;
    checkWorkLimit('dt', lorenzStepCount(inputs.t_end, inputs.dt), MAX_STEPS);
    return inputs;
  },
  resolveState(raw) {
    return parseState(stateSchema, raw);
  },
  run,
};

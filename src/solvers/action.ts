// `action` — symplectic action integrator (solvers.md §3.1). A plane pendulum, H = p²/2mL² − mgL cos θ,
// integrated by Störmer–Verlet (the variational integrator of the discrete action: half kick, drift, half kick)
// for exactly one period (the returned state is the period's end point); the abbreviated action W = ∮ p dθ is checked against its elliptic-integral closed form
// 16 m √(g L³) [E(k) − (1 − k²) K(k)], k = sin(θ_amplitude/2).
import { z } from 'zod';
import { DecimatingRecorder } from '../numerics/ode.js';
import { ellipticKE } from '../numerics/special.js';
import { InputError, SolverFailure } from './errors.js';
import type { SolverDef, SolverOutput } from './types.js';
import { boundProfile, checkWorkLimit, makeCheck, parseInputs, parseState } from './util.js';

export interface ActionInputs extends Record<string, unknown> {
  mass_kg: number;
  length_m: number;
  gravity_m_s2: number;
  theta0_rad: number;
  steps_per_period: number;
}

export interface ActionState {
  theta_rad: number;
  p_J_s: number;
  t_s: number;
}

const MAX_AMPLITUDE = 3.1;
const MIN_AMPLITUDE = 1e-4;
const MAX_TOTAL_STEPS = 2e6;

const schema = z
  .object({
    mass_kg: z.number().min(1e-9).max(1e9).default(1),
    length_m: z.number().min(1e-3).max(1e3).default(1),
    gravity_m_s2: z.number().min(0.01).max(1000).default(9.80665),
    theta0_rad: z.number().min(MIN_AMPLITUDE).max(MAX_AMPLITUDE).default(1),
    steps_per_period: z.number().int().min(100).max(200_000).default(2000),
  })
  .strict();

// An angle is taken modulo 2π; beyond ±1e6 rad a double holds too few of its digits for the phase to mean anything.
const stateSchema = z.object({ theta_rad: z.number().min(-1e6).max(1e6), p_J_s: z.number(), t_s: z.number() }).strict();

/** k = sin(θ_a/2) of the libration with energy E: cos θ_a = −E/(mgL), so k² = (1 + E/mgL)/2. */
function modulusFromEnergy(energy: number, mgl: number): number {
  return Math.sqrt(Math.max(0, (1 + energy / mgl) / 2));
}

function stateEnergy(s: { theta_rad: number; p_J_s: number }, inputs: ActionInputs): number {
  const inertia = inputs.mass_kg * inputs.length_m ** 2;
  const mgl = inputs.mass_kg * inputs.gravity_m_s2 * inputs.length_m;
  return (s.p_J_s * s.p_J_s) / (2 * inertia) - mgl * Math.cos(s.theta_rad);
}

/** Total steps for one period: steps_per_period × P/P0 with P/P0 = 2K(k)/π. */
function stepsForPeriod(k: number, stepsPerPeriod: number): number {
  return (stepsPerPeriod * 2 * ellipticKE(k).K) / Math.PI;
}

function run(inputs: ActionInputs, initialState?: unknown): SolverOutput {
  const start = initialState as ActionState | undefined;
  const m = inputs.mass_kg;
  const L = inputs.length_m;
  const g = inputs.gravity_m_s2;
  const inertia = m * L * L;
  const mgl = m * g * L;
  const h = (2 * Math.PI * Math.sqrt(L / g)) / inputs.steps_per_period;
  const halfKick = 0.5 * h * mgl;

  let theta = start ? start.theta_rad : inputs.theta0_rad;
  let p = start ? start.p_J_s : 0;
  const t0 = start ? start.t_s : 0;
  const energy = (p * p) / (2 * inertia) - mgl * Math.cos(theta);
  const k = start ? modulusFromEnergy(energy, mgl) : Math.sin(inputs.theta0_rad / 2);
  const maxSteps = Math.ceil(1.5 * stepsForPeriod(k, inputs.steps_per_period)) + 10;

  // From a turning point (p = 0): one period ends at the second sign change of p. Otherwise: at the first
  // return through θ_s moving with the sign of p_s.
  const fromTurningPoint = p === 0;
  const thetaStart = theta;
  const direction = Math.sign(p);
  let lastSign = 0;
  let signChanges = 0;

  const recorder = new DecimatingRecorder(2);
  recorder.offer(0, t0, [theta, p]);
  let action = 0;
  let maxDrift = 0;
  let n = 0;
  let period: number;
  for (;;) {
    if (n >= maxSteps) throw new SolverFailure('action: no full period within the expected number of steps', { steps: n });
    const thetaPrev = theta;
    const pPrev = p;
    const pHalf = p - halfKick * Math.sin(theta);
    theta += (h * pHalf) / inertia;
    p = pHalf - halfKick * Math.sin(theta);
    n++;
    const drift = Math.abs((p * p) / (2 * inertia) - mgl * Math.cos(theta) - energy) / mgl;
    if (drift > maxDrift) maxDrift = drift;
    const stepAction = pHalf * (theta - thetaPrev);

    let fraction = -1; // where in this step the period closes, if it does
    if (fromTurningPoint) {
      const s = Math.sign(p);
      if (s !== 0) {
        if (lastSign !== 0 && s !== lastSign && ++signChanges === 2) fraction = pPrev / (pPrev - p);
        lastSign = s;
      }
    } else {
      const before = (thetaPrev - thetaStart) * direction;
      const after = (theta - thetaStart) * direction;
      if (before < 0 && after >= 0) fraction = -before / (after - before);
    }
    if (fraction >= 0) {
      // The last step is cut at the linearly interpolated crossing; the run (and its state) ends there.
      action += fraction * stepAction;
      period = (n - 1 + fraction) * h;
      theta = thetaPrev + fraction * (theta - thetaPrev);
      // From a turning point the crossing is p = 0 by definition: keep it exact so a continued run again starts
      // from a turning point (a state just past a turning point would make "return through θ_s" ill-conditioned).
      p = fromTurningPoint ? 0 : pPrev + fraction * (p - pPrev);
      recorder.finish(n, t0 + period, [theta, p]);
      break;
    }
    action += stepAction;
    recorder.offer(n, t0 + n * h, [theta, p]);
  }

  const { K, E } = ellipticKE(k);
  const reference = 16 * m * Math.sqrt(g * L * L * L) * (E - (1 - k * k) * K);
  const check = makeCheck(
    'closed form W = 16 m √(g L³) [E(k) − (1 − k²) K(k)], k = sin(θ_amplitude/2)',
    'abbreviated action ∮ p dθ over one period',
    action,
    reference,
  );

  const theta8 = boundProfile(recorder.channels[0]!);
  const state: ActionState = { theta_rad: theta, p_J_s: p, t_s: t0 + period };
  return {
    mode: null,
    value: action,
    unit: 'J*s',
    output_class: 'profile',
    rule8: theta8,
    rule8_array: 'trajectory',
    outputs: {
      period_s: period,
      period_reference_s: 4 * Math.sqrt(L / g) * K,
      hamilton_action_J_s: action - energy * period,
      energy_J: energy,
      amplitude_rad: 2 * Math.asin(Math.min(1, k)),
      max_energy_drift: maxDrift,
      dt_s: h,
      steps: n,
      trajectory: { t_s: boundProfile(recorder.t), theta_rad: theta8, p_J_s: boundProfile(recorder.channels[1]!) },
    },
    check,
    state,
  };
}

export const action: SolverDef<ActionInputs> = {
  id: 'action',
  kind: 'symplectic action integrator',
  endpoint: '/api/svc/action',
  catalogue: true,
  modes: null,
  stateful: true,
  inputs: [
    { key: 'mass_kg', unit: 'kg', default: 1, range: '1e-9 … 1e9' },
    { key: 'length_m', unit: 'm', default: 1, range: '1e-3 … 1e3' },
    { key: 'gravity_m_s2', unit: 'm/s²', default: 9.80665, range: '0.01 … 1000' },
    { key: 'theta0_rad', unit: 'rad', default: 1, range: '1e-4 … 3.1' },
    { key: 'steps_per_period', unit: '1', default: 2000, range: '100 … 200 000; steps_per_period × P/P0 ≤ 2e6' },
  ],
  schema,
  resolve(raw) {
    const inputs = parseInputs(schema, raw) as ActionInputs;
    checkWorkLimit('steps_per_period', stepsForPeriod(Math.sin(inputs.theta0_rad / 2), inputs.steps_per_period), MAX_TOTAL_STEPS);
    return inputs;
  },
  resolveState(raw, inputs) {
    const s = parseState(stateSchema, raw);
    const mgl = inputs.mass_kg * inputs.gravity_m_s2 * inputs.length_m;
    const k = modulusFromEnergy(stateEnergy(s, inputs), mgl);
    if (!(k <= Math.sin(MAX_AMPLITUDE / 2))) {
      throw new InputError('initialState', "the state's energy implies an amplitude above 3.1 rad (or rotation): no libration period", {
        max_amplitude_rad: MAX_AMPLITUDE,
      });
    }
    // theta0_rad's own lower bound: at rest (or nearly) at the bottom there is no period to find (it was a 500).
    if (!(k >= Math.sin(MIN_AMPLITUDE / 2))) {
      throw new InputError('initialState', "the state's energy implies an amplitude below 1e-4 rad (at rest): no libration period", {
        min_amplitude_rad: MIN_AMPLITUDE,
      });
    }
    checkWorkLimit('initialState', stepsForPeriod(k, inputs.steps_per_period), MAX_TOTAL_STEPS);
    return s;
  },
  run,
};

// `epi` — epidemics (solvers.md §3.8). SIR / SEIR in population fractions, classical RK4 at dt_days, stopped
// early once (E + I) < 1e-12. Checked against the final-size relation (Lambert W, principal branch).
// A run from initialState starts at the state's compartments and clock t_days and advances t_end_days further.
import { z } from 'zod';
import { Rk4Stepper } from '../numerics/ode.js';
import { lambertW0 } from '../numerics/special.js';
import { InputError } from './errors.js';
import type { SolverDef, SolverOutput } from './types.js';
import { boundProfile, checkWorkLimit, makeCheck, numIn, parseInputs, parseState, refuseCheck, refuseOtherModeKeys } from './util.js';

export interface EpiInputs extends Record<string, unknown> {
  model: 'sir' | 'seir';
  population: number;
  beta_per_day: number;
  gamma_per_day: number;
  sigma_per_day: number;
  infected0: number;
  exposed0: number;
  recovered0: number;
  t_end_days: number;
  dt_days: number;
}

/** Compartments as fractions of the population, and the clock. */
export interface EpiState {
  S: number;
  E: number;
  I: number;
  R: number;
  t_days: number;
}

const MAX_STEPS = 2_000_000;
const EXTINCT = 1e-12; // (E + I) below this: the epidemic is over, stop early
const NOT_FINISHED = 1e-6; // (E + I) above this at t_end: the final size is not reached, the check refuses
const STORED_SAMPLES = 8192; // decimated run record, bounded to 512 on output

const MIN_SEED_FRACTION = 1e-10;
const MAX_STEP_RATE = 1;

const schema = z
  .object({
    model: z.enum(['sir', 'seir']).default('sir'),
    population: numIn(1, 1e10).default(1e6),
    // A subnormal β underflowed the final-size reference to 0; γ or σ near 0 made R0 = β/γ infinite and the epidemic
    // unfinishable within t_end_days ≤ 1e5 (prevalence decays as e^(−γt): 1/γ ≤ 1e3 days leaves it time to).
    beta_per_day: numIn(0, 10)
      .refine((b) => b === 0 || b >= 1e-12, 'must be 0 or 1e-12 … 10')
      .default(0.3),
    gamma_per_day: numIn(1e-3, 10).default(0.1),
    sigma_per_day: numIn(1e-3, 10).default(0.2),
    infected0: z.number().min(0).default(10),
    exposed0: z.number().min(0).default(0),
    recovered0: z.number().min(0).default(0),
    t_end_days: numIn(1, 1e5).default(1000),
    dt_days: numIn(1e-4, 1).default(0.05),
  })
  .strict();

const fraction = z.number().min(0).max(1);
const stateSchema = z.object({ S: fraction, E: fraction, I: fraction, R: fraction, t_days: z.number() }).strict();

/** dt_days is shrunk (never grown) so that t_end_days/dt is an integer. */
export function epiStepCount(tEnd: number, dt: number): number {
  return Math.max(1, Math.ceil((tEnd / dt) * (1 - 1e-12)));
}

/**
 * Final susceptible fraction from the final-size relation ln(s∞/s0) = −R0 (1 − s∞ − r0) (E∞ = I∞ = 0, so
 * r∞ = 1 − s∞): s∞ = −W0(−R0 s0 e^(−R0(1 − r0)))/R0. Holds for SEIR as well (the latent stage only delays).
 */
export function finalSusceptible(r0Number: number, s0: number, rec0: number): number {
  if (r0Number === 0) return s0;
  return -lambertW0(-r0Number * s0 * Math.exp(-r0Number * (1 - rec0))) / r0Number;
}

function run(inputs: EpiInputs, initialState?: unknown): SolverOutput {
  const start = initialState as EpiState | undefined;
  const seir = inputs.model === 'seir';
  const beta = inputs.beta_per_day;
  const gamma = inputs.gamma_per_day;
  const sigma = inputs.sigma_per_day;
  const n = inputs.population;
  const steps = epiStepCount(inputs.t_end_days, inputs.dt_days);
  const h = inputs.t_end_days / steps;

  // y = [s, e, i, r]; in SIR e stays exactly 0.
  const y = start
    ? Float64Array.of(start.S, start.E, start.I, start.R)
    : Float64Array.of((n - inputs.infected0 - inputs.exposed0 - inputs.recovered0) / n, inputs.exposed0 / n, inputs.infected0 / n, inputs.recovered0 / n);
  const t0 = start ? start.t_days : 0;
  const s0 = y[0]!;
  const rec0 = y[3]!;

  const stepper = new Rk4Stepper(
    4,
    seir
      ? (_t, c, d) => {
          const infection = beta * c[0]! * c[2]!;
          const onset = sigma * c[1]!;
          const recovery = gamma * c[2]!;
          d[0] = -infection;
          d[1] = infection - onset;
          d[2] = onset - recovery;
          d[3] = recovery;
        }
      : (_t, c, d) => {
          const infection = beta * c[0]! * c[2]!;
          const recovery = gamma * c[2]!;
          d[0] = -infection;
          d[1] = 0;
          d[2] = infection - recovery;
          d[3] = recovery;
        },
  );

  const stride = Math.max(1, Math.ceil(steps / STORED_SAMPLES));
  const recT: number[] = [];
  const rec: number[][] = [[], [], [], []];
  const record = (t: number) => {
    recT.push(t);
    for (let c = 0; c < 4; c++) rec[c]!.push(y[c]!);
  };

  let peak = y[2]!;
  let peakDay = t0;
  record(t0);
  let taken = 0;
  while (taken < steps && y[1]! + y[2]! >= EXTINCT) {
    stepper.step(t0 + taken * h, y, h);
    taken++;
    const t = t0 + taken * h;
    if (y[2]! > peak) {
      peak = y[2]!;
      peakDay = t;
    }
    if (taken % stride === 0) record(t);
  }
  const tFinal = t0 + taken * h;
  if (taken % stride !== 0) record(tFinal);

  const r0Number = beta / gamma;
  const finalSize = 1 - y[0]! - rec0;
  const sInf = finalSusceptible(r0Number, s0, rec0);
  let check = makeCheck('final-size relation s∞ = −W0(−R0 s0 e^(−R0(1 − r0)))/R0', 'final size 1 − s(t_end) − r0', finalSize, 1 - sInf - rec0);
  const active = y[1]! + y[2]!;
  if (active > NOT_FINISHED) check = refuseCheck(check, 'not finished: raise t_end_days');

  const state: EpiState = { S: y[0]!, E: y[1]!, I: y[2]!, R: y[3]!, t_days: tFinal };
  const outputs: Record<string, unknown> = {
    t_days: boundProfile(recT),
    S: boundProfile(rec[0]!),
    I: boundProfile(rec[2]!),
    R: boundProfile(rec[3]!),
    peak_prevalence: peak,
    peak_day: peakDay,
    R0: r0Number,
    final_susceptible: y[0]!,
    active_fraction_at_end: active,
    stopped_early: taken < steps,
    steps: taken,
    dt_used_days: h,
  };
  if (seir) outputs.E = boundProfile(rec[1]!);
  return {
    mode: inputs.model,
    value: finalSize,
    unit: '1',
    output_class: 'profile',
    rule8: outputs.I as number[],
    rule8_array: 'I',
    outputs,
    check,
    state,
  };
}

export const epi: SolverDef<EpiInputs> = {
  id: 'epi',
  kind: 'epidemics',
  endpoint: '/api/svc/epi',
  catalogue: true,
  modes: ['sir', 'seir'],
  stateful: true,
  inputs: [
    { key: 'model', unit: '—', default: 'sir', range: 'sir, seir' },
    { key: 'population', unit: 'persons', default: 1e6, range: '1 … 1e10' },
    { key: 'beta_per_day', unit: '1/d', default: 0.3, range: '0 or 1e-12 … 10' },
    { key: 'gamma_per_day', unit: '1/d', default: 0.1, range: '1e-3 … 10' },
    { key: 'sigma_per_day', unit: '1/d', default: 0.2, range: '1e-3 … 10 (seir)' },
    { key: 'infected0', unit: 'persons', default: 10, range: '≥ 0; I + E ≥ 1e-10·population; I + E + R < population' },
    { key: 'exposed0', unit: 'persons', default: 0, range: '≥ 0 (seir only)' },
    { key: 'recovered0', unit: 'persons', default: 0, range: '≥ 0' },
    { key: 't_end_days', unit: 'd', default: 1000, range: '1 … 1e5' },
    { key: 'dt_days', unit: 'd', default: 0.05, range: '1e-4 … 1; steps ≤ 2e6' },
  ],
  schema,
  resolve(raw) {
    const inputs = parseInputs(schema, raw) as EpiInputs;
    refuseOtherModeKeys(raw, 'model', inputs.model, { seir: ['sigma_per_day', 'exposed0'] });
    // RK4 at dt·rate > ~3 goes unstable (a β = 10, dt = 1 run ended with a final size of −0.77); ≤ 1 keeps the
    // final size within 1e-5 of the relation (measured at R0 = 3 … 1e4).
    const fastest = Math.max(inputs.beta_per_day, inputs.gamma_per_day, inputs.model === 'seir' ? inputs.sigma_per_day : 0);
    if (inputs.dt_days * fastest > MAX_STEP_RATE) {
      throw new InputError('dt_days', `too coarse for the fastest rate (${fastest}/d): dt_days·rate must be ≤ ${MAX_STEP_RATE}`, {
        min: 1e-4,
        max: MAX_STEP_RATE / fastest,
      });
    }
    // The run stops once (E + I)/N < 1e-12: a seed below 1e-10·N would stop before it started while the
    // final-size relation still predicts a full epidemic.
    const minSeed = MIN_SEED_FRACTION * inputs.population;
    if (!(inputs.infected0 + inputs.exposed0 >= minSeed)) {
      throw new InputError('infected0', `infected0 + exposed0 must be ≥ 1e-10·population = ${minSeed}`, { min: minSeed, inclusive: true });
    }
    if (!(inputs.infected0 + inputs.exposed0 + inputs.recovered0 < inputs.population)) {
      throw new InputError('infected0', 'infected0 + exposed0 + recovered0 must be < population', {
        max: inputs.population,
        inclusive: false,
      });
    }
    checkWorkLimit('dt_days', epiStepCount(inputs.t_end_days, inputs.dt_days), MAX_STEPS);
    return inputs;
  },
  resolveState(raw, inputs) {
    const s = parseState(stateSchema, raw);
    const sum = s.S + s.E + s.I + s.R;
    if (Math.abs(sum - 1) > 1e-9) {
      throw new InputError('initialState', `compartments must sum to 1 (got ${sum})`, { sum: 1, tolerance: 1e-9 });
    }
    if (inputs.model === 'sir' && s.E > 0) {
      throw new InputError('initialState', 'E must be 0 for the sir model', { E: 0 });
    }
    // The inputs' seed rule, in fractions: with I + E below it the run stops at once while the final-size relation
    // still predicts a full epidemic.
    if (!(s.I + s.E >= MIN_SEED_FRACTION)) {
      throw new InputError('initialState', `I + E must be ≥ ${MIN_SEED_FRACTION} (a fraction of the population): no epidemic to follow`, {
        min: MIN_SEED_FRACTION,
        inclusive: true,
      });
    }
    return s;
  },
  run,
};

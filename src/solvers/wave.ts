// wave — the wave equation on a clamped square membrane (leapfrog, 5-point Laplacian) and Maxwell's equations in a
// 1-D vacuum cavity between perfect conductors (Yee FDTD) (solvers.md §3.5). The resonant frequency is measured from
// the downward zero crossings at an antinode and checked against the closed-form mode frequency.
import { z } from 'zod';
import { C_LIGHT } from '../kernel/operators/constants.js';
import { InputError, SolverFailure } from './errors.js';
import type { InputSpec, SolverDef, SolverOutput } from './types.js';
import { boundField, boundProfile, checkWorkLimit, makeCheck, numIn, parseInputs, strideIndices } from './util.js';

export interface MembraneInputs extends Record<string, unknown> {
  mode: 'membrane';
  side_m: number;
  tension_N_m: number;
  areal_density_kg_m2: number;
  mode_m: number;
  mode_n: number;
  nx: number;
  courant: number;
  periods: number;
  amplitude_m: number;
}

export interface MaxwellInputs extends Record<string, unknown> {
  mode: 'maxwell';
  length_m: number;
  mode_m: number;
  nx: number;
  courant: number;
  periods: number;
  e0_V_m: number;
}

export type WaveInputs = MembraneInputs | MaxwellInputs;

const WORK_LIMIT = 2e8;
/** A signed amplitude: lo ≤ |a| ≤ hi. */
const magnitudeIn = (lo: number, hi: number, range: string) =>
  z.number().refine((a) => Math.abs(a) >= lo && Math.abs(a) <= hi, `magnitude must be ${range} (either sign)`);

const schema = z.strictObject({
  mode: z.enum(['membrane', 'maxwell']).optional(),
  side_m: numIn(1e-3, 100).optional(),
  // From a graphene sheet to a pre-stressed steel plate: c = √(T/μ) stays finite and nonzero, so the run length
  // (which T/μ fixes) is never NaN (T = 1e-300 with μ = 1e300 made the work estimate NaN).
  tension_N_m: numIn(1e-6, 1e9).optional(),
  areal_density_kg_m2: numIn(1e-8, 1e4).optional(),
  length_m: numIn(1e-6, 1e4).optional(),
  mode_m: z.number().int().min(1).max(10).optional(),
  mode_n: z.number().int().min(1).max(10).optional(),
  nx: z.number().int().min(21).max(20001).optional(),
  courant: numIn(0.05, 1.0).optional(),
  periods: numIn(2, 50).optional(),
  // Below a nucleus's size (1e-15 m) a displacement means nothing, and the field's numbers fall to subnormals.
  // Above 100 m (the largest side) it is no small vibration, and near MAX_VALUE the Laplacian overflows (a 500).
  amplitude_m: magnitudeIn(1e-15, 100, '1e-15 … 100 m').optional(),
  // Up to the Schwinger limit (1.3e18 V/m; beyond it vacuum is not linear); a subnormal E0 never crossed zero (a 500).
  e0_V_m: magnitudeIn(1e-12, 1e18, '1e-12 … 1e18 V/m').optional(),
});

const MEMBRANE_ONLY = ['side_m', 'tension_N_m', 'areal_density_kg_m2', 'mode_n', 'amplitude_m'] as const;
const MAXWELL_ONLY = ['length_m', 'e0_V_m'] as const;

/** Reference (closed-form) frequency: it also fixes the run length (`periods` of it). */
function referenceFrequency(inputs: WaveInputs): number {
  if (inputs.mode === 'membrane') {
    const c = Math.sqrt(inputs.tension_N_m / inputs.areal_density_kg_m2);
    return (c / (2 * inputs.side_m)) * Math.hypot(inputs.mode_m, inputs.mode_n);
  }
  return (inputs.mode_m * C_LIGHT) / (2 * inputs.length_m);
}

function waveSpeed(inputs: WaveInputs): number {
  return inputs.mode === 'membrane' ? Math.sqrt(inputs.tension_N_m / inputs.areal_density_kg_m2) : C_LIGHT;
}

/** dt = C dx / c; steps cover `periods` periods of the reference frequency. */
function timeGrid(inputs: WaveInputs): { dx: number; dt: number; steps: number } {
  const L = inputs.mode === 'membrane' ? inputs.side_m : inputs.length_m;
  const dx = L / (inputs.nx - 1);
  const dt = (inputs.courant * dx) / waveSpeed(inputs);
  const steps = Math.ceil(inputs.periods / (referenceFrequency(inputs) * dt));
  return { dx, dt, steps };
}

function resolve(raw: unknown): WaveInputs {
  const p = parseInputs(schema, raw);
  const mode = p.mode ?? 'membrane';
  const foreign = mode === 'membrane' ? MAXWELL_ONLY : MEMBRANE_ONLY;
  for (const key of foreign) {
    if (p[key] !== undefined) throw new InputError(key, `not an input of mode ${mode}`, null);
  }
  let inputs: WaveInputs;
  if (mode === 'membrane') {
    const nx = p.nx ?? 61;
    if (nx > 301) throw new InputError('nx', 'nx must be ≤ 301 in mode membrane', { min: 21, max: 301 });
    const courant = p.courant ?? 0.5;
    // 2-D leapfrog is stable only for C ≤ 1/√2.
    if (courant > 0.7) throw new InputError('courant', 'courant must be ≤ 0.7 in mode membrane', { min: 0.05, max: 0.7 });
    inputs = {
      mode,
      side_m: p.side_m ?? 1.0,
      tension_N_m: p.tension_N_m ?? 100,
      areal_density_kg_m2: p.areal_density_kg_m2 ?? 0.1,
      mode_m: p.mode_m ?? 1,
      mode_n: p.mode_n ?? 1,
      nx,
      courant,
      periods: p.periods ?? 5,
      amplitude_m: p.amplitude_m ?? 1e-3,
    };
  } else {
    inputs = {
      mode,
      length_m: p.length_m ?? 1.0,
      mode_m: p.mode_m ?? 1,
      nx: p.nx ?? 201,
      courant: p.courant ?? 0.5,
      periods: p.periods ?? 5,
      e0_V_m: p.e0_V_m ?? 1.0,
    };
  }
  const { steps } = timeGrid(inputs);
  const points = mode === 'membrane' ? inputs.nx * inputs.nx : inputs.nx;
  checkWorkLimit('periods', points * steps, WORK_LIMIT);
  return inputs;
}

/** Downward zero crossings of a sampled signal (linear interpolation) → f = (N − 1)/(t_last − t_first). */
export function crossingFrequency(signal: Float64Array, dt: number): { frequency: number; crossings: number } {
  let first = NaN;
  let last = NaN;
  let count = 0;
  for (let s = 1; s < signal.length; s++) {
    const a = signal[s - 1]!;
    const b = signal[s]!;
    if (a > 0 && b <= 0) {
      const t = (s - 1 + a / (a - b)) * dt;
      if (count === 0) first = t;
      last = t;
      count++;
    }
  }
  if (count < 2) throw new SolverFailure('fewer than two downward zero crossings at the antinode', { crossings: count });
  return { frequency: (count - 1) / (last - first), crossings: count };
}

function runMembrane(inputs: MembraneInputs): SolverOutput {
  const { nx, mode_m: m, mode_n: n, amplitude_m: A } = inputs;
  const { dx, dt, steps } = timeGrid(inputs);
  const c2 = inputs.courant * inputs.courant;
  const size = nx * nx;
  let prev = new Float64Array(size);
  let cur = new Float64Array(size);
  let next = new Float64Array(size);
  // Index j * nx + i: row j is y, column i is x.
  for (let j = 1; j < nx - 1; j++) {
    const sy = Math.sin((n * Math.PI * j) / (nx - 1));
    for (let i = 1; i < nx - 1; i++) cur[j * nx + i] = A * Math.sin((m * Math.PI * i) / (nx - 1)) * sy;
  }
  const probe = Math.round((nx - 1) / (2 * n)) * nx + Math.round((nx - 1) / (2 * m));
  const signal = new Float64Array(steps + 1);
  signal[0] = cur[probe]!;
  // First step from u_t = 0: u¹ = u⁰ + ½C²∇²u⁰ (exact for a discrete normal mode).
  for (let j = 1; j < nx - 1; j++) {
    for (let i = 1; i < nx - 1; i++) {
      const k = j * nx + i;
      next[k] = cur[k]! + 0.5 * c2 * (cur[k - 1]! + cur[k + 1]! + cur[k - nx]! + cur[k + nx]! - 4 * cur[k]!);
    }
  }
  [prev, cur, next] = [cur, next, prev];
  signal[1] = cur[probe]!;
  for (let s = 2; s <= steps; s++) {
    for (let j = 1; j < nx - 1; j++) {
      for (let i = 1; i < nx - 1; i++) {
        const k = j * nx + i;
        next[k] = 2 * cur[k]! - prev[k]! + c2 * (cur[k - 1]! + cur[k + 1]! + cur[k - nx]! + cur[k + nx]! - 4 * cur[k]!);
      }
    }
    [prev, cur, next] = [cur, next, prev];
    signal[s] = cur[probe]!;
  }
  const { frequency, crossings } = crossingFrequency(signal, dt);
  const reference = referenceFrequency(inputs);
  const rows: number[][] = [];
  for (let j = 0; j < nx; j++) rows.push(Array.from(cur.subarray(j * nx, (j + 1) * nx)));
  const field = boundField(rows);
  const sampled = strideIndices(nx, 64).map((i) => i * dx);
  return {
    mode: 'membrane',
    value: frequency,
    unit: 'Hz',
    output_class: 'field',
    rule8: field,
    rule8_array: 'displacement',
    outputs: {
      displacement: { dx_m: dx, x_m: sampled, y_m: sampled, t_s: steps * dt, u_m: field },
      wave_speed_m_s: waveSpeed(inputs),
      periods_measured: crossings - 1,
      reference_frequency_Hz: reference,
      time_steps: steps,
      dt_s: dt,
    },
    check: makeCheck('membrane_mode_frequency', 'resonant frequency f = (c/2L)√(m²+n²) [Hz]', frequency, reference),
  };
}

function runMaxwell(inputs: MaxwellInputs): SolverOutput {
  const { nx, mode_m: m, e0_V_m: E0, courant: C } = inputs;
  const { dx, dt, steps } = timeGrid(inputs);
  // H is carried as Z0·H (V/m), so both Yee updates have the coefficient C and B = μ0 H = (Z0 H)/c0.
  const E = new Float64Array(nx);
  const H = new Float64Array(nx - 1);
  for (let i = 1; i < nx - 1; i++) E[i] = E0 * Math.sin((m * Math.PI * i) / (nx - 1));
  // Initial H half-step from H⁰ = 0: exact for a discrete standing mode.
  for (let i = 0; i < nx - 1; i++) H[i] = -0.5 * C * (E[i + 1]! - E[i]!);
  const probe = Math.round((nx - 1) / (2 * m));
  const signal = new Float64Array(steps + 1);
  signal[0] = E[probe]!;
  for (let s = 1; s <= steps; s++) {
    for (let i = 1; i < nx - 1; i++) E[i] = E[i]! - C * (H[i]! - H[i - 1]!);
    signal[s] = E[probe]!;
    if (s < steps) for (let i = 0; i < nx - 1; i++) H[i] = H[i]! - C * (E[i + 1]! - E[i]!);
  }
  const { frequency, crossings } = crossingFrequency(signal, dt);
  const reference = referenceFrequency(inputs);
  const x = Array.from({ length: nx }, (_, i) => i * dx);
  const xHalf = Array.from({ length: nx - 1 }, (_, i) => (i + 0.5) * dx);
  const Eout = boundProfile(E);
  const B = Array.from(H, (h) => h / C_LIGHT);
  return {
    mode: 'maxwell',
    value: frequency,
    unit: 'Hz',
    output_class: 'profile',
    rule8: Eout,
    rule8_array: 'E',
    outputs: {
      E: { x_m: boundProfile(x), E_V_m: Eout, t_s: steps * dt },
      B: { x_m: boundProfile(xHalf), B_T: boundProfile(B), t_s: (steps - 0.5) * dt },
      wave_speed_m_s: C_LIGHT,
      periods_measured: crossings - 1,
      reference_frequency_Hz: reference,
      time_steps: steps,
      dt_s: dt,
    },
    check: makeCheck('cavity_mode_frequency', 'resonant frequency f = m c0/2L [Hz]', frequency, reference),
  };
}

const inputs: InputSpec[] = [
  { key: 'mode', unit: '', default: 'membrane', range: 'membrane, maxwell' },
  { key: 'side_m', unit: 'm', default: 1.0, range: '1e-3 … 100 (membrane)' },
  { key: 'tension_N_m', unit: 'N/m', default: 100, range: '1e-6 … 1e9 (membrane)' },
  { key: 'areal_density_kg_m2', unit: 'kg/m²', default: 0.1, range: '1e-8 … 1e4 (membrane)' },
  { key: 'length_m', unit: 'm', default: 1.0, range: '1e-6 … 1e4 (maxwell)' },
  { key: 'mode_m', unit: '1', default: 1, range: '1 … 10' },
  { key: 'mode_n', unit: '1', default: 1, range: '1 … 10 (membrane)' },
  { key: 'nx', unit: '1', default: '61 (membrane), 201 (maxwell)', range: '21 … 301 (membrane), 21 … 20001 (maxwell)' },
  { key: 'courant', unit: '1', default: 0.5, range: '0.05 … 0.7 (membrane), 0.05 … 1.0 (maxwell)' },
  { key: 'periods', unit: '1', default: 5, range: '2 … 50' },
  { key: 'amplitude_m', unit: 'm', default: 1e-3, range: '1e-15 ≤ |A| ≤ 100, either sign (membrane)' },
  { key: 'e0_V_m', unit: 'V/m', default: 1.0, range: '1e-12 ≤ |E0| ≤ 1e18, either sign (maxwell)' },
];

export const wave: SolverDef<WaveInputs> = {
  id: 'wave',
  kind: 'wave equation: 2-D membrane, 1-D Maxwell cavity',
  endpoint: '/api/svc/wave',
  catalogue: true,
  modes: ['membrane', 'maxwell'],
  stateful: false,
  inputs,
  schema,
  resolve,
  run: (inputs) => (inputs.mode === 'membrane' ? runMembrane(inputs) : runMaxwell(inputs)),
};

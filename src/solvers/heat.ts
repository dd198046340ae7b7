// heat — heat diffusion on a 1-D rod or a 2-D square plate (solvers.md §3.3).
// θ = T − boundary_K obeys θ_t = α∇²θ with θ = 0 on the boundary. Explicit FTCS at Fourier number r (default 1/6,
// which cancels the scheme's leading truncation error); 2-D is locally one-dimensional splitting (x sweep, then y
// sweep, each the 1-D update at r). The check compares the centre excess with the separation-of-variables series.
import { z } from 'zod';
import { InputError } from './errors.js';
import type { Check, InputSpec, SolverDef, SolverOutput } from './types.js';
import { boundField, boundProfile, checkWorkLimit, makeCheck, numIn, parseInputs, positive, refuseCheck, strideIndices } from './util.js';

export interface HeatInputs extends Record<string, unknown> {
  mode: '1d' | '2d';
  length_m: number;
  diffusivity_m2_s: number;
  t_end_s: number;
  boundary_K: number;
  amplitude_K: number;
  initial: 'sine' | 'uniform';
  nx: number;
  fourier_number: number;
}

const WORK_LIMIT = 2e8;
const NX_MAX = { '1d': 1001, '2d': 201 } as const;
const NX_DEFAULT = { '1d': 101, '2d': 51 } as const;

const schema = z.strictObject({
  mode: z.enum(['1d', '2d']).optional(),
  length_m: numIn(1e-4, 10).optional(),
  diffusivity_m2_s: numIn(1e-9, 1e-2).optional(),
  t_end_s: positive().optional(),
  boundary_K: numIn(0, 5000).optional(),
  // A subnormal amplitude "decayed below double precision" at once (a 422 that blamed t_end_s): at least 1 µK.
  amplitude_K: numIn(-1000, 1000)
    .refine((a) => Math.abs(a) >= 1e-6, 'magnitude must be 1e-6 … 1000 K (either sign)')
    .optional(),
  initial: z.enum(['sine', 'uniform']).optional(),
  nx: z.number().int().min(11).max(1001).optional(),
  fourier_number: numIn(0.01, 0.5).optional(),
});

/** Time steps of the run: dt = t_end / ceil(t_end / (r dx² / α)). */
function stepCount(inputs: HeatInputs): number {
  const dx = inputs.length_m / (inputs.nx - 1);
  return Math.max(1, Math.ceil(inputs.t_end_s / ((inputs.fourier_number * dx * dx) / inputs.diffusivity_m2_s)));
}

function resolve(raw: unknown): HeatInputs {
  const p = parseInputs(schema, raw);
  const mode = p.mode ?? '1d';
  const nx = p.nx ?? NX_DEFAULT[mode];
  if (nx > NX_MAX[mode]) throw new InputError('nx', `nx must be ≤ ${NX_MAX[mode]} in mode ${mode}`, { min: 11, max: NX_MAX[mode], odd: true });
  if (nx % 2 === 0) throw new InputError('nx', 'nx must be odd (the centre must be a node)', { min: 11, max: NX_MAX[mode], odd: true });
  const inputs: HeatInputs = {
    mode,
    length_m: p.length_m ?? 0.1,
    diffusivity_m2_s: p.diffusivity_m2_s ?? 1.11e-4,
    t_end_s: p.t_end_s ?? 10,
    boundary_K: p.boundary_K ?? 300,
    amplitude_K: p.amplitude_K ?? 50,
    initial: p.initial ?? 'sine',
    nx,
    fourier_number: p.fourier_number ?? 1 / 6,
  };
  // The profile's coldest point is boundary_K + A (A < 0): an absolute temperature below 0 K is no state at all.
  if (inputs.boundary_K + Math.min(0, inputs.amplitude_K) < 0)
    throw new InputError('amplitude_K', `boundary_K + amplitude_K = ${inputs.boundary_K + inputs.amplitude_K} K: a temperature below 0 K`, {
      min: -inputs.boundary_K,
      max: 1000,
    });
  const dims = mode === '1d' ? 1 : 2;
  checkWorkLimit('t_end_s', Math.pow(nx, dims) * stepCount(inputs), WORK_LIMIT);
  return inputs;
}

/** The 1-D initial excess profile divided by A: sine mode, or 1 inside with A/2 on the boundary nodes (uniform). */
function initialProfile(initial: 'sine' | 'uniform', nx: number): Float64Array {
  const f = new Float64Array(nx);
  for (let i = 0; i < nx; i++) f[i] = initial === 'sine' ? Math.sin((Math.PI * i) / (nx - 1)) : 1;
  if (initial === 'sine') {
    f[0] = 0;
    f[nx - 1] = 0;
  } else {
    // The mean of the jump: without it the boundary error is first order.
    f[0] = 0.5;
    f[nx - 1] = 0.5;
  }
  return f;
}

/** One FTCS step of a line in place (scratch holds the old values); Dirichlet θ = 0 at both ends afterwards. */
function ftcsLine(theta: Float64Array, old: Float64Array, offset: number, stride: number, n: number, r: number): void {
  for (let i = 0; i < n; i++) old[i] = theta[offset + i * stride]!;
  for (let i = 1; i < n - 1; i++) theta[offset + i * stride] = old[i]! + r * (old[i - 1]! - 2 * old[i]! + old[i + 1]!);
  theta[offset] = 0;
  theta[offset + (n - 1) * stride] = 0;
}

/**
 * Centre value / A of the 1-D series for a uniform start: (4/π) Σ_{n odd} (1/n) sin(nπ/2) e^(−α(nπ/L)²t), summed
 * until a term is < 1e-18. The series alternates with decreasing terms; at very small t the sum is cut after
 * 2e6 terms and half the next term is added (the alternating-series average), which is accurate far below the gate.
 */
export function uniformCentreFactor(alpha: number, length: number, t: number): number {
  const a = (alpha * Math.PI * Math.PI * t) / (length * length);
  const maxTerms = 2_000_000;
  let sum = 0;
  for (let k = 0; k < maxTerms; k++) {
    const n = 2 * k + 1;
    const term = ((k % 2 === 0 ? 4 : -4) / (Math.PI * n)) * Math.exp(-a * n * n);
    sum += term;
    if (Math.abs(term) < 1e-18) return sum;
  }
  const n = 2 * maxTerms + 1;
  return sum + 0.5 * ((maxTerms % 2 === 0 ? 4 : -4) / (Math.PI * n)) * Math.exp(-a * n * n);
}

/** Centre value / A of the 1-D separation-of-variables solution. */
function centreFactor1d(inputs: HeatInputs): number {
  const { diffusivity_m2_s: alpha, length_m: L, t_end_s: t } = inputs;
  return inputs.initial === 'sine' ? Math.exp((-alpha * Math.PI * Math.PI * t) / (L * L)) : uniformCentreFactor(alpha, L, t);
}

function run(inputs: HeatInputs): SolverOutput {
  const { nx, length_m: L, amplitude_K: A, boundary_K: Tb } = inputs;
  const dx = L / (nx - 1);
  const steps = stepCount(inputs);
  const dt = inputs.t_end_s / steps;
  const r = (inputs.diffusivity_m2_s * dt) / (dx * dx);
  const profile = initialProfile(inputs.initial, nx);
  const scratch = new Float64Array(nx);
  const centre = (nx - 1) / 2;
  const dims = inputs.mode === '1d' ? 1 : 2;

  let theta: Float64Array;
  if (dims === 1) {
    theta = new Float64Array(nx);
    for (let i = 0; i < nx; i++) theta[i] = A * profile[i]!;
    for (let s = 0; s < steps; s++) ftcsLine(theta, scratch, 0, 1, nx, r);
  } else {
    // Tensor-product start (edges A/2, corners A/4 for `uniform`: the mean of the jump at each boundary node), so the
    // split x/y sweeps evolve it as the product of two 1-D solutions, like the exact solution.
    theta = new Float64Array(nx * nx);
    for (let j = 0; j < nx; j++) for (let i = 0; i < nx; i++) theta[j * nx + i] = A * profile[j]! * profile[i]!;
    for (let s = 0; s < steps; s++) {
      for (let j = 0; j < nx; j++) ftcsLine(theta, scratch, j * nx, 1, nx, r);
      for (let i = 0; i < nx; i++) ftcsLine(theta, scratch, i, nx, nx, r);
    }
  }

  const excess = dims === 1 ? theta[centre]! : theta[centre * nx + centre]!;
  const reference = A * Math.pow(centreFactor1d(inputs), dims);
  let check: Check = makeCheck('fourier_series_centre', 'centre excess temperature θ_c [K]', excess, reference);
  if (!(Math.abs(reference) > 1e-300)) {
    check = refuseCheck(check, 'the centre excess has decayed below double precision: lower t_end_s');
  }

  const x = Array.from({ length: nx }, (_, i) => i * dx);
  let outputs: Record<string, unknown>;
  let rule8: number[] | number[][];
  if (dims === 1) {
    const T = Array.from(theta, (th) => Tb + th);
    const TK = boundProfile(T);
    outputs = { temperature: { x_m: boundProfile(x), T_K: TK }, excess_K: excess };
    rule8 = TK;
  } else {
    const rows: number[][] = [];
    for (let j = 0; j < nx; j++) rows.push(Array.from(theta.subarray(j * nx, (j + 1) * nx), (th) => Tb + th));
    const TK = boundField(rows);
    const sampled = strideIndices(nx, 64).map((i) => i * dx);
    outputs = { temperature: { dx_m: dx, x_m: sampled, y_m: sampled, T_K: TK }, excess_K: excess };
    rule8 = TK;
  }
  outputs.time_steps = steps;
  outputs.dt_s = dt;
  outputs.fourier_number_used = r;

  return {
    mode: inputs.mode,
    value: Tb + excess,
    unit: 'K',
    output_class: dims === 1 ? 'profile' : 'field',
    rule8,
    rule8_array: 'temperature',
    outputs,
    check,
  };
}

const inputs: InputSpec[] = [
  { key: 'mode', unit: '', default: '1d', range: '1d, 2d' },
  { key: 'length_m', unit: 'm', default: 0.1, range: '1e-4 … 10 (square side in 2-D)' },
  { key: 'diffusivity_m2_s', unit: 'm²/s', default: 1.11e-4, range: '1e-9 … 1e-2' },
  { key: 't_end_s', unit: 's', default: 10, range: '> 0' },
  { key: 'boundary_K', unit: 'K', default: 300, range: '0 … 5000' },
  { key: 'amplitude_K', unit: 'K', default: 50, range: '1e-6 ≤ |A| ≤ 1000, either sign; boundary_K + A ≥ 0' },
  { key: 'initial', unit: '', default: 'sine', range: 'sine, uniform' },
  { key: 'nx', unit: '1', default: '101 (1d), 51 (2d)', range: '11 … 1001 (1d), 11 … 201 (2d), odd' },
  { key: 'fourier_number', unit: '1', default: 1 / 6, range: '0.01 … 0.5' },
];

export const heat: SolverDef<HeatInputs> = {
  id: 'heat',
  kind: 'heat diffusion (1-D rod, 2-D plate)',
  endpoint: '/api/svc/heat',
  catalogue: true,
  modes: ['1d', '2d'],
  stateful: false,
  inputs,
  schema,
  resolve,
  run,
};

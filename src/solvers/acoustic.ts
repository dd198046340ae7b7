// acoustic (solvers.md §4.5): resonances of a cylinder or cone from the Webster horn equation, vertex
// finite volumes (stiffness Σ S_{i+½}(Δp)²/h, lumped mass S_i h), symmetrized with M^(−½); the k-th
// eigenvalue by Sturm bisection. Checked against the closed forms, or for the cone closed at its narrow
// end against the roots of tan(kL) = −k x1 (grid bracketing, then Brent).
import { z } from 'zod';
import { InputError } from './errors.js';
import type { InputSpec, SolverDef, SolverOutput } from './types.js';
import { boundProfile, boundSpectrum, intIn, makeCheck, numIn, parseInputs } from './util.js';
import { kthEigenvalue, offDiagonalSquares, tridiagonalEigenvector, type SymTridiagonal } from '../numerics/sturm.js';
import { brent } from '../numerics/roots.js';

const SHAPES = ['cylinder', 'cone'] as const;
const ENDS = ['closed-open', 'open-open', 'closed-closed'] as const;
type Shape = (typeof SHAPES)[number];
type Ends = (typeof ENDS)[number];
const RESONANCE_COUNT = 10;

export interface AcousticInputs extends Record<string, unknown> {
  shape: Shape;
  length_m: number;
  radius_m?: number;
  radius_small_m?: number;
  radius_large_m?: number;
  ends: Ends;
  sound_speed_m_s: number;
  mode: number;
  cells: number;
}

const common = {
  shape: z.enum(SHAPES).optional(),
  length_m: numIn(0.01, 100).optional(),
  ends: z.enum(ENDS).optional(),
  sound_speed_m_s: numIn(1, 10_000).optional(),
  mode: intIn(1, 20).optional(),
  cells: intIn(100, 100_000).optional(),
};
// A capillary to a 10 m shaft (solvers.md had "> 0"): far below, S = πr² underflowed and the eigenproblem went NaN;
// far above (1e100 m) the areas' ratios overflowed. The cone's radii share the range.
const radius = numIn(1e-6, 10).optional();
const schemas = {
  cylinder: z.object({ ...common, radius_m: radius }).strict(),
  cone: z.object({ ...common, radius_small_m: radius, radius_large_m: radius }).strict(),
} as const;
const shapeSchema = z.object({ shape: z.enum(SHAPES).optional() }).loose();

function resolve(raw: unknown): AcousticInputs {
  const shape: Shape = parseInputs(shapeSchema, raw).shape ?? 'cylinder';
  const p = parseInputs(schemas[shape], raw) as Record<string, number | string | undefined>;
  const out: AcousticInputs = {
    shape,
    length_m: (p.length_m as number | undefined) ?? 0.5,
    ends: (p.ends as Ends | undefined) ?? 'closed-open',
    sound_speed_m_s: (p.sound_speed_m_s as number | undefined) ?? 343,
    mode: (p.mode as number | undefined) ?? 1,
    cells: (p.cells as number | undefined) ?? 1000,
  };
  if (shape === 'cylinder') {
    out.radius_m = (p.radius_m as number | undefined) ?? 0.01;
  } else {
    out.radius_small_m = (p.radius_small_m as number | undefined) ?? 0.002;
    out.radius_large_m = (p.radius_large_m as number | undefined) ?? 0.03;
    if (!(out.radius_small_m < out.radius_large_m)) {
      throw new InputError('radius_small_m', 'the cone needs 0 < radius_small_m < radius_large_m', { max: out.radius_large_m, inclusive: false });
    }
    if (out.ends === 'closed-closed') {
      throw new InputError('ends', 'closed-closed is defined for the cylinder only', ['closed-open', 'open-open']);
    }
  }
  return out;
}

function radiusAt(inp: AcousticInputs, x: number): number {
  if (inp.shape === 'cylinder') return inp.radius_m!;
  return inp.radius_small_m! + ((inp.radius_large_m! - inp.radius_small_m!) * x) / inp.length_m;
}

/** The n-th positive root of sin(kL) + k x1 cos(kL) = 0 (tan(kL) = −k x1), bracketed on a fine k grid. */
function coneRoot(n: number, L: number, x1: number): number {
  const g = (k: number) => Math.sin(k * L) + k * x1 * Math.cos(k * L);
  const dk = Math.PI / (64 * L);
  let found = 0;
  let kPrev = dk;
  let gPrev = g(kPrev);
  for (let j = 2; ; j++) {
    const k = j * dk;
    const gk = g(k);
    if (gk === 0 || gPrev * gk < 0) {
      found++;
      if (found === n) return gk === 0 ? k : brent(g, kPrev, k, 1e-15 * k);
    }
    kPrev = k;
    gPrev = gk;
  }
}

function reference(inp: AcousticInputs): { value: number; name: string } {
  const c = inp.sound_speed_m_s;
  const L = inp.length_m;
  const n = inp.mode;
  if (inp.ends === 'closed-open' && inp.shape === 'cylinder') return { value: ((2 * n - 1) * c) / (4 * L), name: 'quarter-wave (2n − 1)c/4L' };
  if (inp.ends === 'closed-open') {
    const x1 = (L * inp.radius_small_m!) / (inp.radius_large_m! - inp.radius_small_m!);
    return { value: (c * coneRoot(n, L, x1)) / (2 * Math.PI), name: 'cone closed at apex side: tan(kL) = −k x1 (Brent)' };
  }
  return { value: (n * c) / (2 * L), name: 'half-wave nc/2L' };
}

function run(inp: AcousticInputs): SolverOutput {
  const N = inp.cells;
  const L = inp.length_m;
  const h = L / N;
  // Vertex nodes 0 … N at x = ih; narrow end at x = 0. An open end is p = 0: its node is removed.
  const narrowOpen = inp.ends === 'open-open';
  const wideOpen = inp.ends !== 'closed-closed';
  const first = narrowOpen ? 1 : 0;
  const last = wideOpen ? N - 1 : N;
  const n = last - first + 1;
  const edgeArea = new Float64Array(N); // S_{i+½}
  for (let i = 0; i < N; i++) {
    const r = radiusAt(inp, (i + 0.5) * h);
    edgeArea[i] = Math.PI * r * r;
  }
  const mass = new Float64Array(n);
  const diag = new Float64Array(n);
  const off = new Float64Array(Math.max(n - 1, 0));
  for (let j = 0; j < n; j++) {
    const i = first + j;
    const r = radiusAt(inp, i * h);
    mass[j] = Math.PI * r * r * (i === 0 || i === N ? h / 2 : h);
    diag[j] = ((i > 0 ? edgeArea[i - 1]! : 0) + (i < N ? edgeArea[i]! : 0)) / h;
  }
  for (let j = 0; j < n; j++) diag[j] = diag[j]! / mass[j]!;
  for (let j = 0; j < n - 1; j++) off[j] = -edgeArea[first + j]! / h / Math.sqrt(mass[j]! * mass[j + 1]!);
  const matrix: SymTridiagonal = { diag, off };
  const e2 = offDiagonalSquares(matrix);

  // closed-closed: index 0 is the rigid (λ = 0) mode; the mode-th non-zero one is index `mode`.
  const base = inp.ends === 'closed-closed' ? 1 : 0;
  const c = inp.sound_speed_m_s;
  const toHz = (lambda: number) => (c * Math.sqrt(Math.max(lambda, 0))) / (2 * Math.PI);
  const lambdas: number[] = [];
  for (let m = 0; m < RESONANCE_COUNT; m++) lambdas.push(kthEigenvalue(matrix, base + m, 1e-14, e2));
  const resonances = lambdas.map(toHz);
  const lambdaMode = inp.mode <= RESONANCE_COUNT ? lambdas[inp.mode - 1]! : kthEigenvalue(matrix, base + inp.mode - 1, 1e-14, e2);
  const frequency = toHz(lambdaMode);

  const y = tridiagonalEigenvector(matrix, lambdaMode);
  const pressure = new Float64Array(N + 1);
  let peak = 0;
  for (let j = 0; j < n; j++) {
    pressure[first + j] = y[j]! / Math.sqrt(mass[j]!);
    if (Math.abs(pressure[first + j]!) > Math.abs(peak)) peak = pressure[first + j]!;
  }
  for (let i = 0; i <= N; i++) pressure[i] = pressure[i]! / peak + 0; // + 0 turns −0 into 0
  const x = new Float64Array(N + 1);
  for (let i = 0; i <= N; i++) x[i] = i * h;

  const ref = reference(inp);
  const check = makeCheck(ref.name, `f_${inp.mode}`, frequency, ref.value);
  const spectrum = boundSpectrum(resonances);
  return {
    mode: inp.shape,
    value: frequency,
    unit: 'Hz',
    output_class: 'spectrum',
    rule8: spectrum,
    rule8_array: 'resonances',
    outputs: {
      resonances: spectrum,
      resonance_index: spectrum.map((_, i) => i + 1),
      pressure_mode: boundProfile(pressure),
      x_m: boundProfile(x),
      cell_width_m: h,
    },
    check,
  };
}

const inputs: InputSpec[] = [
  { key: 'shape', unit: '', default: 'cylinder', range: 'cylinder | cone' },
  { key: 'length_m', unit: 'm', default: 0.5, range: '0.01 … 100' },
  { key: 'radius_m', unit: 'm', default: 0.01, range: '1e-6 … 10 (cylinder)' },
  { key: 'radius_small_m', unit: 'm', default: 0.002, range: '1e-6 … 10, < radius_large_m (cone)' },
  { key: 'radius_large_m', unit: 'm', default: 0.03, range: '1e-6 … 10, > radius_small_m (cone)' },
  { key: 'ends', unit: '', default: 'closed-open', range: 'closed-open | open-open | closed-closed (cylinder only); narrow end first' },
  { key: 'sound_speed_m_s', unit: 'm/s', default: 343, range: '1 … 10000' },
  { key: 'mode', unit: '1', default: 1, range: '1 … 20' },
  { key: 'cells', unit: '1', default: 1000, range: '100 … 100000' },
];

export const acoustic: SolverDef<AcousticInputs> = {
  id: 'acoustic',
  kind: 'acoustic resonator (Webster horn equation)',
  endpoint: null,
  catalogue: true,
  modes: [...SHAPES],
  stateful: false,
  inputs,
  schema: z.union([schemas.cylinder, schemas.cone]),
  resolve,
  run: (inp) => run(inp),
};

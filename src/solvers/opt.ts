// `opt` — optimisation (solvers.md §3.17): chained Rosenbrock, SPD quadratic and a discretised brachistochrone,
// minimised by BFGS (strong-Wolfe line search, analytic gradients) or Nelder–Mead. The check compares with the
// known minimiser, an independent Cholesky solve, or the cycloid descent time.
import { z } from 'zod';
import { bfgs, nelderMead, type MinimizeResult } from '../numerics/optimize.js';
import { cholesky, choleskySolve } from '../numerics/linalg.js';
import { brent } from '../numerics/roots.js';
import { InputError, SolverFailure } from './errors.js';
import type { Check, InputSpec, SolverDef, SolverOutput } from './types.js';
import { checkWorkLimit, makeCheck, num, parseInputs, positive, refuseCheck } from './util.js';

const PROBLEMS = ['rosenbrock', 'quadratic', 'brachistochrone'] as const;
const METHODS = ['bfgs', 'nelder_mead'] as const;
type Problem = (typeof PROBLEMS)[number];
type Method = (typeof METHODS)[number];

const DEFAULT_MATRIX = [
  [4, 1, 0],
  [1, 3, 0.5],
  [0, 0.5, 2],
];
const DEFAULT_VECTOR = [1, 2, 3];
const STANDARD_GRAVITY = 9.80665;
/** Upper bound on dimension² × max_iterations (the BFGS inverse-Hessian update is O(n²) per iteration). */
const WORK_LIMIT = 4e8;

/** Keys each problem accepts besides problem, method, max_iterations and gtol. */
const PROBLEM_KEYS: Record<Problem, readonly string[]> = {
  rosenbrock: ['dimension', 'x0'],
  quadratic: ['matrix', 'vector', 'x0'],
  brachistochrone: ['horizontal_m', 'drop_m', 'gravity_m_s2', 'segments'],
};

const schema = z
  .object({
    problem: z.enum(PROBLEMS).optional(),
    dimension: z.number().int().min(2).max(50).optional(),
    x0: z.array(num()).min(1).max(50).optional(),
    matrix: z.array(z.array(num()).min(1).max(50)).min(1).max(50).optional(),
    vector: z.array(num()).min(1).max(50).optional(),
    horizontal_m: positive().optional(),
    drop_m: positive().optional(),
    gravity_m_s2: positive().optional(),
    segments: z.number().int().min(10).max(400).optional(),
    method: z.enum(METHODS).optional(),
    max_iterations: z.number().int().min(1).max(100_000).optional(),
    gtol: z.number().positive().max(1).optional(),
  })
  .strict();

export interface OptInputs extends Record<string, unknown> {
  problem: Problem;
  method: Method;
  max_iterations: number;
  gtol: number;
  dimension?: number;
  x0?: number[];
  matrix?: number[][];
  vector?: number[];
  horizontal_m?: number;
  drop_m?: number;
  gravity_m_s2?: number;
  segments?: number;
}

const inputs: InputSpec[] = [
  { key: 'problem', unit: '', default: 'rosenbrock', range: 'rosenbrock, quadratic, brachistochrone' },
  { key: 'dimension', unit: '1', default: 2, range: '2 … 50 (rosenbrock)' },
  { key: 'x0', unit: '1', default: '[-1.2, 1, -1.2, 1, …] (rosenbrock), zeros (quadratic)', range: 'length = dimension' },
  { key: 'matrix', unit: '1', default: DEFAULT_MATRIX, range: 'symmetric positive definite, n ≤ 50 (quadratic)' },
  { key: 'vector', unit: '1', default: DEFAULT_VECTOR, range: 'length n (quadratic)' },
  { key: 'horizontal_m', unit: 'm', default: 1, range: '> 0, horizontal_m/drop_m in 0.1 … 10 (brachistochrone)' },
  { key: 'drop_m', unit: 'm', default: 1, range: '> 0 (brachistochrone)' },
  { key: 'gravity_m_s2', unit: 'm/s^2', default: STANDARD_GRAVITY, range: '> 0 (brachistochrone)' },
  { key: 'segments', unit: '1', default: 50, range: '10 … 400 (brachistochrone)' },
  { key: 'method', unit: '', default: 'bfgs', range: 'bfgs, nelder_mead (nelder_mead: rosenbrock and quadratic)' },
  { key: 'max_iterations', unit: '1', default: 10000, range: '1 … 100000; unknowns² × max_iterations ≤ 4e8' },
  {
    key: 'gtol',
    unit: '1',
    default: 1e-10,
    range: '0 < gtol ≤ 1 (stop at ‖∇f‖∞ < gtol; nelder_mead also stops where f can resolve no smaller gradient)',
  },
];

function resolve(raw: unknown): OptInputs {
  const p = parseInputs(schema, raw);
  const problem: Problem = p.problem ?? 'rosenbrock';
  const method: Method = p.method ?? 'bfgs';
  const allowedKeys = new Set(['problem', 'method', 'max_iterations', 'gtol', ...PROBLEM_KEYS[problem]]);
  for (const key of Object.keys(p)) {
    if (!allowedKeys.has(key)) throw new InputError(key, `not used by problem ${problem}`, [...allowedKeys]);
  }
  const out: OptInputs = { problem, method, max_iterations: p.max_iterations ?? 10000, gtol: p.gtol ?? 1e-10 };
  let n: number;
  if (problem === 'rosenbrock') {
    n = p.dimension ?? (p.x0 ? p.x0.length : 2);
    if (n < 2 || n > 50) throw new InputError('dimension', 'must be 2 … 50', { min: 2, max: 50 });
    const x0 = p.x0 ?? Array.from({ length: n }, (_, i) => (i % 2 === 0 ? -1.2 : 1));
    if (x0.length !== n) throw new InputError('x0', `length must equal dimension (${n})`, { length: n });
    out.dimension = n;
    out.x0 = x0;
  } else if (problem === 'quadratic') {
    const A = p.matrix ?? DEFAULT_MATRIX;
    n = A.length;
    for (let i = 0; i < n; i++) {
      if (A[i]!.length !== n) throw new InputError(`matrix.${i}`, `row length must be ${n} (square matrix)`, { length: n });
      for (let j = 0; j < i; j++) {
        if (A[i]![j] !== A[j]![i]) throw new InputError(`matrix.${i}.${j}`, 'matrix must be symmetric', 'symmetric positive definite');
      }
    }
    // A Cholesky factorisation is the SPD test; n ≤ 50 keeps it trivially cheap.
    if (!cholesky(A)) throw new InputError('matrix', 'matrix is not positive definite', 'symmetric positive definite');
    const b = p.vector ?? (p.matrix ? undefined : DEFAULT_VECTOR);
    if (!b) throw new InputError('vector', 'required with a matrix', { length: n });
    if (b.length !== n) throw new InputError('vector', `length must equal the matrix size (${n})`, { length: n });
    const x0 = p.x0 ?? new Array<number>(n).fill(0);
    if (x0.length !== n) throw new InputError('x0', `length must equal the matrix size (${n})`, { length: n });
    out.matrix = A;
    out.vector = b;
    out.x0 = x0;
  } else {
    if (method !== 'bfgs') throw new InputError('method', 'brachistochrone is solved by BFGS only', ['bfgs']);
    const X = p.horizontal_m ?? 1;
    const Y = p.drop_m ?? 1;
    const ratio = X / Y;
    if (!(ratio >= 0.1 && ratio <= 10)) {
      throw new InputError(p.horizontal_m !== undefined ? 'horizontal_m' : 'drop_m', 'horizontal_m / drop_m must be in 0.1 … 10', { min: 0.1, max: 10 });
    }
    const segments = p.segments ?? 50;
    out.horizontal_m = X;
    out.drop_m = Y;
    out.gravity_m_s2 = p.gravity_m_s2 ?? STANDARD_GRAVITY;
    out.segments = segments;
    n = segments - 1;
  }
  checkWorkLimit('max_iterations', n * n * out.max_iterations, WORK_LIMIT);
  // A start where f (or its gradient) overflows has nowhere to descend from: the inputs' fault, not the method's.
  if (out.x0 !== undefined) {
    const x = Float64Array.from(out.x0);
    const g = new Float64Array(x.length);
    const f = problem === 'rosenbrock' ? rosenbrock(x, g) : quadraticObjective(Float64Array.from(out.matrix!.flat()), Float64Array.from(out.vector!))(x, g);
    if (!Number.isFinite(f) || !g.every(Number.isFinite))
      throw new InputError('x0', `f or its gradient is not finite at x0 (f = ${f}): start nearer the minimum`, null);
  }
  return out;
}

/** Chained Rosenbrock f and gradient. */
function rosenbrock(x: Float64Array, g: Float64Array | null): number {
  const n = x.length;
  let f = 0;
  if (g) g.fill(0);
  for (let i = 0; i < n - 1; i++) {
    const xi = x[i]!;
    const a = x[i + 1]! - xi * xi;
    const b = 1 - xi;
    f += 100 * a * a + b * b;
    if (g) {
      g[i] = g[i]! - 400 * xi * a - 2 * b;
      g[i + 1] = g[i + 1]! + 200 * a;
    }
  }
  return f;
}

/** ½xᵀAx − bᵀx and its gradient Ax − b (A as a flat row-major array). */
function quadraticObjective(A: Float64Array, b: Float64Array) {
  const n = b.length;
  return (x: Float64Array, g: Float64Array | null): number => {
    let f = 0;
    for (let i = 0; i < n; i++) {
      let ax = 0;
      const row = i * n;
      for (let j = 0; j < n; j++) ax += A[row + j]! * x[j]!;
      f += x[i]! * (0.5 * ax - b[i]!);
      if (g) g[i] = ax - b[i]!;
    }
    return f;
  };
}

/**
 * Descent time along the polyline through (x_k, y_k), k = 0 … N, with y_0 = 0 and y_N = −Y fixed and
 * y_1 … y_{N−1} the unknowns. Each straight chute takes 2ℓ/(v_a + v_b), v = √(−2g y) (exact under gravity).
 */
function brachistochroneObjective(nodeX: Float64Array, drop: number, gravity: number) {
  const N = nodeX.length - 1;
  const y = new Float64Array(N + 1);
  const v = new Float64Array(N + 1);
  return (heights: Float64Array, g: Float64Array | null): number => {
    y[0] = 0;
    y[N] = -drop;
    for (let k = 1; k < N; k++) y[k] = heights[k - 1]!;
    for (let k = 0; k <= N; k++) v[k] = Math.sqrt(-2 * gravity * y[k]!);
    if (g) g.fill(0);
    let T = 0;
    for (let k = 0; k < N; k++) {
      const dx = nodeX[k + 1]! - nodeX[k]!;
      const dy = y[k + 1]! - y[k]!;
      const len = Math.sqrt(dx * dx + dy * dy);
      const vs = v[k]! + v[k + 1]!;
      T += (2 * len) / vs;
      if (g) {
        // ∂t/∂y_b = 2(dy/ℓ)/vs − 2ℓ/vs² · dv_b/dy_b, with dv/dy = −g/v; symmetric for y_a.
        const dLen = (2 * dy) / (len * vs);
        const dV = (2 * len) / (vs * vs);
        if (k + 1 < N) g[k] = g[k]! + dLen + (dV * gravity) / v[k + 1]!;
        if (k > 0) g[k - 1] = g[k - 1]! - dLen + (dV * gravity) / v[k]!;
      }
    }
    return T;
  };
}

/**
 * 1/∂²T/∂y_i² at y by central differences of the analytic gradient. The Hessian is tridiagonal (y_i enters
 * two segments), so perturbing every third height at once gives all diagonal entries in 3 × 2 gradient calls.
 * The clustered nodes make the Hessian diagonal span orders of magnitude; starting BFGS from this diagonal
 * instead of the identity cuts its iteration count by an order of magnitude at large N.
 */
function inverseHessianDiagonal(objective: (x: Float64Array, g: Float64Array | null) => number, y: Float64Array): Float64Array {
  const n = y.length;
  const diag = new Float64Array(n);
  const gPlus = new Float64Array(n);
  const gMinus = new Float64Array(n);
  const yPlus = new Float64Array(n);
  const yMinus = new Float64Array(n);
  for (let colour = 0; colour < 3; colour++) {
    yPlus.set(y);
    yMinus.set(y);
    for (let i = colour; i < n; i += 3) {
      // A relative step keeps the perturbed heights negative (feasible).
      const h = 1e-4 * Math.abs(y[i]!);
      yPlus[i] = y[i]! + h;
      yMinus[i] = y[i]! - h;
    }
    objective(yPlus, gPlus);
    objective(yMinus, gMinus);
    for (let i = colour; i < n; i += 3) diag[i] = (gPlus[i]! - gMinus[i]!) / (yPlus[i]! - yMinus[i]!);
  }
  // Fall back to the identity scale when curvature is not positive (never seen on the straight-chute start).
  for (let i = 0; i < n; i++) diag[i] = diag[i]! > 0 && Number.isFinite(diag[i]!) ? 1 / diag[i]! : 1;
  return diag;
}

/** Cycloid descent time from (0,0) to (X, −Y): (θ − sin θ)/(1 − cos θ) = X/Y, R = Y/(1 − cos θ), T = θ√(R/g). */
export function cycloidTime(X: number, Y: number, gravity: number): number {
  const ratio = X / Y;
  const theta = brent((t) => (t - Math.sin(t)) / (1 - Math.cos(t)) - ratio, 1e-6, 2 * Math.PI - 1e-6, 1e-15);
  const R = Y / (1 - Math.cos(theta));
  return theta * Math.sqrt(R / gravity);
}

/** Why a minimisation stopped unconverged, in words (MinimizeResult.reason → message). */
function failureText(reason: string, method: Method, maxIterations: number): string {
  switch (reason) {
    case 'max_iterations':
      return method === 'bfgs'
        ? `‖∇f‖∞ still ≥ gtol after max_iterations = ${maxIterations}; raise max_iterations or gtol`
        : `the simplex had not converged after max_iterations = ${maxIterations}; raise max_iterations`;
    case 'line_search':
      return 'no step along the search direction lowers f (line search failed before ‖∇f‖∞ < gtol)';
    case 'restarts':
      return 'the simplex kept finding lower values after every restart (restart limit reached)';
    case 'non_finite':
      return 'f is not finite at the starting point';
    default:
      return reason;
  }
}

/**
 * Non-convergence before the check: 500 SVC_SOLVER_ERROR (solvers.md §1 and §3.17), with the reason, the method
 * and where the iteration stopped in details.
 */
function fail(problem: string, method: Method, result: MinimizeResult, maxIterations: number): never {
  throw new SolverFailure(`opt (${problem}, ${method}) did not converge: ${failureText(result.reason, method, maxIterations)}`, {
    reason: result.reason,
    method,
    iterations: result.iterations,
    max_iterations: maxIterations,
    function_evaluations: result.evaluations,
    gradient_norm: result.gradientNorm,
    f: result.f,
  });
}

function run(inp: OptInputs): SolverOutput {
  const { problem, method, max_iterations: maxIterations, gtol } = inp;
  let result: MinimizeResult;
  let check: Check;
  let unit = '1';
  const extra: Record<string, unknown> = {};

  if (problem === 'rosenbrock') {
    const x0 = inp.x0!;
    result =
      method === 'bfgs'
        ? bfgs((x, g) => rosenbrock(x, g), x0, { gtol, maxIterations })
        : nelderMead((x) => rosenbrock(x, null), x0, { maxIterations, gtol, gradient: (x, g) => void rosenbrock(x, g) });
    if (!result.converged) fail(problem, method, result, maxIterations);
    // f* = 0, so the check is on the minimiser: the component farthest from 1.
    let worst = 0;
    for (let i = 1; i < result.x.length; i++) if (Math.abs(result.x[i]! - 1) > Math.abs(result.x[worst]! - 1)) worst = i;
    check = makeCheck('known_minimiser', `x_${worst} at the minimiser (x* = 1)`, result.x[worst]!, 1);
  } else if (problem === 'quadratic') {
    const Arows = inp.matrix!;
    const n = Arows.length;
    const A = new Float64Array(n * n);
    for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) A[i * n + j] = Arows[i]![j]!;
    const b = Float64Array.from(inp.vector!);
    const objective = quadraticObjective(A, b);
    result =
      method === 'bfgs'
        ? bfgs((x, g) => objective(x, g), inp.x0!, { gtol, maxIterations })
        : nelderMead((x) => objective(x, null), inp.x0!, { maxIterations, gtol, gradient: (x, g) => void objective(x, g) });
    if (!result.converged) fail(problem, method, result, maxIterations);
    // Independent reference: f* = −½ bᵀA⁻¹b from a Cholesky solve.
    const L = cholesky(Arows);
    if (!L) throw new SolverFailure('matrix lost positive definiteness', {});
    const xStar = choleskySolve(L, inp.vector!);
    let bx = 0;
    for (let i = 0; i < n; i++) bx += inp.vector![i]! * xStar[i]!;
    const fStar = -0.5 * bx;
    check = makeCheck('closed_form_minimum', 'f* = −½ bᵀA⁻¹b', result.f, fStar);
    if (fStar === 0) check = refuseCheck(check, 'b = 0: the minimum f* = 0 has no relative reference');
  } else {
    unit = 's';
    const N = inp.segments!;
    const X = inp.horizontal_m!;
    const Y = inp.drop_m!;
    const gravity = inp.gravity_m_s2!;
    // Nodes clustered at the start, where the optimal curve leaves vertically.
    const nodeX = new Float64Array(N + 1);
    for (let k = 0; k <= N; k++) nodeX[k] = X * (k / N) * (k / N);
    const objective = brachistochroneObjective(nodeX, Y, gravity);
    // Start from the straight chute.
    const start = new Float64Array(N - 1);
    for (let k = 1; k < N; k++) start[k - 1] = (-Y * nodeX[k]!) / X;
    const feasible = (h: Float64Array): boolean => {
      for (let i = 0; i < h.length; i++) if (!(h[i]! < 0)) return false;
      return true;
    };
    const initialInverseHessianDiagonal = inverseHessianDiagonal(objective, start);
    result = bfgs((x, g) => objective(x, g), start, { gtol, maxIterations, feasible, initialInverseHessianDiagonal });
    if (!result.converged) fail(problem, method, result, maxIterations);
    check = makeCheck('cycloid', 'descent time T vs the cycloid θ√(R/g) [s]', result.f, cycloidTime(X, Y, gravity));
    // The axis of `x`: abscissae of the interior nodes y_1 … y_{N−1}.
    extra.node_x_m = Array.from(nodeX.subarray(1, N));
  }

  return {
    mode: problem,
    value: result.f,
    unit,
    output_class: 'scalar',
    rule8: null,
    rule8_array: null,
    outputs: {
      x: Array.from(result.x),
      ...extra,
      iterations: result.iterations,
      function_evaluations: result.evaluations,
      gradient_norm: result.gradientNorm,
    },
    check,
  };
}

export const opt: SolverDef<OptInputs> = {
  id: 'opt',
  kind: 'optimisation',
  endpoint: '/api/svc/opt',
  catalogue: true,
  modes: [...PROBLEMS],
  stateful: false,
  inputs,
  schema,
  resolve,
  run,
};

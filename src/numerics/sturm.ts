// Eigenvalues of a real symmetric tridiagonal matrix by Sturm-sequence bisection, and eigenvectors by
// inverse iteration. Used by quantum_levels (FD Hamiltonian) and acoustic (symmetrized FV Webster operator).

/**
 * A symmetric tridiagonal matrix: `diag` (n entries) and `off` (n − 1 entries, off[i] couples rows i and i+1).
 */
export interface SymTridiagonal {
  diag: Float64Array;
  off: Float64Array;
}

/** Gershgorin bounds [lo, hi] containing every eigenvalue. */
export function gershgorinBounds(m: SymTridiagonal): [number, number] {
  const { diag, off } = m;
  const n = diag.length;
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < n; i++) {
    const r = (i > 0 ? Math.abs(off[i - 1]!) : 0) + (i < n - 1 ? Math.abs(off[i]!) : 0);
    if (diag[i]! - r < lo) lo = diag[i]! - r;
    if (diag[i]! + r > hi) hi = diag[i]! + r;
  }
  return [lo, hi];
}

/**
 * Number of eigenvalues strictly below x: the count of negative pivots of the LDLᵀ factorisation of
 * T − xI (Sylvester's law of inertia). A zero pivot is nudged to a tiny negative-safe value, the usual
 * Sturm-sequence guard.
 */
export function countBelow(m: SymTridiagonal, offSq: Float64Array, x: number, pivotFloor: number): number {
  const { diag } = m;
  const n = diag.length;
  let count = 0;
  let q = diag[0]! - x;
  if (q === 0) q = -pivotFloor;
  if (q < 0) count++;
  for (let i = 1; i < n; i++) {
    q = diag[i]! - x - offSq[i - 1]! / q;
    if (q === 0) q = -pivotFloor;
    if (q < 0) count++;
  }
  return count;
}

/** Squares of the off-diagonal entries (computed once per matrix, shared by all bisections). */
export function offDiagonalSquares(m: SymTridiagonal): Float64Array {
  const e2 = new Float64Array(m.off.length);
  for (let i = 0; i < e2.length; i++) e2[i] = m.off[i]! * m.off[i]!;
  return e2;
}

/**
 * The k-th eigenvalue (k = 0 the smallest) by bisection on the Sturm count, until the bracket is below
 * relTol × max(|lo|, |hi|) (or an absolute floor of relTol × the spectral radius, for eigenvalues at 0).
 */
export function kthEigenvalue(m: SymTridiagonal, k: number, relTol = 1e-14, offSq?: Float64Array): number {
  const n = m.diag.length;
  if (!Number.isInteger(k) || k < 0 || k >= n) throw new RangeError(`kthEigenvalue: k = ${k} outside 0 … ${n - 1}`);
  const e2 = offSq ?? offDiagonalSquares(m);
  let [lo, hi] = gershgorinBounds(m);
  const radius = Math.max(Math.abs(lo), Math.abs(hi));
  lo -= 1e-12 * radius + 1e-300;
  hi += 1e-12 * radius + 1e-300;
  const pivotFloor = Number.EPSILON * Math.max(radius, Number.MIN_VALUE);
  const absFloor = relTol * radius * 1e-3;
  for (let iter = 0; iter < 2000; iter++) {
    const mid = 0.5 * (lo + hi);
    if (mid === lo || mid === hi) break;
    if (hi - lo <= Math.max(relTol * Math.max(Math.abs(lo), Math.abs(hi)), absFloor)) break;
    // k eigenvalues below mid or fewer → the k-th (0-based) is at or above mid.
    if (countBelow(m, e2, mid, pivotFloor) <= k) lo = mid;
    else hi = mid;
  }
  return 0.5 * (lo + hi);
}

/** The eigenvalues with indices 0 … count − 1, ascending. */
export function lowestEigenvalues(m: SymTridiagonal, count: number, relTol = 1e-14): Float64Array {
  const e2 = offDiagonalSquares(m);
  const out = new Float64Array(count);
  for (let k = 0; k < count; k++) out[k] = kthEigenvalue(m, k, relTol, e2);
  return out;
}

/**
 * Eigenvector for an (accurately known) eigenvalue by inverse iteration: three solves of
 * (T − σI) x = x_prev with σ the eigenvalue shifted by a few ulps of the spectral radius so the shifted
 * matrix stays nonsingular. Tridiagonal LU with partial pivoting (the shifted matrix is indefinite).
 * Returned with unit Euclidean norm and a positive largest-magnitude entry.
 */
export function tridiagonalEigenvector(m: SymTridiagonal, lambda: number): Float64Array {
  const { diag, off } = m;
  const n = diag.length;
  const [lo, hi] = gershgorinBounds(m);
  const radius = Math.max(Math.abs(lo), Math.abs(hi), Number.MIN_VALUE);
  const sigma = lambda + 64 * Number.EPSILON * radius;
  // LU with partial pivoting of the tridiagonal T − σI: U has up to two super-diagonals.
  const u0 = new Float64Array(n);
  const u1 = new Float64Array(n);
  const u2 = new Float64Array(n);
  const mult = new Float64Array(n);
  const swapped = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    u0[i] = diag[i]! - sigma;
    u1[i] = i < n - 1 ? off[i]! : 0;
    u2[i] = 0;
  }
  const tiny = Number.EPSILON * radius;
  // Row i currently holds (u0[i], u1[i], u2[i]) at columns (i, i+1, i+2); next row i+1 holds
  // (sub = off[i], diag, super) at columns (i, i+1, i+2).
  let nextSub = n > 1 ? off[0]! : 0;
  for (let i = 0; i < n - 1; i++) {
    const b0 = nextSub;
    let b1 = u0[i + 1]!;
    let b2 = u1[i + 1]!;
    if (Math.abs(b0) > Math.abs(u0[i]!)) {
      // swap rows i and i+1
      const a0 = u0[i]!;
      const a1 = u1[i]!;
      const a2 = u2[i]!;
      u0[i] = b0;
      u1[i] = b1;
      u2[i] = b2;
      b1 = a1;
      b2 = a2;
      swapped[i] = 1;
      const l = a0 / b0;
      mult[i] = l;
      u0[i + 1] = b1 - l * u1[i]!;
      u1[i + 1] = b2 - l * u2[i]!;
    } else {
      if (u0[i] === 0) u0[i] = tiny;
      const l = b0 / u0[i]!;
      mult[i] = l;
      u0[i + 1] = b1 - l * u1[i]!;
      u1[i + 1] = b2 - l * u2[i]!;
    }
    u2[i + 1] = 0;
    nextSub = i + 1 < n - 1 ? off[i + 1]! : 0;
  }
  if (u0[n - 1] === 0) u0[n - 1] = tiny;

  let x = new Float64Array(n).fill(1 / Math.sqrt(n));
  for (let sweep = 0; sweep < 3; sweep++) {
    const y = Float64Array.from(x);
    // forward: apply the row swaps and multipliers
    for (let i = 0; i < n - 1; i++) {
      if (swapped[i]) {
        const t = y[i]!;
        y[i] = y[i + 1]!;
        y[i + 1] = t;
      }
      y[i + 1] = y[i + 1]! - mult[i]! * y[i]!;
    }
    // back substitution with U
    for (let i = n - 1; i >= 0; i--) {
      let s = y[i]!;
      if (i + 1 < n) s -= u1[i]! * y[i + 1]!;
      if (i + 2 < n) s -= u2[i]! * y[i + 2]!;
      y[i] = s / u0[i]!;
    }
    let norm = 0;
    let big = 0;
    for (let i = 0; i < n; i++) {
      norm += y[i]! * y[i]!;
      if (Math.abs(y[i]!) > Math.abs(big)) big = y[i]!;
    }
    const scale = (big < 0 ? -1 : 1) / Math.sqrt(norm);
    for (let i = 0; i < n; i++) y[i] = y[i]! * scale;
    x = y;
  }
  return x;
}

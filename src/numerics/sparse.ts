// Sparse symmetric positive definite systems on structured grids: the 5-point operator of an nx × ny grid
// (row-major, k = j·nx + i), its zero-fill incomplete Cholesky IC(0), and preconditioned conjugate gradients.
// Used by the 2-D device solver's Newton steps.

/**
 * A symmetric 5-point matrix: diagonal `diag[k]`, coupling to the right neighbour `east[k]` (k, k+1) and
 * to the row below `south[k]` (k, k+nx). Entries that would leave the grid must be 0.
 */
export interface Stencil5 {
  nx: number;
  ny: number;
  diag: Float64Array;
  east: Float64Array;
  south: Float64Array;
}

/** y = A x. */
export function stencil5Multiply(A: Stencil5, x: Float64Array, y: Float64Array): void {
  const { nx, ny, diag, east, south } = A;
  const n = nx * ny;
  for (let k = 0; k < n; k++) {
    let s = diag[k]! * x[k]!;
    if (k + 1 < n) s += east[k]! * x[k + 1]!;
    if (k >= 1) s += east[k - 1]! * x[k - 1]!;
    if (k + nx < n) s += south[k]! * x[k + nx]!;
    if (k >= nx) s += south[k - nx]! * x[k - nx]!;
    y[k] = s;
  }
}

/**
 * IC(0) factor of a 5-point matrix: L has the pattern of the lower triangle, so it is stored as its
 * diagonal `d` and the two sub-diagonal couplings `west[k]` = L(k, k−1), `north[k]` = L(k, k−nx).
 */
export interface Stencil5Factor {
  nx: number;
  n: number;
  d: Float64Array;
  west: Float64Array;
  north: Float64Array;
}

/**
 * Zero-fill incomplete Cholesky A ≈ L Lᵀ. For the 5-point pattern no fill couples a row's two lower
 * neighbours, so L(k,k−1) = A(k,k−1)/L(k−1,k−1), L(k,k−nx) = A(k,k−nx)/L(k−nx,k−nx),
 * L(k,k)² = A(k,k) − L(k,k−1)² − L(k,k−nx)². Null when a pivot is not positive (it always is for an M-matrix).
 */
export function stencil5IncompleteCholesky(A: Stencil5, modified = false): Stencil5Factor | null {
  const { nx, ny, diag, east, south } = A;
  const n = nx * ny;
  const d = new Float64Array(n);
  const west = new Float64Array(n);
  const north = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    let pivot = diag[k]!;
    if (k >= 1) {
      const l = east[k - 1]! / d[k - 1]!;
      west[k] = l;
      pivot -= l * l;
      // MIC(0): the dropped fill at (k, k−1+nx) is lumped onto the diagonal (row sums preserved).
      if (modified) pivot -= (east[k - 1]! * south[k - 1]!) / (d[k - 1]! * d[k - 1]!);
    }
    if (k >= nx) {
      const l = south[k - nx]! / d[k - nx]!;
      north[k] = l;
      pivot -= l * l;
      if (modified) pivot -= (south[k - nx]! * east[k - nx]!) / (d[k - nx]! * d[k - nx]!);
    }
    if (!(pivot > 0)) return null;
    d[k] = Math.sqrt(pivot);
  }
  return { nx, n, d, west, north };
}

/** z = (L Lᵀ)⁻¹ r by forward then backward substitution (z may not alias r). */
export function stencil5FactorSolve(F: Stencil5Factor, r: Float64Array, z: Float64Array): void {
  const { nx, n, d, west, north } = F;
  for (let k = 0; k < n; k++) {
    let s = r[k]!;
    if (k >= 1) s -= west[k]! * z[k - 1]!;
    if (k >= nx) s -= north[k]! * z[k - nx]!;
    z[k] = s / d[k]!;
  }
  for (let k = n - 1; k >= 0; k--) {
    let s = z[k]!;
    if (k + 1 < n) s -= west[k + 1]! * z[k + 1]!;
    if (k + nx < n) s -= north[k + nx]! * z[k + nx]!;
    z[k] = s / d[k]!;
  }
}

export interface PcgResult {
  iterations: number;
  relResidual: number;
  converged: boolean;
}

/**
 * Preconditioned conjugate gradients for an SPD operator: solves A x = b in place from the given x, until
 * ‖b − A x‖₂ ≤ relTol ‖b‖₂ or maxIter iterations. `multiply(x, y)` sets y = A x; `precondition(r, z)` sets
 * z = M⁻¹ r.
 */
export function pcg(
  n: number,
  multiply: (x: Float64Array, y: Float64Array) => void,
  b: Float64Array,
  x: Float64Array,
  precondition: (r: Float64Array, z: Float64Array) => void,
  relTol: number,
  maxIter: number,
): PcgResult {
  const r = new Float64Array(n);
  const z = new Float64Array(n);
  const p = new Float64Array(n);
  const q = new Float64Array(n);
  let bNorm = 0;
  for (let i = 0; i < n; i++) bNorm += b[i]! * b[i]!;
  bNorm = Math.sqrt(bNorm);
  if (bNorm === 0) {
    x.fill(0);
    return { iterations: 0, relResidual: 0, converged: true };
  }
  multiply(x, q);
  let rNorm = 0;
  for (let i = 0; i < n; i++) {
    r[i] = b[i]! - q[i]!;
    rNorm += r[i]! * r[i]!;
  }
  rNorm = Math.sqrt(rNorm);
  if (rNorm <= relTol * bNorm) return { iterations: 0, relResidual: rNorm / bNorm, converged: true };
  precondition(r, z);
  let rz = 0;
  for (let i = 0; i < n; i++) {
    p[i] = z[i]!;
    rz += r[i]! * z[i]!;
  }
  for (let it = 1; it <= maxIter; it++) {
    multiply(p, q);
    let pq = 0;
    for (let i = 0; i < n; i++) pq += p[i]! * q[i]!;
    const alpha = rz / pq;
    rNorm = 0;
    for (let i = 0; i < n; i++) {
      x[i] = x[i]! + alpha * p[i]!;
      const ri = r[i]! - alpha * q[i]!;
      r[i] = ri;
      rNorm += ri * ri;
    }
    rNorm = Math.sqrt(rNorm);
    if (rNorm <= relTol * bNorm) return { iterations: it, relResidual: rNorm / bNorm, converged: true };
    precondition(r, z);
    let rzNew = 0;
    for (let i = 0; i < n; i++) rzNew += r[i]! * z[i]!;
    const beta = rzNew / rz;
    rz = rzNew;
    for (let i = 0; i < n; i++) p[i] = z[i]! + beta * p[i]!;
  }
  return { iterations: maxIter, relResidual: rNorm / bNorm, converged: false };
}

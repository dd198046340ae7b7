// Dense and tridiagonal linear algebra shared by solvers and checks. Matrices are arrays of rows.

/**
 * Thomas algorithm for a tridiagonal system: a = sub-diagonal (a[0] unused), b = diagonal,
 * c = super-diagonal (c[n-1] unused), d = right-hand side. Returns x; inputs are not modified.
 */
export function solveTridiagonal(a: ArrayLike<number>, b: ArrayLike<number>, c: ArrayLike<number>, d: ArrayLike<number>): Float64Array {
  const n = b.length;
  const cp = new Float64Array(n);
  const dp = new Float64Array(n);
  const x = new Float64Array(n);
  cp[0] = c[0]! / b[0]!;
  dp[0] = d[0]! / b[0]!;
  for (let i = 1; i < n; i++) {
    const m = b[i]! - a[i]! * cp[i - 1]!;
    cp[i] = i < n - 1 ? c[i]! / m : 0;
    dp[i] = (d[i]! - a[i]! * dp[i - 1]!) / m;
  }
  x[n - 1] = dp[n - 1]!;
  for (let i = n - 2; i >= 0; i--) x[i] = dp[i]! - cp[i]! * x[i + 1]!;
  return x;
}

/** Cholesky factor L (lower, rows) of a symmetric positive definite matrix; null when not SPD. */
export function cholesky(A: readonly (readonly number[])[]): number[][] | null {
  const n = A.length;
  const L: number[][] = Array.from({ length: n }, () => new Array<number>(n).fill(0));
  for (let j = 0; j < n; j++) {
    let s = A[j]![j]!;
    for (let k = 0; k < j; k++) s -= L[j]![k]! * L[j]![k]!;
    if (!(s > 0)) return null;
    const ljj = Math.sqrt(s);
    L[j]![j] = ljj;
    for (let i = j + 1; i < n; i++) {
      let t = A[i]![j]!;
      for (let k = 0; k < j; k++) t -= L[i]![k]! * L[j]![k]!;
      L[i]![j] = t / ljj;
    }
  }
  return L;
}

/** Solve L Lᵀ x = b given the Cholesky factor L. */
export function choleskySolve(L: readonly (readonly number[])[], b: readonly number[]): number[] {
  const n = L.length;
  const y = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    let s = b[i]!;
    for (let k = 0; k < i; k++) s -= L[i]![k]! * y[k]!;
    y[i] = s / L[i]![i]!;
  }
  const x = new Array<number>(n);
  for (let i = n - 1; i >= 0; i--) {
    let s = y[i]!;
    for (let k = i + 1; k < n; k++) s -= L[k]![i]! * x[k]!;
    x[i] = s / L[i]![i]!;
  }
  return x;
}

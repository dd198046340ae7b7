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

// ---- Banded SPD systems and dense symmetric eigenproblems (appended for the structural solvers) ----

/**
 * Banded Cholesky of a symmetric positive definite matrix with half-bandwidth bw, stored lower-banded:
 * entry (i, j), j ≤ i ≤ j + bw, at band[i·(bw+1) + (i−j)]. Returns the factor L in the same layout, or null
 * when the matrix is not positive definite. The input is not modified.
 */
export function bandedCholesky(band: ArrayLike<number>, n: number, bw: number): Float64Array | null {
  const w = bw + 1;
  const L = new Float64Array(n * w);
  for (let i = 0; i < n; i++) {
    const j0 = Math.max(0, i - bw);
    for (let j = j0; j <= i; j++) {
      let s = band[i * w + (i - j)]!;
      for (let k = j0 > j - bw ? j0 : j - bw; k < j; k++) s -= L[i * w + (i - k)]! * L[j * w + (j - k)]!;
      if (i === j) {
        if (!(s > 0)) return null;
        L[i * w] = Math.sqrt(s);
      } else {
        L[i * w + (i - j)] = s / L[j * w]!;
      }
    }
  }
  return L;
}

/** Solve L Lᵀ x = b with the banded Cholesky factor of bandedCholesky. */
export function bandedCholeskySolve(L: ArrayLike<number>, n: number, bw: number, b: ArrayLike<number>): Float64Array {
  const w = bw + 1;
  const x = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let s = b[i]!;
    for (let k = Math.max(0, i - bw); k < i; k++) s -= L[i * w + (i - k)]! * x[k]!;
    x[i] = s / L[i * w]!;
  }
  for (let i = n - 1; i >= 0; i--) {
    let s = x[i]!;
    const kEnd = Math.min(n - 1, i + bw);
    for (let k = i + 1; k <= kEnd; k++) s -= L[k * w + (k - i)]! * x[k]!;
    x[i] = s / L[i * w]!;
  }
  return x;
}

/** y = A x for a symmetric matrix in the lower-banded layout of bandedCholesky. */
export function bandedSymmetricMultiply(band: ArrayLike<number>, n: number, bw: number, x: ArrayLike<number>): Float64Array {
  const w = bw + 1;
  const y = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    y[i]! += band[i * w]! * x[i]!;
    for (let k = Math.max(0, i - bw); k < i; k++) {
      const a = band[i * w + (i - k)]!;
      y[i]! += a * x[k]!;
      y[k]! += a * x[i]!;
    }
  }
  return y;
}

/** √(a² + b²) without overflow, using only IEEE-exact operations (bit-identical on every platform). */
function hypotSafe(a: number, b: number): number {
  const x = Math.abs(a);
  const y = Math.abs(b);
  if (x > y) {
    const r = y / x;
    return x * Math.sqrt(1 + r * r);
  }
  if (y === 0) return 0;
  const r = x / y;
  return y * Math.sqrt(1 + r * r);
}

/** Eigenvalues (ascending) and eigenvectors of a symmetric matrix; vectors[k] is the unit eigenvector of values[k]. */
export interface SymmetricEigen {
  values: Float64Array;
  vectors: Float64Array[];
}

/**
 * All eigenpairs of a dense symmetric matrix (rows): Householder reduction to tridiagonal form, then the implicit
 * QL algorithm with shifts (the EISPACK tred2/tql2 pair). O(n³). The whole matrix is read, so pass a symmetric
 * one. Throws RangeError if QL fails to converge (30 n sweeps).
 */
export function symmetricEigen(A: readonly (readonly number[])[]): SymmetricEigen {
  const n = A.length;
  const V: Float64Array[] = A.map((row) => Float64Array.from(row));
  const d = new Float64Array(n);
  const e = new Float64Array(n);
  if (n === 0) return { values: d, vectors: [] };

  // Householder tridiagonalisation (tred2), accumulating the transformations in V.
  for (let j = 0; j < n; j++) d[j] = V[n - 1]![j]!;
  for (let i = n - 1; i > 0; i--) {
    let scale = 0;
    let h = 0;
    for (let k = 0; k < i; k++) scale += Math.abs(d[k]!);
    if (scale === 0) {
      e[i] = d[i - 1]!;
      for (let j = 0; j < i; j++) {
        d[j] = V[i - 1]![j]!;
        V[i]![j] = 0;
        V[j]![i] = 0;
      }
    } else {
      for (let k = 0; k < i; k++) {
        d[k] = d[k]! / scale;
        h += d[k]! * d[k]!;
      }
      let f = d[i - 1]!;
      let g = Math.sqrt(h);
      if (f > 0) g = -g;
      e[i] = scale * g;
      h -= f * g;
      d[i - 1] = f - g;
      for (let j = 0; j < i; j++) e[j] = 0;
      for (let j = 0; j < i; j++) {
        f = d[j]!;
        V[j]![i] = f;
        g = e[j]! + V[j]![j]! * f;
        for (let k = j + 1; k <= i - 1; k++) {
          g += V[k]![j]! * d[k]!;
          e[k] = e[k]! + V[k]![j]! * f;
        }
        e[j] = g;
      }
      f = 0;
      for (let j = 0; j < i; j++) {
        e[j] = e[j]! / h;
        f += e[j]! * d[j]!;
      }
      const hh = f / (h + h);
      for (let j = 0; j < i; j++) e[j] = e[j]! - hh * d[j]!;
      for (let j = 0; j < i; j++) {
        f = d[j]!;
        g = e[j]!;
        for (let k = j; k <= i - 1; k++) V[k]![j] = V[k]![j]! - (f * e[k]! + g * d[k]!);
        d[j] = V[i - 1]![j]!;
        V[i]![j] = 0;
      }
    }
    d[i] = h;
  }
  for (let i = 0; i < n - 1; i++) {
    V[n - 1]![i] = V[i]![i]!;
    V[i]![i] = 1;
    const h = d[i + 1]!;
    if (h !== 0) {
      for (let k = 0; k <= i; k++) d[k] = V[k]![i + 1]! / h;
      for (let j = 0; j <= i; j++) {
        let g = 0;
        for (let k = 0; k <= i; k++) g += V[k]![i + 1]! * V[k]![j]!;
        for (let k = 0; k <= i; k++) V[k]![j] = V[k]![j]! - g * d[k]!;
      }
    }
    for (let k = 0; k <= i; k++) V[k]![i + 1] = 0;
  }
  for (let j = 0; j < n; j++) {
    d[j] = V[n - 1]![j]!;
    V[n - 1]![j] = 0;
  }
  V[n - 1]![n - 1] = 1;
  e[0] = 0;

  // Implicit QL iterations on the tridiagonal matrix (tql2).
  for (let i = 1; i < n; i++) e[i - 1] = e[i]!;
  e[n - 1] = 0;
  let f = 0;
  let tst1 = 0;
  const eps = Math.pow(2, -52);
  let sweeps = 0;
  for (let l = 0; l < n; l++) {
    tst1 = Math.max(tst1, Math.abs(d[l]!) + Math.abs(e[l]!));
    let m = l;
    while (m < n) {
      if (Math.abs(e[m]!) <= eps * tst1) break;
      m++;
    }
    if (m > l) {
      do {
        if (++sweeps > 30 * n) throw new RangeError('symmetricEigen: QL iteration did not converge');
        let g = d[l]!;
        let p = (d[l + 1]! - g) / (2 * e[l]!);
        let r = hypotSafe(p, 1);
        if (p < 0) r = -r;
        d[l] = e[l]! / (p + r);
        d[l + 1] = e[l]! * (p + r);
        const dl1 = d[l + 1]!;
        let h = g - d[l]!;
        for (let i = l + 2; i < n; i++) d[i] = d[i]! - h;
        f += h;
        p = d[m]!;
        let c = 1;
        let c2 = c;
        let c3 = c;
        const el1 = e[l + 1]!;
        let s = 0;
        let s2 = 0;
        for (let i = m - 1; i >= l; i--) {
          c3 = c2;
          c2 = c;
          s2 = s;
          g = c * e[i]!;
          h = c * p;
          r = hypotSafe(p, e[i]!);
          e[i + 1] = s * r;
          s = e[i]! / r;
          c = p / r;
          p = c * d[i]! - s * g;
          d[i + 1] = h + s * (c * g + s * d[i]!);
          for (let k = 0; k < n; k++) {
            const row = V[k]!;
            h = row[i + 1]!;
            row[i + 1] = s * row[i]! + c * h;
            row[i] = c * row[i]! - s * h;
          }
        }
        p = (-s * s2 * c3 * el1 * e[l]!) / dl1;
        e[l] = s * p;
        d[l] = c * p;
      } while (Math.abs(e[l]!) > eps * tst1);
    }
    d[l] = d[l]! + f;
    e[l] = 0;
  }

  // Ascending order; eigenvector j is column j of V.
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => d[a]! - d[b]! || a - b);
  const values = new Float64Array(n);
  const vectors: Float64Array[] = [];
  for (let k = 0; k < n; k++) {
    const j = order[k]!;
    values[k] = d[j]!;
    const v = new Float64Array(n);
    for (let i = 0; i < n; i++) v[i] = V[i]![j]!;
    vectors.push(v);
  }
  return { values, vectors };
}

/**
 * Generalized symmetric-definite eigenproblem A x = λ B x (B SPD): with B = L Lᵀ (cholesky), the standard problem
 * C y = λ y with C = L⁻¹ A L⁻ᵀ, then x = L⁻ᵀ y. Values ascending; vectors B-orthonormal (xᵀ B x = 1).
 * Returns null when B is not positive definite.
 */
export function generalizedSymmetricEigen(A: readonly (readonly number[])[], B: readonly (readonly number[])[]): SymmetricEigen | null {
  const n = A.length;
  const L = cholesky(B);
  if (L === null) return null;
  // W = L⁻¹ A (column by column forward substitution); then C = L⁻¹ Wᵀ = L⁻¹ A L⁻ᵀ since A is symmetric.
  const forward = (M: Float64Array[]): Float64Array[] => {
    const out: Float64Array[] = Array.from({ length: n }, () => new Float64Array(n));
    for (let col = 0; col < n; col++) {
      for (let i = 0; i < n; i++) {
        let s = M[i]![col]!;
        const Li = L[i]!;
        for (let k = 0; k < i; k++) s -= Li[k]! * out[k]![col]!;
        out[i]![col] = s / Li[i]!;
      }
    }
    return out;
  };
  const W = forward(A.map((row) => Float64Array.from(row)));
  const Wt: Float64Array[] = Array.from({ length: n }, (_, i) => {
    const r = new Float64Array(n);
    for (let j = 0; j < n; j++) r[j] = W[j]![i]!;
    return r;
  });
  const C = forward(Wt);
  const Csym: number[][] = Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => 0.5 * (C[i]![j]! + C[j]![i]!)));
  const eig = symmetricEigen(Csym);
  const vectors = eig.vectors.map((y) => {
    const x = new Float64Array(n);
    for (let i = n - 1; i >= 0; i--) {
      let s = y[i]!;
      for (let k = i + 1; k < n; k++) s -= L[k]![i]! * x[k]!;
      x[i] = s / L[i]![i]!;
    }
    return x;
  });
  return { values: eig.values, vectors };
}

/** Weyl-sequence start vectors: deterministic and generic (not orthogonal to any particular low mode). */
function weylStartVectors(n: number, q: number): Float64Array[] {
  const primes = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71];
  return Array.from({ length: q }, (_, k) => {
    const alpha = Math.sqrt(primes[k % primes.length]!) + Math.floor(k / primes.length);
    const v = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      const t = (i + 1) * alpha;
      v[i] = t - Math.floor(t) - 0.5;
    }
    return v;
  });
}

/**
 * The lowest m eigenpairs of K φ = λ M φ with K and M symmetric positive definite in the lower-banded layout of
 * bandedCholesky, by subspace iteration with q = min(n, max(2m, m + 8)) vectors: X̄ = K⁻¹ M X, then Rayleigh–Ritz on
 * (X̄ᵀ K X̄, X̄ᵀ M X̄) with generalizedSymmetricEigen. Converged when the m Ritz values change by ≤ relTol between
 * sweeps (immediately when q = n: the Ritz step is then exact). Vectors are M-orthonormal.
 * Throws RangeError when K or a projected M is not positive definite or after maxSweeps sweeps.
 */
export function bandedSubspaceEigen(
  K: ArrayLike<number>,
  M: ArrayLike<number>,
  n: number,
  bw: number,
  m: number,
  relTol = 1e-12,
  maxSweeps = 500,
): { values: number[]; vectors: Float64Array[]; sweeps: number } {
  const Lk = bandedCholesky(K, n, bw);
  if (Lk === null) throw new RangeError('bandedSubspaceEigen: K is not positive definite');
  const q = Math.min(n, Math.max(2 * m, m + 8));
  let X = weylStartVectors(n, q);
  let previous: number[] | null = null;
  for (let sweep = 1; sweep <= maxSweeps; sweep++) {
    const Y = X.map((x) => bandedSymmetricMultiply(M, n, bw, x));
    const Xbar = Y.map((y) => bandedCholeskySolve(Lk, n, bw, y));
    const MXbar = Xbar.map((x) => bandedSymmetricMultiply(M, n, bw, x));
    const Kq: number[][] = Array.from({ length: q }, () => new Array<number>(q).fill(0));
    const Mq: number[][] = Array.from({ length: q }, () => new Array<number>(q).fill(0));
    for (let a = 0; a < q; a++) {
      const xa = Xbar[a]!;
      for (let b = 0; b <= a; b++) {
        // K X̄ = M X = Y, so X̄ᵀ K X̄ = X̄ᵀ Y without another product with K.
        let kab = 0;
        let mab = 0;
        const yb = Y[b]!;
        const mb = MXbar[b]!;
        for (let i = 0; i < n; i++) {
          kab += xa[i]! * yb[i]!;
          mab += xa[i]! * mb[i]!;
        }
        Kq[a]![b] = kab;
        Kq[b]![a] = kab;
        Mq[a]![b] = mab;
        Mq[b]![a] = mab;
      }
    }
    const ritz = generalizedSymmetricEigen(Kq, Mq);
    if (ritz === null) throw new RangeError('bandedSubspaceEigen: the subspace lost rank');
    X = ritz.vectors.map((c) => {
      const x = new Float64Array(n);
      for (let a = 0; a < q; a++) {
        const ca = c[a]!;
        const xa = Xbar[a]!;
        for (let i = 0; i < n; i++) x[i]! += ca * xa[i]!;
      }
      return x;
    });
    const values = Array.from(ritz.values.subarray(0, m));
    const prev: number[] | null = previous;
    const converged = q === n || (prev !== null && values.every((v, k) => Math.abs(v - prev[k]!) <= relTol * Math.abs(v)));
    if (converged) return { values, vectors: X.slice(0, m), sweeps: sweep };
    previous = values;
  }
  throw new RangeError(`bandedSubspaceEigen: not converged after ${maxSweeps} sweeps`);
}

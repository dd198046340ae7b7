// Unconstrained minimisation shared by solvers: BFGS with a strong-Wolfe line search (Nocedal & Wright,
// Algorithms 3.5/3.6 and 6.1) and Nelder–Mead with adaptive coefficients (Gao & Han 2012). Pure and deterministic.

/** Objective with gradient: returns f(x) and writes ∇f(x) into grad. */
export type ObjectiveWithGradient = (x: Float64Array, grad: Float64Array) => number;
/** Objective without gradient. */
export type Objective = (x: Float64Array) => number;

export interface MinimizeResult {
  x: Float64Array;
  f: number;
  /** ∇f at x (for Nelder–Mead: the stopping-test gradient when one was given, else empty). */
  gradient: Float64Array;
  /** ‖∇f(x)‖∞ (NaN when no gradient is available). */
  gradientNorm: number;
  iterations: number;
  evaluations: number;
  converged: boolean;
  /** Why the iteration stopped: 'gtol', 'max_iterations', 'max_evaluations', 'line_search', 'simplex', 'stagnated' or 'non_finite'. */
  reason: string;
}

export function normInf(v: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < v.length; i++) {
    const a = Math.abs(v[i]!);
    if (!(a <= m)) m = a;
  }
  return m;
}

function dot(a: Float64Array, b: Float64Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

export interface LineSearchOptions {
  /** Sufficient-decrease constant (Armijo). */
  c1?: number;
  /** Curvature constant of the strong Wolfe condition. */
  c2?: number;
  /** Trial points where this returns false are treated as f = +∞ (the step is halved back into the region). */
  feasible?: (x: Float64Array) => boolean;
  maxEvaluations?: number;
  /**
   * Relative rounding level of f. Where f(x + αp) − f(x) is within noise·|f(x)|, function values no longer
   * decide and the step is judged by the derivative alone (the approximate Wolfe conditions of Hager & Zhang,
   * 2005); near the minimum of a function with f* ≠ 0 this is what lets ‖∇f‖ fall far below √ε.
   */
  noise?: number;
}

export interface LineSearchResult {
  /** Accepted step (0 when no point with sufficient decrease was found). */
  alpha: number;
  f: number;
  /** True when the strong Wolfe conditions hold at alpha; false for a sufficient-decrease-only fallback. */
  wolfe: boolean;
  evaluations: number;
}

/**
 * Strong-Wolfe line search along p from x (f0 = f(x), dphi0 = ∇f(x)·p < 0). On return xNew and gNew hold the
 * accepted point and its gradient (when alpha > 0). Bracketing doubles the step; zoom uses safeguarded cubic
 * interpolation and plain bisection whenever an end of the bracket is infeasible or non-finite.
 */
export function lineSearchStrongWolfe(
  fg: ObjectiveWithGradient,
  x: Float64Array,
  f0: number,
  dphi0: number,
  p: Float64Array,
  xNew: Float64Array,
  gNew: Float64Array,
  alphaInit = 1,
  options: LineSearchOptions = {},
): LineSearchResult {
  const c1 = options.c1 ?? 1e-4;
  const c2 = options.c2 ?? 0.9;
  const feasible = options.feasible;
  const maxEvaluations = options.maxEvaluations ?? 80;
  const noise = (options.noise ?? 1e-12) * Math.abs(f0);
  const n = x.length;
  const xTrial = new Float64Array(n);
  const gTrial = new Float64Array(n);
  let evaluations = 0;

  // Best point seen that satisfies sufficient decrease (fallback when Wolfe cannot be met).
  let bestAlpha = 0;
  let bestF = f0;
  const bestX = new Float64Array(n);
  const bestG = new Float64Array(n);

  let lastPhi = 0;
  let lastDphi = 0;
  const evaluate = (alpha: number): boolean => {
    for (let i = 0; i < n; i++) xTrial[i] = x[i]! + alpha * p[i]!;
    if (feasible && !feasible(xTrial)) {
      lastPhi = Number.POSITIVE_INFINITY;
      lastDphi = Number.NaN;
      return false;
    }
    evaluations++;
    lastPhi = fg(xTrial, gTrial);
    lastDphi = dot(gTrial, p);
    if (!Number.isFinite(lastPhi) || !Number.isFinite(lastDphi)) {
      lastPhi = Number.POSITIVE_INFINITY;
      lastDphi = Number.NaN;
      return false;
    }
    if (lastPhi <= f0 + c1 * alpha * dphi0 && lastPhi < bestF) {
      bestAlpha = alpha;
      bestF = lastPhi;
      bestX.set(xTrial);
      bestG.set(gTrial);
    }
    return true;
  };
  // Sufficient decrease (Armijo), or a value within the rounding level of f(x) (approximate Wolfe).
  const decreased = (alpha: number): boolean => lastPhi <= f0 + c1 * alpha * dphi0 || lastPhi <= f0 + noise;
  // φ above a reference value by more than the rounding level.
  const worse = (phi: number, ref: number): boolean => (noise > 0 ? phi - ref > noise : phi >= ref);
  const accept = (alpha: number): LineSearchResult => {
    xNew.set(xTrial);
    gNew.set(gTrial);
    return { alpha, f: lastPhi, wolfe: true, evaluations };
  };
  const fallback = (): LineSearchResult => {
    if (bestAlpha > 0) {
      xNew.set(bestX);
      gNew.set(bestG);
    }
    return { alpha: bestAlpha, f: bestF, wolfe: false, evaluations };
  };

  const zoom = (aLo: number, phiLo: number, dLo: number, aHi: number, phiHi: number, dHi: number): LineSearchResult => {
    while (evaluations < maxEvaluations) {
      const width = aHi - aLo;
      if (Math.abs(width) <= 1e-16 * Math.max(Math.abs(aLo), Math.abs(aHi))) break;
      let aj = cubicMinimizer(aLo, phiLo, dLo, aHi, phiHi, dHi);
      const lo = Math.min(aLo, aHi) + 0.1 * Math.abs(width);
      const hi = Math.max(aLo, aHi) - 0.1 * Math.abs(width);
      if (!Number.isFinite(aj) || aj < lo || aj > hi) aj = 0.5 * (aLo + aHi);
      const ok = evaluate(aj);
      if (!ok || !decreased(aj) || worse(lastPhi, phiLo)) {
        aHi = aj;
        phiHi = lastPhi;
        dHi = lastDphi;
      } else {
        if (Math.abs(lastDphi) <= -c2 * dphi0) return accept(aj);
        if (lastDphi * (aHi - aLo) >= 0) {
          aHi = aLo;
          phiHi = phiLo;
          dHi = dLo;
        }
        aLo = aj;
        phiLo = lastPhi;
        dLo = lastDphi;
      }
    }
    return fallback();
  };

  let aPrev = 0;
  let phiPrev = f0;
  let dPrev = dphi0;
  let alpha = alphaInit;
  for (let i = 0; evaluations < maxEvaluations && i < 60; i++) {
    const ok = evaluate(alpha);
    if (!ok || !decreased(alpha) || (i > 0 && worse(lastPhi, phiPrev))) {
      return zoom(aPrev, phiPrev, dPrev, alpha, lastPhi, lastDphi);
    }
    if (Math.abs(lastDphi) <= -c2 * dphi0) return accept(alpha);
    if (lastDphi >= 0) return zoom(alpha, lastPhi, lastDphi, aPrev, phiPrev, dPrev);
    aPrev = alpha;
    phiPrev = lastPhi;
    dPrev = lastDphi;
    alpha *= 2;
  }
  return fallback();
}

/** Minimiser of the cubic interpolating φ and φ' at a and b (NaN when it does not exist). */
function cubicMinimizer(a: number, fa: number, da: number, b: number, fb: number, db: number): number {
  if (!Number.isFinite(fa) || !Number.isFinite(fb) || !Number.isFinite(da) || !Number.isFinite(db)) return Number.NaN;
  const d1 = da + db - (3 * (fa - fb)) / (a - b);
  const disc = d1 * d1 - da * db;
  if (!(disc >= 0)) return Number.NaN;
  const d2 = Math.sign(b - a) * Math.sqrt(disc);
  return b - ((b - a) * (db + d2 - d1)) / (db - da + 2 * d2);
}

export interface BfgsOptions {
  gtol: number;
  maxIterations: number;
  /** Points outside the feasible region are rejected by the line search (step halving). */
  feasible?: (x: Float64Array) => boolean;
  c1?: number;
  c2?: number;
  /**
   * Diagonal of the initial inverse Hessian (e.g. 1/∂²f/∂x_i² at x0). Without it H0 = I, rescaled by yᵀs/yᵀy
   * after the first step (Nocedal & Wright eq. 6.20). Badly scaled problems converge in far fewer iterations
   * with it.
   */
  initialInverseHessianDiagonal?: ArrayLike<number>;
  /** Stop (reason 'max_evaluations') once this many objective-with-gradient calls have been made. */
  maxEvaluations?: number;
}

/**
 * BFGS on the inverse Hessian with a strong-Wolfe line search. Stops when ‖∇f‖∞ < gtol (converged), after
 * maxIterations, or when no step with sufficient decrease exists even along −∇f (line_search).
 * The first step is scaled by yᵀs/yᵀy (Nocedal & Wright eq. 6.20); the update is skipped when yᵀs ≤ 0.
 */
export function bfgs(fg: ObjectiveWithGradient, x0: ArrayLike<number>, options: BfgsOptions): MinimizeResult {
  const n = x0.length;
  let x = Float64Array.from(x0);
  let g = new Float64Array(n);
  let xNew = new Float64Array(n);
  let gNew = new Float64Array(n);
  const p = new Float64Array(n);
  const s = new Float64Array(n);
  const y = new Float64Array(n);
  const Hy = new Float64Array(n);
  // H·g for the current gradient, carried through the update so each iteration costs two n² passes, not three.
  const Hg = new Float64Array(n);
  const HgNew = new Float64Array(n);
  const H = new Float64Array(n * n);
  const diag0 = options.initialInverseHessianDiagonal;
  const resetH = (scale: number): void => {
    H.fill(0);
    for (let i = 0; i < n; i++) H[i * n + i] = diag0 ? diag0[i]! : scale;
    for (let i = 0; i < n; i++) Hg[i] = H[i * n + i]! * g[i]!;
  };
  let f = fg(x, g);
  let evaluations = 1;
  resetH(1);
  // A fresh H (identity) is rescaled after its first step; a given diagonal is kept as it is.
  let freshH = !diag0;
  // True while H is the initial matrix (no update since the last reset).
  let initialH = true;
  const lsOptions: LineSearchOptions = { c1: options.c1, c2: options.c2, feasible: options.feasible };
  // With an evaluation budget one line search may use a quarter of it, so the total stays ≤ 1.5 × budget.
  if (options.maxEvaluations !== undefined) lsOptions.maxEvaluations = Math.min(80, Math.max(4, Math.floor(options.maxEvaluations / 4)));
  if (!Number.isFinite(f)) {
    return { x, f, gradient: g, gradientNorm: normInf(g), iterations: 0, evaluations, converged: false, reason: 'non_finite' };
  }

  let iterations = 0;
  let reason = 'max_iterations';
  for (;;) {
    if (normInf(g) < options.gtol) {
      reason = 'gtol';
      break;
    }
    if (iterations >= options.maxIterations) break;
    if (options.maxEvaluations !== undefined && evaluations >= options.maxEvaluations) {
      reason = 'max_evaluations';
      break;
    }

    for (let i = 0; i < n; i++) p[i] = -Hg[i]!;
    let dphi0 = dot(g, p);
    if (!(dphi0 < 0)) {
      resetH(1);
      freshH = !diag0;
      initialH = true;
      for (let i = 0; i < n; i++) p[i] = -Hg[i]!;
      dphi0 = dot(g, p);
    }
    // The unit step is natural for quasi-Newton directions; a fresh steepest-descent direction starts
    // at a step of length 1 in the ∞-norm so badly scaled gradients do not overshoot wildly.
    const alphaInit = freshH ? Math.min(1, 1 / normInf(p)) : 1;
    let ls = lineSearchStrongWolfe(fg, x, f, dphi0, p, xNew, gNew, alphaInit, lsOptions);
    evaluations += ls.evaluations;
    if (ls.alpha === 0 && !initialH) {
      // The quasi-Newton model failed: restart from the initial matrix once.
      resetH(1);
      freshH = !diag0;
      initialH = true;
      for (let i = 0; i < n; i++) p[i] = -Hg[i]!;
      dphi0 = dot(g, p);
      ls = lineSearchStrongWolfe(fg, x, f, dphi0, p, xNew, gNew, freshH ? Math.min(1, 1 / normInf(p)) : 1, lsOptions);
      evaluations += ls.evaluations;
    }
    if (ls.alpha === 0) {
      reason = 'line_search';
      break;
    }
    iterations++;
    for (let i = 0; i < n; i++) {
      s[i] = ls.alpha * p[i]!;
      y[i] = gNew[i]! - g[i]!;
    }
    const ys = dot(y, s);
    const update = ys > 0 && Number.isFinite(ys);
    if (update && freshH) {
      resetH(ys / dot(y, y));
      freshH = false;
    }
    // HgNew = H·gNew (the one full product per iteration); H·y = H·gNew − H·g.
    for (let i = 0; i < n; i++) {
      let acc = 0;
      const row = i * n;
      for (let j = 0; j < n; j++) acc += H[row + j]! * gNew[j]!;
      HgNew[i] = acc;
    }
    if (update) {
      initialH = false;
      for (let i = 0; i < n; i++) Hy[i] = HgNew[i]! - Hg[i]!;
      const rho = 1 / ys;
      const yHy = dot(y, Hy);
      const coef = rho * rho * yHy + rho;
      // H⁺ = H − ρ(H y sᵀ + s yᵀH) + (ρ² yᵀHy + ρ) s sᵀ, and the same applied to gNew.
      for (let i = 0; i < n; i++) {
        const row = i * n;
        const si = s[i]!;
        const hyi = Hy[i]!;
        for (let j = 0; j < n; j++) {
          H[row + j] = H[row + j]! - rho * (hyi * s[j]! + si * Hy[j]!) + coef * si * s[j]!;
        }
      }
      const sg = dot(s, gNew);
      const hyg = dot(Hy, gNew);
      for (let i = 0; i < n; i++) HgNew[i] = HgNew[i]! - rho * (Hy[i]! * sg + s[i]! * hyg) + coef * s[i]! * sg;
    }
    Hg.set(HgNew);
    [x, xNew] = [xNew, x];
    [g, gNew] = [gNew, g];
    f = ls.f;
  }
  return { x, f, gradient: g, gradientNorm: normInf(g), iterations, evaluations, converged: reason === 'gtol', reason };
}

export interface NelderMeadOptions {
  maxIterations: number;
  /** Stopping test ‖∇f(best)‖∞ < gtol when a gradient is given. */
  gradient?: (x: Float64Array, grad: Float64Array) => void;
  gtol?: number;
  /** Without a gradient: stop when the simplex's f spread and diameter fall below these. */
  ftol?: number;
  xtol?: number;
  /** Edge length of the initial simplex (relative to |x_i| where x_i ≠ 0, as in Gao & Han). */
  initialStep?: number;
}

/**
 * Nelder–Mead with the dimension-adaptive coefficients of Gao & Han (2012): reflection 1, expansion 1 + 2/n,
 * contraction 0.75 − 1/(2n), shrink 1 − 1/n. Ties in the ordering keep the earlier vertex (stable sort by
 * index). When the simplex collapses before the gradient test passes it is rebuilt around the best vertex
 * with edges of 10× its last diameter (a restart), which frees it from degenerate directions.
 */
export function nelderMead(f: Objective, x0: ArrayLike<number>, options: NelderMeadOptions): MinimizeResult {
  const n = x0.length;
  const alpha = 1;
  const beta = 1 + 2 / n;
  const gamma = 0.75 - 1 / (2 * n);
  const delta = 1 - 1 / n;
  const verts: Float64Array[] = Array.from({ length: n + 1 }, () => new Float64Array(n));
  const fv = new Float64Array(n + 1);
  const order = Array.from({ length: n + 1 }, (_, i) => i);
  const centroid = new Float64Array(n);
  const xr = new Float64Array(n);
  const xe = new Float64Array(n);
  const xc = new Float64Array(n);
  const grad = new Float64Array(options.gradient ? n : 0);
  let evaluations = 0;
  const evalF = (x: Float64Array): number => {
    evaluations++;
    const v = f(x);
    return Number.isNaN(v) ? Number.POSITIVE_INFINITY : v;
  };

  const build = (base: Float64Array, step: number, relative: boolean): void => {
    verts[0]!.set(base);
    fv[0] = evalF(verts[0]!);
    for (let i = 0; i < n; i++) {
      const v = verts[i + 1]!;
      v.set(base);
      const bi = base[i]!;
      v[i] = relative && bi !== 0 ? bi * (1 + step) : bi + (relative ? 0.00025 : step);
      fv[i + 1] = evalF(v);
    }
  };
  const sortOrder = (): void => {
    for (let i = 0; i <= n; i++) order[i] = i;
    order.sort((a, b) => fv[a]! - fv[b]! || a - b);
  };
  const diameter = (): number => {
    const best = verts[order[0]!]!;
    let d = 0;
    for (let k = 1; k <= n; k++) {
      const v = verts[order[k]!]!;
      for (let i = 0; i < n; i++) d = Math.max(d, Math.abs(v[i]! - best[i]!));
    }
    return d;
  };

  build(Float64Array.from(x0), options.initialStep ?? 0.05, true);
  sortOrder();
  let iterations = 0;
  let reason = 'max_iterations';
  let gradientNorm = Number.NaN;
  let fAtRestart = Number.POSITIVE_INFINITY;
  for (;;) {
    const best = verts[order[0]!]!;
    if (!Number.isFinite(fv[order[0]!]!)) {
      reason = 'non_finite';
      break;
    }
    if (options.gradient) {
      options.gradient(best, grad);
      gradientNorm = normInf(grad);
      if (gradientNorm < (options.gtol ?? 0)) {
        reason = 'gtol';
        break;
      }
    } else {
      const spread = fv[order[n]!]! - fv[order[0]!]!;
      if (spread <= (options.ftol ?? 1e-12) * Math.max(1, Math.abs(fv[order[0]!]!)) && diameter() <= (options.xtol ?? 1e-10)) {
        reason = 'simplex';
        break;
      }
    }
    if (iterations >= options.maxIterations) break;
    iterations++;

    // Collapsed simplex with the gradient test still failing: restart around the best vertex.
    const diam = diameter();
    const scale = Math.max(1, normInf(best));
    if (options.gradient && diam <= 4 * Number.EPSILON * scale) {
      // A restart that found nothing better since the previous one means f cannot resolve further progress.
      if (!(fv[order[0]!]! < fAtRestart)) {
        reason = 'stagnated';
        break;
      }
      fAtRestart = fv[order[0]!]!;
      const base = Float64Array.from(best);
      build(base, Math.max(10 * diam, 64 * Number.EPSILON * scale), false);
      sortOrder();
      continue;
    }

    const worst = order[n]!;
    centroid.fill(0);
    for (let k = 0; k < n; k++) {
      const v = verts[order[k]!]!;
      for (let i = 0; i < n; i++) centroid[i] = centroid[i]! + v[i]! / n;
    }
    const xw = verts[worst]!;
    for (let i = 0; i < n; i++) xr[i] = centroid[i]! + alpha * (centroid[i]! - xw[i]!);
    const fr = evalF(xr);
    const fBest = fv[order[0]!]!;
    const fSecondWorst = fv[order[n - 1]!]!;
    const fWorst = fv[worst]!;
    if (fr < fBest) {
      for (let i = 0; i < n; i++) xe[i] = centroid[i]! + beta * (xr[i]! - centroid[i]!);
      const fe = evalF(xe);
      if (fe < fr) {
        xw.set(xe);
        fv[worst] = fe;
      } else {
        xw.set(xr);
        fv[worst] = fr;
      }
    } else if (fr < fSecondWorst) {
      xw.set(xr);
      fv[worst] = fr;
    } else {
      let shrink = false;
      if (fr < fWorst) {
        for (let i = 0; i < n; i++) xc[i] = centroid[i]! + gamma * (xr[i]! - centroid[i]!);
        const fc = evalF(xc);
        if (fc <= fr) {
          xw.set(xc);
          fv[worst] = fc;
        } else shrink = true;
      } else {
        for (let i = 0; i < n; i++) xc[i] = centroid[i]! - gamma * (xr[i]! - centroid[i]!);
        const fc = evalF(xc);
        if (fc < fWorst) {
          xw.set(xc);
          fv[worst] = fc;
        } else shrink = true;
      }
      if (shrink) {
        const b = verts[order[0]!]!;
        for (let k = 1; k <= n; k++) {
          const idx = order[k]!;
          const v = verts[idx]!;
          for (let i = 0; i < n; i++) v[i] = b[i]! + delta * (v[i]! - b[i]!);
          fv[idx] = evalF(v);
        }
      }
    }
    sortOrder();
  }
  const bestIdx = order[0]!;
  return {
    x: Float64Array.from(verts[bestIdx]!),
    f: fv[bestIdx]!,
    gradient: grad,
    gradientNorm,
    iterations,
    evaluations,
    converged: reason === 'gtol' || reason === 'simplex',
    reason,
  };
}

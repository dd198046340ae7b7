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
  /** Why the iteration stopped: 'gtol', 'max_iterations', 'max_evaluations', 'line_search', 'simplex', 'restarts' or 'non_finite'. */
  reason: string;
  /** Nelder–Mead only: how many times the simplex was rebuilt from a better probe point. */
  restarts?: number;
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
  /** ∇f for the stopping test and the descent probe; without it, central differences of f. */
  gradient?: (x: Float64Array, grad: Float64Array) => void;
  /** Stop as soon as ‖∇f(best vertex)‖∞ < gtol (default 0: never early). */
  gtol?: number;
  /** Own test, part 1: simplex diameter (∞-norm, from the best vertex) ≤ xtol·max(1, ‖x_best‖∞). Default 1e-10. */
  xtol?: number;
  /** Own test, part 2: f_worst − f_best ≤ ftol·|f_best| + fatol. Defaults 8ε and 0. */
  ftol?: number;
  fatol?: number;
  /** Edge of the initial (and every restart) simplex relative to |x_i| (0.00025 where x_i = 0), as in Gao & Han. */
  initialStep?: number;
  /** Most simplex runs (the first plus restarts) before giving up with reason 'restarts'. Default 64. */
  maxRuns?: number;
}

const EPS = Number.EPSILON;

/**
 * Nelder–Mead (contraction rules of Lagarias et al. 1998) with the dimension-adaptive coefficients of
 * Gao & Han (2012) for n ≥ 3 — reflection 1, expansion 1 + 2/n, contraction 0.75 − 1/(2n), shrink 1 − 1/n —
 * and the standard 1, 2, ½, ½ for n ≤ 2. Ties in the ordering keep the earlier vertex (stable sort by index).
 *
 * A run of the simplex ends at its own test (diameter ≤ xtol·max(1, ‖x_best‖∞) and f spread ≤ ftol·|f_best| +
 * fatol, or a simplex collapsed to rounding level), or early when ‖∇f(best)‖∞ < gtol. The best vertex is then
 * certified by probes that look for a lower f than rounding can explain: steps along −∇f from the initial simplex
 * size down to rounding level, and a compass poll x ± h·e_i on dyadic scales h from 2·max(1, ‖x‖∞) down to the
 * initial simplex size. A probe that finds one restarts the simplex (fresh, initial size) from it; none means the
 * point is a minimum to f's resolution (reason 'simplex'). The restarts free the simplex from degenerate
 * shapes (McKinnon 1998) and, through the coarse poll, from some local minima (the chained Rosenbrock's x_1 ≈ −1
 * minimum for n ≥ 5); a restart that cannot improve on its probe point ends the search, so rounding noise cannot
 * keep it going. Without a gradient the early gtol test is skipped and ∇f is estimated only for the probes.
 * Pure and deterministic.
 */
export function nelderMead(f: Objective, x0: ArrayLike<number>, options: NelderMeadOptions): MinimizeResult {
  const s = new NelderMeadSearch(f, x0.length, options);
  const gtol = options.gtol ?? 0;
  s.build(Float64Array.from(x0));
  let iterations = 0;
  let runs = 1;
  let reason = 'max_iterations';
  let gradientNorm = Number.NaN;
  // The best vertex whose gradient was last tested (skip the test while it is unchanged).
  let testedIdx = -1;
  let testedF = Number.NaN;
  // f at the probe point the current run started from (null for the first run).
  let probeF: number | null = null;
  for (;;) {
    const bestIdx = s.order[0]!;
    const best = s.verts[bestIdx]!;
    const fBest = s.fv[bestIdx]!;
    if (!Number.isFinite(fBest)) {
      reason = 'non_finite';
      break;
    }
    if (gtol > 0 && options.gradient && (bestIdx !== testedIdx || !Object.is(fBest, testedF))) {
      testedIdx = bestIdx;
      testedF = fBest;
      gradientNorm = s.gradientAt(best);
      if (gradientNorm < gtol) {
        reason = 'gtol';
        break;
      }
    }
    if (s.runConverged()) {
      // The run's own test passed: certify the best vertex or restart from a better probe point.
      gradientNorm = s.gradientAt(best);
      if (gradientNorm < gtol) {
        reason = 'gtol';
        break;
      }
      // A restart that could not improve on the probe point it started from: what the probe found was rounding.
      const stalled = probeF !== null && !(fBest < probeF - 8 * EPS * Math.abs(probeF));
      const better = stalled ? null : s.certify(best, fBest, gradientNorm);
      if (!better) {
        reason = 'simplex';
        break;
      }
      probeF = s.probeValue;
      if (runs >= s.maxRuns) {
        reason = 'restarts';
        break;
      }
      runs++;
      s.build(Float64Array.from(better));
      testedIdx = -1;
      continue;
    }
    if (iterations >= options.maxIterations) break;
    iterations++;
    s.iterate();
  }
  const bestIdx = s.order[0]!;
  const xBest = Float64Array.from(s.verts[bestIdx]!);
  if (reason === 'max_iterations' || reason === 'restarts') gradientNorm = s.gradientAt(xBest);
  return {
    x: xBest,
    f: s.fv[bestIdx]!,
    gradient: Float64Array.from(s.grad),
    gradientNorm,
    iterations,
    evaluations: s.evaluations,
    converged: reason === 'gtol' || reason === 'simplex',
    reason,
    restarts: runs - 1,
  };
}

/** The simplex of one Nelder–Mead search and its steps: build, order, test, iterate, certify. */
class NelderMeadSearch {
  private readonly n: number;
  private readonly alpha = 1;
  private readonly beta: number;
  private readonly gamma: number;
  private readonly delta: number;
  private readonly xtol: number;
  private readonly ftol: number;
  private readonly fatol: number;
  private readonly step0: number;
  readonly maxRuns: number;
  readonly verts: Float64Array[];
  readonly fv: Float64Array;
  /** Vertex indices, best first. */
  readonly order: number[];
  private readonly centroid: Float64Array;
  private readonly xr: Float64Array;
  private readonly xe: Float64Array;
  private readonly xc: Float64Array;
  private readonly xp: Float64Array;
  readonly grad: Float64Array;
  private readonly probeBest: Float64Array;
  /** The lowest f the last certify found (fb when none was lower). */
  probeValue = Number.NaN;
  evaluations = 0;

  constructor(
    private readonly f: Objective,
    n: number,
    private readonly options: NelderMeadOptions,
  ) {
    this.n = n;
    const adaptive = n >= 3;
    this.beta = adaptive ? 1 + 2 / n : 2;
    this.gamma = adaptive ? 0.75 - 1 / (2 * n) : 0.5;
    this.delta = adaptive ? 1 - 1 / n : 0.5;
    this.xtol = options.xtol ?? 1e-10;
    this.ftol = options.ftol ?? 8 * EPS;
    this.fatol = options.fatol ?? 0;
    this.step0 = options.initialStep ?? 0.05;
    this.maxRuns = options.maxRuns ?? 64;
    this.verts = Array.from({ length: n + 1 }, () => new Float64Array(n));
    this.fv = new Float64Array(n + 1);
    this.order = Array.from({ length: n + 1 }, (_, i) => i);
    this.centroid = new Float64Array(n);
    this.xr = new Float64Array(n);
    this.xe = new Float64Array(n);
    this.xc = new Float64Array(n);
    this.xp = new Float64Array(n);
    this.grad = new Float64Array(n);
    this.probeBest = new Float64Array(n);
  }

  private evalF(x: Float64Array): number {
    this.evaluations++;
    const v = this.f(x);
    return Number.isNaN(v) ? Number.POSITIVE_INFINITY : v;
  }

  /** ∇f into grad: the given gradient, or central differences with h_i = ε^(1/3)·max(1, |x_i|). Returns ‖∇f‖∞. */
  gradientAt(x: Float64Array): number {
    const { n, grad, xp } = this;
    if (this.options.gradient) this.options.gradient(x, grad);
    else {
      xp.set(x);
      for (let i = 0; i < n; i++) {
        const h = Math.cbrt(EPS) * Math.max(1, Math.abs(x[i]!));
        xp[i] = x[i]! + h;
        const hp = xp[i]! - x[i]!;
        const fp = this.evalF(xp);
        xp[i] = x[i]! - h;
        const hm = x[i]! - xp[i]!;
        const fm = this.evalF(xp);
        xp[i] = x[i]!;
        grad[i] = (fp - fm) / (hp + hm);
      }
    }
    return normInf(grad);
  }

  /** A fresh simplex of initial size around `base`, ordered. */
  build(base: Float64Array): void {
    const { n, verts, fv } = this;
    verts[0]!.set(base);
    fv[0] = this.evalF(verts[0]!);
    for (let i = 0; i < n; i++) {
      const v = verts[i + 1]!;
      v.set(base);
      const bi = base[i]!;
      v[i] = bi !== 0 ? bi * (1 + this.step0) : 0.00025;
      fv[i + 1] = this.evalF(v);
    }
    this.sortOrder();
  }

  private sortOrder(): void {
    const { order, fv } = this;
    for (let i = 0; i <= this.n; i++) order[i] = i;
    order.sort((a, b) => fv[a]! - fv[b]! || a - b);
  }

  private diameter(): number {
    const { n, verts, order } = this;
    const best = verts[order[0]!]!;
    let d = 0;
    for (let k = 1; k <= n; k++) {
      const v = verts[order[k]!]!;
      for (let i = 0; i < n; i++) d = Math.max(d, Math.abs(v[i]! - best[i]!));
    }
    return d;
  }

  /** The run's own test: small diameter and f spread, or a simplex collapsed to rounding level. */
  runConverged(): boolean {
    const { n, order, fv } = this;
    const best = this.verts[order[0]!]!;
    const fBest = fv[order[0]!]!;
    const diam = this.diameter();
    const scale = Math.max(1, normInf(best));
    const spread = fv[order[n]!]! - fBest;
    return (diam <= this.xtol * scale && spread <= this.ftol * Math.abs(fBest) + this.fatol) || diam <= 8 * EPS * scale;
  }

  /** One Nelder–Mead step: reflect the worst vertex, then expand, contract or shrink; reorder. */
  iterate(): void {
    const { n, verts, fv, order, centroid, xr, xe, xc } = this;
    const fBest = fv[order[0]!]!;
    const worst = order[n]!;
    centroid.fill(0);
    for (let k = 0; k < n; k++) {
      const v = verts[order[k]!]!;
      for (let i = 0; i < n; i++) centroid[i] = centroid[i]! + v[i]! / n;
    }
    const xw = verts[worst]!;
    for (let i = 0; i < n; i++) xr[i] = centroid[i]! + this.alpha * (centroid[i]! - xw[i]!);
    const fr = this.evalF(xr);
    const fSecondWorst = fv[order[n - 1]!]!;
    const fWorst = fv[worst]!;
    if (fr < fBest) {
      for (let i = 0; i < n; i++) xe[i] = centroid[i]! + this.beta * (xr[i]! - centroid[i]!);
      const fe = this.evalF(xe);
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
        for (let i = 0; i < n; i++) xc[i] = centroid[i]! + this.gamma * (xr[i]! - centroid[i]!);
        const fc = this.evalF(xc);
        if (fc <= fr) {
          xw.set(xc);
          fv[worst] = fc;
        } else shrink = true;
      } else {
        for (let i = 0; i < n; i++) xc[i] = centroid[i]! - this.gamma * (xr[i]! - centroid[i]!);
        const fc = this.evalF(xc);
        if (fc < fWorst) {
          xw.set(xc);
          fv[worst] = fc;
        } else shrink = true;
      }
      if (shrink) this.shrink();
    }
    this.sortOrder();
  }

  private shrink(): void {
    const { n, verts, fv, order } = this;
    const b = verts[order[0]!]!;
    for (let k = 1; k <= n; k++) {
      const idx = order[k]!;
      const v = verts[idx]!;
      for (let i = 0; i < n; i++) v[i] = b[i]! + this.delta * (v[i]! - b[i]!);
      fv[idx] = this.evalF(v);
    }
  }

  /**
   * Probes around the best vertex xb (f = fb, grad = ∇f(xb)). Returns the lowest probe point when it beats fb by
   * more than the rounding level of f, else null.
   */
  certify(xb: Float64Array, fb: number, gInf: number): Float64Array | null {
    const { n, xp, grad, probeBest, step0 } = this;
    const scale = Math.max(1, normInf(xb));
    const eta = 8 * EPS * Math.abs(fb);
    let best = fb;
    let found = false;
    const tryPoint = (): void => {
      const fp = this.evalF(xp);
      if (fp < best) {
        best = fp;
        probeBest.set(xp);
        found = true;
      }
    };
    if (gInf > 0 && Number.isFinite(gInf)) {
      for (let t = step0 * scale; t >= EPS * scale; t *= 0.5) {
        for (let i = 0; i < n; i++) xp[i] = xb[i]! - (t * grad[i]!) / gInf;
        tryPoint();
      }
    }
    for (let h = 2 ** (Math.ceil(Math.log2(scale)) + 1); h >= step0 * scale; h *= 0.5) {
      for (let i = 0; i < n; i++) {
        for (const sign of [1, -1]) {
          xp.set(xb);
          xp[i] = xb[i]! + sign * h;
          tryPoint();
        }
      }
    }
    this.probeValue = best;
    return found && best < fb - eta ? probeBest : null;
  }
}

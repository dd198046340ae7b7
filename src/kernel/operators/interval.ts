// Interval arithmetic with outward rounding: each operation's exact real result lies inside the interval it returns.
// JavaScript has no directed rounding, so every bound is pushed outwards by more than one ulp after the operation
// (more for the library functions, which are faithful but not correctly rounded). Used to evaluate each closed-form
// operator a second way, independently of its implementation (reference.ts). Pure.

export interface Interval {
  lo: number;
  hi: number;
}

/** More than one ulp, relative: x ± |x|·U moves x by at least one representable number. */
const U = 2.3e-16;
/** Library functions (exp, log, sin, cos, sqrt): a few ulps. */
const U_LIB = 4 * U;

const down = (x: number, u = U): number => (Number.isFinite(x) ? x - Math.abs(x) * u : x);
const up = (x: number, u = U): number => (Number.isFinite(x) ? x + Math.abs(x) * u : x);

export const WHOLE: Interval = Object.freeze({ lo: Number.NEGATIVE_INFINITY, hi: Number.POSITIVE_INFINITY });

export function point(x: number): Interval {
  return { lo: x, hi: x };
}

/** A value known to a relative standard uncertainty (a measured constant): [x(1 − u), x(1 + u)], outwards. */
export function withRelativeUncertainty(x: number, u: number): Interval {
  if (u === 0) return point(x);
  return { lo: down(x - Math.abs(x) * u), hi: up(x + Math.abs(x) * u) };
}

function make(lo: number, hi: number, u = U): Interval {
  if (Number.isNaN(lo) || Number.isNaN(hi)) return WHOLE;
  return { lo: down(lo, u), hi: up(hi, u) };
}

export function add(a: Interval, b: Interval): Interval {
  return make(a.lo + b.lo, a.hi + b.hi);
}

export function sub(a: Interval, b: Interval): Interval {
  return make(a.lo - b.hi, a.hi - b.lo);
}

export function neg(a: Interval): Interval {
  return { lo: -a.hi, hi: -a.lo };
}

export function mul(a: Interval, b: Interval): Interval {
  if (a.lo === a.hi && b.lo === b.hi) return make(a.lo * b.lo, a.lo * b.lo);
  const p1 = a.lo * b.lo;
  const p2 = a.lo * b.hi;
  const p3 = a.hi * b.lo;
  const p4 = a.hi * b.hi;
  return make(Math.min(p1, p2, p3, p4), Math.max(p1, p2, p3, p4));
}

/** a / b; a divisor that contains 0 gives the whole line (nothing can be certified). */
export function div(a: Interval, b: Interval): Interval {
  if (b.lo <= 0 && b.hi >= 0) return WHOLE;
  const q1 = a.lo / b.lo;
  const q2 = a.lo / b.hi;
  const q3 = a.hi / b.lo;
  const q4 = a.hi / b.hi;
  return make(Math.min(q1, q2, q3, q4), Math.max(q1, q2, q3, q4));
}

/** a^n for an integer n ≥ 0 (even powers of an interval around 0 start at 0). */
export function powInt(a: Interval, n: number): Interval {
  if (n === 0) return point(1);
  if (n === 1) return a;
  const u = 2 * n * U;
  if (n % 2 === 1 || a.lo >= 0) return make(Math.pow(a.lo, n), Math.pow(a.hi, n), u);
  if (a.hi <= 0) return make(Math.pow(a.hi, n), Math.pow(a.lo, n), u);
  return { lo: 0, hi: up(Math.pow(Math.max(-a.lo, a.hi), n), u) };
}

/** √a; a part below 0 is outside the function's domain: the whole line when all of it is. */
export function sqrt(a: Interval): Interval {
  if (a.hi < 0) return WHOLE;
  return { lo: Math.max(0, down(Math.sqrt(Math.max(0, a.lo)), U_LIB)), hi: up(Math.sqrt(a.hi), U_LIB) };
}

export function exp(a: Interval): Interval {
  return { lo: Math.max(0, down(Math.exp(a.lo), U_LIB)), hi: up(Math.exp(a.hi), U_LIB) };
}

/** ln a (ln 0 = −∞); a part below 0: the whole line. */
export function log(a: Interval): Interval {
  if (a.lo < 0) return WHOLE;
  return make(Math.log(a.lo), Math.log(a.hi), U_LIB);
}

/** ln(1 + a), accurate for small a; a part below −1: the whole line. */
export function log1p(a: Interval): Interval {
  if (a.lo < -1) return WHOLE;
  return make(Math.log1p(a.lo), Math.log1p(a.hi), U_LIB);
}

/** e^a − 1, accurate for small a. */
export function expm1(a: Interval): Interval {
  return { lo: Math.max(-1, down(Math.expm1(a.lo), U_LIB)), hi: up(Math.expm1(a.hi), U_LIB) };
}

/** sin over an interval: the end values, and ±1 where a maximum or minimum lies inside. */
export function sin(a: Interval): Interval {
  if (!(a.hi - a.lo < 2 * Math.PI)) return { lo: -1, hi: 1 };
  let lo = Math.min(Math.sin(a.lo), Math.sin(a.hi));
  let hi = Math.max(Math.sin(a.lo), Math.sin(a.hi));
  // Extrema at π/2 + kπ: k even a maximum, k odd a minimum.
  for (let k = Math.ceil((a.lo - Math.PI / 2) / Math.PI); Math.PI / 2 + k * Math.PI <= a.hi; k++) {
    if (k % 2 === 0) hi = 1;
    else lo = -1;
  }
  const abs = 4e-16;
  return { lo: Math.max(-1, down(lo, U_LIB) - abs), hi: Math.min(1, up(hi, U_LIB) + abs) };
}

export function cos(a: Interval): Interval {
  return sin(add({ lo: a.lo, hi: a.hi }, point(Math.PI / 2)));
}

export function max(a: Interval, b: Interval): Interval {
  return { lo: Math.max(a.lo, b.lo), hi: Math.max(a.hi, b.hi) };
}

export function hull(a: Interval, b: Interval): Interval {
  return { lo: Math.min(a.lo, b.lo), hi: Math.max(a.hi, b.hi) };
}

// ---- the standard normal distribution function, by quadrature ----

/** Nodes and weights of n-point Gauss–Legendre quadrature on [−1, 1], by Newton's method on P_n. */
function gaussLegendre(n: number): { x: number[]; w: number[] } {
  const x: number[] = [];
  const w: number[] = [];
  for (let i = 1; i <= n; i++) {
    let t = Math.cos((Math.PI * (i - 0.25)) / (n + 0.5));
    let dp = 1;
    for (let iteration = 0; iteration < 100; iteration++) {
      let p0 = 1;
      let p1 = t;
      for (let k = 2; k <= n; k++) {
        const p2 = ((2 * k - 1) * t * p1 - (k - 1) * p0) / k;
        p0 = p1;
        p1 = p2;
      }
      dp = (n * (t * p1 - p0)) / (t * t - 1);
      const step = p1 / dp;
      t -= step;
      if (Math.abs(step) < 1e-16) break;
    }
    x.push(t);
    w.push(2 / ((1 - t * t) * dp * dp));
  }
  return { x, w };
}

const GL10 = gaussLegendre(10);

/**
 * ∫_z^∞ e^{−t²} dt for z ≥ 0 by composite 10-point Gauss–Legendre over [z, z + span], where the integrand has fallen
 * below e^{−40} of its value at z; the panels narrow as z grows, since the integrand falls off over ~1/(2z).
 */
function gaussTail(z: number): number {
  const span = Math.min(9, 20 / Math.max(z, 1e-9));
  const h = 0.25 / (1 + z / 8);
  const panels = Math.ceil(span / h);
  const width = span / panels;
  let sum = 0;
  for (let p = 0; p < panels; p++) {
    const mid = z + (p + 0.5) * width;
    for (let i = 0; i < GL10.x.length; i++) {
      const t = mid + 0.5 * width * GL10.x[i]!;
      sum += GL10.w[i]! * Math.exp(-t * t);
    }
  }
  return 0.5 * width * sum;
}

const TWO_OVER_SQRT_PI = 2 / Math.sqrt(Math.PI);

/**
 * Φ(x), the standard normal distribution function, as ½ erfc(−x/√2) with erfc integrated by quadrature: a second
 * evaluation, independent of the series and continued fraction of numerics/special.ts. Relative accuracy ~1e-14.
 */
export function normalCdfByQuadrature(x: number): number {
  const z = -x / Math.SQRT2;
  if (z >= 0) return 0.5 * TWO_OVER_SQRT_PI * gaussTail(z);
  return 1 - 0.5 * TWO_OVER_SQRT_PI * gaussTail(-z);
}

/** Φ over an interval (Φ is increasing), widened by the quadrature's accuracy. */
export function normalCdf(a: Interval): Interval {
  const lo = normalCdfByQuadrature(a.lo);
  const hi = normalCdfByQuadrature(a.hi);
  return { lo: Math.max(0, lo * (1 - 1e-12) - 1e-300), hi: Math.min(1, hi * (1 + 1e-12) + 1e-300) };
}

// Special functions shared by the kernel operators and the solvers. Pure and deterministic.

const INV_SQRT_PI = 0.5641895835477563; // 1/√π

/**
 * Complementary error function, relative accuracy ~1e-15 over the whole line.
 * |x| < 0.5: erfc = 1 − erf with the positive-term series erf(x) = (2/√π) e^{−x²} Σ 2^n x^{2n+1}/(2n+1)!!
 * (no cancellation; erfc ≥ 0.47 there). x ≥ 0.5: Lentz evaluation of the continued fraction
 * erfc(x) = e^{−x²}/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + …)))). x < 0: erfc(x) = 2 − erfc(−x).
 */
export function erfc(x: number): number {
  if (Number.isNaN(x)) return NaN;
  if (x < 0) return 2 - erfc(-x);
  if (x < 0.5) return 1 - erfSeries(x);
  if (x > 27.3) return 0;
  return Math.exp(-x * x) * INV_SQRT_PI * continuedFraction(x);
}

export function erf(x: number): number {
  if (Math.abs(x) < 0.5) return erfSeries(x);
  return 1 - erfc(x);
}

function erfSeries(x: number): number {
  const x2 = x * x;
  let term = x;
  let sum = x;
  for (let n = 1; n < 200; n++) {
    term *= (2 * x2) / (2 * n + 1);
    sum += term;
    if (Math.abs(term) < 1e-17 * Math.abs(sum)) break;
  }
  return 2 * INV_SQRT_PI * Math.exp(-x2) * sum;
}

/** 1/(x + a1/(x + a2/(x + …))) with a_n = n/2, by the modified Lentz method. */
function continuedFraction(x: number): number {
  const tiny = 1e-300;
  let f = x;
  let c = x;
  let d = 0;
  for (let n = 1; n < 5000; n++) {
    const an = n / 2;
    d = x + an * d;
    if (d === 0) d = tiny;
    c = x + an / c;
    if (c === 0) c = tiny;
    d = 1 / d;
    const delta = c * d;
    f *= delta;
    if (Math.abs(delta - 1) < 1e-16) break;
  }
  return 1 / f;
}

/** Standard normal cumulative distribution Φ(x) = ½ erfc(−x/√2), accurate to ~1e-15 relative. */
export function normCdf(x: number): number {
  return 0.5 * erfc(-x / Math.SQRT2);
}

/** Complete elliptic integrals K(k), E(k) (modulus k, 0 ≤ k < 1) by the arithmetic–geometric mean. */
export function ellipticKE(k: number): { K: number; E: number } {
  let a = 1;
  let b = Math.sqrt(1 - k * k);
  let c = k;
  let sum = 0.5 * c * c; // Σ 2^{n−1} c_n², n = 0 term is c0²/2
  let pow = 0.5;
  for (let i = 0; i < 64 && Math.abs(c) > 1e-17; i++) {
    const an = (a + b) / 2;
    const bn = Math.sqrt(a * b);
    c = (a - b) / 2;
    a = an;
    b = bn;
    pow *= 2;
    sum += pow * c * c;
  }
  const K = Math.PI / (2 * a);
  return { K, E: K * (1 - sum) };
}

/** Principal branch W0 of the Lambert W function for x ≥ −1/e, by Halley iteration. */
export function lambertW0(x: number): number {
  const minusInvE = -1 / Math.E;
  if (x < minusInvE) throw new RangeError('lambertW0 needs x >= -1/e');
  if (x === 0) return 0;
  let w: number;
  if (x < -0.3) {
    const p = Math.sqrt(2 * (Math.E * x + 1));
    w = -1 + p - (p * p) / 3 + (11 / 72) * p * p * p;
  } else if (x < 3) {
    w = Math.log1p(x) * (1 - Math.log1p(Math.log1p(x)) / (2 + Math.log1p(x)));
  } else {
    const l1 = Math.log(x);
    const l2 = Math.log(l1);
    w = l1 - l2 + l2 / l1;
  }
  for (let i = 0; i < 50; i++) {
    const ew = Math.exp(w);
    const f = w * ew - x;
    const wp1 = w + 1;
    if (wp1 === 0) break;
    const step = f / (ew * wp1 - ((w + 2) * f) / (2 * wp1));
    w -= step;
    if (Math.abs(step) <= 1e-16 * (1 + Math.abs(w))) break;
  }
  return w;
}

/**
 * Modified Bessel function of the first kind I_n(x) for integer order n (I_{−n} = I_n) and 0 ≤ x ≤ 700, by its
 * power series I_n(x) = Σ_k (x/2)^{2k+n} / (k! (k+n)!). All terms are positive, so there is no cancellation and
 * the sum is accurate to a few ulps; the terms peak near k ≈ x/2, so the cost grows linearly with x.
 */
export function besselI(n: number, x: number): number {
  if (!Number.isInteger(n)) throw new RangeError('besselI needs an integer order');
  if (!(x >= 0 && x <= 700)) throw new RangeError('besselI needs 0 <= x <= 700');
  const order = Math.abs(n);
  const half = x / 2;
  let term = 1; // (x/2)^n / n!
  for (let j = 1; j <= order; j++) term *= half / j;
  if (term === 0) return 0;
  const q = half * half;
  let sum = term;
  for (let k = 1; k < 10_000; k++) {
    term *= q / (k * (k + order));
    sum += term;
    if (term < 1e-17 * sum && k > half) break;
  }
  return sum;
}

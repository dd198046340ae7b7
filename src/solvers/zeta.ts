// `zeta` — nontrivial zeros of ζ(s) on the critical line (solvers.md §3.10 and Appendix A).
// Main method: Euler–Maclaurin ζ(½ + it) → Hardy Z(t), zeros counted between good Gram points and bisected.
// Check: each zero re-located from the Riemann–Siegel formula (a different series for Z), independent of the above.
import { z } from 'zod';
import { lambertW0 } from '../numerics/special.js';
import { bisect } from '../numerics/roots.js';
import { SolverFailure } from './errors.js';
import type { CheckPart, SolverDef, SolverOutput } from './types.js';
import { boundSpectrum, checkPart, combineChecks, intIn, parseInputs, refuseCheck } from './util.js';

const schema = z.strictObject({
  n: intIn(1, 10_000).default(1),
  count: intIn(1, 20).default(1),
});

export type ZetaInputs = z.infer<typeof schema>;

/** Number of Euler–Maclaurin Bernoulli corrections. */
const EM_CORRECTIONS = 12;
/** B_2, B_4, …, B_24. */
const BERNOULLI = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798, -174611 / 330, 854513 / 138, -236364091 / 2730];
/** Samples per Gram interval in the first scan; refined ×4 up to 4⁶ times that before giving up. */
const BASE_SAMPLES = 8;
const MAX_REFINEMENTS = 6;
/** How far (in Gram indices) to look for a good Gram point before giving up. */
const MAX_GRAM_SEARCH = 200;
/** Half-width of the Riemann–Siegel re-location window around each zero. */
const CHECK_WINDOW = 0.05;

/** Riemann–Siegel θ(t) by its asymptotic series (solvers.md §3.10). */
export function riemannSiegelTheta(t: number): number {
  const t2 = t * t;
  const t3 = t2 * t;
  const t5 = t3 * t2;
  const t7 = t5 * t2;
  return (t / 2) * Math.log(t / (2 * Math.PI)) - t / 2 - Math.PI / 8 + 1 / (48 * t) + 7 / (5760 * t3) + 31 / (80640 * t5) + 127 / (430080 * t7);
}

/** θ′(t) from the same series, for Newton steps on Gram points. */
function thetaDerivative(t: number): number {
  const t2 = t * t;
  const t4 = t2 * t2;
  const t6 = t4 * t2;
  const t8 = t6 * t2;
  return 0.5 * Math.log(t / (2 * Math.PI)) - 1 / (48 * t2) - 7 / (1920 * t4) - 31 / (16128 * t6) - 127 / (61440 * t8);
}

/**
 * Hardy Z(t) = e^{iθ(t)} ζ(½ + it) with ζ by Euler–Maclaurin: N = ⌈(t + 2M)/π⌉ + 1 terms, M = 12 corrections:
 * ζ(s) = Σ_{n<N} n^{−s} + N^{1−s}/(s − 1) + ½N^{−s} + Σ_k B_{2k}/(2k)! s(s+1)…(s+2k−2) N^{−s−2k+1}.
 */
export function hardyZEulerMaclaurin(t: number): number {
  const N = Math.ceil((t + 2 * EM_CORRECTIONS) / Math.PI) + 1;
  let re = 0;
  let im = 0;
  for (let n = 1; n < N; n++) {
    const lnN = Math.log(n);
    const mag = 1 / Math.sqrt(n);
    const phase = t * lnN;
    re += mag * Math.cos(phase);
    im -= mag * Math.sin(phase);
  }
  // N^{−s} = N^{−½} e^{−it ln N}.
  const lnN = Math.log(N);
  const nMag = 1 / Math.sqrt(N);
  const nRe = nMag * Math.cos(t * lnN);
  const nIm = -nMag * Math.sin(t * lnN);
  // N^{1−s}/(s − 1) = N · N^{−s} / (−½ + it).
  {
    const numRe = N * nRe;
    const numIm = N * nIm;
    const den = 0.25 + t * t;
    re += (numRe * -0.5 + numIm * t) / den;
    im += (numIm * -0.5 - numRe * t) / den;
  }
  re += 0.5 * nRe;
  im += 0.5 * nIm;
  // Bernoulli corrections: term_k = B_{2k}/(2k)! · P_k · N^{−s}/N^{2k−1}, P_k = s(s+1)…(s+2k−2).
  let pRe = 0.5; // P_1 = s
  let pIm = t;
  let factorial = 2; // (2k)!
  let nPow = N; // N^{2k−1}
  for (let k = 1; k <= EM_CORRECTIONS; k++) {
    const c = BERNOULLI[k - 1]! / (factorial * nPow);
    re += c * (pRe * nRe - pIm * nIm);
    im += c * (pRe * nIm + pIm * nRe);
    // P_{k+1} = P_k (s + 2k − 1)(s + 2k).
    for (const shift of [2 * k - 1, 2 * k]) {
      const aRe = 0.5 + shift;
      const nextRe = pRe * aRe - pIm * t;
      const nextIm = pRe * t + pIm * aRe;
      pRe = nextRe;
      pIm = nextIm;
    }
    factorial *= (2 * k + 1) * (2 * k + 2);
    nPow *= N * N;
  }
  const theta = riemannSiegelTheta(t);
  return Math.cos(theta) * re - Math.sin(theta) * im;
}

/** Appendix A: C0 (even powers of z = 2p − 1) and C1 (odd powers). */
const RS_C0 = [
  0.38268343236508977, 0.43724046807752045, 0.13237657548034352, -0.013605026047674189, -0.013567621970103581, -0.0016237253231444653, 0.00029705353733379691,
  7.9433008795214696e-5, 4.6556124614504505e-7, -1.4327251630955106e-6, -1.0354847112312946e-7, 1.2357927083861738e-8, 1.7881083857954905e-9,
  -3.3914143899270359e-11, -1.6326633902565905e-11, -3.7851093185412204e-13,
];
const RS_C1 = [
  -0.026825102628375347, 0.013784773426351853, 0.038491250482235082, 0.0098710662990620765, -0.0033107597608584043, -0.0014647808577954151,
  -1.3207940624876964e-5, 5.9227487018471413e-5, 5.9802425853734486e-6, -9.6413224561698264e-7, -1.8334733722714412e-7, 4.4670875627178336e-9,
  2.7096350821772743e-9, 7.785288654315851e-11, -2.3437626010893689e-11,
];

/**
 * Hardy Z(t) by the Riemann–Siegel formula with two remainder terms:
 * Z ≈ 2 Σ_{k≤N} k^{−½} cos(θ − t ln k) + (−1)^{N−1} (t/2π)^{−¼} [C0(p) + C1(p)(t/2π)^{−½}].
 */
export function hardyZRiemannSiegel(t: number): number {
  const tau = t / (2 * Math.PI);
  const root = Math.sqrt(tau);
  const N = Math.floor(root);
  const p = root - N;
  const theta = riemannSiegelTheta(t);
  let sum = 0;
  for (let k = 1; k <= N; k++) sum += Math.cos(theta - t * Math.log(k)) / Math.sqrt(k);
  const zz = 2 * p - 1;
  const z2 = zz * zz;
  let c0 = 0;
  for (let i = RS_C0.length - 1; i >= 0; i--) c0 = c0 * z2 + RS_C0[i]!;
  let c1 = 0;
  for (let i = RS_C1.length - 1; i >= 0; i--) c1 = c1 * z2 + RS_C1[i]!;
  c1 *= zz;
  const sign = (N - 1) % 2 === 0 ? 1 : -1;
  return 2 * sum + sign * Math.pow(tau, -0.25) * (c0 + c1 / root);
}

/** Gram point g_k: θ(g_k) = kπ, Newton from g ≈ 2π e^{1 + W((8k+1)/8e)}. */
export function gramPoint(k: number): number {
  let g = 2 * Math.PI * Math.exp(1 + lambertW0((8 * k + 1) / (8 * Math.E)));
  for (let i = 0; i < 50; i++) {
    const step = (riemannSiegelTheta(g) - k * Math.PI) / thetaDerivative(g);
    g -= step;
    if (Math.abs(step) <= 1e-15 * g) break;
  }
  return g;
}

/** A Gram point is good when (−1)^k Z(g_k) > 0. */
function isGoodGram(k: number, g: number): boolean {
  const zg = hardyZEulerMaclaurin(g);
  return (k % 2 === 0 ? zg : -zg) > 0;
}

interface Bracket {
  lo: number;
  hi: number;
}

/** Scan (g_a, g_b) for exactly `expected` sign changes of Z, refining the sampling ×4 when some are missed. */
function scanBlock(gram: number[], expected: number): Bracket[] {
  for (let refinement = 0; refinement <= MAX_REFINEMENTS; refinement++) {
    const perInterval = BASE_SAMPLES * 4 ** refinement;
    const brackets: Bracket[] = [];
    let prevT = gram[0]!;
    let prevPositive = hardyZEulerMaclaurin(prevT) > 0;
    for (let k = 0; k + 1 < gram.length; k++) {
      const g0 = gram[k]!;
      const width = gram[k + 1]! - g0;
      for (let s = 1; s <= perInterval; s++) {
        const tS = s === perInterval ? gram[k + 1]! : g0 + (width * s) / perInterval;
        const positive = hardyZEulerMaclaurin(tS) > 0;
        if (positive !== prevPositive) brackets.push({ lo: prevT, hi: tS });
        prevT = tS;
        prevPositive = positive;
      }
    }
    if (brackets.length === expected) return brackets;
    if (brackets.length > expected) {
      throw new SolverFailure('more sign changes of Z than zeros between good Gram points', {
        expected,
        found: brackets.length,
      });
    }
  }
  throw new SolverFailure('zeros not separated after refining the Gram-block scan 4^6 times', { expected });
}

/** Re-locate a zero with the Riemann–Siegel Z by bisection in t_n ± w, w ≤ 0.05 (shrunk to stay clear of neighbours). */
function riemannSiegelZero(tn: number, halfWidth: number): number | null {
  let w = halfWidth;
  while (w > 1e-9 * tn) {
    const lo = tn - w;
    const hi = tn + w;
    if (hardyZRiemannSiegel(lo) * hardyZRiemannSiegel(hi) < 0) {
      return bisect(hardyZRiemannSiegel, lo, hi, 1e-13 * tn);
    }
    w /= 2;
  }
  return null;
}

export const zeta: SolverDef<ZetaInputs> = {
  id: 'zeta',
  kind: 'zeta zeros',
  endpoint: '/api/svc/zeta',
  catalogue: true,
  modes: null,
  stateful: false,
  inputs: [
    { key: 'n', unit: '1', default: 1, range: '1 … 10000' },
    { key: 'count', unit: '1', default: 1, range: '1 … 20 (zeros n … n+count−1)' },
  ],

  schema,
  resolve(raw: unknown): ZetaInputs {
    // The ranges bound the work (t ≤ 1e4, ≤ 20 zeros): no separate work limit is needed.
    return parseInputs(schema, raw);
  },

  run(inputs: ZetaInputs): SolverOutput {
    const { n, count } = inputs;
    const last = n + count - 1;

    // Nearest good Gram points: a ≤ n − 2 below, b ≥ last − 1 above; g_a has a + 1 zeros below it.
    let a = n - 2;
    let gA = gramPoint(a);
    while (!isGoodGram(a, gA)) {
      if (a <= -1 || n - 2 - a >= MAX_GRAM_SEARCH) throw new SolverFailure('no good Gram point below the zero', { n });
      a -= 1;
      gA = gramPoint(a);
    }
    let b = last - 1;
    let gB = gramPoint(b);
    while (!isGoodGram(b, gB)) {
      if (b - (last - 1) >= MAX_GRAM_SEARCH) throw new SolverFailure('no good Gram point above the zero', { n });
      b += 1;
      gB = gramPoint(b);
    }
    const gram: number[] = [];
    for (let k = a; k <= b; k++) gram.push(k === a ? gA : k === b ? gB : gramPoint(k));

    const brackets = scanBlock(gram, b - a);
    const zeros: number[] = [];
    for (let j = n; j <= last; j++) {
      const br = brackets[j - a - 2]!; // zero j is the (j − a − 1)-th sign change of the block
      zeros.push(bisect(hardyZEulerMaclaurin, br.lo, br.hi, 1e-13 * br.lo));
    }

    // Check: re-locate every zero from Riemann–Siegel, window kept inside half the gap to known neighbours.
    const parts: CheckPart[] = [];
    let failedToBracket: number | null = null;
    for (let i = 0; i < zeros.length; i++) {
      const j = n + i;
      const tn = zeros[i]!;
      let w = CHECK_WINDOW;
      const below = brackets[j - a - 3];
      const above = brackets[j - a - 1];
      if (below) w = Math.min(w, 0.5 * (tn - below.hi));
      if (above) w = Math.min(w, 0.5 * (above.lo - tn));
      const tRS = riemannSiegelZero(tn, w);
      if (tRS === null && failedToBracket === null) failedToBracket = j;
      // No Riemann–Siegel root within ±w: the window edge is a lower bound on the disagreement.
      parts.push(checkPart(`Riemann–Siegel zero #${j}`, `t_${j}`, tn, tRS ?? tn + w));
    }
    let check = combineChecks(parts);
    if (failedToBracket !== null) {
      check = refuseCheck(check, `Riemann–Siegel Z has no sign change near t_${failedToBracket}`);
    }

    const spectrum = boundSpectrum(zeros);
    return {
      mode: null,
      value: zeros[0]!,
      unit: '1',
      output_class: 'spectrum',
      rule8: spectrum,
      rule8_array: 'zeros',
      outputs: {
        zeros: spectrum,
        index: Array.from({ length: count }, (_, i) => n + i),
        gram_block: [a, b],
        gram_points: [gA, gB],
      },
      check,
    };
  },
};

// `gauge` — 2-D compact U(1) lattice gauge theory (solvers.md §3.12): Metropolis in checkerboard order with an
// adaptive stop on the binned standard error; checked against the exact torus partition-function (Bessel) sum.
import { z } from 'zod';
import { besselI } from '../numerics/special.js';
import { rngForInputs, type Xoshiro128 } from './rng.js';
import type { SolverDef, SolverOutput } from './types.js';
import { boundField, checkWorkLimit, intIn, makeCheck, numIn, parseInputs, seedSchema } from './util.js';

/**
 * L² × (therm_sweeps + max_sweeps) limit in link-sweeps: thermalisation sweeps cost as much as measured ones. 2.1e7
 * keeps the largest run near 4 s here and still admits the defaults (32² × 20 200 = 2.07e7).
 */
const WORK_LIMIT = 2.1e7;
/** Adaptive stop: first test after this many measured sweeps, then every STOP_STRIDE sweeps. */
const FIRST_STOP_TEST = 1000;
const STOP_STRIDE = 500;
const BIN_SIZE = 50;
/** Bessel orders −40 … 40 in the torus sum. */
const BESSEL_ORDERS = 40;
const TWO_PI = 2 * Math.PI;

const schema = z.strictObject({
  beta: numIn(2, 20).default(4.0),
  L: intIn(8, 64)
    .refine((v) => v % 2 === 0, 'L must be even (checkerboard on a torus)')
    .default(32),
  therm_sweeps: intIn(0, 5000).default(200),
  max_sweeps: intIn(500, 50_000).default(20_000),
  target_rel_error: numIn(1e-5, 1e-3).default(2.5e-4),
  seed: seedSchema().optional(),
});

export type GaugeInputs = z.infer<typeof schema>;

/**
 * Exact mean plaquette of 2-D U(1) on an L × L torus (V = L² plaquettes):
 * ⟨cos θ_P⟩ = Σ_n I_n(β)^(V−1) I_n′(β) / Σ_n I_n(β)^V, I_n′ = (I_{n−1} + I_{n+1})/2, n = −40 … 40, in log space.
 */
export function torusMeanPlaquette(beta: number, L: number): number {
  const V = L * L;
  const logI: number[] = [];
  for (let n = 0; n <= BESSEL_ORDERS + 1; n++) logI.push(Math.log(besselI(n, beta)));
  const logNum: number[] = [];
  const logDen: number[] = [];
  for (let n = -BESSEL_ORDERS; n <= BESSEL_ORDERS; n++) {
    const a = Math.abs(n);
    const iPrime = 0.5 * (Math.exp(logI[Math.abs(n - 1)]!) + Math.exp(logI[Math.abs(n + 1)]!));
    logNum.push((V - 1) * logI[a]! + Math.log(iPrime));
    logDen.push(V * logI[a]!);
  }
  return Math.exp(logSumExp(logNum) - logSumExp(logDen));
}

function logSumExp(xs: readonly number[]): number {
  let max = Number.NEGATIVE_INFINITY;
  for (const x of xs) if (x > max) max = x;
  let sum = 0;
  for (const x of xs) sum += Math.exp(x - max);
  return max + Math.log(sum);
}

/** Wrap an angle into (−π, π]. */
function wrap(a: number): number {
  return a - TWO_PI * Math.ceil((a - Math.PI) / TWO_PI);
}

interface Lattice {
  L: number;
  beta: number;
  /** Proposal half-width δ. */
  delta: number;
  linkX: Float64Array;
  linkY: Float64Array;
  cosPlaq: Float64Array;
  sinPlaq: Float64Array;
}

/**
 * One Metropolis sweep over all 2L² links in checkerboard order: x-links on even rows, odd rows, then y-links on
 * even columns, odd columns (links of one colour share no plaquette). With
 * θ_P(x,y) = θx(x,y) + θy(x+1,y) − θx(x,y+1) − θy(x,y), a change d of x-link (x,y) enters P(x,y) with +1 and
 * P(x,y−1) with −1; of y-link (x,y), P(x,y) with −1 and P(x−1,y) with +1. Proposal d = U(−δ, δ);
 * ΔS = −β[cos(θ_p1 + s1 d) + cos(θ_p2 + s2 d) − cos θ_p1 − cos θ_p2], accepted if ΔS ≤ 0 or u < e^(−ΔS).
 * cos θ_P and sin θ_P are rotated by (cos d, sin d) on acceptance, so each proposal costs one small-angle cos/sin.
 */
function metropolisSweep(lat: Lattice, rng: Xoshiro128, counts: { proposals: number; accepted: number }): void {
  const { L, beta, delta, linkX, linkY, cosPlaq: cp, sinPlaq: sp } = lat;
  let accepted = 0;
  for (let dir = 0; dir < 2; dir++) {
    const links = dir === 0 ? linkX : linkY;
    // x-links: +1 in the own plaquette, −1 in the one below; y-links: −1 in the own, +1 in the one to the left.
    const s1 = dir === 0 ? 1 : -1;
    const s2 = -s1;
    for (let parity = 0; parity < 2; parity++) {
      for (let y = 0; y < L; y++) {
        if (dir === 0 && (y & 1) !== parity) continue;
        const row = y * L;
        const rowBelow = ((y + L - 1) % L) * L;
        const xStart = dir === 0 ? 0 : parity;
        const xStep = dir === 0 ? 1 : 2;
        for (let x = xStart; x < L; x += xStep) {
          const site = row + x;
          const p1 = site;
          const p2 = dir === 0 ? rowBelow + x : row + ((x + L - 1) % L);
          const d = delta * (2 * rng.uniform() - 1);
          const cd = cosSmall(d);
          const sd = sinSmall(d);
          const c1 = cp[p1]!;
          const sn1 = sp[p1]!;
          const c2 = cp[p2]!;
          const sn2 = sp[p2]!;
          const newC1 = c1 * cd - s1 * sn1 * sd;
          const newC2 = c2 * cd - s2 * sn2 * sd;
          const dS = -beta * (newC1 + newC2 - c1 - c2);
          if (dS <= 0 || rng.uniform() < Math.exp(-dS)) {
            accepted++;
            // Links stay in (−π, π]; |d| ≤ δ ≤ √2 < π, so one 2π correction suffices.
            const link = links[site]! + d;
            links[site] = link > Math.PI ? link - TWO_PI : link <= -Math.PI ? link + TWO_PI : link;
            cp[p1] = newC1;
            sp[p1] = sn1 * cd + s1 * c1 * sd;
            cp[p2] = newC2;
            sp[p2] = sn2 * cd + s2 * c2 * sd;
          }
        }
      }
    }
  }
  counts.proposals += 2 * L * L;
  counts.accepted += accepted;
}

/** Taylor coefficients (−1)^k/(2k)! and (−1)^k/(2k+1)!, k = 0 … 11 (multiplications only: no division chain). */
const COS_TAYLOR = [
  1.0, -0.5, 0.041666666666666664, -0.001388888888888889, 2.48015873015873e-5, -2.755731922398589e-7, 2.08767569878681e-9, -1.1470745597729725e-11,
  4.779477332387385e-14, -1.5619206968586225e-16, 4.110317623312165e-19, -8.896791392450574e-22,
];
const SIN_TAYLOR = [
  1.0, -0.16666666666666666, 0.008333333333333333, -0.0001984126984126984, 2.7557319223985893e-6, -2.505210838544172e-8, 1.6059043836821613e-10,
  -7.647163731819816e-13, 2.8114572543455206e-15, -8.22063524662433e-18, 1.9572941063391263e-20, -3.868170170630684e-23,
];

/** cos d for |d| ≤ √2 (δ = 2/√β ≤ √2 at β ≥ 2): Taylor series to d²²/22!, truncation < 2e-18. */
export function cosSmall(d: number): number {
  const x = d * d;
  let r = COS_TAYLOR[11]!;
  for (let k = 10; k >= 0; k--) r = COS_TAYLOR[k]! + x * r;
  return r;
}

/** sin d for |d| ≤ √2: Taylor series to d²³/23!, truncation < 1e-19. */
export function sinSmall(d: number): number {
  const x = d * d;
  let r = SIN_TAYLOR[11]!;
  for (let k = 10; k >= 0; k--) r = SIN_TAYLOR[k]! + x * r;
  return d * r;
}

/** Standard error of the mean from consecutive bins of BIN_SIZE measurements (full bins only). */
function binnedStdError(series: Float64Array, count: number): number {
  const bins = Math.floor(count / BIN_SIZE);
  if (bins < 2) return Number.POSITIVE_INFINITY;
  const means = new Float64Array(bins);
  let total = 0;
  for (let b = 0; b < bins; b++) {
    let s = 0;
    for (let i = b * BIN_SIZE; i < (b + 1) * BIN_SIZE; i++) s += series[i]!;
    means[b] = s / BIN_SIZE;
    total += means[b]!;
  }
  const mean = total / bins;
  let ss = 0;
  for (let b = 0; b < bins; b++) ss += (means[b]! - mean) ** 2;
  return Math.sqrt(ss / (bins - 1) / bins);
}

export const gauge: SolverDef<GaugeInputs> = {
  id: 'gauge',
  kind: 'lattice gauge',
  endpoint: '/api/svc/gauge',
  catalogue: true,
  modes: null,
  stateful: false,
  inputs: [
    { key: 'beta', unit: '1', default: 4.0, range: '2 … 20' },
    { key: 'L', unit: '1', default: 32, range: '8 … 64, even (L² × (therm_sweeps + max_sweeps) ≤ 2.1e7)' },
    { key: 'therm_sweeps', unit: '1', default: 200, range: '0 … 5000' },
    { key: 'max_sweeps', unit: '1', default: 20_000, range: '500 … 50000 (L² × (therm_sweeps + max_sweeps) ≤ 2.1e7)' },
    { key: 'target_rel_error', unit: '1', default: 2.5e-4, range: '1e-5 … 1e-3' },
    { key: 'seed', unit: '1', default: 'from inputs', range: 'integer 0 … 2^53−1' },
  ],

  schema,
  resolve(raw: unknown): GaugeInputs {
    const inputs = parseInputs(schema, raw);
    checkWorkLimit('max_sweeps', inputs.L * inputs.L * (inputs.therm_sweeps + inputs.max_sweeps), WORK_LIMIT);
    return inputs;
  },

  run(inputs: GaugeInputs): SolverOutput {
    const { beta, L, therm_sweeps: thermSweeps, max_sweeps: maxSweeps, target_rel_error: target } = inputs;
    const rng = rngForInputs(inputs);
    const V = L * L;
    const delta = Math.min(Math.PI, 2 / Math.sqrt(beta));
    // Cold start: all links 0, so every plaquette angle is 0. Site (x, y) ↦ y·L + x.
    const linkX = new Float64Array(V);
    const linkY = new Float64Array(V);
    // cos θ_P and sin θ_P per plaquette, rotated in step with every accepted link change: the proposal needs only
    // cos d and sin d of the (small) change d, shared by the link's two plaquettes.
    const cosPlaq = new Float64Array(V).fill(1);
    const sinPlaq = new Float64Array(V);
    const counts = { proposals: 0, accepted: 0 };
    const lattice: Lattice = { L, beta, delta, linkX, linkY, cosPlaq, sinPlaq };
    const sweep = () => metropolisSweep(lattice, rng, counts);

    const meanPlaquette = () => {
      let s = 0;
      for (let p = 0; p < V; p++) s += cosPlaq[p]!;
      return s / V;
    };

    for (let s = 0; s < thermSweeps; s++) sweep();
    const series = new Float64Array(maxSweeps);
    let measured = 0;
    let sum = 0;
    let stdError = Number.POSITIVE_INFINITY;
    while (measured < maxSweeps) {
      sweep();
      const m = meanPlaquette();
      series[measured++] = m;
      sum += m;
      if (measured >= FIRST_STOP_TEST && (measured - FIRST_STOP_TEST) % STOP_STRIDE === 0) {
        stdError = binnedStdError(series, measured);
        if (stdError <= target * (sum / measured)) break;
      }
    }
    if (measured % STOP_STRIDE !== 0 || measured < FIRST_STOP_TEST) stdError = binnedStdError(series, measured);
    const mean = sum / measured;

    // Final plaquette field recomputed from the links (independently of the incrementally kept angles).
    const field: number[][] = [];
    for (let y = 0; y < L; y++) {
      const row: number[] = [];
      const up = ((y + 1) % L) * L;
      for (let x = 0; x < L; x++) {
        const right = y * L + ((x + 1) % L);
        row.push(wrap(linkX[y * L + x]! + linkY[right]! - linkX[up + x]! - linkY[y * L + x]!));
      }
      field.push(row);
    }
    const plaquetteField = boundField(field);

    const reference = torusMeanPlaquette(beta, L);
    const check = makeCheck('exact torus Bessel sum', 'mean plaquette ⟨cos θ_P⟩', mean, reference);
    return {
      mode: null,
      value: mean,
      unit: '1',
      uncertainty: stdError,
      output_class: 'field',
      rule8: plaquetteField,
      rule8_array: 'plaquette',
      outputs: {
        plaquette: plaquetteField,
        plaquette_spacing: 1,
        sweeps: measured,
        therm_sweeps: thermSweeps,
        acceptance: counts.accepted / counts.proposals,
        std_error: stdError,
        // S/V with the section's action S = −β Σ_P cos θ_P.
        wilson_action_density: -beta * mean,
        infinite_volume_limit: besselI(1, beta) / besselI(0, beta),
      },
      check,
    };
  },
};

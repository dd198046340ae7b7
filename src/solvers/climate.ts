// climate — nonlinear rotating shallow water on a doubly periodic f-plane (solvers.md §3.18), f = 2Ω sin(latitude).
// Collocated Fourier pseudo-spectral derivatives (radix-2 FFT), 2/3 de-aliasing of the products, classical RK4.
// The run starts from one Poincaré (inertia–gravity) plane wave; its phase is tracked every step and the frequency ω
// is the least-squares slope. Checked against the dispersion relation ω² = f² + gH|k|² (as a phase speed ω/|k|).
//
// The momentum advection is written in the vector-invariant form u·∇u = ∇(|u|²/2) + ζ ẑ×u (ζ = v_x − u_y), identical
// to u·∇u in the continuum and needing five FFTs per right-hand side instead of six.
import { z } from 'zod';
import { Fft2d, spectralGrid } from '../numerics/fft.js';
import { InputError, SolverFailure } from './errors.js';
import type { InputSpec, SolverDef, SolverOutput } from './types.js';
import { boundField, checkWorkLimit, makeCheck, numIn, parseInputs, strideIndices } from './util.js';

export interface ClimateInputs extends Record<string, unknown> {
  latitude_deg: number;
  depth_m: number;
  gravity_m_s2: number;
  length_x_m: number;
  length_y_m: number;
  nx: number;
  ny: number;
  mode_x: number;
  mode_y: number;
  amplitude_m: number;
  periods: number;
  cfl: number;
  rotation_rad_s: number;
}

const WORK_LIMIT = 5e6;
const POWERS = [16, 32, 64, 128, 256] as const;

const schema = z.strictObject({
  latitude_deg: numIn(-90, 90).optional(),
  depth_m: numIn(1, 20000).optional(),
  gravity_m_s2: numIn(0.1, 100).optional(),
  length_x_m: numIn(1e3, 4e7).optional(),
  length_y_m: numIn(1e3, 4e7).optional(),
  nx: z.literal(POWERS).optional(),
  ny: z.literal(POWERS).optional(),
  mode_x: z.number().int().min(0).max(42).optional(),
  mode_y: z.number().int().min(0).max(42).optional(),
  // Below a nucleus's size (1e-15 m) a height anomaly means nothing, and the field's numbers fall to subnormals.
  amplitude_m: z.number().min(1e-15).refine(Number.isFinite, 'must be finite').optional(),
  periods: numIn(1, 50).optional(),
  cfl: numIn(0.05, 1).optional(),
  rotation_rad_s: numIn(0, 1e-3).optional(),
});

interface WaveSetup {
  f: number;
  kx: number;
  ky: number;
  kAbs: number;
  omega: number;
  dt: number;
  steps: number;
}

/** Wave parameters and the time grid: dt = cfl·min(dx, dy)/√(gH), shortened to divide `periods` wave periods. */
function setup(i: ClimateInputs): WaveSetup {
  const f = 2 * i.rotation_rad_s * Math.sin((i.latitude_deg * Math.PI) / 180);
  const kx = (2 * Math.PI * i.mode_x) / i.length_x_m;
  const ky = (2 * Math.PI * i.mode_y) / i.length_y_m;
  const kAbs = Math.hypot(kx, ky);
  const gH = i.gravity_m_s2 * i.depth_m;
  const omega = Math.sqrt(f * f + gH * kAbs * kAbs);
  const dtMax = (i.cfl * Math.min(i.length_x_m / i.nx, i.length_y_m / i.ny)) / Math.sqrt(gH);
  const duration = (i.periods * 2 * Math.PI) / omega;
  const steps = Math.max(1, Math.ceil(duration / dtMax));
  return { f, kx, ky, kAbs, omega, dt: duration / steps, steps };
}

function resolve(raw: unknown): ClimateInputs {
  const p = parseInputs(schema, raw);
  const nx = p.nx ?? 32;
  const ny = p.ny ?? 32;
  const modeX = p.mode_x ?? 1;
  const modeY = p.mode_y ?? 0;
  if (6 * modeX > nx) throw new InputError('mode_x', `mode_x must be ≤ nx/6 = ${Math.floor(nx / 6)}`, { min: 0, max: Math.floor(nx / 6) });
  if (6 * modeY > ny) throw new InputError('mode_y', `mode_y must be ≤ ny/6 = ${Math.floor(ny / 6)}`, { min: 0, max: Math.floor(ny / 6) });
  if (modeX === 0 && modeY === 0) throw new InputError('mode_x', 'mode_x and mode_y must not both be 0', { not_both_zero: ['mode_x', 'mode_y'] });
  const depth = p.depth_m ?? 4000;
  const amplitude = p.amplitude_m ?? 0.1;
  if (amplitude > 0.01 * depth)
    throw new InputError('amplitude_m', `amplitude_m must be ≤ 0.01·depth_m = ${0.01 * depth} (linear regime)`, {
      min: 0,
      inclusive_min: false,
      max: 0.01 * depth,
    });
  const inputs: ClimateInputs = {
    latitude_deg: p.latitude_deg ?? 45,
    depth_m: depth,
    gravity_m_s2: p.gravity_m_s2 ?? 9.81,
    length_x_m: p.length_x_m ?? 2e6,
    length_y_m: p.length_y_m ?? 2e6,
    nx,
    ny,
    mode_x: modeX,
    mode_y: modeY,
    amplitude_m: amplitude,
    periods: p.periods ?? 3,
    cfl: p.cfl ?? 0.5,
    rotation_rad_s: p.rotation_rad_s ?? 7.2921159e-5,
  };
  checkWorkLimit('periods', nx * ny * setup(inputs).steps, WORK_LIMIT);
  return inputs;
}

/** Spectral operators and scratch buffers of one run; the state is (η̂, û, v̂) with η = h − H. */
class ShallowWaterModel {
  readonly fft: Fft2d;
  readonly size: number;
  private readonly kx: Float64Array;
  private readonly ky: Float64Array;
  private readonly mask: Float64Array;
  private readonly mirror: Uint32Array;
  /**
   * Indices of the modes inside the 2/3 band, ascending. The state is band-limited (the start is masked, the
   * products are masked and the linear terms do not couple wavevectors), so spectral loops run over these only.
   */
  readonly band: Uint32Array;
  /** Signed x-index cut of the band (|m_x| < bandCut) for the pruned transforms. */
  private readonly bandCut: number;
  // Three complex work arrays: each holds two real physical fields (re, im) or their packed spectrum.
  private readonly aR: Float64Array;
  private readonly aI: Float64Array;
  private readonly bR: Float64Array;
  private readonly bI: Float64Array;
  private readonly cR: Float64Array;
  private readonly cI: Float64Array;

  constructor(
    nx: number,
    ny: number,
    lx: number,
    ly: number,
    readonly f: number,
    readonly g: number,
    readonly depth: number,
  ) {
    this.fft = new Fft2d(nx, ny);
    const size = nx * ny;
    this.size = size;
    this.mirror = this.fft.mirrorIndex;
    ({ kx: this.kx, ky: this.ky, mask: this.mask } = spectralGrid(nx, ny, lx, ly));
    const inBand: number[] = [];
    for (let q = 0; q < size; q++) if (this.mask[q] === 1) inBand.push(q);
    this.band = Uint32Array.from(inBand);
    this.bandCut = Math.floor((nx - 1) / 3) + 1;
    this.aR = new Float64Array(size);
    this.aI = new Float64Array(size);
    this.bR = new Float64Array(size);
    this.bI = new Float64Array(size);
    this.cR = new Float64Array(size);
    this.cI = new Float64Array(size);
  }

  /**
   * Time derivative of the spectral state s = (η̂re, η̂im, ûre, ûim, v̂re, v̂im) into d. Two real fields share each
   * complex FFT: inverse (u, v) and (η, ζ); forward (ηu, ηv), (ζv, ζu) and (K, 0), K = |u|²/2.
   */
  rhs(s: readonly Float64Array[], d: readonly Float64Array[]): void {
    const er = s[0]!,
      ei = s[1]!,
      ur = s[2]!,
      ui = s[3]!,
      vr = s[4]!,
      vi = s[5]!;
    const der = d[0]!,
      dei = d[1]!,
      dur = d[2]!,
      dui = d[3]!,
      dvr = d[4]!,
      dvi = d[5]!;
    const { kx, ky, mask, mirror, size, fft, f, g, depth, aR, aI, bR, bI, cR, cI, band, bandCut } = this;
    const inv = 1 / size;
    const nBand = band.length;
    // Pack û + i v̂ and η̂ + i ζ̂ (ζ̂ = i kx v̂ − i ky û), with the inverse transform's 1/N folded in.
    aR.fill(0);
    aI.fill(0);
    bR.fill(0);
    bI.fill(0);
    for (let n = 0; n < nBand; n++) {
      const q = band[n]!;
      const zr = -kx[q]! * vi[q]! + ky[q]! * ui[q]!;
      const zi = kx[q]! * vr[q]! - ky[q]! * ur[q]!;
      aR[q] = (ur[q]! - vi[q]!) * inv;
      aI[q] = (ui[q]! + vr[q]!) * inv;
      bR[q] = (er[q]! - zi) * inv;
      bI[q] = (ei[q]! + zr) * inv;
    }
    fft.transformBand(aR, aI, true, bandCut);
    fft.transformBand(bR, bI, true, bandCut);
    for (let q = 0; q < size; q++) {
      const u = aR[q]!;
      const v = aI[q]!;
      const eta = bR[q]!;
      const zeta = bI[q]!;
      aR[q] = eta * u;
      aI[q] = eta * v;
      bR[q] = zeta * v;
      bI[q] = zeta * u;
      cR[q] = 0.5 * (u * u + v * v);
      cI[q] = 0;
    }
    fft.transformBand(aR, aI, false, bandCut);
    fft.transformBand(bR, bI, false, bandCut);
    fft.transformBand(cR, cI, false, bandCut);
    for (let n = 0; n < nBand; n++) {
      const q = band[n]!;
      const k1 = kx[q]!;
      const k2 = ky[q]!;
      const m = mask[q]!;
      const p = mirror[q]!;
      // Split the packed spectra: X = (Z[k] + Z̄[−k])/2, Y = (Z[k] − Z̄[−k])/(2i).
      const azR = aR[q]!,
        azI = aI[q]!,
        awR = aR[p]!,
        awI = aI[p]!;
      const fuR = 0.5 * (azR + awR),
        fuI = 0.5 * (azI - awI);
      const fvR = 0.5 * (azI + awI),
        fvI = 0.5 * (awR - azR);
      const bzR = bR[q]!,
        bzI = bI[q]!,
        bwR = bR[p]!,
        bwI = bI[p]!;
      const zvR = 0.5 * (bzR + bwR),
        zvI = 0.5 * (bzI - bwI);
      const zuR = 0.5 * (bzI + bwI),
        zuI = 0.5 * (bwR - bzR);
      const kR = cR[q]!,
        kI = cI[q]!;
      const uR = ur[q]!,
        uI = ui[q]!,
        vR = vr[q]!,
        vI = vi[q]!,
        eR = er[q]!,
        eI = ei[q]!;
      // η_t = −H ∇·u − ∇·(η u)
      der[q] = depth * (k1 * uI + k2 * vI) + m * (k1 * fuI + k2 * fvI);
      dei[q] = -depth * (k1 * uR + k2 * vR) - m * (k1 * fuR + k2 * fvR);
      // u_t = −K_x + ζ v + f v − g η_x ; v_t = −K_y − ζ u − f u − g η_y
      dur[q] = m * (k1 * kI + zvR) + f * vR + g * k1 * eI;
      dui[q] = m * (-k1 * kR + zvI) + f * vI - g * k1 * eR;
      dvr[q] = m * (k2 * kI - zuR) - f * uR + g * k2 * eI;
      dvi[q] = m * (-k2 * kR - zuI) - f * uI - g * k2 * eR;
    }
  }
}

function run(inputs: ClimateInputs): SolverOutput {
  const { nx, ny, length_x_m: lx, length_y_m: ly, depth_m: H, gravity_m_s2: g, amplitude_m: A } = inputs;
  const { f, kx, ky, kAbs, omega, dt, steps } = setup(inputs);
  const size = nx * ny;
  const dx = lx / nx;
  const dy = ly / ny;
  const model = new ShallowWaterModel(nx, ny, lx, ly, f, g, H);

  // Poincaré wave: η = A cos φ; velocity U cos φ along k̂ and (f/ω) U sin φ along ẑ×k̂, U = Aω/(|k|H).
  const U = (A * omega) / (kAbs * H);
  const ex = kx / kAbs;
  const ey = ky / kAbs;
  const state = Array.from({ length: 6 }, () => new Float64Array(size));
  const [er, ei, ur, ui, vr, vi] = state as [Float64Array, Float64Array, Float64Array, Float64Array, Float64Array, Float64Array];
  const pu = new Float64Array(size);
  const pv = new Float64Array(size);
  for (let j = 0; j < ny; j++) {
    for (let i = 0; i < nx; i++) {
      const q = j * nx + i;
      const phi = kx * i * dx + ky * j * dy;
      const c = Math.cos(phi);
      const s = Math.sin(phi);
      er[q] = A * c;
      pu[q] = U * (c * ex - (f / omega) * s * ey);
      pv[q] = U * (c * ey + (f / omega) * s * ex);
    }
  }
  model.fft.forward(er, ei);
  model.fft.forwardTwoReal(pu, pv, ur, ui, vr, vi);
  // De-alias the start as well (it is one in-band mode; this only clears round-off), so the state stays in the band.
  const band = model.band;
  const keep = new Uint8Array(size);
  for (let n = 0; n < band.length; n++) keep[band[n]!] = 1;
  for (const a of state) for (let q = 0; q < size; q++) if (keep[q] === 0) a[q] = 0;
  const mass0 = er[0]!;
  const nBand = band.length;

  // Phase of the tracked mode: the DFT coefficient at +k is Σ η e^(−ik·x) = P_cos − i P_sin.
  const qk = inputs.mode_y * nx + inputs.mode_x;
  const phase = new Float64Array(steps + 1);
  let rawPrev = Math.atan2(-ei[qk]!, er[qk]!);
  phase[0] = rawPrev;

  const k1 = Array.from({ length: 6 }, () => new Float64Array(size));
  const k2 = Array.from({ length: 6 }, () => new Float64Array(size));
  const k3 = Array.from({ length: 6 }, () => new Float64Array(size));
  const k4 = Array.from({ length: 6 }, () => new Float64Array(size));
  const tmp = Array.from({ length: 6 }, () => new Float64Array(size));
  const stage = (from: Float64Array[], scale: number): void => {
    for (let c = 0; c < 6; c++) {
      const t = tmp[c]!;
      const s0 = state[c]!;
      const d = from[c]!;
      for (let n = 0; n < nBand; n++) {
        const q = band[n]!;
        t[q] = s0[q]! + scale * d[q]!;
      }
    }
  };
  for (let step = 1; step <= steps; step++) {
    model.rhs(state, k1);
    stage(k1, 0.5 * dt);
    model.rhs(tmp, k2);
    stage(k2, 0.5 * dt);
    model.rhs(tmp, k3);
    stage(k3, dt);
    model.rhs(tmp, k4);
    for (let c = 0; c < 6; c++) {
      const s0 = state[c]!;
      const a = k1[c]!,
        b = k2[c]!,
        cc = k3[c]!,
        d = k4[c]!;
      for (let n = 0; n < nBand; n++) {
        const q = band[n]!;
        s0[q] = s0[q]! + (dt / 6) * (a[q]! + 2 * b[q]! + 2 * cc[q]! + d[q]!);
      }
    }
    const raw = Math.atan2(-ei[qk]!, er[qk]!);
    let delta = raw - rawPrev;
    // Unwrap: the phase advances by ω·dt < π per step.
    delta -= 2 * Math.PI * Math.round(delta / (2 * Math.PI));
    phase[step] = phase[step - 1]! + delta;
    rawPrev = raw;
  }

  // Least-squares slope of phase against t = step·dt.
  const tMean = (steps * dt) / 2;
  let pMean = 0;
  for (let s = 0; s <= steps; s++) pMean += phase[s]!;
  pMean /= steps + 1;
  let sxy = 0;
  let sxx = 0;
  for (let s = 0; s <= steps; s++) {
    const dtS = s * dt - tMean;
    sxy += dtS * (phase[s]! - pMean);
    sxx += dtS * dtS;
  }
  const omegaMeasured = sxy / sxx;
  if (!Number.isFinite(omegaMeasured)) throw new SolverFailure('the wave phase became non-finite', { steps, dt_s: dt });

  // Physical fields at the end.
  const eta = Float64Array.from(er);
  const etaI = Float64Array.from(ei);
  model.fft.inverse(eta, etaI);
  model.fft.inverseTwoReal(ur, ui, vr, vi, pu, pv);
  const rowsOf = (a: Float64Array): number[][] => {
    const rows: number[][] = [];
    for (let j = 0; j < ny; j++) rows.push(Array.from(a.subarray(j * nx, (j + 1) * nx)));
    return boundField(rows);
  };
  const heightField = rowsOf(eta);
  const axes = {
    dx_m: dx,
    dy_m: dy,
    x_m: strideIndices(nx, 64).map((i) => i * dx),
    y_m: strideIndices(ny, 64).map((j) => j * dy),
  };
  const speed = omegaMeasured / kAbs;
  const gH = g * H;
  return {
    mode: null,
    value: speed,
    unit: 'm/s',
    output_class: 'field',
    rule8: heightField,
    rule8_array: 'height_anomaly',
    outputs: {
      height_anomaly: { ...axes, eta_m: heightField },
      u: { ...axes, u_m_s: rowsOf(pu) },
      v: { ...axes, v_m_s: rowsOf(pv) },
      omega_rad_s: omegaMeasured,
      reference_omega_rad_s: omega,
      coriolis_1_s: f,
      rossby_radius_m: f === 0 ? null : Math.sqrt(gH) / Math.abs(f),
      mass_drift: (er[0]! - mass0) / (size * H),
      wavenumber_rad_m: kAbs,
      time_steps: steps,
      dt_s: dt,
    },
    check: makeCheck('poincare_dispersion', 'phase speed √(f² + gH|k|²)/|k| [m/s]', speed, omega / kAbs),
  };
}

const inputs: InputSpec[] = [
  { key: 'latitude_deg', unit: 'deg', default: 45, range: '−90 … 90' },
  { key: 'depth_m', unit: 'm', default: 4000, range: '1 … 20000' },
  { key: 'gravity_m_s2', unit: 'm/s²', default: 9.81, range: '0.1 … 100' },
  { key: 'length_x_m', unit: 'm', default: 2e6, range: '1e3 … 4e7' },
  { key: 'length_y_m', unit: 'm', default: 2e6, range: '1e3 … 4e7' },
  { key: 'nx', unit: '1', default: 32, range: '16 … 256, powers of 2' },
  { key: 'ny', unit: '1', default: 32, range: '16 … 256, powers of 2' },
  { key: 'mode_x', unit: '1', default: 1, range: '0 … nx/6 (not both 0)' },
  { key: 'mode_y', unit: '1', default: 0, range: '0 … ny/6 (not both 0)' },
  { key: 'amplitude_m', unit: 'm', default: 0.1, range: '1e-15 ≤ A ≤ 0.01·depth_m' },
  { key: 'periods', unit: '1', default: 3, range: '1 … 50' },
  { key: 'cfl', unit: '1', default: 0.5, range: '0.05 … 1' },
  { key: 'rotation_rad_s', unit: 'rad/s', default: 7.2921159e-5, range: '0 … 1e-3' },
];

export const climate: SolverDef<ClimateInputs> = {
  id: 'climate',
  kind: 'shallow-water climate (rotating f-plane, Poincaré waves)',
  endpoint: '/api/svc/climate',
  catalogue: true,
  modes: null,
  stateful: false,
  inputs,
  schema,
  resolve,
  run,
};

// flow — 2-D incompressible Navier–Stokes in a doubly periodic box (solvers.md §3.6), vorticity–streamfunction form
// ω_t + u·∇ω = ν∇²ω, ∇²ψ = −ω, u = ψ_y, v = −ψ_x. Fourier pseudo-spectral derivatives (radix-2 FFT), 2/3-rule
// de-aliasing of the advection product, classical RK4. Start: the Taylor–Green vortex, whose amplitude decays as
// U0 e^(−2νk²t) exactly — the check.
import { z } from 'zod';
import { Fft2d, fftIndices, spectralGrid } from '../numerics/fft.js';
import { InputError, SolverFailure } from './errors.js';
import type { InputSpec, SolverDef, SolverOutput } from './types.js';
import { boundField, checkWorkLimit, makeCheck, numIn, parseInputs, positive, strideIndices } from './util.js';

export interface FlowInputs extends Record<string, unknown> {
  length_m: number;
  velocity_m_s: number;
  viscosity_m2_s: number;
  t_end_s: number;
  n: number;
  cfl: number;
  wavenumber: number;
}

const WORK_LIMIT = 8e6;

const schema = z.strictObject({
  length_m: numIn(1e-3, 1e3).optional(),
  velocity_m_s: numIn(1e-6, 1e3).optional(),
  viscosity_m2_s: numIn(1e-7, 10).optional(),
  t_end_s: positive().optional(),
  n: z.literal([16, 32, 64, 128]).optional(),
  cfl: numIn(0.05, 1).optional(),
  wavenumber: z.number().int().min(1).max(16).optional(),
});

/** dt = min(cfl·dx/U0, 1/(ν k_max²)), k_max = πn/L, then shortened to divide t_end. */
function stepCount(i: FlowInputs): number {
  const dx = i.length_m / i.n;
  const kMax = (Math.PI * i.n) / i.length_m;
  const dt = Math.min((i.cfl * dx) / i.velocity_m_s, 1 / (i.viscosity_m2_s * kMax * kMax));
  return Math.max(1, Math.ceil(i.t_end_s / dt));
}

function resolve(raw: unknown): FlowInputs {
  const p = parseInputs(schema, raw);
  const n = p.n ?? 32;
  const wavenumber = p.wavenumber ?? 1;
  if (wavenumber > n / 8) throw new InputError('wavenumber', `wavenumber must be ≤ n/8 = ${n / 8}`, { min: 1, max: n / 8 });
  const inputs: FlowInputs = {
    length_m: p.length_m ?? 1.0,
    velocity_m_s: p.velocity_m_s ?? 1.0,
    viscosity_m2_s: p.viscosity_m2_s ?? 0.01,
    t_end_s: p.t_end_s ?? 1.0,
    n,
    cfl: p.cfl ?? 0.5,
    wavenumber,
  };
  checkWorkLimit('t_end_s', n * n * stepCount(inputs), WORK_LIMIT);
  return inputs;
}

/** The spectral operators and scratch buffers of one n × n run (allocated once). */
class VorticityModel {
  readonly n: number;
  readonly fft: Fft2d;
  readonly kx: Float64Array;
  readonly ky: Float64Array;
  /** |k|² per entry (Nyquist included), and 1/|k|² with the mean mode set to 0. */
  readonly k2: Float64Array;
  readonly invK2: Float64Array;
  /** 1 where both indices satisfy the 2/3 rule (|m| < n/3), else 0. */
  readonly mask: Float64Array;
  private readonly zr: Float64Array;
  private readonly zi: Float64Array;
  private readonly wr: Float64Array;
  private readonly wi: Float64Array;

  constructor(
    n: number,
    length: number,
    readonly nu: number,
  ) {
    this.n = n;
    this.fft = new Fft2d(n, n);
    const size = n * n;
    const idx = fftIndices(n);
    ({ kx: this.kx, ky: this.ky, mask: this.mask } = spectralGrid(n, n, length, length));
    this.k2 = new Float64Array(size);
    this.invK2 = new Float64Array(size);
    for (let j = 0; j < n; j++) {
      for (let i = 0; i < n; i++) {
        const q = j * n + i;
        const kxFull = (2 * Math.PI * idx[i]!) / length;
        const kyFull = (2 * Math.PI * idx[j]!) / length;
        const k2 = kxFull * kxFull + kyFull * kyFull;
        this.k2[q] = k2;
        this.invK2[q] = q === 0 ? 0 : 1 / k2;
      }
    }
    this.zr = new Float64Array(size);
    this.zi = new Float64Array(size);
    this.wr = new Float64Array(size);
    this.wi = new Float64Array(size);
  }

  /** dω̂/dt = −P(u·∇ω)^ − ν|k|² ω̂, with P the 2/3 mask. */
  rhs(oRe: Float64Array, oIm: Float64Array, dRe: Float64Array, dIm: Float64Array): void {
    const { kx, ky, invK2, k2, mask, zr, zi, wr, wi, nu } = this;
    const size = this.n * this.n;
    // (u + iv) from ψ̂ = ω̂/|k|²: û = i ky ψ̂, v̂ = −i kx ψ̂; (ω_x + iω_y) from i kx ω̂, i ky ω̂.
    for (let q = 0; q < size; q++) {
      const pr = oRe[q]! * invK2[q]!;
      const pi = oIm[q]! * invK2[q]!;
      zr[q] = kx[q]! * pr - ky[q]! * pi;
      zi[q] = ky[q]! * pr + kx[q]! * pi;
      wr[q] = -kx[q]! * oIm[q]! - ky[q]! * oRe[q]!;
      wi[q] = kx[q]! * oRe[q]! - ky[q]! * oIm[q]!;
    }
    this.fft.inverse(zr, zi);
    this.fft.inverse(wr, wi);
    for (let q = 0; q < size; q++) {
      wr[q] = zr[q]! * wr[q]! + zi[q]! * wi[q]!;
      wi[q] = 0;
    }
    this.fft.forward(wr, wi);
    for (let q = 0; q < size; q++) {
      const damp = nu * k2[q]!;
      dRe[q] = -mask[q]! * wr[q]! - damp * oRe[q]!;
      dIm[q] = -mask[q]! * wi[q]! - damp * oIm[q]!;
    }
  }

  /** Physical u and v (into the given arrays) from ω̂. */
  velocity(oRe: Float64Array, oIm: Float64Array, u: Float64Array, v: Float64Array): void {
    const { kx, ky, invK2 } = this;
    const size = this.n * this.n;
    for (let q = 0; q < size; q++) {
      const pr = oRe[q]! * invK2[q]!;
      const pi = oIm[q]! * invK2[q]!;
      u[q] = kx[q]! * pr - ky[q]! * pi;
      v[q] = ky[q]! * pr + kx[q]! * pi;
    }
    this.fft.inverse(u, v);
  }
}

function run(inputs: FlowInputs): SolverOutput {
  const { n, length_m: L, velocity_m_s: U0, viscosity_m2_s: nu, t_end_s: tEnd } = inputs;
  const steps = stepCount(inputs);
  const dt = tEnd / steps;
  const size = n * n;
  const dx = L / n;
  const k = (2 * Math.PI * inputs.wavenumber) / L;
  const model = new VorticityModel(n, L, nu);

  // Taylor–Green: u = U0 sin kx cos ky, v = −U0 cos kx sin ky → ω = v_x − u_y = 2 U0 k sin kx sin ky.
  const oRe = new Float64Array(size);
  const oIm = new Float64Array(size);
  for (let j = 0; j < n; j++) {
    const sy = Math.sin(k * j * dx);
    for (let i = 0; i < n; i++) oRe[j * n + i] = 2 * U0 * k * Math.sin(k * i * dx) * sy;
  }
  model.fft.forward(oRe, oIm);

  const k1r = new Float64Array(size),
    k1i = new Float64Array(size);
  const k2r = new Float64Array(size),
    k2i = new Float64Array(size);
  const k3r = new Float64Array(size),
    k3i = new Float64Array(size);
  const k4r = new Float64Array(size),
    k4i = new Float64Array(size);
  const sr = new Float64Array(size),
    si = new Float64Array(size);
  for (let s = 0; s < steps; s++) {
    model.rhs(oRe, oIm, k1r, k1i);
    for (let q = 0; q < size; q++) {
      sr[q] = oRe[q]! + 0.5 * dt * k1r[q]!;
      si[q] = oIm[q]! + 0.5 * dt * k1i[q]!;
    }
    model.rhs(sr, si, k2r, k2i);
    for (let q = 0; q < size; q++) {
      sr[q] = oRe[q]! + 0.5 * dt * k2r[q]!;
      si[q] = oIm[q]! + 0.5 * dt * k2i[q]!;
    }
    model.rhs(sr, si, k3r, k3i);
    for (let q = 0; q < size; q++) {
      sr[q] = oRe[q]! + dt * k3r[q]!;
      si[q] = oIm[q]! + dt * k3i[q]!;
    }
    model.rhs(sr, si, k4r, k4i);
    for (let q = 0; q < size; q++) {
      oRe[q] = oRe[q]! + (dt / 6) * (k1r[q]! + 2 * k2r[q]! + 2 * k3r[q]! + k4r[q]!);
      oIm[q] = oIm[q]! + (dt / 6) * (k1i[q]! + 2 * k2i[q]! + 2 * k3i[q]! + k4i[q]!);
    }
  }

  const u = new Float64Array(size);
  const v = new Float64Array(size);
  model.velocity(oRe, oIm, u, v);
  let sumSq = 0;
  for (let q = 0; q < size; q++) sumSq += u[q]! * u[q]! + v[q]! * v[q]!;
  const meanSq = sumSq / size;
  const amplitude = Math.sqrt(2 * meanSq);
  if (!Number.isFinite(amplitude)) throw new SolverFailure('the velocity field became non-finite', { steps, dt_s: dt });

  // Divergence from the physical velocity field, re-transformed: u_x + v_y (round-off for a solenoidal field).
  const aRe = new Float64Array(size),
    aIm = new Float64Array(size);
  const bRe = new Float64Array(size),
    bIm = new Float64Array(size);
  const zr = Float64Array.from(u),
    zi = Float64Array.from(v);
  model.fft.forwardTwoReal(zr, zi, aRe, aIm, bRe, bIm);
  for (let q = 0; q < size; q++) {
    zr[q] = -model.kx[q]! * aIm[q]! - model.ky[q]! * bIm[q]!;
    zi[q] = model.kx[q]! * aRe[q]! + model.ky[q]! * bRe[q]!;
  }
  model.fft.inverse(zr, zi);
  let maxDivergence = 0;
  for (let q = 0; q < size; q++) maxDivergence = Math.max(maxDivergence, Math.abs(zr[q]!));

  // Physical vorticity for the returned field.
  const wr = Float64Array.from(oRe),
    wi = Float64Array.from(oIm);
  model.fft.inverse(wr, wi);
  const rows: number[][] = [];
  for (let j = 0; j < n; j++) rows.push(Array.from(wr.subarray(j * n, (j + 1) * n)));
  const field = boundField(rows);
  const sampled = strideIndices(n, 64).map((i) => i * dx);

  const reference = U0 * Math.exp(-2 * nu * k * k * tEnd);
  return {
    mode: null,
    value: amplitude,
    unit: 'm/s',
    output_class: 'field',
    rule8: field,
    rule8_array: 'vorticity',
    outputs: {
      vorticity: { dx_m: dx, x_m: sampled, y_m: sampled, t_s: tEnd, omega_1_s: field },
      kinetic_energy_J_per_kg: 0.5 * meanSq,
      reynolds_number: (U0 * L) / nu,
      max_divergence: maxDivergence,
      time_steps: steps,
      dt_s: dt,
    },
    check: makeCheck('taylor_green_decay', 'vortex amplitude U0 e^(−2νk²t) [m/s]', amplitude, reference),
  };
}

const inputs: InputSpec[] = [
  { key: 'length_m', unit: 'm', default: 1.0, range: '1e-3 … 1e3' },
  { key: 'velocity_m_s', unit: 'm/s', default: 1.0, range: '1e-6 … 1e3' },
  { key: 'viscosity_m2_s', unit: 'm²/s', default: 0.01, range: '1e-7 … 10' },
  { key: 't_end_s', unit: 's', default: 1.0, range: '> 0' },
  { key: 'n', unit: '1', default: 32, range: '16, 32, 64, 128' },
  { key: 'cfl', unit: '1', default: 0.5, range: '0.05 … 1' },
  { key: 'wavenumber', unit: '1', default: 1, range: '1 … n/8' },
];

export const flow: SolverDef<FlowInputs> = {
  id: 'flow',
  kind: 'incompressible flow (2-D Navier–Stokes, Taylor–Green vortex)',
  endpoint: '/api/svc/flow',
  catalogue: true,
  modes: null,
  stateful: false,
  inputs,
  schema,
  resolve,
  run,
};

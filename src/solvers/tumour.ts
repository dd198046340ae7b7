// tumour (solvers.md §4.2): Fisher–KPP front u_t = D u_xx + ρu(1 − u/K), started from the Ablowitz–Zeppetella
// exact travelling wave with both ends held at that exact solution (time-dependent Dirichlet); central
// differences + RK4 as in `react`. The K/2 front speed is checked against c = (5/√6)√(Dρ).
import { z } from 'zod';
import { InputError } from './errors.js';
import type { InputSpec, SolverDef, SolverOutput } from './types.js';
import { boundProfile, checkWorkLimit, makeCheck, numIn, parseInputs, positive } from './util.js';
import { Rk4Stepper } from '../numerics/ode.js';
import { decreasingCrossing } from '../numerics/front.js';
import { checkFrontEndTime, frontNxRange, frontSpeed, frontStepCount } from './front-common.js';

const WORK_LIMIT = 8e7;
const SECONDS_PER_YEAR = 365.25 * 86_400;

export interface TumourInputs extends Record<string, unknown> {
  diffusivity_m2_s: number;
  proliferation_rate_1_s: number;
  carrying_capacity_cells_m3: number;
  length_m: number;
  nx: number;
  t_end_s: number;
  cfl: number;
}

const schema = z.strictObject({
  diffusivity_m2_s: numIn(1e-16, 1e-6).optional(),
  proliferation_rate_1_s: numIn(1e-10, 1e-3).optional(),
  // One cell per m³ … 1e18 (cells of 1 µm³ packed solid); below, the profile's numbers fall to subnormals.
  carrying_capacity_cells_m3: numIn(1, 1e18).optional(),
  length_m: positive().optional(),
  nx: z.number().int().min(3).optional(),
  t_end_s: positive().optional(),
  cfl: numIn(0.05, 0.6).optional(),
});

/** ℓ = √(D/ρ) and the Ablowitz–Zeppetella speed c = (5/√6)√(Dρ). */
function scales(D: number, rho: number): { ell: number; c: number } {
  return { ell: Math.sqrt(D / rho), c: (5 / Math.sqrt(6)) * Math.sqrt(D * rho) };
}

function resolve(raw: unknown): TumourInputs {
  const p = parseInputs(schema, raw);
  const D = p.diffusivity_m2_s ?? 1.5e-11;
  const rho = p.proliferation_rate_1_s ?? 1.4e-7;
  const { ell, c } = scales(D, rho);
  const length = p.length_m ?? 60 * ell;
  if (length < 30 * ell) throw new InputError('length_m', `length must be ≥ 30 ℓ (ℓ = √(D/ρ) = ${ell.toExponential(4)} m)`, { min: 30 * ell });
  const nxRange = frontNxRange(length / ell);
  const nx = p.nx ?? nxRange.fallback;
  if (nx < nxRange.min || nx > nxRange.max) throw new InputError('nx', 'nx − 1 must be 5 … 40 intervals per ℓ', { min: nxRange.min, max: nxRange.max });
  const tEnd = p.t_end_s ?? (10 * ell) / c;
  checkFrontEndTime(tEnd, length, c);
  const inputs: TumourInputs = {
    diffusivity_m2_s: D,
    proliferation_rate_1_s: rho,
    carrying_capacity_cells_m3: p.carrying_capacity_cells_m3 ?? 1e14,
    length_m: length,
    nx,
    t_end_s: tEnd,
    cfl: p.cfl ?? 0.4,
  };
  checkWorkLimit('nx', nx * frontStepCount(inputs), WORK_LIMIT);
  return inputs;
}

function run(inp: TumourInputs): SolverOutput {
  const { diffusivity_m2_s: D, proliferation_rate_1_s: rho, length_m: L, nx } = inp;
  const { ell, c } = scales(D, rho);
  const dx = L / (nx - 1);
  const steps = frontStepCount(inp);
  const dt = inp.t_end_s / steps;
  const coef = D / (dx * dx);
  const x0 = L / 4;
  const width = Math.sqrt(6) * ell;
  // Density over K of the exact wave.
  const exact = (x: number, t: number) => {
    const s = 1 + Math.exp((x - x0 - c * t) / width);
    return 1 / (s * s);
  };

  // Unknowns: the interior nodes 1 … nx−2; the end nodes follow the exact solution at the stage time.
  const m = nx - 2;
  const v = new Float64Array(m);
  for (let j = 0; j < m; j++) v[j] = exact((j + 1) * dx, 0);
  const stepper = new Rk4Stepper(m, (t, y, dydt) => {
    const left = exact(0, t);
    const right = exact(L, t);
    for (let j = 0; j < m; j++) {
      const w = y[j]!;
      const wl = j > 0 ? y[j - 1]! : left;
      const wr = j < m - 1 ? y[j + 1]! : right;
      dydt[j] = coef * (wl - 2 * w + wr) + rho * w * (1 - w);
    }
  });

  const full = new Float64Array(nx);
  const fill = (t: number) => {
    full[0] = exact(0, t);
    full.set(v, 1);
    full[nx - 1] = exact(L, t);
  };
  let xHalf = NaN;
  for (let s = 0; s < steps; s++) {
    stepper.step(s * dt, v, dt);
    if (s + 1 === steps / 2) {
      fill((s + 1) * dt);
      xHalf = decreasingCrossing(full, 0, dx, 0.5);
    }
  }
  fill(inp.t_end_s);
  const xEnd = decreasingCrossing(full, 0, dx, 0.5);
  const speed = frontSpeed('tumour', 'K/2', xHalf, xEnd, inp.t_end_s);

  const K = inp.carrying_capacity_cells_m3;
  const density = Float64Array.from(full, (w) => w * K);
  const x = new Float64Array(nx);
  for (let i = 0; i < nx; i++) x[i] = i * dx;
  const check = makeCheck('Ablowitz–Zeppetella wave speed (5/√6)√(Dρ)', 'front speed at K/2', speed, c);
  const densityOut = boundProfile(density);
  return {
    mode: null,
    value: speed,
    unit: 'm/s',
    output_class: 'profile',
    rule8: densityOut,
    rule8_array: 'density',
    outputs: {
      density: densityOut,
      x_m: boundProfile(x),
      front_position_m: xEnd,
      front_position_half_time_m: xHalf,
      speed_mm_per_year: speed * 1e3 * SECONDS_PER_YEAR,
      minimal_speed_m_s: 2 * Math.sqrt(D * rho),
      length_scale_m: ell,
      time_steps: steps,
      dt_s: dt,
    },
    check,
  };
}

const inputs: InputSpec[] = [
  { key: 'diffusivity_m2_s', unit: 'm^2/s', default: 1.5e-11, range: '1e-16 … 1e-6' },
  { key: 'proliferation_rate_1_s', unit: '1/s', default: 1.4e-7, range: '1e-10 … 1e-3' },
  { key: 'carrying_capacity_cells_m3', unit: 'cells/m^3', default: 1e14, range: '1 … 1e18' },
  { key: 'length_m', unit: 'm', default: '60 ℓ, ℓ = √(D/ρ)', range: '≥ 30 ℓ' },
  { key: 'nx', unit: '1', default: '10 per ℓ + 1 (601)', range: '5 … 40 intervals per ℓ' },
  { key: 't_end_s', unit: 's', default: '10 ℓ / c', range: 'front stays inside [0.1 L, 0.9 L]' },
  { key: 'cfl', unit: '1', default: 0.4, range: '0.05 … 0.6 (D dt/dx²); nx × steps ≤ 8e7' },
];

export const tumour: SolverDef<TumourInputs> = {
  id: 'tumour',
  kind: 'tumour growth front (Fisher–KPP)',
  endpoint: null,
  catalogue: true,
  modes: null,
  stateful: false,
  inputs,
  schema,
  resolve,
  run: (inp) => run(inp),
};

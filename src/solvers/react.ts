// react (solvers.md §3.16): bistable (Schlögl/Nagumo) reaction-diffusion front, u_t = D u_xx + k u(1−u)(u−a).
// Central differences with zero-flux (mirror) ends, classical RK4 at D dt/dx² = cfl, started from the exact
// travelling-wave profile; the front speed from the u = ½ crossing is checked against c = √(kD/2)(1 − 2a).
import { z } from 'zod';
import { InputError } from './errors.js';
import type { InputSpec, SolverDef, SolverOutput } from './types.js';
import { boundProfile, checkWorkLimit, makeCheck, numIn, parseInputs, positive } from './util.js';
import { Rk4Stepper } from '../numerics/ode.js';
import { decreasingCrossing } from '../numerics/front.js';
import { checkFrontEndTime, frontNxRange, frontSpeed, frontStepCount } from './front-common.js';

const WORK_LIMIT = 1.5e8;
const NX_MAX = 20_001;

export interface ReactInputs extends Record<string, unknown> {
  diffusivity_m2_s: number;
  rate_constant_1_s: number;
  threshold: number;
  c_max_mol_m3: number;
  length_m: number;
  nx: number;
  t_end_s: number;
  cfl: number;
}

const schema = z.strictObject({
  diffusivity_m2_s: numIn(1e-14, 1).optional(),
  rate_constant_1_s: numIn(1e-6, 1e6).optional(),
  threshold: numIn(0, 0.45).optional(),
  // About one molecule per m³ (1/N_A = 1.7e-24 mol/m³) … denser than any substance (diamond: 2.9e5 mol/m³); below, the profile's
  // numbers fall to subnormals and its field terms cannot be formed.
  c_max_mol_m3: numIn(1e-24, 1e6).optional(),
  length_m: positive().optional(),
  nx: z.number().int().min(3).max(NX_MAX).optional(),
  t_end_s: positive().optional(),
  cfl: numIn(0.05, 0.6).optional(),
});

/** Front width w = √(2D/k) and exact speed c = √(kD/2)(1 − 2a). */
function frontScales(D: number, k: number, a: number): { w: number; c: number } {
  return { w: Math.sqrt((2 * D) / k), c: Math.sqrt((k * D) / 2) * (1 - 2 * a) };
}

function resolve(raw: unknown): ReactInputs {
  const p = parseInputs(schema, raw);
  const D = p.diffusivity_m2_s ?? 1e-9;
  const k = p.rate_constant_1_s ?? 1.0;
  const a = p.threshold ?? 0.25;
  const { w, c } = frontScales(D, k, a);
  const length = p.length_m ?? 40 * w;
  if (length < 20 * w) throw new InputError('length_m', `length must be ≥ 20 front widths (w = ${w.toExponential(4)} m)`, { min: 20 * w });
  const nxRange = frontNxRange(length / w, NX_MAX);
  if (nxRange.min > nxRange.max) throw new InputError('length_m', `5 nodes per front width need more than ${NX_MAX} nodes`, { max: ((NX_MAX - 1) / 5) * w });
  const nx = p.nx ?? nxRange.fallback;
  if (nx < nxRange.min || nx > nxRange.max) {
    throw new InputError('nx', 'nx − 1 must be 5 … 40 intervals per front width, nx ≤ 20001', { min: nxRange.min, max: nxRange.max });
  }
  const tEnd = p.t_end_s ?? (10 * w) / c;
  checkFrontEndTime(tEnd, length, c);
  const inputs: ReactInputs = {
    diffusivity_m2_s: D,
    rate_constant_1_s: k,
    threshold: a,
    c_max_mol_m3: p.c_max_mol_m3 ?? 1.0,
    length_m: length,
    nx,
    t_end_s: tEnd,
    cfl: p.cfl ?? 0.4,
  };
  checkWorkLimit('nx', nx * frontStepCount(inputs), WORK_LIMIT);
  return inputs;
}

function run(inp: ReactInputs): SolverOutput {
  const { diffusivity_m2_s: D, rate_constant_1_s: k, threshold: a, length_m: L, nx } = inp;
  const { w, c } = frontScales(D, k, a);
  const dx = L / (nx - 1);
  const steps = frontStepCount(inp);
  const dt = inp.t_end_s / steps;
  const coef = D / (dx * dx);
  const last = nx - 1;

  const u = new Float64Array(nx);
  for (let i = 0; i < nx; i++) u[i] = 1 / (1 + Math.exp((i * dx - L / 4) / w));

  // Zero flux by a mirror ghost node: u_{−1} = u_1, u_{nx} = u_{nx−2}.
  const stepper = new Rk4Stepper(nx, (_t, y, dydt) => {
    dydt[0] = coef * 2 * (y[1]! - y[0]!) + k * y[0]! * (1 - y[0]!) * (y[0]! - a);
    for (let i = 1; i < last; i++) {
      const v = y[i]!;
      dydt[i] = coef * (y[i - 1]! - 2 * v + y[i + 1]!) + k * v * (1 - v) * (v - a);
    }
    const v = y[last]!;
    dydt[last] = coef * 2 * (y[last - 1]! - v) + k * v * (1 - v) * (v - a);
  });

  let xHalf = NaN;
  for (let s = 0; s < steps; s++) {
    stepper.step(s * dt, u, dt);
    if (s + 1 === steps / 2) xHalf = decreasingCrossing(u, 0, dx, 0.5);
  }
  const xEnd = decreasingCrossing(u, 0, dx, 0.5);
  const speed = frontSpeed('react', 'u = ½', xHalf, xEnd, inp.t_end_s);

  const cmax = inp.c_max_mol_m3;
  const concentration = new Float64Array(nx);
  const rate = new Float64Array(nx);
  let maxConc = -Infinity;
  let maxRate = 0;
  for (let i = 0; i < nx; i++) {
    const v = u[i]!;
    concentration[i] = v * cmax;
    rate[i] = k * v * (1 - v) * (v - a) * cmax;
    if (concentration[i]! > maxConc) maxConc = concentration[i]!;
    if (Math.abs(rate[i]!) > maxRate) maxRate = Math.abs(rate[i]!);
  }
  const x = new Float64Array(nx);
  for (let i = 0; i < nx; i++) x[i] = i * dx;

  const check = makeCheck('exact Nagumo travelling wave c = √(kD/2)(1 − 2a)', 'front speed', speed, c);
  const concentrationOut = boundProfile(concentration);
  return {
    mode: null,
    value: speed,
    unit: 'm/s',
    output_class: 'profile',
    rule8: concentrationOut,
    rule8_array: 'concentration',
    outputs: {
      concentration: concentrationOut,
      reaction_rate: boundProfile(rate),
      x_m: boundProfile(x),
      front_position_m: xEnd,
      front_position_half_time_m: xHalf,
      front_width_m: w,
      time_steps: steps,
      dt_s: dt,
    },
    check,
    receipt_fields: {
      concentration_field: { value: maxConc, unit: 'mol/m^3' },
      reaction_rate_field: { value: maxRate, unit: 'mol/(m^3*s)' },
    },
  };
}

const inputs: InputSpec[] = [
  { key: 'diffusivity_m2_s', unit: 'm^2/s', default: 1e-9, range: '1e-14 … 1' },
  { key: 'rate_constant_1_s', unit: '1/s', default: 1.0, range: '1e-6 … 1e6' },
  { key: 'threshold', unit: '1', default: 0.25, range: '0 … 0.45' },
  { key: 'c_max_mol_m3', unit: 'mol/m^3', default: 1.0, range: '1e-24 … 1e6' },
  { key: 'length_m', unit: 'm', default: '40 w, w = √(2D/k)', range: '≥ 20 w' },
  { key: 'nx', unit: '1', default: '10 per w + 1 (401)', range: '5 … 40 intervals per w, ≤ 20001' },
  { key: 't_end_s', unit: 's', default: '10 w / c', range: 'front stays inside [0.1 L, 0.9 L]' },
  { key: 'cfl', unit: '1', default: 0.4, range: '0.05 … 0.6 (D dt/dx²); nx × steps ≤ 1.5e8' },
];

export const react: SolverDef<ReactInputs> = {
  id: 'react',
  kind: 'reaction-diffusion (bistable front)',
  endpoint: '/api/svc/react',
  catalogue: true,
  modes: null,
  stateful: false,
  inputs,
  schema,
  resolve,
  run: (inp) => run(inp),
};

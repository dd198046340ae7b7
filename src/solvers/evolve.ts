// `evolve` — molecular dynamics (solvers.md §3.2). Lennard-Jones argon in a cubic periodic box, FCC start,
// Gaussian velocities from the house PRNG (centre-of-mass momentum removed, rescaled to temperature_K exactly with
// 3(N − 1) degrees of freedom), truncated-and-shifted potential, minimum image, all pairs, velocity Verlet.
// Checked by energy conservation against E(0) from a separate pair sum over the initial configuration.
//
// Units: the state (positions, velocities, box) is kept in SI throughout and the pair kernel works with the
// dimensionless ratio (σ/r)². Reduced units would need an SI ↔ reduced conversion when a run continues from a
// returned state, and that conversion is not exact in floating point: SI state keeps half + half == whole bitwise.
import { z } from 'zod';
import { rngForInputs } from './rng.js';
import { InputError } from './errors.js';
import type { SolverDef, SolverOutput } from './types.js';
import { checkWorkLimit, makeCheck, parseInputs, parseState, seedSchema, strideIndices, velocityBelowC } from './util.js';

export interface EvolveInputs extends Record<string, unknown> {
  n_cells: number;
  density_kg_m3: number;
  temperature_K: number;
  timestep_s: number;
  steps: number;
  epsilon_K: number;
  sigma_m: number;
  atomic_mass_u: number;
  cutoff_sigma: number;
  seed?: number;
}

export interface EvolveState {
  positions_m: number[][];
  velocities_m_s: number[][];
  box_m: number;
}

const KB = 1.380649e-23;
const ATOMIC_MASS_UNIT = 1.6605390666e-27;
const MAX_PAIR_STEPS = 2.5e8;
const MAX_ATOMS = 500;
const SAMPLES = 512;

const schema = z
  .object({
    n_cells: z.number().int().min(2).max(5).default(3),
    density_kg_m3: z.number().min(200).max(1800).default(1400),
    temperature_K: z.number().min(1).max(500).default(90),
    timestep_s: z.number().min(1e-16).max(1e-14).default(4e-15),
    steps: z.number().int().min(1).max(20_000).default(500),
    epsilon_K: z.number().positive().default(119.8),
    sigma_m: z.number().positive().default(3.405e-10),
    atomic_mass_u: z.number().positive().default(39.948),
    cutoff_sigma: z.number().min(1.5).max(5).default(2.5),
    seed: seedSchema().optional(),
  })
  .strict();

const vec3 = z.tuple([z.number(), z.number(), z.number()]);
const stateSchema = z
  .object({
    positions_m: z.array(vec3).min(2).max(MAX_ATOMS),
    velocities_m_s: z.array(velocityBelowC()).min(2).max(MAX_ATOMS),
    box_m: z.number().positive(),
  })
  .strict();

function pairWork(atoms: number, steps: number): number {
  return ((atoms * (atoms - 1)) / 2) * steps;
}

/** Lennard-Jones parameters in SI plus the truncation radius and the shift that makes U(r_c) = 0. */
interface PairModel {
  eps: number; // J
  sigma2: number; // m²
  rc2: number; // m²
  shift: number; // J, U_LJ(r_c)
}

function pairModel(inputs: EvolveInputs, box: number): PairModel {
  const eps = inputs.epsilon_K * KB;
  const sigma = inputs.sigma_m;
  const rc = Math.min(inputs.cutoff_sigma * sigma, box / 2);
  const sr6 = (sigma / rc) ** 6;
  return { eps, sigma2: sigma * sigma, rc2: rc * rc, shift: 4 * eps * (sr6 * sr6 - sr6) };
}

/**
 * Forces (as accelerations into acc), potential energy and virial Σ r_ij·F_ij, all pairs with minimum image;
 * out receives [potential J, virial J].
 */
function forces(n: number, box: number, model: PairModel, invMass: number, pos: Float64Array, acc: Float64Array, out: Float64Array): void {
  acc.fill(0);
  const half = box / 2;
  const { eps, sigma2, rc2, shift } = model;
  const eps4 = 4 * eps;
  const eps24m = 24 * eps * invMass;
  let potential = 0;
  let virial = 0;
  for (let i = 0; i < n; i++) {
    const xi = pos[3 * i]!;
    const yi = pos[3 * i + 1]!;
    const zi = pos[3 * i + 2]!;
    let axi = 0;
    let ayi = 0;
    let azi = 0;
    for (let j = i + 1; j < n; j++) {
      let dx = xi - pos[3 * j]!;
      let dy = yi - pos[3 * j + 1]!;
      let dz = zi - pos[3 * j + 2]!;
      if (dx > half) dx -= box;
      else if (dx < -half) dx += box;
      if (dy > half) dy -= box;
      else if (dy < -half) dy += box;
      if (dz > half) dz -= box;
      else if (dz < -half) dz += box;
      const r2 = dx * dx + dy * dy + dz * dz;
      if (r2 >= rc2) continue;
      const s2 = sigma2 / r2;
      const s6 = s2 * s2 * s2;
      const s12 = s6 * s6;
      potential += eps4 * (s12 - s6) - shift;
      const w = 2 * s12 - s6; // r·F = 24ε(2s¹² − s⁶)
      virial += w;
      const f = (eps24m * w) / r2; // |a| / r
      axi += f * dx;
      ayi += f * dy;
      azi += f * dz;
      acc[3 * j] = acc[3 * j]! - f * dx;
      acc[3 * j + 1] = acc[3 * j + 1]! - f * dy;
      acc[3 * j + 2] = acc[3 * j + 2]! - f * dz;
    }
    acc[3 * i] = acc[3 * i]! + axi;
    acc[3 * i + 1] = acc[3 * i + 1]! + ayi;
    acc[3 * i + 2] = acc[3 * i + 2]! + azi;
  }
  out[0] = potential;
  out[1] = 24 * eps * virial;
}

/** Truncated-and-shifted LJ energy by its own pair sum over the configuration (for the reference E(0)). */
export function configurationEnergy(positions: readonly (readonly number[])[], box: number, model: PairModel): number {
  let u = 0;
  for (let i = 1; i < positions.length; i++) {
    for (let j = 0; j < i; j++) {
      let r2 = 0;
      for (let d = 0; d < 3; d++) {
        let dx = positions[i]![d]! - positions[j]![d]!;
        dx -= box * Math.round(dx / box);
        r2 += dx * dx;
      }
      if (r2 < model.rc2) {
        const s6 = (model.sigma2 / r2) ** 3;
        u += 4 * model.eps * (s6 * s6 - s6) - model.shift;
      }
    }
  }
  return u;
}

function kineticEnergy(mass: number, vel: ArrayLike<number>): number {
  let sum = 0;
  for (let c = 0; c < vel.length; c++) sum += vel[c]! * vel[c]!;
  return 0.5 * mass * sum;
}

/** FCC lattice (4 atoms per cubic cell) and Gaussian velocities at exactly temperature_K. */
function initialConfiguration(inputs: EvolveInputs, mass: number): EvolveState {
  const nc = inputs.n_cells;
  const atoms = 4 * nc ** 3;
  const box = Math.cbrt((atoms * mass) / inputs.density_kg_m3);
  const a = box / nc;
  const basis = [
    [0, 0, 0],
    [0.5, 0.5, 0],
    [0.5, 0, 0.5],
    [0, 0.5, 0.5],
  ];
  const positions: number[][] = [];
  for (let i = 0; i < nc; i++)
    for (let j = 0; j < nc; j++) for (let k = 0; k < nc; k++) for (const b of basis) positions.push([(i + b[0]!) * a, (j + b[1]!) * a, (k + b[2]!) * a]);

  const rng = rngForInputs(inputs);
  const velocities: number[][] = positions.map(() => [rng.gaussian(), rng.gaussian(), rng.gaussian()]);
  const mean = [0, 0, 0];
  for (const v of velocities) for (let d = 0; d < 3; d++) mean[d]! += v[d]! / atoms;
  for (const v of velocities) for (let d = 0; d < 3; d++) v[d] = v[d]! - mean[d]!;
  const ke = kineticEnergy(mass, velocities.flat());
  const target = 1.5 * (atoms - 1) * KB * inputs.temperature_K;
  const scale = Math.sqrt(target / ke);
  for (const v of velocities) for (let d = 0; d < 3; d++) v[d] = v[d]! * scale;
  return { positions_m: positions, velocities_m_s: velocities, box_m: box };
}

function run(inputs: EvolveInputs, initialState?: unknown): SolverOutput {
  const mass = inputs.atomic_mass_u * ATOMIC_MASS_UNIT;
  const invMass = 1 / mass;
  const start = (initialState as EvolveState | undefined) ?? initialConfiguration(inputs, mass);
  const box = start.box_m;
  const n = start.positions_m.length;
  const volume = box * box * box;
  const model = pairModel(inputs, box);
  const h = inputs.timestep_s;
  const dof = 3 * (n - 1);

  const pos = new Float64Array(3 * n);
  const vel = new Float64Array(3 * n);
  for (let i = 0; i < n; i++) {
    for (let d = 0; d < 3; d++) {
      let x = start.positions_m[i]![d]!;
      if (x >= box || x < 0) x -= box * Math.floor(x / box);
      pos[3 * i + d] = x;
      vel[3 * i + d] = start.velocities_m_s[i]![d]!;
    }
  }
  const acc = new Float64Array(3 * n);
  const pv = new Float64Array(2);

  // Reference: E(0) from a separate pair sum over the starting configuration plus its kinetic energy.
  const energy0 = configurationEnergy(start.positions_m, box, model) + kineticEnergy(mass, vel);

  const sampleIdx = strideIndices(inputs.steps + 1, SAMPLES);
  let nextSample = 0;
  const seriesT: number[] = [];
  const seriesE: number[] = [];
  const seriesTemp: number[] = [];
  let maxDrift = 0;
  let energyAtMaxDrift = energy0;
  let temperatureSum = 0;
  let kinetic = 0;
  let energy = 0;
  let temperature = 0;
  const observe = (k: number) => {
    kinetic = kineticEnergy(mass, vel);
    energy = kinetic + pv[0]!;
    temperature = (2 * kinetic) / (dof * KB);
    temperatureSum += temperature;
    const drift = Math.abs(energy - energy0) / Math.abs(energy0);
    if (drift > maxDrift || !Number.isFinite(drift)) {
      maxDrift = Number.isFinite(drift) ? drift : Number.POSITIVE_INFINITY;
      energyAtMaxDrift = energy;
    }
    if (sampleIdx[nextSample] === k) {
      seriesT.push(k * h);
      seriesE.push(energy);
      seriesTemp.push(temperature);
      nextSample++;
    }
  };

  forces(n, box, model, invMass, pos, acc, pv);
  observe(0);
  const halfH = 0.5 * h;
  const len = 3 * n;
  for (let k = 1; k <= inputs.steps; k++) {
    for (let c = 0; c < len; c++) vel[c] = vel[c]! + halfH * acc[c]!;
    for (let c = 0; c < len; c++) {
      let x = pos[c]! + h * vel[c]!;
      if (x >= box) x -= box;
      else if (x < 0) x += box;
      pos[c] = x;
    }
    forces(n, box, model, invMass, pos, acc, pv);
    for (let c = 0; c < len; c++) vel[c] = vel[c]! + halfH * acc[c]!;
    observe(k);
  }

  const momentum = [0, 0, 0];
  for (let i = 0; i < n; i++) for (let d = 0; d < 3; d++) momentum[d]! += mass * vel[3 * i + d]!;
  const momentumNorm = Math.hypot(momentum[0]!, momentum[1]!, momentum[2]!);
  const pressure = (n * KB * temperature) / volume + pv[1]! / (3 * volume);

  const check = makeCheck(
    'energy conservation vs E(0) = U(initial configuration) + KE(initial velocities)',
    'total energy E(t) at the largest drift vs E(0)',
    energyAtMaxDrift,
    energy0,
  );

  const positions: number[][] = [];
  const velocities: number[][] = [];
  for (let i = 0; i < n; i++) {
    positions.push([pos[3 * i]!, pos[3 * i + 1]!, pos[3 * i + 2]!]);
    velocities.push([vel[3 * i]!, vel[3 * i + 1]!, vel[3 * i + 2]!]);
  }
  return {
    mode: null,
    value: energy,
    unit: 'J',
    output_class: 'profile',
    rule8: seriesE,
    rule8_array: 'energy_series',
    outputs: {
      temperature_K: temperature,
      temperature_mean_K: temperatureSum / (inputs.steps + 1),
      kinetic_energy_J: kinetic,
      potential_energy_J: pv[0]!,
      initial_energy_J: energy0,
      virial_pressure_Pa: pressure,
      momentum_kg_m_s: momentum,
      max_energy_drift: maxDrift,
      energy_series: { t_s: seriesT, E_J: seriesE, T_K: seriesTemp },
      n_atoms: n,
      box_m: box,
      cutoff_m: Math.sqrt(model.rc2),
    },
    check,
    state: { positions_m: positions, velocities_m_s: velocities, box_m: box } satisfies EvolveState,
    receipt_fields: {
      temperature: { value: temperature, unit: 'K' },
      internal_energy: { value: energy, unit: 'J' },
      momentum_density: { value: momentumNorm / volume, unit: 'kg/(m^2*s)' },
      virial_pressure: { value: pressure, unit: 'Pa' },
    },
  };
}

export const evolve: SolverDef<EvolveInputs> = {
  id: 'evolve',
  kind: 'molecular dynamics',
  endpoint: '/api/svc/evolve',
  catalogue: true,
  modes: null,
  stateful: true,
  inputs: [
    { key: 'n_cells', unit: '1', default: 3, range: '2 … 5 (N = 4·n_cells³ = 32 … 500)' },
    { key: 'density_kg_m3', unit: 'kg/m³', default: 1400, range: '200 … 1800' },
    { key: 'temperature_K', unit: 'K', default: 90, range: '1 … 500' },
    { key: 'timestep_s', unit: 's', default: 4e-15, range: '1e-16 … 1e-14' },
    { key: 'steps', unit: '1', default: 500, range: '1 … 20 000; N(N−1)/2 × steps ≤ 2.5e8' },
    { key: 'epsilon_K', unit: 'K', default: 119.8, range: '> 0' },
    { key: 'sigma_m', unit: 'm', default: 3.405e-10, range: '> 0' },
    { key: 'atomic_mass_u', unit: 'u', default: 39.948, range: '> 0' },
    { key: 'cutoff_sigma', unit: '1', default: 2.5, range: '1.5 … 5 (r_c = min(cutoff·σ, L/2))' },
    { key: 'seed', unit: '1', default: 'from inputs', range: 'integer 0 … 2^53−1' },
  ],
  schema,
  resolve(raw) {
    const inputs = parseInputs(schema, raw) as EvolveInputs;
    if (inputs.seed === undefined) delete inputs.seed;
    checkWorkLimit('steps', pairWork(4 * inputs.n_cells ** 3, inputs.steps), MAX_PAIR_STEPS);
    return inputs;
  },
  resolveState(raw, inputs) {
    const s = parseState(stateSchema, raw);
    if (s.velocities_m_s.length !== s.positions_m.length) {
      throw new InputError('initialState', 'positions_m and velocities_m_s must have the same length', {
        length: s.positions_m.length,
      });
    }
    checkWorkLimit('initialState', pairWork(s.positions_m.length, inputs.steps), MAX_PAIR_STEPS);
    return s as EvolveState;
  },
  run,
};

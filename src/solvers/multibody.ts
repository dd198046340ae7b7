// `multibody` — gravitational N-body (solvers.md §3.20; the 27th id, not a catalogue kind). Direct-summation
// Newtonian gravity without softening, kick–drift–kick leapfrog at a fixed step. Checked by conservation of
// the total energy and the total angular momentum against their initial values (a separate pair sum).
import { z } from 'zod';
import { InputError } from './errors.js';
import type { CheckPart, SolverDef, SolverOutput } from './types.js';
import { checkPart, checkWorkLimit, combineChecks, numIn, parseInputs, parseState, strideIndices, velocityBelowC } from './util.js';

export interface Body {
  mass_kg: number;
  position_m: [number, number, number];
  velocity_m_s: [number, number, number];
}

export interface MultibodyInputs extends Record<string, unknown> {
  preset: 'sun_earth' | 'sun_earth_moon';
  bodies?: Body[];
  t_end_s: number;
  dt_s: number;
  G: number;
}

export interface MultibodyState {
  bodies: Body[];
  t_s: number;
}

const SUN_MASS = 1.98847e30;
const EARTH_MASS = 5.9722e24;
const MOON_MASS = 7.342e22;
const EARTH_PERIHELION_M = 1.47098e11;
const EARTH_SEMI_MAJOR_AXIS_M = 1.495978707e11;
const MOON_DISTANCE_M = 3.844e8;
const MAX_WORK = 2e8; // (N + 6)² × steps
/**
 * A step's work in pair interactions: the N² forces, plus the kick, drift and energy and angular-momentum bookkeeping
 * that grow with N and a fixed part (measured: 0.2 µs a step at N = 2 is ~30 pairs' worth). Counting N² alone let two
 * bodies run 5e7 steps, ~30 s of CPU.
 */
const stepWork = (n: number) => (n + 6) * (n + 6);
const SAMPLES = 512;
const L_SCALE_FLOOR = 1e-6;

// Finite ranges (solvers.md had "> 0" and none for bodies): a 0.1 µg grain to a galaxy cluster, positions within the
// observable universe, speeds below c, G from 1e-20 to 1e20 (N-body units have G = 1). With them every force,
// energy and angular momentum stays finite; beyond them (1e300 kg, G = 1e300) the trajectories went NaN.
const vec3Within = (limit: number) => z.tuple([numIn(-limit, limit), numIn(-limit, limit), numIn(-limit, limit)]);
const bodySchema = z.object({ mass_kg: numIn(1e-10, 1e45), position_m: vec3Within(1e26), velocity_m_s: velocityBelowC() }).strict();
const bodiesSchema = z.array(bodySchema).min(2).max(100);

/** Two bodies at one point have an infinite potential energy: refused by name (it was a NaN result). */
function checkDistinct(bodies: readonly { position_m: readonly number[] }[], field: string): void {
  for (let i = 0; i < bodies.length; i++) {
    for (let j = i + 1; j < bodies.length; j++) {
      const a = bodies[i]!.position_m;
      const b = bodies[j]!.position_m;
      if (a[0] === b[0] && a[1] === b[1] && a[2] === b[2]) throw new InputError(field, `bodies ${i} and ${j} are at the same position`, null);
    }
  }
}

const schema = z
  .object({
    preset: z.enum(['sun_earth', 'sun_earth_moon']).default('sun_earth_moon'),
    bodies: bodiesSchema.optional(),
    t_end_s: z.number().positive().default(3.15576e7),
    dt_s: z.number().positive().default(3600),
    G: numIn(1e-20, 1e20).default(6.6743e-11),
  })
  .strict();

const stateSchema = z.object({ bodies: bodiesSchema, t_s: z.number() }).strict();

/** dt is shrunk (never grown) so that it divides t_end. */
export function multibodyStepCount(tEnd: number, dt: number): number {
  return Math.max(1, Math.ceil((tEnd / dt) * (1 - 1e-12)));
}

/**
 * Preset initial conditions in the barycentric frame: Earth at perihelion with the vis-viva speed for the
 * Sun–Earth relative orbit (μ = G(M☉ + M⊕)); the Moon 3.844e8 m further out on a circular orbit about Earth.
 */
export function presetBodies(preset: MultibodyInputs['preset'], G: number): Body[] {
  const vEarth = Math.sqrt(G * (SUN_MASS + EARTH_MASS) * (2 / EARTH_PERIHELION_M - 1 / EARTH_SEMI_MAJOR_AXIS_M));
  const raw: Body[] = [
    { mass_kg: SUN_MASS, position_m: [0, 0, 0], velocity_m_s: [0, 0, 0] },
    { mass_kg: EARTH_MASS, position_m: [EARTH_PERIHELION_M, 0, 0], velocity_m_s: [0, vEarth, 0] },
  ];
  if (preset === 'sun_earth_moon') {
    const vMoon = Math.sqrt((G * (EARTH_MASS + MOON_MASS)) / MOON_DISTANCE_M);
    raw.push({
      mass_kg: MOON_MASS,
      position_m: [EARTH_PERIHELION_M + MOON_DISTANCE_M, 0, 0],
      velocity_m_s: [0, vEarth + vMoon, 0],
    });
  }
  let mTot = 0;
  const com = [0, 0, 0];
  const vcom = [0, 0, 0];
  for (const b of raw) {
    mTot += b.mass_kg;
    for (let d = 0; d < 3; d++) {
      com[d]! += b.mass_kg * b.position_m[d]!;
      vcom[d]! += b.mass_kg * b.velocity_m_s[d]!;
    }
  }
  return raw.map((b) => ({
    mass_kg: b.mass_kg,
    position_m: [0, 1, 2].map((d) => b.position_m[d]! - com[d]! / mTot) as [number, number, number],
    velocity_m_s: [0, 1, 2].map((d) => b.velocity_m_s[d]! - vcom[d]! / mTot) as [number, number, number],
  }));
}

/** Accelerations into acc; returns the potential energy (same pair loop). */
function accelerations(n: number, G: number, mass: Float64Array, pos: Float64Array, acc: Float64Array): number {
  acc.fill(0);
  let potential = 0;
  for (let i = 0; i < n; i++) {
    const xi = pos[3 * i]!;
    const yi = pos[3 * i + 1]!;
    const zi = pos[3 * i + 2]!;
    for (let j = i + 1; j < n; j++) {
      const dx = pos[3 * j]! - xi;
      const dy = pos[3 * j + 1]! - yi;
      const dz = pos[3 * j + 2]! - zi;
      const r2 = dx * dx + dy * dy + dz * dz;
      const r = Math.sqrt(r2);
      const inv3 = G / (r2 * r);
      const fi = mass[j]! * inv3;
      const fj = mass[i]! * inv3;
      acc[3 * i] = acc[3 * i]! + fi * dx;
      acc[3 * i + 1] = acc[3 * i + 1]! + fi * dy;
      acc[3 * i + 2] = acc[3 * i + 2]! + fi * dz;
      acc[3 * j] = acc[3 * j]! - fj * dx;
      acc[3 * j + 1] = acc[3 * j + 1]! - fj * dy;
      acc[3 * j + 2] = acc[3 * j + 2]! - fj * dz;
      potential -= (G * mass[i]! * mass[j]!) / r;
    }
  }
  return potential;
}

function kinetic(n: number, mass: Float64Array, vel: Float64Array): number {
  let ke = 0;
  for (let i = 0; i < n; i++) {
    const vx = vel[3 * i]!;
    const vy = vel[3 * i + 1]!;
    const vz = vel[3 * i + 2]!;
    ke += 0.5 * mass[i]! * (vx * vx + vy * vy + vz * vz);
  }
  return ke;
}

/** L = Σ m r × v into out; returns its scale Σ m |r| |v|, the size of the terms whose rounding L carries. */
function angularMomentum(n: number, mass: Float64Array, pos: Float64Array, vel: Float64Array, out: Float64Array): number {
  out.fill(0);
  let scale = 0;
  for (let i = 0; i < n; i++) {
    const m = mass[i]!;
    const x = pos[3 * i]!,
      y = pos[3 * i + 1]!,
      zc = pos[3 * i + 2]!;
    const vx = vel[3 * i]!,
      vy = vel[3 * i + 1]!,
      vz = vel[3 * i + 2]!;
    out[0] = out[0]! + m * (y * vz - zc * vy);
    out[1] = out[1]! + m * (zc * vx - x * vz);
    out[2] = out[2]! + m * (x * vy - y * vx);
    scale += m * Math.hypot(x, y, zc) * Math.hypot(vx, vy, vz);
  }
  return scale;
}

/** E(0) and L(0) straight from the body list (its own pair sum), independent of the integrator's arrays. */
export function bodyInvariants(bodies: readonly Body[], G: number): { energy: number; L: [number, number, number] } {
  let energy = 0;
  const L: [number, number, number] = [0, 0, 0];
  bodies.forEach((b, i) => {
    const [x, y, zc] = b.position_m;
    const [vx, vy, vz] = b.velocity_m_s;
    energy += 0.5 * b.mass_kg * (vx * vx + vy * vy + vz * vz);
    L[0] += b.mass_kg * (y * vz - zc * vy);
    L[1] += b.mass_kg * (zc * vx - x * vz);
    L[2] += b.mass_kg * (x * vy - y * vx);
    for (let j = 0; j < i; j++) {
      const o = bodies[j]!;
      const r = Math.hypot(x - o.position_m[0], y - o.position_m[1], zc - o.position_m[2]);
      energy -= (G * b.mass_kg * o.mass_kg) / r;
    }
  });
  return { energy, L };
}

function run(inputs: MultibodyInputs, initialState?: unknown): SolverOutput {
  const start = initialState as MultibodyState | undefined;
  const G = inputs.G;
  const bodies = start ? start.bodies : (inputs.bodies ?? presetBodies(inputs.preset, G));
  const t0 = start ? start.t_s : 0;
  const n = bodies.length;
  const steps = multibodyStepCount(inputs.t_end_s, inputs.dt_s);
  const h = inputs.t_end_s / steps;

  const mass = Float64Array.from(bodies, (b) => b.mass_kg);
  const pos = new Float64Array(3 * n);
  const vel = new Float64Array(3 * n);
  bodies.forEach((b, i) => {
    for (let d = 0; d < 3; d++) {
      pos[3 * i + d] = b.position_m[d]!;
      vel[3 * i + d] = b.velocity_m_s[d]!;
    }
  });
  const acc = new Float64Array(3 * n);
  const L = new Float64Array(3);

  const initial = bodyInvariants(bodies, G);
  const l0Norm = Math.hypot(...initial.L);
  let maxEnergyDrift = 0;
  let energyAtMaxDrift = initial.energy;
  let maxLDistance = 0;
  let maxLScale = 0;

  const sampleIdx = strideIndices(steps + 1, SAMPLES);
  let nextSample = 0;
  const sampleT: number[] = [];
  const sampleE: number[] = [];
  const traj = Array.from({ length: n }, () => ({ x_m: [] as number[], y_m: [] as number[], z_m: [] as number[] }));

  let potential = accelerations(n, G, mass, pos, acc);
  const observe = (k: number) => {
    const energy = kinetic(n, mass, vel) + potential;
    const drift = Math.abs(energy - initial.energy) / Math.abs(initial.energy);
    if (drift > maxEnergyDrift || !Number.isFinite(drift)) {
      maxEnergyDrift = Number.isFinite(drift) ? drift : Number.POSITIVE_INFINITY;
      energyAtMaxDrift = energy;
    }
    const lScale = angularMomentum(n, mass, pos, vel, L);
    if (lScale > maxLScale) maxLScale = lScale;
    const dl = Math.hypot(L[0]! - initial.L[0], L[1]! - initial.L[1], L[2]! - initial.L[2]);
    if (dl > maxLDistance || !Number.isFinite(dl)) maxLDistance = Number.isFinite(dl) ? dl : Number.POSITIVE_INFINITY;
    if (sampleIdx[nextSample] === k) {
      sampleT.push(t0 + k * h);
      sampleE.push(energy);
      for (let i = 0; i < n; i++) {
        traj[i]!.x_m.push(pos[3 * i]!);
        traj[i]!.y_m.push(pos[3 * i + 1]!);
        traj[i]!.z_m.push(pos[3 * i + 2]!);
      }
      nextSample++;
    }
    return energy;
  };

  let energy = observe(0);
  const halfH = 0.5 * h;
  const len = 3 * n;
  for (let k = 1; k <= steps; k++) {
    for (let c = 0; c < len; c++) vel[c] = vel[c]! + halfH * acc[c]!;
    for (let c = 0; c < len; c++) pos[c] = pos[c]! + h * vel[c]!;
    potential = accelerations(n, G, mass, pos, acc);
    for (let c = 0; c < len; c++) vel[c] = vel[c]! + halfH * acc[c]!;
    energy = observe(k);
  }

  // Leapfrog with central pair forces keeps L exactly but for rounding, which is relative to the terms m r × v, not
  // to their sum: a radial escape has ‖L(0)‖ ~ 1e-16 Σ m|r||v| and a drift of rounding ~1e-13 of it. So L(0) is
  // measured at no less than 1e-6 of that scale (decisions.md, "A conserved quantity that is 0").
  const lReference = Math.max(l0Norm, L_SCALE_FLOOR * maxLScale);
  const parts: CheckPart[] = [
    checkPart('energy conservation', 'E(t) at the largest drift vs E(0)', energyAtMaxDrift, initial.energy),
    // |computed − reference|/|reference| = max_t ‖L(t) − L(0)‖ / max(‖L(0)‖, 1e-6 max_t Σ m|r||v|).
    checkPart('angular-momentum conservation', 'L₀ + max_t ‖L(t) − L(0)‖ vs L₀ = max(‖L(0)‖, 1e-6 max_t Σ m|r||v|)', lReference + maxLDistance, lReference),
  ];
  const check = combineChecks(parts);

  let orbitalPeriod: number | null = null;
  if (n === 2) {
    const r = Math.hypot(...[0, 1, 2].map((d) => bodies[1]!.position_m[d]! - bodies[0]!.position_m[d]!));
    const v2 = [0, 1, 2].reduce((s, d) => s + (bodies[1]!.velocity_m_s[d]! - bodies[0]!.velocity_m_s[d]!) ** 2, 0);
    const mu = G * (bodies[0]!.mass_kg + bodies[1]!.mass_kg);
    const a = 1 / (2 / r - v2 / mu); // osculating semi-major axis of the initial relative orbit
    orbitalPeriod = a > 0 ? 2 * Math.PI * Math.sqrt((a * a * a) / mu) : null;
  }

  const finalBodies: Body[] = bodies.map((b, i) => ({
    mass_kg: b.mass_kg,
    position_m: [pos[3 * i]!, pos[3 * i + 1]!, pos[3 * i + 2]!],
    velocity_m_s: [vel[3 * i]!, vel[3 * i + 1]!, vel[3 * i + 2]!],
  }));
  angularMomentum(n, mass, pos, vel, L);
  return {
    mode: null,
    value: energy,
    unit: 'J',
    output_class: 'profile',
    // Rule-8 samples: the x coordinate of body 1 (Earth in the presets) from `trajectories`.
    rule8: traj[1]!.x_m,
    rule8_array: 'trajectories',
    outputs: {
      trajectories: { t_s: sampleT, bodies: traj },
      energy_series: { t_s: sampleT, E_J: sampleE },
      initial_energy_J: initial.energy,
      angular_momentum_kg_m2_s: [L[0]!, L[1]!, L[2]!],
      max_energy_drift: maxEnergyDrift,
      max_angular_momentum_drift: lReference > 0 ? maxLDistance / lReference : 0,
      orbital_period_s: orbitalPeriod,
      dt_s: h,
      steps,
      body_count: n,
    },
    check,
    state: { bodies: finalBodies, t_s: t0 + steps * h } satisfies MultibodyState,
  };
}

export const multibody: SolverDef<MultibodyInputs> = {
  id: 'multibody',
  kind: 'gravitational N-body',
  endpoint: '/api/svc/multibody',
  catalogue: false,
  modes: null,
  stateful: true,
  inputs: [
    { key: 'preset', unit: '—', default: 'sun_earth_moon', range: 'sun_earth, sun_earth_moon' },
    {
      key: 'bodies',
      unit: '—',
      default: 'preset',
      range: '2 … 100 × {mass_kg 1e-10 … 1e45, position_m[3] each |·| ≤ 1e26, velocity_m_s[3] each |·| ≤ c}, positions distinct',
    },
    { key: 't_end_s', unit: 's', default: 3.15576e7, range: '> 0' },
    { key: 'dt_s', unit: 's', default: 3600, range: '> 0 (shrunk to divide t_end_s); (N + 6)² × steps ≤ 2e8' },
    { key: 'G', unit: 'm³/(kg s²)', default: 6.6743e-11, range: '1e-20 … 1e20' },
  ],
  schema,
  resolve(raw) {
    const inputs = parseInputs(schema, raw) as MultibodyInputs;
    const n = inputs.bodies?.length ?? (inputs.preset === 'sun_earth' ? 2 : 3);
    checkWorkLimit('dt_s', stepWork(n) * multibodyStepCount(inputs.t_end_s, inputs.dt_s), MAX_WORK);
    if (inputs.bodies === undefined) delete inputs.bodies;
    else checkDistinct(inputs.bodies, 'bodies');
    return inputs;
  },
  resolveState(raw, inputs) {
    const parsed = parseState(stateSchema, raw);
    const n = parsed.bodies.length;
    checkWorkLimit('initialState', stepWork(n) * multibodyStepCount(inputs.t_end_s, inputs.dt_s), MAX_WORK);
    checkDistinct(parsed.bodies, 'initialState');
    return parsed as MultibodyState;
  },
  run,
};

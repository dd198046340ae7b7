// fracture — bond-based peridynamics on a 2-D plate (plane stress) or a 1-D bar (solvers.md §3.7).
// Material points on a uniform lattice, pairwise bonds within the horizon δ, bond stretch s = (|ξ + η| − |ξ|)/|ξ|,
// bond force c·s·V_i·V_j along the deformed bond; a bond breaks for good once s exceeds its critical stretch.
// Velocity Verlet with dt = cfl × the Silling–Askari stable step. Bond removal happens AFTER the second half-kick:
// the step is finished with the bond intact, the energy is recorded, then every bond over threshold is removed, its
// current energy ½ c s² |ξ| V_i V_j moves to the dissipated account D, and the forces are recomputed. (Removing
// bonds before the second half-kick makes the energy error first order in dt and the check fails.)
// Point pairs closer than d_c = 0.9 dx repel with c·s_c·V_i·V_j (s_c = (d_c − r)/d_c), energy ½ c s_c² d_c V_i V_j.
// The check is the energy balance max_t |KE + SE + D − E0| / E0 (E0 = initial kinetic energy; undeformed start).
// dt = t_end / ceil(t_end / (cfl·stable step)), so the run ends exactly at t_end with dt ≤ cfl × the stable step.
// Bonds live in flat typed arrays; a broken bond's slot is taken by the last live bond, so the force loop has no
// liveness branch.
import { z } from 'zod';
import { InputError } from './errors.js';
import type { Check, InputSpec, SolverDef, SolverOutput, StateField } from './types.js';
import { boundField, boundProfile, checkWorkLimit, intIn, makeCheck, numIn, parseInputs, positive, refuseCheck, strideIndices } from './util.js';

export interface FracturePlateInputs extends Record<string, unknown> {
  mode: 'plate';
  side_m: number;
  thickness_m: number;
  youngs_modulus_Pa: number;
  density_kg_m3: number;
  fracture_energy_J_m2: number;
  crack_length_m: number;
  n: number;
  horizon_factor: number;
  strain_rate_1_s: number;
  t_end_s: number;
  cfl: number;
}

export interface FractureBarInputs extends Record<string, unknown> {
  mode: 'bar';
  length_m: number;
  area_m2: number;
  youngs_modulus_Pa: number;
  density_kg_m3: number;
  fracture_energy_J_m2: number;
  n: number;
  horizon_cells: number;
  notch_factor: number;
  end_velocity_m_s: number;
  t_end_s: number;
  cfl: number;
}

export type FractureInputs = FracturePlateInputs | FractureBarInputs;

const WORK_LIMIT = 2e8;
/** Damage level marking a point as part of the crack (a crack-face point of the default lattice has φ ≈ 0.39). */
const CRACK_DAMAGE = 0.35;
const CONTACT_FACTOR = 0.9;

const PLATE_ONLY = ['side_m', 'thickness_m', 'crack_length_m', 'horizon_factor', 'strain_rate_1_s'] as const;
const BAR_ONLY = ['length_m', 'area_m2', 'horizon_cells', 'notch_factor', 'end_velocity_m_s'] as const;

const schema = z.strictObject({
  mode: z.enum(['plate', 'bar']).optional(),
  side_m: numIn(1e-4, 10).optional(),
  length_m: numIn(1e-4, 10).optional(),
  // Finite ranges (solvers.md had "> 0"): a MAX_VALUE thickness made the initial energy ∞ and a 1e300 J/m² fracture
  // energy an infinite critical stretch. A 1 µm foil to a 10 m slab; glass-like 1e-3 … steel-like 1e6 J/m².
  thickness_m: numIn(1e-6, 10).optional(),
  area_m2: numIn(1e-10, 100).optional(),
  youngs_modulus_Pa: numIn(1e6, 1e12).optional(),
  density_kg_m3: numIn(10, 25000).optional(),
  fracture_energy_J_m2: numIn(1e-3, 1e6).optional(),
  crack_length_m: numIn(0, 8).optional(),
  n: intIn(20, 5000).optional(),
  horizon_factor: numIn(2, 5).optional(),
  horizon_cells: intIn(1, 6).optional(),
  strain_rate_1_s: numIn(0, 1e4).optional(),
  notch_factor: z.number().gt(0).max(1).optional(),
  end_velocity_m_s: numIn(0, 1e3).optional(),
  t_end_s: positive().optional(),
  cfl: numIn(0.01, 0.5).optional(),
});

// ---- Lattice families -------------------------------------------------------------------------------------------

/** Half of the 2-D lattice family (q > 0, or q = 0 and p > 0) with p² + q² ≤ hf², in units of dx. */
function plateHalfOffsets(hf: number): [number, number][] {
  const out: [number, number][] = [];
  const r = Math.floor(hf);
  const hf2 = hf * hf;
  for (let q = 0; q <= r; q++) {
    for (let p = -r; p <= r; p++) {
      if (q === 0 && p <= 0) continue;
      if (p * p + q * q <= hf2) out.push([p, q]);
    }
  }
  return out;
}

interface Model {
  /** Number of points. */
  N: number;
  dx: number;
  /** Point volume (uniform). */
  V: number;
  horizon: number;
  micromodulus: number;
  criticalStretch: number;
  /** Silling–Askari stable step √(2ρ / max_i Σ_j c V_j/|ξ_ij|), from the full (interior) family. */
  stableDt: number;
  /** Exact number of bonds of the uncut lattice. */
  bondCount: number;
}

function plateModel(p: FracturePlateInputs): Model {
  const dx = p.side_m / p.n;
  const V = p.thickness_m * dx * dx;
  const horizon = p.horizon_factor * dx;
  const c = (9 * p.youngs_modulus_Pa) / (Math.PI * p.thickness_m * horizon ** 3);
  const s0 = Math.sqrt((4 * Math.PI * p.fracture_energy_J_m2) / (9 * p.youngs_modulus_Pa * horizon));
  const offsets = plateHalfOffsets(p.horizon_factor);
  let inverseLengths = 0;
  let bondCount = 0;
  for (const [a, b] of offsets) {
    inverseLengths += 2 / (Math.sqrt(a * a + b * b) * dx);
    bondCount += (p.n - Math.abs(a)) * (p.n - Math.abs(b));
  }
  const stableDt = Math.sqrt((2 * p.density_kg_m3) / (c * V * inverseLengths));
  return { N: p.n * p.n, dx, V, horizon, micromodulus: c, criticalStretch: s0, stableDt, bondCount };
}

function barModel(p: FractureBarInputs): Model {
  const dx = p.length_m / p.n;
  const V = p.area_m2 * dx;
  const m = p.horizon_cells;
  const horizon = m * dx;
  const c = (2 * p.youngs_modulus_Pa) / (p.area_m2 * horizon * horizon);
  const s0 = Math.sqrt((3 * p.fracture_energy_J_m2) / (p.youngs_modulus_Pa * horizon));
  let inverseLengths = 0;
  let bondCount = 0;
  for (let k = 1; k <= m; k++) {
    inverseLengths += 2 / (k * dx);
    bondCount += p.n - k;
  }
  const stableDt = Math.sqrt((2 * p.density_kg_m3) / (c * V * inverseLengths));
  return { N: p.n, dx, V, horizon, micromodulus: c, criticalStretch: s0, stableDt, bondCount };
}

function modelOf(inputs: FractureInputs): Model {
  return inputs.mode === 'plate' ? plateModel(inputs) : barModel(inputs);
}

function stepCount(inputs: FractureInputs, model: Model): number {
  return Math.max(1, Math.ceil(inputs.t_end_s / (inputs.cfl * model.stableDt)));
}

// ---- Inputs -----------------------------------------------------------------------------------------------------

function resolve(raw: unknown): FractureInputs {
  const p = parseInputs(schema, raw);
  const mode = p.mode ?? 'plate';
  const foreign = mode === 'plate' ? BAR_ONLY : PLATE_ONLY;
  for (const key of foreign) {
    if (p[key] !== undefined) {
      throw new InputError(key, `${key} applies to mode ${mode === 'plate' ? 'bar' : 'plate'} only`, mode === 'plate' ? [...PLATE_ONLY] : [...BAR_ONLY]);
    }
  }
  let inputs: FractureInputs;
  if (mode === 'plate') {
    const side = p.side_m ?? 0.05;
    const n = p.n ?? 40;
    if (n > 100) throw new InputError('n', 'n (points per side) must be ≤ 100 in mode plate', { min: 20, max: 100 });
    const crack = p.crack_length_m ?? 0.01;
    if (crack > 0.8 * side) throw new InputError('crack_length_m', 'crack_length_m must be ≤ 0.8·side_m', { min: 0, max: 0.8 * side });
    inputs = {
      mode,
      side_m: side,
      thickness_m: p.thickness_m ?? 1e-3,
      youngs_modulus_Pa: p.youngs_modulus_Pa ?? 72e9,
      density_kg_m3: p.density_kg_m3 ?? 2440,
      fracture_energy_J_m2: p.fracture_energy_J_m2 ?? 8.0,
      crack_length_m: crack,
      n,
      horizon_factor: p.horizon_factor ?? 3.015,
      strain_rate_1_s: p.strain_rate_1_s ?? 50,
      t_end_s: p.t_end_s ?? 1e-5,
      cfl: p.cfl ?? 0.1,
    };
  } else {
    const n = p.n ?? 400;
    if (n < 50) throw new InputError('n', 'n must be ≥ 50 in mode bar', { min: 50, max: 5000 });
    inputs = {
      mode,
      length_m: p.length_m ?? 1.0,
      area_m2: p.area_m2 ?? 1e-4,
      youngs_modulus_Pa: p.youngs_modulus_Pa ?? 72e9,
      density_kg_m3: p.density_kg_m3 ?? 2440,
      fracture_energy_J_m2: p.fracture_energy_J_m2 ?? 8.0,
      n,
      horizon_cells: p.horizon_cells ?? 3,
      notch_factor: p.notch_factor ?? 0.5,
      end_velocity_m_s: p.end_velocity_m_s ?? 1.0,
      t_end_s: p.t_end_s ?? 2e-4,
      cfl: p.cfl ?? 0.2,
    };
  }
  const model = modelOf(inputs);
  checkWorkLimit('t_end_s', model.bondCount * stepCount(inputs, model), WORK_LIMIT);
  return inputs;
}

// ---- Simulation -------------------------------------------------------------------------------------------------

interface Lattice {
  X: Float64Array;
  Y: Float64Array;
  bi: Int32Array;
  bj: Int32Array;
  length0: Float64Array;
  critical: Float64Array;
  /** Bonds of each point's full family (before any cut), for the damage φ. */
  familySize: Int32Array;
  /** Bonds 0 … liveCount−1 are intact (after the pre-crack). */
  liveCount: number;
  precrackBonds: number;
  /** The mid-plane: y = midPlane (plate) or x = midPlane (bar); points at or beyond it are the upper/right part. */
  midPlane: number;
  midPlaneArea: number;
}

function buildPlate(p: FracturePlateInputs, model: Model): Lattice {
  const n = p.n;
  const dx = model.dx;
  const N = n * n;
  const X = new Float64Array(N);
  const Y = new Float64Array(N);
  for (let iy = 0; iy < n; iy++) {
    for (let ix = 0; ix < n; ix++) {
      X[iy * n + ix] = (ix + 0.5) * dx;
      Y[iy * n + ix] = (iy + 0.5) * dx;
    }
  }
  const offsets = plateHalfOffsets(p.horizon_factor);
  const total = model.bondCount;
  const bi = new Int32Array(total);
  const bj = new Int32Array(total);
  const length0 = new Float64Array(total);
  const critical = new Float64Array(total);
  const familySize = new Int32Array(N);
  const yc = p.side_m / 2;
  const half = p.crack_length_m / 2;
  const xc = p.side_m / 2;
  // Intact bonds are written from the front, pre-cracked ones from the back (then dropped).
  let front = 0;
  let back = total;
  for (let iy = 0; iy < n; iy++) {
    for (let ix = 0; ix < n; ix++) {
      const i = iy * n + ix;
      for (const [a, b] of offsets) {
        const jx = ix + a;
        const jy = iy + b;
        if (jx < 0 || jx >= n || jy >= n) continue;
        const j = jy * n + jx;
        familySize[i]!++;
        familySize[j]!++;
        // A bond is cut by the pre-crack when it joins the two halves and meets y = a/2 within the crack.
        let cut = false;
        if (half > 0 && Y[i]! < yc !== Y[j]! < yc) {
          const xCross = X[i]! + ((yc - Y[i]!) / (Y[j]! - Y[i]!)) * (X[j]! - X[i]!);
          cut = xCross >= xc - half && xCross <= xc + half;
        }
        const slot = cut ? --back : front++;
        bi[slot] = i;
        bj[slot] = j;
        length0[slot] = Math.sqrt(a * a + b * b) * dx;
        critical[slot] = model.criticalStretch;
      }
    }
  }
  return {
    X,
    Y,
    bi,
    bj,
    length0,
    critical,
    familySize,
    liveCount: front,
    precrackBonds: total - back,
    midPlane: yc,
    midPlaneArea: p.side_m * p.thickness_m,
  };
}

function buildBar(p: FractureBarInputs, model: Model): Lattice {
  const n = p.n;
  const dx = model.dx;
  const X = new Float64Array(n);
  const Y = new Float64Array(n);
  for (let i = 0; i < n; i++) X[i] = (i + 0.5) * dx;
  const total = model.bondCount;
  const bi = new Int32Array(total);
  const bj = new Int32Array(total);
  const length0 = new Float64Array(total);
  const critical = new Float64Array(total);
  const familySize = new Int32Array(n);
  const mid = p.length_m / 2;
  let b = 0;
  for (let i = 0; i < n; i++) {
    for (let k = 1; k <= p.horizon_cells; k++) {
      const j = i + k;
      if (j >= n) break;
      bi[b] = i;
      bj[b] = j;
      length0[b] = k * dx;
      // Bonds across mid-span carry the notch: a reduced critical stretch.
      critical[b] = X[i]! < mid !== X[j]! < mid ? p.notch_factor * model.criticalStretch : model.criticalStretch;
      familySize[i]!++;
      familySize[j]!++;
      b++;
    }
  }
  return { X, Y, bi, bj, length0, critical, familySize, liveCount: total, precrackBonds: 0, midPlane: mid, midPlaneArea: p.area_m2 };
}

/** Point pairs (a < b) closer than dc, by a cell list over the current interleaved positions (deterministic order). */
export function contactPairs(pos: Float64Array, N: number, dc: number): Int32Array {
  let minX = Infinity;
  let maxX = -Infinity;
  let minY = Infinity;
  let maxY = -Infinity;
  for (let i = 0; i < N; i++) {
    const px = pos[2 * i]!;
    const py = pos[2 * i + 1]!;
    if (px < minX) minX = px;
    if (px > maxX) maxX = px;
    if (py < minY) minY = py;
    if (py > maxY) maxY = py;
  }
  let size = dc;
  let ncx = Math.floor((maxX - minX) / size) + 1;
  let ncy = Math.floor((maxY - minY) / size) + 1;
  // Scattered fragments: coarser cells keep the grid O(N) (pairs are still found, cells only get fuller).
  while (ncx * ncy > 4 * N + 64) {
    size *= 2;
    ncx = Math.floor((maxX - minX) / size) + 1;
    ncy = Math.floor((maxY - minY) / size) + 1;
  }
  const cellOf = new Int32Array(N);
  const start = new Int32Array(ncx * ncy + 1);
  for (let i = 0; i < N; i++) {
    const cx = Math.min(ncx - 1, Math.floor((pos[2 * i]! - minX) / size));
    const cy = Math.min(ncy - 1, Math.floor((pos[2 * i + 1]! - minY) / size));
    cellOf[i] = cy * ncx + cx;
    start[cellOf[i]! + 1]!++;
  }
  for (let c = 0; c < ncx * ncy; c++) start[c + 1]! += start[c]!;
  const fill = start.slice(0, ncx * ncy);
  const members = new Int32Array(N);
  for (let i = 0; i < N; i++) members[fill[cellOf[i]!]!++] = i;
  const pairs: number[] = [];
  const dc2 = dc * dc;
  const close = (a: number, b: number): boolean => {
    const ddx = pos[2 * b]! - pos[2 * a]!;
    const ddy = pos[2 * b + 1]! - pos[2 * a + 1]!;
    return ddx * ddx + ddy * ddy < dc2;
  };
  const stencil = [
    [1, 0],
    [-1, 1],
    [0, 1],
    [1, 1],
  ] as const;
  for (let cy = 0; cy < ncy; cy++) {
    for (let cx = 0; cx < ncx; cx++) {
      const c = cy * ncx + cx;
      for (let s = start[c]!; s < start[c + 1]!; s++) {
        const a = members[s]!;
        // Same cell (later members), then the half stencil: (+1,0), (−1,+1), (0,+1), (+1,+1).
        for (let t = s + 1; t < start[c + 1]!; t++) {
          const b = members[t]!;
          if (close(a, b)) pairs.push(Math.min(a, b), Math.max(a, b));
        }
        for (const [ox, oy] of stencil) {
          const nx = cx + ox;
          const ny = cy + oy;
          if (nx < 0 || nx >= ncx || ny >= ncy) continue;
          const d = ny * ncx + nx;
          for (let t = start[d]!; t < start[d + 1]!; t++) {
            const b = members[t]!;
            if (close(a, b)) pairs.push(Math.min(a, b), Math.max(a, b));
          }
        }
      }
    }
  }
  return Int32Array.from(pairs);
}

// The hot loops below work on interleaved (x, y) arrays: pos[2i], pos[2i+1]; a bond stores the offsets 2i, 2j.

/**
 * Bond accelerations into acc (zeroed first): each intact bond pulls its points together with accel·s per unit of
 * deformed direction (accel = c V/ρ; s/r = 1/|ξ| − 1/r). Lists the bonds over their critical stretch in overList.
 * out[0] = Σ s²|ξ| (strain energy / ½cV²), out[1] = number of listed bonds.
 */
function bondForces(
  pos: Float64Array,
  pair: Int32Array,
  length0: Float64Array,
  inverseLength0: Float64Array,
  critical: Float64Array,
  live: number,
  acc: Float64Array,
  accel: number,
  overList: Int32Array,
  out: Float64Array,
): void {
  acc.fill(0);
  let energySum = 0;
  let over = 0;
  for (let b = 0; b < live; b++) {
    const i = pair[2 * b]!;
    const j = pair[2 * b + 1]!;
    const ex = pos[j]! - pos[i]!;
    const ey = pos[j + 1]! - pos[i + 1]!;
    const r = Math.sqrt(ex * ex + ey * ey);
    const inv0 = inverseLength0[b]!;
    const s = r * inv0 - 1;
    energySum += s * s * length0[b]!;
    if (s > critical[b]!) overList[over++] = b;
    const f = accel * (inv0 - 1 / r);
    const fx = f * ex;
    const fy = f * ey;
    acc[i]! += fx;
    acc[i + 1]! += fy;
    acc[j]! -= fx;
    acc[j + 1]! -= fy;
  }
  out[0] = energySum;
  out[1] = over;
}

/**
 * Contact repulsion accel·s_c per unit direction for every candidate pair now closer than dc. out[0] = Σ s_c²
 * (energy / ½cV²d_c), out[1] = number of pairs in contact.
 */
function contactForces(pos: Float64Array, candidates: Int32Array, dc: number, acc: Float64Array, accel: number, out: Float64Array): void {
  let sum = 0;
  let count = 0;
  for (let k = 0; k < candidates.length; k += 2) {
    const i = 2 * candidates[k]!;
    const j = 2 * candidates[k + 1]!;
    const ex = pos[j]! - pos[i]!;
    const ey = pos[j + 1]! - pos[i + 1]!;
    const r = Math.sqrt(ex * ex + ey * ey);
    if (!(r < dc)) continue;
    count++;
    const sc = (dc - r) / dc;
    sum += sc * sc;
    if (r > 0) {
      const f = (accel * sc) / r;
      acc[i]! -= f * ex;
      acc[i + 1]! -= f * ey;
      acc[j]! += f * ex;
      acc[j + 1]! += f * ey;
    }
  }
  out[0] = sum;
  out[1] = count;
}

/** First half-kick and drift over the 2N interleaved components; returns the largest squared displacement from ref. */
function kickDrift(pos: Float64Array, vel: Float64Array, acc: Float64Array, ref: Float64Array, n2: number, halfDt: number, dt: number): number {
  let u2max = 0;
  for (let k = 0; k < n2; k += 2) {
    const vx = vel[k]! + halfDt * acc[k]!;
    const vy = vel[k + 1]! + halfDt * acc[k + 1]!;
    vel[k] = vx;
    vel[k + 1] = vy;
    const px = pos[k]! + dt * vx;
    const py = pos[k + 1]! + dt * vy;
    pos[k] = px;
    pos[k + 1] = py;
    const ux = px - ref[k]!;
    const uy = py - ref[k + 1]!;
    const u2 = ux * ux + uy * uy;
    if (u2 > u2max) u2max = u2;
  }
  return u2max;
}

/** Second half-kick; returns Σ v². */
function kick(vel: Float64Array, acc: Float64Array, n2: number, halfDt: number): number {
  let v2 = 0;
  for (let k = 0; k < n2; k++) {
    const v = vel[k]! + halfDt * acc[k]!;
    vel[k] = v;
    v2 += v * v;
  }
  return v2;
}

/**
 * Remove the listed over-stretched bonds (listed by the last bondForces at the same positions), highest index first, each
 * replaced by the last live bond. A removed bond's own acceleration contribution is taken back out, which is the
 * force recomputation without it. Returns the new live count; out[0] = Σ s²|ξ| of the removed bonds (their energy
 * / ½cV²), out[1] = the earliest fraction of the step at which a removed bond reached its critical stretch (linear in
 * the stretch between the previous and the current positions).
 */
function breakBonds(
  pos: Float64Array,
  posPrev: Float64Array,
  pair: Int32Array,
  length0: Float64Array,
  inverseLength0: Float64Array,
  critical: Float64Array,
  live: number,
  acc: Float64Array,
  intact: Int32Array,
  accel: number,
  overList: Int32Array,
  overCount: number,
  out: Float64Array,
): number {
  let removedSum = 0;
  let earliest = 1;
  for (let k = overCount - 1; k >= 0; k--) {
    const b = overList[k]!;
    const i = pair[2 * b]!;
    const j = pair[2 * b + 1]!;
    const sc = critical[b]!;
    const inv0 = inverseLength0[b]!;
    const ex = pos[j]! - pos[i]!;
    const ey = pos[j + 1]! - pos[i + 1]!;
    const r = Math.sqrt(ex * ex + ey * ey);
    // The same operations as bondForces: the same stretch and force bits.
    const s = r * inv0 - 1;
    removedSum += s * s * length0[b]!;
    const f = accel * (inv0 - 1 / r);
    acc[i]! -= f * ex;
    acc[i + 1]! -= f * ey;
    acc[j]! += f * ex;
    acc[j + 1]! += f * ey;
    intact[i >> 1]!--;
    intact[j >> 1]!--;
    const px = posPrev[j]! - posPrev[i]!;
    const py = posPrev[j + 1]! - posPrev[i + 1]!;
    const sPrev = Math.sqrt(px * px + py * py) * inv0 - 1;
    const frac = s > sPrev ? Math.min(1, Math.max(0, (sc - sPrev) / (s - sPrev))) : 1;
    if (frac < earliest) earliest = frac;
    const last = live - 1;
    if (b !== last) {
      pair[2 * b] = pair[2 * last]!;
      pair[2 * b + 1] = pair[2 * last + 1]!;
      length0[b] = length0[last]!;
      inverseLength0[b] = inverseLength0[last]!;
      critical[b] = critical[last]!;
    }
    live = last;
  }
  out[0] = removedSum;
  out[1] = earliest;
  return live;
}

function run(inputs: FractureInputs): SolverOutput {
  const model = modelOf(inputs);
  const lat = inputs.mode === 'plate' ? buildPlate(inputs, model) : buildBar(inputs, model);
  const sim = integrate(inputs, model, lat);
  const { N } = model;
  const { X } = lat;
  const { pos, pair, live, E0 } = sim;

  // De-interleave for the diagnostics.
  const x = new Float64Array(N);
  const y = new Float64Array(N);
  for (let i = 0; i < N; i++) {
    x[i] = pos[2 * i]!;
    y[i] = pos[2 * i + 1]!;
  }
  const bi = new Int32Array(live);
  const bj = new Int32Array(live);
  for (let b = 0; b < live; b++) {
    bi[b] = pair[2 * b]! >> 1;
    bj[b] = pair[2 * b + 1]! >> 1;
  }

  // ---- Diagnostics at t_end ----
  const damage = new Float64Array(N);
  let maxDamage = 0;
  for (let i = 0; i < N; i++) {
    damage[i] = lat.familySize[i]! > 0 ? 1 - sim.intact[i]! / lat.familySize[i]! : 0;
    if (damage[i]! > maxDamage) maxDamage = damage[i]!;
  }
  const plate = inputs.mode === 'plate';
  const stress = bondStresses(plate, model, lat, x, y, bi, bj);
  const midForce = contactTraction(plate, model, lat, x, y, sim.candidates, stress.midForce);
  const maxStress = maxPrincipalStress(plate, stress, N);

  let check: Check = makeCheck('energy_balance', 'KE + SE + D at the worst step vs E0 = initial kinetic energy [J]', sim.worstEnergy, E0);
  if (!(E0 > 0)) check = refuseCheck(check, 'no loading: the initial kinetic energy E0 is zero, the balance cannot be normalised');

  const receipt: Record<string, StateField> = {
    stress: { value: maxStress, unit: 'Pa' },
    strain: { value: stress.maxStretch, unit: '1' },
    damage: { value: maxDamage, unit: '1' },
    elasticity: { value: inputs.youngs_modulus_Pa, unit: 'Pa' },
    traction: { value: midForce / lat.midPlaneArea, unit: 'Pa' },
    contact: { value: sim.contactCount, unit: '1' },
  };

  const common = {
    broken_bonds: sim.broken,
    first_failure_time_s: sim.firstFailure,
    kinetic_energy_J: sim.kinetic,
    strain_energy_J: sim.strainEnergy,
    dissipated_energy_J: sim.dissipated,
    initial_energy_J: E0,
    max_energy_error: E0 > 0 ? sim.worstDeviation / E0 : null,
    bonds: model.bondCount,
    intact_bonds: live,
    precrack_bonds: lat.precrackBonds,
    time_steps: sim.steps,
    dt_s: sim.dt,
    stable_dt_s: model.stableDt,
    horizon_m: model.horizon,
    micromodulus: model.micromodulus,
    critical_stretch: model.criticalStretch,
    contact_pairs: sim.contactCount,
  };
  const { outputs, rule8 } = inputs.mode === 'plate' ? plateOutputs(inputs, model, X, damage, common) : barOutputs(inputs, model, X, damage, common);

  return {
    mode: inputs.mode,
    value: sim.dissipated,
    unit: 'J',
    output_class: inputs.mode === 'plate' ? 'field' : 'profile',
    rule8,
    rule8_array: 'damage',
    outputs,
    check,
    receipt_fields: receipt,
  };
}

/** The state at t_end of one run of the lattice, and the energy record of the run. */
interface Integrated {
  /** Interleaved positions (x0, y0, x1, y1, …). */
  pos: Float64Array;
  /** Intact bonds 0 … live−1 as interleaved position indices of their two points. */
  pair: Int32Array;
  live: number;
  /** Intact bonds per point. */
  intact: Int32Array;
  /** Contact candidate pairs of the last list. */
  candidates: Int32Array;
  contactCount: number;
  steps: number;
  dt: number;
  E0: number;
  kinetic: number;
  strainEnergy: number;
  dissipated: number;
  broken: number;
  /** KE + SE + D at the step furthest from E0, and that distance. */
  worstEnergy: number;
  worstDeviation: number;
  firstFailure: number | null;
}

/** Velocity Verlet from the initial velocity field to t_end; over-stretched bonds break after each complete step. */
function integrate(inputs: FractureInputs, model: Model, lat: Lattice): Integrated {
  const { N, V, dx } = model;
  const c = model.micromodulus;
  const rho = inputs.density_kg_m3;
  const steps = stepCount(inputs, model);
  const dt = inputs.t_end_s / steps;
  const halfDt = 0.5 * dt;
  const cVV = c * V * V;
  const accel = (c * V) / rho; // bond force c·s·V_i·V_j divided by the point mass ρV, per unit stretch
  const dc = CONTACT_FACTOR * dx;
  // Contact candidates: pairs closer than d_c + skin when the list was built. While no point has moved skin/2 since,
  // no other pair can be closer than d_c. (The reference lattice has no pair below dx > d_c + skin.)
  const skin = 0.05 * dx;
  const rebuildDisplacement2 = (0.5 * skin) ** 2;

  const { X, Y, length0, critical } = lat;
  let live = lat.liveCount;
  const n2 = 2 * N;
  const ref = new Float64Array(n2);
  for (let i = 0; i < N; i++) {
    ref[2 * i] = X[i]!;
    ref[2 * i + 1] = Y[i]!;
  }
  const pos = Float64Array.from(ref);
  const posPrev = new Float64Array(n2);
  const vel = initialVelocities(inputs, lat, N);
  const acc = new Float64Array(n2);
  const pair = new Int32Array(2 * lat.bi.length);
  const inverseLength0 = new Float64Array(lat.bi.length);
  const overList = new Int32Array(lat.bi.length);
  const intact = new Int32Array(N);
  for (let b = 0; b < live; b++) {
    pair[2 * b] = 2 * lat.bi[b]!;
    pair[2 * b + 1] = 2 * lat.bj[b]!;
    inverseLength0[b] = 1 / length0[b]!;
    intact[lat.bi[b]!]!++;
    intact[lat.bj[b]!]!++;
  }

  const scratch = new Float64Array(2);
  const posAtBuild = Float64Array.from(pos);
  let candidates: Int32Array = contactPairs(pos, N, dc + skin);
  let contactCount = 0;
  let overCount = 0;

  /** Accelerations and strain energy (bonds + contact) at the current positions. */
  const computeForces = (movedSinceBuild2: number): number => {
    bondForces(pos, pair, length0, inverseLength0, critical, live, acc, accel, overList, scratch);
    overCount = scratch[1]!;
    let energy = 0.5 * cVV * scratch[0]!;
    if (movedSinceBuild2 >= rebuildDisplacement2) {
      candidates = contactPairs(pos, N, dc + skin);
      posAtBuild.set(pos);
    }
    contactCount = 0;
    if (candidates.length > 0) {
      contactForces(pos, candidates, dc, acc, accel, scratch);
      energy += 0.5 * cVV * dc * scratch[0]!;
      contactCount = scratch[1]!;
    }
    return energy;
  };

  let strainEnergy = computeForces(0);
  let v2 = 0;
  for (let k = 0; k < n2; k++) v2 += vel[k]! * vel[k]!;
  const E0 = 0.5 * rho * V * v2;
  let kinetic = E0;
  let dissipated = 0;
  let broken = 0;
  let worstEnergy = E0;
  let worstDeviation = 0;
  let firstFailure: number | null = null;

  const breakOut = new Float64Array(2);
  for (let step = 1; step <= steps; step++) {
    // The previous positions only serve to interpolate the first failure time.
    if (firstFailure === null) posPrev.set(pos);
    strainEnergy = computeForces(kickDrift(pos, vel, acc, posAtBuild, n2, halfDt, dt));
    kinetic = 0.5 * rho * V * kick(vel, acc, n2, halfDt);
    const total = kinetic + strainEnergy + dissipated;
    const deviation = Math.abs(total - E0);
    if (deviation > worstDeviation) {
      worstDeviation = deviation;
      worstEnergy = total;
    }

    if (overCount > 0) {
      // The step is complete and recorded with every bond intact; now break the over-stretched ones for good.
      const before = live;
      live = breakBonds(pos, posPrev, pair, length0, inverseLength0, critical, live, acc, intact, accel, overList, overCount, breakOut);
      const removedEnergy = 0.5 * cVV * breakOut[0]!;
      dissipated += removedEnergy;
      strainEnergy -= removedEnergy;
      broken += before - live;
      if (firstFailure === null) firstFailure = (step - 1 + breakOut[1]!) * dt;
    }
  }
  return {
    pos,
    pair,
    live,
    intact,
    candidates,
    contactCount,
    steps,
    dt,
    E0,
    kinetic,
    strainEnergy,
    dissipated,
    broken,
    worstEnergy,
    worstDeviation,
    firstFailure,
  };
}

/** The loading: plate, v_y = strain rate × (y − side/2); bar, v_x linear from −v at x = 0 to +v at x = L. */
function initialVelocities(inputs: FractureInputs, lat: Lattice, N: number): Float64Array {
  const { X, Y } = lat;
  const vel = new Float64Array(2 * N);
  if (inputs.mode === 'plate') {
    const mid = inputs.side_m / 2;
    for (let i = 0; i < N; i++) vel[2 * i + 1] = inputs.strain_rate_1_s * (Y[i]! - mid);
  } else {
    for (let i = 0; i < N; i++) vel[2 * i] = inputs.end_velocity_m_s * ((2 * X[i]!) / inputs.length_m - 1);
  }
  return vel;
}

interface BondStress {
  sxx: Float64Array;
  sxy: Float64Array;
  syx: Float64Array;
  syy: Float64Array;
  maxStretch: number;
  /** Normal force across the mid-plane from the intact bonds (tension positive). */
  midForce: number;
}

/**
 * Peridynamic stress σ_i = ½ Σ_j f_ij ⊗ ξ_ij V_j with f_ij = c s e_ij (force density along the deformed bond);
 * a bond adds the same tensor to both of its points. Resultant across the mid-plane from the same bond forces.
 */
function bondStresses(plate: boolean, model: Model, lat: Lattice, x: Float64Array, y: Float64Array, bi: Int32Array, bj: Int32Array): BondStress {
  const { N, V } = model;
  const c = model.micromodulus;
  const cVV = c * V * V;
  const { X, Y, length0 } = lat;
  const live = bi.length;
  const sxx = new Float64Array(N);
  const sxy = new Float64Array(N);
  const syx = new Float64Array(N);
  const syy = new Float64Array(N);
  let maxStretch = live > 0 ? -Infinity : 0;
  let midForce = 0;
  const mid = lat.midPlane;
  for (let b = 0; b < live; b++) {
    const i = bi[b]!;
    const j = bj[b]!;
    const ex = x[j]! - x[i]!;
    const ey = y[j]! - y[i]!;
    const r = Math.sqrt(ex * ex + ey * ey);
    const l0 = length0[b]!;
    const s = (r - l0) / l0;
    if (s > maxStretch) maxStretch = s;
    const k = (0.5 * c * s * V) / r;
    const xi = X[j]! - X[i]!;
    const eta = Y[j]! - Y[i]!;
    const txx = k * ex * xi;
    const txy = k * ex * eta;
    const tyx = k * ey * xi;
    const tyy = k * ey * eta;
    sxx[i]! += txx;
    sxy[i]! += txy;
    syx[i]! += tyx;
    syy[i]! += tyy;
    sxx[j]! += txx;
    sxy[j]! += txy;
    syx[j]! += tyx;
    syy[j]! += tyy;
    const ci = plate ? Y[i]! : X[i]!;
    const cj = plate ? Y[j]! : X[j]!;
    if (ci < mid !== cj < mid) {
      // Force on the lower/left point from the bond, normal component (toward the other part = tension positive).
      const f = (cVV * s) / r;
      const normal = plate ? ey : ex;
      midForce += ci < mid ? f * normal : -f * normal;
    }
  }
  return { sxx, sxy, syx, syy, maxStretch, midForce };
}

/** `midForce` plus the contact forces across the mid-plane (compression negative). */
function contactTraction(plate: boolean, model: Model, lat: Lattice, x: Float64Array, y: Float64Array, candidates: Int32Array, midForce: number): number {
  const { X, Y } = lat;
  const mid = lat.midPlane;
  const cVV = model.micromodulus * model.V * model.V;
  const dc = CONTACT_FACTOR * model.dx;
  for (let k = 0; k < candidates.length; k += 2) {
    const i = candidates[k]!;
    const j = candidates[k + 1]!;
    const ci = plate ? Y[i]! : X[i]!;
    const cj = plate ? Y[j]! : X[j]!;
    if (ci < mid === cj < mid) continue;
    const ex = x[j]! - x[i]!;
    const ey = y[j]! - y[i]!;
    const r = Math.sqrt(ex * ex + ey * ey);
    if (!(r > 0 && r < dc)) continue;
    const f = (cVV * ((dc - r) / dc)) / r;
    const normal = plate ? ey : ex;
    midForce += ci < mid ? -f * normal : f * normal;
  }
  return midForce;
}

/** Plate: the largest absolute principal value of the symmetrised stress tensor; bar: |σ_xx|. The maximum over points. */
function maxPrincipalStress(plate: boolean, t: BondStress, N: number): number {
  const { sxx, sxy, syx, syy } = t;
  let maxStress = 0;
  for (let i = 0; i < N; i++) {
    let magnitude: number;
    if (plate) {
      const a = sxx[i]!;
      const d = syy[i]!;
      const o = 0.5 * (sxy[i]! + syx[i]!);
      const centre = 0.5 * (a + d);
      const radius = Math.sqrt(0.25 * (a - d) * (a - d) + o * o);
      magnitude = Math.abs(centre) + radius;
    } else {
      magnitude = Math.abs(sxx[i]!);
    }
    if (magnitude > maxStress) maxStress = magnitude;
  }
  return maxStress;
}

/** The plate's damage field and the crack length (span in x of points damaged beyond CRACK_DAMAGE). */
function plateOutputs(
  inputs: FracturePlateInputs,
  model: Model,
  X: Float64Array,
  damage: Float64Array,
  common: Record<string, unknown>,
): { outputs: Record<string, unknown>; rule8: number[][] } {
  const { N, dx } = model;
  const n = inputs.n;
  const rows: number[][] = [];
  for (let iy = 0; iy < n; iy++) rows.push(Array.from(damage.subarray(iy * n, (iy + 1) * n)));
  const field = boundField(rows);
  const axis = strideIndices(n, 64).map((k) => (k + 0.5) * dx);
  let minX = Infinity;
  let maxX = -Infinity;
  for (let i = 0; i < N; i++) {
    if (damage[i]! >= CRACK_DAMAGE) {
      if (X[i]! < minX) minX = X[i]!;
      if (X[i]! > maxX) maxX = X[i]!;
    }
  }
  const outputs = {
    damage: { x_m: axis, y_m: axis, dx_m: dx, phi: field },
    ...common,
    crack_length_m: maxX >= minX ? maxX - minX : 0,
  };
  return { outputs, rule8: field };
}

/** The bar's damage profile and the notch's closed-form failure time. */
function barOutputs(
  inputs: FractureBarInputs,
  model: Model,
  X: Float64Array,
  damage: Float64Array,
  common: Record<string, unknown>,
): { outputs: Record<string, unknown>; rule8: number[] } {
  const profile = boundProfile(damage);
  const axis = boundProfile(X);
  const s0 = model.criticalStretch;
  const outputs = {
    damage: { x_m: axis, phi: profile },
    ...common,
    // While the interior strain is uniform (2v/L)·t the notch fails at t_f = notch·s0·L/(2v).
    notch_failure_time_estimate_s: inputs.end_velocity_m_s > 0 ? (inputs.notch_factor * s0 * inputs.length_m) / (2 * inputs.end_velocity_m_s) : null,
    notch_bonds: (inputs.horizon_cells * (inputs.horizon_cells + 1)) / 2,
  };
  return { outputs, rule8: profile };
}

const inputSpecs: InputSpec[] = [
  { key: 'mode', unit: '', default: 'plate', range: 'plate, bar' },
  { key: 'side_m', unit: 'm', default: 0.05, range: '1e-4 … 10 (plate)' },
  { key: 'length_m', unit: 'm', default: 1.0, range: '1e-4 … 10 (bar)' },
  { key: 'thickness_m', unit: 'm', default: 1e-3, range: '1e-6 … 10 (plate)' },
  { key: 'area_m2', unit: 'm²', default: 1e-4, range: '1e-10 … 100 (bar)' },
  { key: 'youngs_modulus_Pa', unit: 'Pa', default: 72e9, range: '1e6 … 1e12' },
  { key: 'density_kg_m3', unit: 'kg/m³', default: 2440, range: '10 … 25000' },
  { key: 'fracture_energy_J_m2', unit: 'J/m²', default: 8.0, range: '1e-3 … 1e6' },
  { key: 'crack_length_m', unit: 'm', default: 0.01, range: '0 … 0.8·side_m (plate)' },
  { key: 'n', unit: '1', default: '40 (plate, points per side) / 400 (bar)', range: '20 … 100 (plate) / 50 … 5000 (bar)' },
  { key: 'horizon_factor', unit: '1', default: 3.015, range: '2 … 5 (plate)' },
  { key: 'horizon_cells', unit: '1', default: 3, range: '1 … 6, integer (bar)' },
  { key: 'strain_rate_1_s', unit: '1/s', default: 50, range: '0 … 1e4 (plate)' },
  { key: 'notch_factor', unit: '1', default: 0.5, range: '(0, 1] (bar)' },
  { key: 'end_velocity_m_s', unit: 'm/s', default: 1.0, range: '0 … 1e3 (bar)' },
  { key: 't_end_s', unit: 's', default: '1e-5 (plate) / 2e-4 (bar)', range: '> 0; bonds × steps ≤ 2e8' },
  { key: 'cfl', unit: '1', default: '0.1 (plate) / 0.2 (bar)', range: '0.01 … 0.5' },
];

export const fracture: SolverDef<FractureInputs> = {
  id: 'fracture',
  kind: 'fracture (2-D peridynamic plate, 1-D bar)',
  endpoint: '/api/svc/fracture',
  catalogue: true,
  modes: ['plate', 'bar'],
  stateful: false,
  inputs: inputSpecs,
  schema,
  resolve,
  run,
};

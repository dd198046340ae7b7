// `dock` — rigid-ligand molecular docking (solvers.md §3.19). Score: Lennard-Jones (Lorentz–Berthelot) plus
// screened Coulomb, no cutoff. Search: n_starts Metropolis simulated-annealing runs from uniform starts in the
// box, each finished by BFGS on the 6 pose parameters (central-difference gradients); the best pose wins.
// Check: the energy re-scored from the posed coordinates by a separate pair sum, and a local-minimum test
// under ±0.01 Å and ±0.1° perturbations.
import { z } from 'zod';
import { bfgs } from '../numerics/optimize.js';
import { rngForInputs, type Xoshiro128 } from './rng.js';
import type { CheckPart, InputSpec, SolverDef, SolverOutput } from './types.js';
import { InputError } from './errors.js';
import { checkPart, checkWorkLimit, combineChecks, intIn, numIn, parseInputs, positive, seedSchema } from './util.js';

/** Coulomb constant in kJ/mol · Å / e². */
const COULOMB_KJ_MOL_A = 1389.35458;
const T_START = 2.5;
const T_END = 0.01;
const STEP_A = 0.3;
const STEP_RAD = 0.2;
const CONTACT_A = 4;
/** Gradient calls per BFGS refinement; one call costs 13 energies (f and 12 central differences). */
const BFGS_EVALUATIONS = 60;
/** Energies one refinement can cost: the budget, the line search's overrun (½ budget) and 13 per call. */
const REFINE_ENERGIES = 13 * Math.ceil(1.5 * BFGS_EVALUATIONS);
const WORK_LIMIT = 2e8;
const FD_STEP = 1e-5;

export interface Atom {
  x: number;
  y: number;
  z: number;
  sigma_A: number;
  epsilon_kJ_mol: number;
  charge_e: number;
}

export interface DockInputs extends Record<string, unknown> {
  receptor: Atom[];
  ligand: Atom[];
  dielectric: number;
  box_center_A: [number, number, number];
  box_half_A: number;
  n_starts: number;
  mc_steps: number;
  seed?: number;
}

/**
 * Largest |coordinate| of an atom or the box centre (Å): PDB's coordinate field holds up to 9999.999, and no structure
 * is larger. Within it positions resolve to ~1e-12 Å. Far beyond it a pose cannot move by the check's 0.01 Å and
 * squared distances overflow: at 1e300 every start sits on one point whose energy is 0, re-scored as 0/0.
 */
const COORDINATE_MAX_A = 1e4;
const coordinate = () => numIn(-COORDINATE_MAX_A, COORDINATE_MAX_A);
/** Closest two atoms of one molecule may come (Å): the shortest bond, H–H, is 0.74 Å. */
const MIN_ATOM_SEPARATION_A = 0.5;
/** Largest |charge| of an atom, in elementary charges. */
const CHARGE_MAX_E = 10;

const atomSchema = z
  .object({
    x: coordinate(),
    y: coordinate(),
    z: coordinate(),
    sigma_A: positive(),
    // Every atom has a repulsive core: with ε = 0 on either atom a pair of opposite charges has no minimum (its
    // Coulomb term falls without bound as the atoms close in), which the search would seal as a binding energy.
    epsilon_kJ_mol: z
      .number()
      .gt(0, 'must be > 0: an atom without a repulsive core lets opposite charges collapse onto each other')
      .refine(Number.isFinite, 'must be finite'),
    // Ions carry a few elementary charges; a larger charge only overflows the energies.
    charge_e: numIn(-CHARGE_MAX_E, CHARGE_MAX_E).optional(),
  })
  .strict();

const schema = z
  .object({
    receptor: z.array(atomSchema).min(1).max(2000).optional(),
    ligand: z.array(atomSchema).min(1).max(50).optional(),
    dielectric: numIn(1, 80).optional(),
    box_center_A: z.tuple([coordinate(), coordinate(), coordinate()]).optional(),
    box_half_A: numIn(1, 30).optional(),
    n_starts: intIn(1, 64).optional(),
    mc_steps: intIn(100, 50_000).optional(),
    seed: seedSchema().optional(),
  })
  .strict();

/** The default receptor: 6 Lennard-Jones sites on a ring of radius 3 Å in the plane z = 0. */
function defaultReceptor(): Atom[] {
  return Array.from({ length: 6 }, (_, k) => ({
    x: 3 * Math.cos((Math.PI * k) / 3),
    y: 3 * Math.sin((Math.PI * k) / 3),
    z: 0,
    sigma_A: 3.4,
    epsilon_kJ_mol: 0.36,
    charge_e: 0,
  }));
}
const DEFAULT_LIGAND: Atom[] = [{ x: 0, y: 0, z: 0, sigma_A: 3.4, epsilon_kJ_mol: 0.36, charge_e: 0 }];

const inputs: InputSpec[] = [
  {
    key: 'receptor',
    unit: 'Å, kJ/mol, e',
    default: '6-site ring: R = 3 Å in z = 0, σ = 3.4 Å, ε = 0.36 kJ/mol, q = 0',
    range: '1 … 2000 atoms {x, y, z −1e4 … 1e4, sigma_A > 0, epsilon_kJ_mol > 0, charge_e −10 … 10}, at least 0.5 Å apart',
  },
  {
    key: 'ligand',
    unit: 'Å, kJ/mol, e',
    default: 'one probe atom σ = 3.4 Å, ε = 0.36 kJ/mol, q = 0',
    range: '1 … 50 atoms, same fields and spacing (coordinates define the rigid shape)',
  },
  { key: 'dielectric', unit: '1', default: 4, range: '1 … 80' },
  { key: 'box_center_A', unit: 'Å', default: 'receptor centroid', range: '[x, y, z], each −1e4 … 1e4' },
  { key: 'box_half_A', unit: 'Å', default: 8, range: '1 … 30' },
  { key: 'n_starts', unit: '1', default: 8, range: '1 … 64' },
  { key: 'mc_steps', unit: '1', default: 2000, range: '100 … 50000' },
  { key: 'seed', unit: '1', default: 'from inputs', range: 'integer 0 … 2^53−1' },
];

function centroid(atoms: readonly Atom[]): [number, number, number] {
  let x = 0;
  let y = 0;
  let zc = 0;
  for (const a of atoms) {
    x += a.x;
    y += a.y;
    zc += a.z;
  }
  return [x / atoms.length, y / atoms.length, zc / atoms.length];
}

/** 400 naming the first pair of atoms of one molecule closer than MIN_ATOM_SEPARATION_A (coincident atoms, say). */
function checkSeparation(field: 'receptor' | 'ligand', atoms: readonly Atom[]): void {
  for (let i = 1; i < atoms.length; i++) {
    const a = atoms[i]!;
    for (let j = 0; j < i; j++) {
      const b = atoms[j]!;
      const dx = a.x - b.x;
      const dy = a.y - b.y;
      const dz = a.z - b.z;
      // Squared distances: up to 2 million pairs for the largest receptor, checked before the run.
      if (dx * dx + dy * dy + dz * dz >= MIN_ATOM_SEPARATION_A * MIN_ATOM_SEPARATION_A) continue;
      const d = Math.hypot(dx, dy, dz);
      throw new InputError(
        `${field}.${i}`,
        `atoms ${j} and ${i} of the ${field} are ${d} Å apart: atoms of one molecule are at least ${MIN_ATOM_SEPARATION_A} Å apart`,
        {
          min_separation_A: MIN_ATOM_SEPARATION_A,
        },
      );
    }
  }
}

function resolve(raw: unknown): DockInputs {
  const p = parseInputs(schema, raw);
  if (p.receptor) checkSeparation('receptor', p.receptor as Atom[]);
  if (p.ligand) checkSeparation('ligand', p.ligand as Atom[]);
  const withCharge = (atoms: z.infer<typeof atomSchema>[]): Atom[] => atoms.map((a) => ({ ...a, charge_e: a.charge_e ?? 0 }));
  const receptor = p.receptor ? withCharge(p.receptor) : defaultReceptor();
  const ligand = p.ligand ? withCharge(p.ligand) : DEFAULT_LIGAND.map((a) => ({ ...a }));
  const nStarts = p.n_starts ?? 8;
  const mcSteps = p.mc_steps ?? 2000;
  // §3.19 limit on the annealing, with each start's BFGS refinement budget counted as further steps.
  checkWorkLimit('mc_steps', receptor.length * ligand.length * nStarts * (mcSteps + REFINE_ENERGIES), WORK_LIMIT);
  const out: DockInputs = {
    receptor,
    ligand,
    dielectric: p.dielectric ?? 4,
    box_center_A: p.box_center_A ?? centroid(receptor),
    box_half_A: p.box_half_A ?? 8,
    n_starts: nStarts,
    mc_steps: mcSteps,
  };
  if (p.seed !== undefined) out.seed = p.seed;
  return out;
}

/** Unit quaternion (w, x, y, z) → row-major rotation matrix. */
function quatToMatrix(q: Float64Array, m: Float64Array): void {
  const [w, x, y, zq] = [q[0]!, q[1]!, q[2]!, q[3]!];
  m[0] = 1 - 2 * (y * y + zq * zq);
  m[1] = 2 * (x * y - w * zq);
  m[2] = 2 * (x * zq + w * y);
  m[3] = 2 * (x * y + w * zq);
  m[4] = 1 - 2 * (x * x + zq * zq);
  m[5] = 2 * (y * zq - w * x);
  m[6] = 2 * (x * zq - w * y);
  m[7] = 2 * (y * zq + w * x);
  m[8] = 1 - 2 * (x * x + y * y);
}

/** out = a ⊗ b (apply b, then a), normalised. */
function quatMul(a: ArrayLike<number>, b: ArrayLike<number>, out: Float64Array): void {
  const w = a[0]! * b[0]! - a[1]! * b[1]! - a[2]! * b[2]! - a[3]! * b[3]!;
  const x = a[0]! * b[1]! + a[1]! * b[0]! + a[2]! * b[3]! - a[3]! * b[2]!;
  const y = a[0]! * b[2]! - a[1]! * b[3]! + a[2]! * b[0]! + a[3]! * b[1]!;
  const zq = a[0]! * b[3]! + a[1]! * b[2]! - a[2]! * b[1]! + a[3]! * b[0]!;
  const n = Math.sqrt(w * w + x * x + y * y + zq * zq);
  out[0] = w / n;
  out[1] = x / n;
  out[2] = y / n;
  out[3] = zq / n;
}

/** Quaternion of the rotation by |ω| about ω/|ω|. */
function quatFromRotationVector(wx: number, wy: number, wz: number, out: Float64Array): void {
  const angle = Math.sqrt(wx * wx + wy * wy + wz * wz);
  if (angle === 0) {
    out[0] = 1;
    out[1] = 0;
    out[2] = 0;
    out[3] = 0;
    return;
  }
  const s = Math.sin(angle / 2) / angle;
  out[0] = Math.cos(angle / 2);
  out[1] = wx * s;
  out[2] = wy * s;
  out[3] = wz * s;
}

/** Rotation vector (axis × angle, angle in [0, π]) of a unit quaternion. */
function rotationVector(q: ArrayLike<number>): [number, number, number] {
  const sign = q[0]! < 0 ? -1 : 1;
  const w = sign * q[0]!;
  const v = [sign * q[1]!, sign * q[2]!, sign * q[3]!];
  const norm = Math.hypot(v[0]!, v[1]!, v[2]!);
  if (norm === 0) return [0, 0, 0];
  const angle = 2 * Math.atan2(norm, w);
  return [(v[0]! * angle) / norm, (v[1]! * angle) / norm, (v[2]! * angle) / norm];
}

/**
 * The search's scoring function: pair parameters tabulated once (σ_ij², 4ε_ij, screened q_i q_j), the ligand
 * posed from its body-frame coordinates by a translation of its centroid and a rotation matrix.
 */
class Scorer {
  readonly nl: number;
  readonly nr: number;
  private readonly rx: Float64Array;
  private readonly ry: Float64Array;
  private readonly rz: Float64Array;
  private readonly sigma2: Float64Array;
  private readonly eps4: Float64Array;
  private readonly qq: Float64Array;
  private readonly hasCharge: boolean;
  /** Ligand coordinates relative to its centroid. */
  readonly body: Float64Array;
  private readonly posed: Float64Array;
  private readonly rot = new Float64Array(9);

  constructor(receptor: readonly Atom[], ligand: readonly Atom[], dielectric: number) {
    this.nl = ligand.length;
    this.nr = receptor.length;
    this.rx = Float64Array.from(receptor, (a) => a.x);
    this.ry = Float64Array.from(receptor, (a) => a.y);
    this.rz = Float64Array.from(receptor, (a) => a.z);
    this.sigma2 = new Float64Array(this.nl * this.nr);
    this.eps4 = new Float64Array(this.nl * this.nr);
    this.qq = new Float64Array(this.nl * this.nr);
    let hasCharge = false;
    for (let i = 0; i < this.nl; i++) {
      for (let j = 0; j < this.nr; j++) {
        const k = i * this.nr + j;
        const s = 0.5 * (ligand[i]!.sigma_A + receptor[j]!.sigma_A);
        this.sigma2[k] = s * s;
        this.eps4[k] = 4 * Math.sqrt(ligand[i]!.epsilon_kJ_mol * receptor[j]!.epsilon_kJ_mol);
        this.qq[k] = (COULOMB_KJ_MOL_A * ligand[i]!.charge_e * receptor[j]!.charge_e) / dielectric;
        if (this.qq[k] !== 0) hasCharge = true;
      }
    }
    this.hasCharge = hasCharge;
    const c = centroid(ligand);
    this.body = new Float64Array(3 * this.nl);
    ligand.forEach((a, i) => {
      this.body[3 * i] = a.x - c[0];
      this.body[3 * i + 1] = a.y - c[1];
      this.body[3 * i + 2] = a.z - c[2];
    });
    this.posed = new Float64Array(3 * this.nl);
  }

  /** Posed coordinates for centroid position t and orientation q (written into out). */
  pose(t: ArrayLike<number>, q: Float64Array, out: Float64Array): void {
    quatToMatrix(q, this.rot);
    const m = this.rot;
    for (let i = 0; i < this.nl; i++) {
      const bx = this.body[3 * i]!;
      const by = this.body[3 * i + 1]!;
      const bz = this.body[3 * i + 2]!;
      out[3 * i] = t[0]! + m[0]! * bx + m[1]! * by + m[2]! * bz;
      out[3 * i + 1] = t[1]! + m[3]! * bx + m[4]! * by + m[5]! * bz;
      out[3 * i + 2] = t[2]! + m[6]! * bx + m[7]! * by + m[8]! * bz;
    }
  }

  energyOf(coords: Float64Array): number {
    let e = 0;
    for (let i = 0; i < this.nl; i++) {
      const x = coords[3 * i]!;
      const y = coords[3 * i + 1]!;
      const zc = coords[3 * i + 2]!;
      const row = i * this.nr;
      for (let j = 0; j < this.nr; j++) {
        const dx = x - this.rx[j]!;
        const dy = y - this.ry[j]!;
        const dz = zc - this.rz[j]!;
        const r2 = dx * dx + dy * dy + dz * dz;
        const s2 = this.sigma2[row + j]! / r2;
        const s6 = s2 * s2 * s2;
        e += this.eps4[row + j]! * (s6 * s6 - s6);
        if (this.hasCharge) e += this.qq[row + j]! / Math.sqrt(r2);
      }
    }
    return e;
  }

  energy(t: ArrayLike<number>, q: Float64Array): number {
    this.pose(t, q, this.posed);
    return this.energyOf(this.posed);
  }
}

interface Pose {
  t: Float64Array;
  q: Float64Array;
  energy: number;
}

/** Uniformly random orientation (Shoemake 1992). */
function randomQuaternion(rng: Xoshiro128, out: Float64Array): void {
  const u1 = rng.uniform();
  const u2 = rng.uniform();
  const u3 = rng.uniform();
  const a = Math.sqrt(1 - u1);
  const b = Math.sqrt(u1);
  out[0] = b * Math.cos(2 * Math.PI * u3);
  out[1] = a * Math.sin(2 * Math.PI * u2);
  out[2] = a * Math.cos(2 * Math.PI * u2);
  out[3] = b * Math.sin(2 * Math.PI * u3);
}

/** One simulated-annealing run (T geometric from 2.5 to 0.01 kJ/mol); returns the lowest pose visited. */
function anneal(scorer: Scorer, rng: Xoshiro128, center: readonly number[], half: number, steps: number): Pose {
  const t = new Float64Array(3);
  const q = new Float64Array(4);
  for (let d = 0; d < 3; d++) t[d] = center[d]! + half * (2 * rng.uniform() - 1);
  randomQuaternion(rng, q);
  let e = scorer.energy(t, q);
  const best: Pose = { t: Float64Array.from(t), q: Float64Array.from(q), energy: e };
  const tTrial = new Float64Array(3);
  const qTrial = new Float64Array(4);
  const dq = new Float64Array(4);
  const ratio = T_END / T_START;
  for (let k = 0; k < steps; k++) {
    const temperature = T_START * ratio ** (k / (steps - 1));
    for (let d = 0; d < 3; d++) tTrial[d] = t[d]! + STEP_A * (2 * rng.uniform() - 1);
    // Random axis (uniform on the sphere) and angle in [−0.2, 0.2] rad.
    const cz = 2 * rng.uniform() - 1;
    const phi = 2 * Math.PI * rng.uniform();
    const sz = Math.sqrt(1 - cz * cz);
    const angle = STEP_RAD * (2 * rng.uniform() - 1);
    quatFromRotationVector(angle * sz * Math.cos(phi), angle * sz * Math.sin(phi), angle * cz, dq);
    quatMul(dq, q, qTrial);
    let inside = true;
    for (let d = 0; d < 3; d++) if (Math.abs(tTrial[d]! - center[d]!) > half) inside = false;
    if (!inside) continue;
    const eTrial = scorer.energy(tTrial, qTrial);
    const delta = eTrial - e;
    if (delta <= 0 || rng.uniform() < Math.exp(-delta / temperature)) {
      t.set(tTrial);
      q.set(qTrial);
      e = eTrial;
      if (e < best.energy) {
        best.t.set(t);
        best.q.set(q);
        best.energy = e;
      }
    }
  }
  return best;
}

/** BFGS on (Δt, ω) about a pose, gradients by central differences; returns the refined pose. */
function refine(scorer: Scorer, start: Pose): Pose {
  const t = new Float64Array(3);
  const q = new Float64Array(4);
  const dq = new Float64Array(4);
  const u = new Float64Array(6);
  const evalAt = (v: Float64Array): number => {
    for (let d = 0; d < 3; d++) t[d] = start.t[d]! + v[d]!;
    quatFromRotationVector(v[3]!, v[4]!, v[5]!, dq);
    quatMul(dq, start.q, q);
    return scorer.energy(t, q);
  };
  const fg = (v: Float64Array, grad: Float64Array): number => {
    u.set(v);
    for (let k = 0; k < 6; k++) {
      const h = FD_STEP;
      u[k] = v[k]! + h;
      const ePlus = evalAt(u);
      u[k] = v[k]! - h;
      const eMinus = evalAt(u);
      u[k] = v[k]!;
      grad[k] = (ePlus - eMinus) / (2 * h);
    }
    return evalAt(v);
  };
  const result = bfgs(fg, new Float64Array(6), { gtol: 1e-7, maxIterations: 200, maxEvaluations: BFGS_EVALUATIONS });
  const v = result.x;
  const energy = evalAt(v);
  if (!(energy < start.energy)) return start;
  return { t: Float64Array.from(t), q: Float64Array.from(q), energy };
}

/**
 * The independent rescoring of the check: a plain pair sum over the posed coordinates, with σ_ij, ε_ij and
 * the Coulomb term computed from the atom records directly and the distance taken as a square root.
 */
export function rescore(receptor: readonly Atom[], ligand: readonly Atom[], coords: readonly (readonly number[])[], dielectric: number): number {
  let e = 0;
  for (let i = 0; i < ligand.length; i++) {
    const [x, y, zc] = coords[i]!;
    for (const atom of receptor) {
      const r = Math.hypot(x! - atom.x, y! - atom.y, zc! - atom.z);
      const sigma = (ligand[i]!.sigma_A + atom.sigma_A) / 2;
      const eps = Math.sqrt(ligand[i]!.epsilon_kJ_mol * atom.epsilon_kJ_mol);
      const sr6 = Math.pow(sigma / r, 6);
      e += 4 * eps * (sr6 * sr6 - sr6) + (COULOMB_KJ_MOL_A * ligand[i]!.charge_e * atom.charge_e) / (dielectric * r);
    }
  }
  return e;
}

/** Posed coordinates rotated by `angle` about a coordinate axis through their centroid. */
function rotateAboutCentroid(coords: readonly (readonly number[])[], axis: 0 | 1 | 2, angle: number): number[][] {
  const c = [0, 0, 0];
  for (const p of coords) for (let d = 0; d < 3; d++) c[d]! += p[d]! / coords.length;
  const cos = Math.cos(angle);
  const sin = Math.sin(angle);
  const [a, b] = axis === 0 ? [1, 2] : axis === 1 ? [2, 0] : [0, 1];
  return coords.map((p) => {
    const out = [p[0]!, p[1]!, p[2]!];
    const da = p[a]! - c[a]!;
    const db = p[b]! - c[b]!;
    out[a] = c[a]! + cos * da - sin * db;
    out[b] = c[b]! + sin * da + cos * db;
    return out;
  });
}

function run(inp: DockInputs): SolverOutput {
  const { receptor, ligand, dielectric, box_center_A: center, box_half_A: half, n_starts: nStarts, mc_steps: mcSteps } = inp;
  const scorer = new Scorer(receptor, ligand, dielectric);
  const rng = rngForInputs(inp);
  const perStart: number[] = [];
  let best: Pose | null = null;
  for (let s = 0; s < nStarts; s++) {
    const annealed = anneal(scorer, rng, center, half, mcSteps);
    const refined = refine(scorer, annealed);
    perStart.push(refined.energy);
    // Strictly lower wins: on equal energies the earlier start is kept.
    if (!best || refined.energy < best.energy) best = refined;
  }
  const pose = best!;
  const posed = new Float64Array(3 * ligand.length);
  scorer.pose(pose.t, pose.q, posed);
  const value = scorer.energyOf(posed);
  const ligandXyz = Array.from({ length: ligand.length }, (_, i) => [posed[3 * i]!, posed[3 * i + 1]!, posed[3 * i + 2]!]);
  const c0 = centroid(ligand);

  // Check (1): the energy re-scored from ligand_xyz_A by the separate pair sum.
  const eRescored = rescore(receptor, ligand, ligandXyz, dielectric);
  const parts: CheckPart[] = [checkPart('rescoring', 'binding energy re-scored from ligand_xyz_A [kJ/mol]', value, eRescored)];
  // Check (2): none of the 12 perturbations (±0.01 Å along x, y, z; ±0.1° about x, y, z through the centroid)
  // lowers E by more than 1e-3·|E|: compare the lowest perturbed energy with E itself.
  let lowest = eRescored;
  const perturbations: number[] = [];
  for (const axis of [0, 1, 2] as const) {
    for (const sign of [1, -1]) {
      const shifted = ligandXyz.map((p) => p.map((v, d) => (d === axis ? v + sign * 0.01 : v)));
      perturbations.push(rescore(receptor, ligand, shifted, dielectric));
      const turned = rotateAboutCentroid(ligandXyz, axis, (sign * 0.1 * Math.PI) / 180);
      perturbations.push(rescore(receptor, ligand, turned, dielectric));
    }
  }
  for (const e of perturbations) lowest = Math.min(lowest, e);
  parts.push(checkPart('local_minimum', 'lowest energy over the 12 pose perturbations, floored at E [kJ/mol]', lowest, eRescored));

  const contacts: number[] = [];
  receptor.forEach((atom, j) => {
    for (const p of ligandXyz) {
      if (Math.hypot(p[0]! - atom.x, p[1]! - atom.y, p[2]! - atom.z) <= CONTACT_A) {
        contacts.push(j);
        break;
      }
    }
  });

  return {
    mode: null,
    value,
    unit: 'kJ/mol',
    output_class: 'scalar',
    rule8: null,
    rule8_array: null,
    outputs: {
      pose: { translation_A: [pose.t[0]! - c0[0], pose.t[1]! - c0[1], pose.t[2]! - c0[2]], rotation_vector: rotationVector(pose.q) },
      ligand_centroid_A: [pose.t[0]!, pose.t[1]!, pose.t[2]!],
      ligand_xyz_A: ligandXyz,
      contacts,
      per_start_energies: perStart,
      perturbed_energies: perturbations,
    },
    check: combineChecks(parts),
  };
}

export const dock: SolverDef<DockInputs> = {
  id: 'dock',
  kind: 'molecular docking',
  endpoint: '/api/svc/dock',
  catalogue: true,
  modes: null,
  stateful: false,
  inputs,
  schema,
  resolve,
  run,
};

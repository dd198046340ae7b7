// device (solvers.md §3.15): equilibrium PN junction electrostatics with Boltzmann carriers,
// ∇·(ε∇ψ) = −q(p − n + N_D − N_A), n = n_i e^(ψ/V_T), p = n_i e^(−ψ/V_T). Cell-centred finite volumes,
// Newton on ψ (update clipped to ±2 V_T, stop at max|Δψ| < 1e-12 V). The p contact is Dirichlet at the
// neutral p potential (half-cell at the face); every other boundary is zero-field, so the n-side potential is
// computed. pn1d: tridiagonal Newton solves on an automatically refined grid; pn2d: CG preconditioned by
// modified incomplete Cholesky MIC(0), on uniform cells (well) or, planar, on nx columns graded towards the junction
// so that it is resolved at L_D/16 as in pn1d (columns2d).
// Checked against V_bi = V_T[asinh(N_D/2n_i) + asinh(N_A/2n_i)] and (pn1d, planar) the peak field from the
// exact first integral of the Poisson–Boltzmann equation.
import { z } from 'zod';
import { InputError, SolverFailure } from './errors.js';
import type { CheckPart, InputSpec, SolverDef, SolverOutput } from './types.js';
import { boundField, boundProfile, checkPart, combineChecks, intIn, numIn, parseInputs, positive, refuseCheck } from './util.js';
import { solveTridiagonal } from '../numerics/linalg.js';
import { bisect } from '../numerics/roots.js';
import { pcg, stencil5FactorSolve, stencil5IncompleteCholesky, stencil5Multiply, type Stencil5 } from '../numerics/sparse.js';

const Q = 1.602176634e-19;
const KB = 1.380649e-23;
const EPS0 = 8.8541878128e-12;

const MODES = ['pn1d', 'pn2d'] as const;
const GEOMETRIES = ['well', 'planar'] as const;
type Mode = (typeof MODES)[number];
type Geometry = (typeof GEOMETRIES)[number];

const MAX_CELLS_1D = 100_000;
const MAX_CELLS_2D = 40_000;
const MAX_NEWTON = 200;
const NEWTON_STEP_TOL_V = 1e-12;
const CG_REL_TOL = 1e-10;
// Planar pn2d columns (see columns2d): the two at the junction are L_D/PLANAR_FINE wide (pn1d's dx ≤ L_D/16); each
// side's active zone (its depletion-approximation width plus PLANAR_TAIL Debye lengths of its doping) is graded
// gently, the neutral bulk beyond it coarsely (widths growing by about e^PLANAR_BULK_GROWTH per cell).
const PLANAR_FINE = 16;
const PLANAR_TAIL = 3;
const PLANAR_BULK_GROWTH = 0.7;
const PLANAR_MAX_GRADING = 64; // beyond it the cells no longer fit: they are stretched instead (a failing check)

export interface DeviceInputs extends Record<string, unknown> {
  mode: Mode;
  acceptor_m3: number;
  donor_m3: number;
  intrinsic_m3: number;
  temperature_K: number;
  rel_permittivity: number;
  length_p_m?: number;
  length_n_m?: number;
  cells?: number;
  geometry?: Geometry;
  width_m?: number;
  depth_m?: number;
  well_width_m?: number;
  well_depth_m?: number;
  nx?: number;
  ny?: number;
}

const doping = () => numIn(1e18, 1e25).optional();
const length = () => numIn(1e-8, 1e-3).optional();
const common = {
  mode: z.enum(MODES).optional(),
  acceptor_m3: doping(),
  donor_m3: doping(),
  intrinsic_m3: numIn(1e6, 1e22).optional(),
  temperature_K: numIn(50, 800).optional(),
  rel_permittivity: numIn(1, 100).optional(),
};
const grid2d = {
  geometry: z.enum(GEOMETRIES).optional(),
  width_m: length(),
  depth_m: length(),
  nx: intIn(4, MAX_CELLS_2D).optional(),
  ny: intIn(4, MAX_CELLS_2D).optional(),
};
// One strict schema per mode (and geometry): keys another mode uses are refused as unknown.
const schemas = {
  pn1d: z.object({ ...common, length_p_m: length(), length_n_m: length(), cells: intIn(100, MAX_CELLS_1D).optional() }).strict(),
  well: z.object({ ...common, ...grid2d, well_width_m: positive().optional(), well_depth_m: positive().optional() }).strict(),
  planar: z.object({ ...common, ...grid2d }).strict(),
} as const;
const selectorSchema = z.object({ mode: z.enum(MODES).optional(), geometry: z.enum(GEOMETRIES).optional() }).loose();

/** Physical scales: thermal voltage, Debye length of the heavier doping, and the 1-D grid it implies. */
function thermalVoltage(T: number): number {
  return (KB * T) / Q;
}
/** √(εV_T/(q·density)): the nondimensional length unit with density = max(N_A, N_D) (scaling). */
function debyeLengthAt(inp: DeviceInputs, density: number): number {
  return Math.sqrt((inp.rel_permittivity * EPS0 * thermalVoltage(inp.temperature_K)) / (Q * density));
}
/**
 * Debye length of a neutral bulk with net doping N, what a grid must resolve: screening is by its carriers,
 * n + p = √(N² + 4n_i²), so a doping at or below n_i is screened by the intrinsic carriers, on a shorter length.
 */
function bulkDebyeLength(inp: DeviceInputs, N: number): number {
  return debyeLengthAt(inp, Math.hypot(N, 2 * inp.intrinsic_m3));
}
/** The shorter bulk Debye length of the two sides (the heavier doping's). */
function debyeLength(inp: DeviceInputs): number {
  return bulkDebyeLength(inp, Math.max(inp.acceptor_m3, inp.donor_m3));
}

/** pn1d cell counts on each side: dx ≤ min(L/cells, L_D/16), the junction on a cell face. */
function grid1d(inp: DeviceInputs): { cellsP: number; cellsN: number } {
  const L = inp.length_p_m! + inp.length_n_m!;
  const target = Math.min(L / inp.cells!, debyeLength(inp) / 16);
  const count = (len: number) => Math.max(1, Math.ceil(len / target - 1e-9));
  return { cellsP: count(inp.length_p_m!), cellsN: count(inp.length_n_m!) };
}

/** ln(1 + g x)/g and its inverse (e^(g ξ) − 1)/g, both the identity at g = 0. */
const logGrowth = (x: number, g: number) => (g === 0 ? x : Math.log1p(g * x) / g);
const expGrowth = (xi: number, g: number) => (g === 0 ? xi : Math.expm1(g * xi) / g);

/**
 * One side of the planar junction, s = distance from it in [0, length]. Target cell width h(s) = c + g s in the
 * active zone s ≤ active, then h(active) + G (s − active) in the bulk (G = PLANAR_BULK_GROWTH). Cell faces sit where
 * the cell count ξ(s) = ∫ ds/h is an integer; c = fine·g/(e^g − 1) makes the first cell exactly `fine` wide.
 */
class GradedSide {
  constructor(
    readonly length: number,
    readonly active: number,
    readonly fine: number,
  ) {}
  private shape(g: number): { c: number; hActive: number; xiActive: number } {
    const c = g === 0 ? this.fine : (this.fine * g) / Math.expm1(g);
    return { c, hActive: c + g * this.active, xiActive: logGrowth(this.active / c, g) };
  }
  /** ξ(length): the number of cells the grading g asks for (decreasing in g, → 1 as g → ∞). */
  count(g: number): number {
    const { hActive, xiActive } = this.shape(g);
    return xiActive + logGrowth((this.length - this.active) / hActive, PLANAR_BULK_GROWTH);
  }
  /** Widths of `cells` cells filling the side, the first at the junction: g solved from count(g) = cells. */
  widths(cells: number): Float64Array {
    const w = new Float64Array(cells);
    if (cells === 1) return w.fill(this.length);
    const { g, stretch } = grading((x) => this.count(x), cells);
    const { c, hActive, xiActive } = this.shape(g);
    const at = (xi: number) => (xi <= xiActive ? c * expGrowth(xi, g) : this.active + hActive * expGrowth(xi - xiActive, PLANAR_BULK_GROWTH));
    let prev = 0;
    for (let k = 0; k < cells; k++) {
      const face = k === cells - 1 ? this.length : Math.min(this.length, at((k + 1) * stretch));
      w[k] = face - prev;
      prev = face;
    }
    return w;
  }
}

/**
 * The grading g at which the decreasing cell count(g) equals `cells`, and the factor by which ξ advances per cell:
 * 1, except with more cells than g = 0 asks for (g = 0, every cell finer) or fewer than the steepest grading asks for
 * (g = PLANAR_MAX_GRADING, every cell coarser).
 */
function grading(count: (g: number) => number, cells: number): { g: number; stretch: number } {
  const most = count(0);
  if (most <= cells) return { g: 0, stretch: most / cells };
  const least = count(PLANAR_MAX_GRADING);
  if (least >= cells) return { g: PLANAR_MAX_GRADING, stretch: least / cells };
  return { g: bisect((g) => count(g) - cells, 0, PLANAR_MAX_GRADING, 1e-14), stretch: 1 };
}

/**
 * pn2d column widths [m]: uniform width/nx for the well. Planar: the junction (x = width/2) is a column face and
 * the nx columns are graded towards it, so the Debye length there is resolved at any nx (the work, nx·ny, is
 * unchanged): the column on either side of it is L_D/16 wide, L_D = √(εV_T/(q·max(N_A, N_D))); each side's active
 * zone (x_p or x_n of the depletion approximation plus PLANAR_TAIL Debye lengths of that side's doping) is graded
 * gently and its neutral bulk coarsely. The sides share the columns as one common grading asks of each.
 */
function columns2d(inp: DeviceInputs): { widths: Float64Array; pColumns: number } {
  const nx = inp.nx!;
  if (inp.geometry !== 'planar') return { widths: new Float64Array(nx).fill(inp.width_m! / nx), pColumns: 0 };
  const eps = inp.rel_permittivity * EPS0;
  const vt = thermalVoltage(inp.temperature_K);
  const NA = inp.acceptor_m3;
  const ND = inp.donor_m3;
  const vbi = vt * (Math.asinh(NA / (2 * inp.intrinsic_m3)) + Math.asinh(ND / (2 * inp.intrinsic_m3)));
  const depletion = Math.sqrt((2 * eps * Math.max(vbi - 2 * vt, 0) * (NA + ND)) / (Q * NA * ND));
  const half = inp.width_m! / 2;
  const fine = debyeLength(inp) / PLANAR_FINE;
  const side = (x: number, N: number) => new GradedSide(half, Math.min(half, x + PLANAR_TAIL * bulkDebyeLength(inp, N)), fine);
  const pSide = side((depletion * ND) / (NA + ND), NA);
  const nSide = side((depletion * NA) / (NA + ND), ND);
  const total = (g: number) => pSide.count(g) + nSide.count(g);
  const { g } = grading(total, nx);
  const pColumns = Math.min(nx - 1, Math.max(1, Math.round((nx * pSide.count(g)) / total(g))));
  const widths = new Float64Array(nx);
  widths.set(pSide.widths(pColumns).reverse(), 0);
  widths.set(nSide.widths(nx - pColumns), pColumns);
  return { widths, pColumns };
}

/** pn2d cell classification: p region and contacted faces (top faces for the well, left faces for planar). */
function layout2d(inp: DeviceInputs): { isP: Uint8Array; contact: Uint8Array } {
  const nx = inp.nx!;
  const ny = inp.ny!;
  const W = inp.width_m!;
  const dx = W / nx;
  const dy = inp.depth_m! / ny;
  const isP = new Uint8Array(nx * ny);
  const contact = new Uint8Array(nx * ny); // 1 where the cell's outer face carries the p contact
  if (inp.geometry === 'planar') {
    const { pColumns } = columns2d(inp);
    for (let j = 0; j < ny; j++) {
      for (let i = 0; i < pColumns; i++) isP[j * nx + i] = 1;
      contact[j * nx] = 1;
    }
  } else {
    const ww = inp.well_width_m!;
    const wd = inp.well_depth_m!;
    for (let j = 0; j < ny; j++) {
      for (let i = 0; i < nx; i++) {
        const xc = (i + 0.5) * dx;
        const yc = (j + 0.5) * dy;
        if (Math.abs(xc - W / 2) < ww / 2 && yc < wd) {
          isP[j * nx + i] = 1;
          if (j === 0 && Math.abs(xc - W / 2) < ww / 4) contact[i] = 1;
        }
      }
    }
  }
  return { isP, contact };
}

function resolve(raw: unknown): DeviceInputs {
  const sel = parseInputs(selectorSchema, raw);
  const mode: Mode = sel.mode ?? 'pn1d';
  const geometry: Geometry = sel.geometry ?? 'well';
  const schema = mode === 'pn1d' ? schemas.pn1d : schemas[geometry];
  const p = parseInputs(schema, raw) as Record<string, number | string | undefined>;
  const num = (key: string, fallback: number) => (p[key] as number | undefined) ?? fallback;
  const out: DeviceInputs = {
    mode,
    acceptor_m3: num('acceptor_m3', mode === 'pn1d' ? 1e22 : 1e23),
    donor_m3: num('donor_m3', mode === 'pn1d' ? 1e22 : 1e21),
    intrinsic_m3: num('intrinsic_m3', 1e16),
    temperature_K: num('temperature_K', 300),
    rel_permittivity: num('rel_permittivity', 11.7),
  };
  if (mode === 'pn1d') {
    out.length_p_m = num('length_p_m', 2e-6);
    out.length_n_m = num('length_n_m', 2e-6);
    out.cells = num('cells', 2000);
    const { cellsP, cellsN } = grid1d(out);
    if (cellsP + cellsN > MAX_CELLS_1D) {
      throw new InputError('cells', `the grid refined to dx ≤ L_D/16 needs ${cellsP + cellsN} cells (> ${MAX_CELLS_1D})`, { min: 100, max: MAX_CELLS_1D });
    }
    return out;
  }
  out.geometry = geometry;
  out.width_m = num('width_m', 4e-6);
  out.depth_m = num('depth_m', 2e-6);
  out.nx = num('nx', 100);
  out.ny = num('ny', 50);
  if (out.nx * out.ny > MAX_CELLS_2D) throw new InputError('nx', `nx·ny = ${out.nx * out.ny} exceeds ${MAX_CELLS_2D}`, { max: MAX_CELLS_2D });
  if (geometry === 'well') {
    out.well_width_m = num('well_width_m', 2e-6);
    out.well_depth_m = num('well_depth_m', 0.5e-6);
    if (!(out.well_width_m < out.width_m)) throw new InputError('well_width_m', 'the well must lie inside the domain', { max: out.width_m, inclusive: false });
    if (!(out.well_depth_m < out.depth_m)) throw new InputError('well_depth_m', 'the well must lie inside the domain', { max: out.depth_m, inclusive: false });
  }
  const { isP, contact } = layout2d(out);
  let pCells = 0;
  let nCells = 0;
  for (let k = 0; k < isP.length; k++)
    if (isP[k]) pCells++;
    else nCells++;
  if (!contact.some((c) => c === 1) || pCells === 0 || nCells === 0) {
    const field = geometry === 'well' ? 'well_width_m' : 'nx';
    throw new InputError(field, 'the grid resolves no p region, n region or contact face: refine nx, ny or enlarge the well', null);
  }
  return out;
}

/** Equilibrium quantities of the closed-form references (SI). */
function references(inp: DeviceInputs) {
  const vt = thermalVoltage(inp.temperature_K);
  const ni = inp.intrinsic_m3;
  const NA = inp.acceptor_m3;
  const ND = inp.donor_m3;
  const psiP = -vt * Math.asinh(NA / (2 * ni));
  const psiN = vt * Math.asinh(ND / (2 * ni));
  const n = (psi: number) => ni * Math.exp(psi / vt);
  const p = (psi: number) => ni * Math.exp(-psi / vt);
  const psiJ = (NA * psiP + ND * psiN + vt * (p(psiP) + n(psiP) - p(psiN) - n(psiN))) / (NA + ND);
  const eps = inp.rel_permittivity * EPS0;
  const eMax2 = ((2 * Q) / eps) * (vt * (p(psiJ) - p(psiP) + n(psiJ) - n(psiP)) + NA * (psiJ - psiP));
  return { vt, psiP, psiN, vbi: psiN - psiP, eMax: Math.sqrt(eMax2) };
}

/** The scaled problem: φ = ψ/V_T, lengths in L_D0 = √(εV_T/(qN0)), concentrations in N0 = max(N_A, N_D). */
interface Scaled {
  vt: number;
  lengthScale: number;
  n0: number;
  niScaled: number;
  phiP: number;
}
function scaling(inp: DeviceInputs): Scaled {
  const vt = thermalVoltage(inp.temperature_K);
  const n0 = Math.max(inp.acceptor_m3, inp.donor_m3);
  return {
    vt,
    lengthScale: debyeLengthAt(inp, n0),
    n0,
    niScaled: inp.intrinsic_m3 / n0,
    phiP: -Math.asinh(inp.acceptor_m3 / (2 * inp.intrinsic_m3)),
  };
}

/**
 * Newton on R(φ) = Σ_faces g (φ_nb − φ) + vol (ñ e^(−φ) − ñ e^(φ) + d) = 0, where `coupling` holds the face
 * conductances. `solveStep` solves (−J) Δ = R for the given diagonal of −J.
 */
function newton(
  phi: Float64Array,
  residual: (phi: Float64Array, r: Float64Array, jDiag: Float64Array) => void,
  solveStep: (jDiag: Float64Array, r: Float64Array) => Float64Array,
  vt: number,
): number {
  const n = phi.length;
  const r = new Float64Array(n);
  const jDiag = new Float64Array(n);
  for (let it = 1; it <= MAX_NEWTON; it++) {
    residual(phi, r, jDiag);
    const delta = solveStep(jDiag, r);
    let maxStep = 0;
    for (let k = 0; k < n; k++) {
      const d = Math.max(-2, Math.min(2, delta[k]!));
      phi[k] = phi[k]! + d;
      if (Math.abs(d) > maxStep) maxStep = Math.abs(d);
    }
    if (!Number.isFinite(maxStep)) throw new SolverFailure('device: Newton produced a non-finite update', { iteration: it });
    if (maxStep * vt < NEWTON_STEP_TOL_V) return it;
  }
  throw new SolverFailure(`device: Newton did not converge in ${MAX_NEWTON} iterations`, { max_iterations: MAX_NEWTON });
}

function solve1d(inp: DeviceInputs, s: Scaled) {
  const { cellsP, cellsN } = grid1d(inp);
  const m = cellsP + cellsN;
  const hP = inp.length_p_m! / cellsP / s.lengthScale;
  const hN = inp.length_n_m! / cellsN / s.lengthScale;
  const h = new Float64Array(m);
  const dop = new Float64Array(m); // (N_D − N_A)/N0
  for (let j = 0; j < m; j++) {
    h[j] = j < cellsP ? hP : hN;
    dop[j] = j < cellsP ? -inp.acceptor_m3 / s.n0 : inp.donor_m3 / s.n0;
  }
  const g = new Float64Array(m - 1); // conductance of the face between j and j+1
  for (let j = 0; j < m - 1; j++) g[j] = 2 / (h[j]! + h[j + 1]!);
  const gContact = 2 / h[0]!;
  const ni = s.niScaled;
  const phi = new Float64Array(m);
  for (let j = 0; j < m; j++) phi[j] = Math.asinh((dop[j]! * s.n0) / (2 * inp.intrinsic_m3));

  const sub = new Float64Array(m);
  const sup = new Float64Array(m);
  for (let j = 1; j < m; j++) sub[j] = -g[j - 1]!;
  for (let j = 0; j < m - 1; j++) sup[j] = -g[j]!;
  const residual = (f: Float64Array, r: Float64Array, jDiag: Float64Array) => {
    for (let j = 0; j < m; j++) {
      const eP = ni * Math.exp(-f[j]!);
      const eN = ni * Math.exp(f[j]!);
      let flux = 0;
      let cond = 0;
      if (j === 0) {
        flux += gContact * (s.phiP - f[0]!);
        cond += gContact;
      } else {
        flux += g[j - 1]! * (f[j - 1]! - f[j]!);
        cond += g[j - 1]!;
      }
      if (j < m - 1) {
        flux += g[j]! * (f[j + 1]! - f[j]!);
        cond += g[j]!;
      }
      r[j] = flux + h[j]! * (eP - eN + dop[j]!);
      jDiag[j] = cond + h[j]! * (eP + eN);
    }
  };
  const iterations = newton(phi, residual, (jDiag, r) => solveTridiagonal(sub, jDiag, sup, r), s.vt);
  return { phi, h, dop, cellsP, iterations };
}

function solve2d(inp: DeviceInputs, s: Scaled) {
  const nx = inp.nx!;
  const ny = inp.ny!;
  const n = nx * ny;
  const hx = Float64Array.from(columns2d(inp).widths, (w) => w / s.lengthScale); // column widths (scaled)
  const dy = inp.depth_m! / ny / s.lengthScale;
  // Per column i: cell volume, conductance of its east face (to column i+1) and of its horizontal faces.
  const vol = Float64Array.from(hx, (h) => h * dy);
  const gx = new Float64Array(nx);
  for (let i = 0; i < nx - 1; i++) gx[i] = dy / ((hx[i]! + hx[i + 1]!) / 2);
  const gy = Float64Array.from(hx, (h) => h / dy);
  const { isP, contact } = layout2d(inp);
  const gContact = (i: number) => (inp.geometry === 'planar' ? dy / (hx[0]! / 2) : hx[i]! / (dy / 2));
  const dop = new Float64Array(n);
  for (let k = 0; k < n; k++) dop[k] = isP[k] ? -inp.acceptor_m3 / s.n0 : inp.donor_m3 / s.n0;
  const ni = s.niScaled;
  const phi = new Float64Array(n);
  for (let k = 0; k < n; k++) phi[k] = Math.asinh((dop[k]! * s.n0) / (2 * inp.intrinsic_m3));

  // −J is the 5-point operator: couplings −g to the east and south neighbours, diagonal set per Newton step.
  const east = new Float64Array(n);
  const south = new Float64Array(n);
  const cond = new Float64Array(n); // Σ face conductances of each cell, contact included
  for (let j = 0; j < ny; j++) {
    for (let i = 0; i < nx; i++) {
      const k = j * nx + i;
      if (i < nx - 1) east[k] = -gx[i]!;
      if (j < ny - 1) south[k] = -gy[i]!;
      cond[k] = (contact[k] ? gContact(i) : 0) + (i > 0 ? gx[i - 1]! : 0) + (i < nx - 1 ? gx[i]! : 0) + (j > 0 ? gy[i]! : 0) + (j < ny - 1 ? gy[i]! : 0);
    }
  }
  const A: Stencil5 = { nx, ny, diag: new Float64Array(n), east, south };

  const residual = (f: Float64Array, r: Float64Array, jDiag: Float64Array) => {
    for (let j = 0; j < ny; j++) {
      for (let i = 0; i < nx; i++) {
        const k = j * nx + i;
        const fk = f[k]!;
        let flux = contact[k] ? gContact(i) * (s.phiP - fk) : 0;
        if (j > 0) flux += gy[i]! * (f[k - nx]! - fk);
        if (i > 0) flux += gx[i - 1]! * (f[k - 1]! - fk);
        if (i < nx - 1) flux += gx[i]! * (f[k + 1]! - fk);
        if (j < ny - 1) flux += gy[i]! * (f[k + nx]! - fk);
        const eP = ni * Math.exp(-fk);
        const eN = ni * Math.exp(fk);
        r[k] = flux + vol[i]! * (eP - eN + dop[k]!);
        jDiag[k] = cond[k]! + vol[i]! * (eP + eN);
      }
    }
  };
  let cgIterations = 0;
  const solveStep = (jDiag: Float64Array, r: Float64Array) => {
    A.diag.set(jDiag);
    const L = stencil5IncompleteCholesky(A, true); // MIC(0): about half the CG iterations of IC(0) here
    if (!L) throw new SolverFailure('device: incomplete Cholesky breakdown (Jacobian not an M-matrix)', {});
    const delta = new Float64Array(n);
    const res = pcg(
      n,
      (v, out) => stencil5Multiply(A, v, out),
      r,
      delta,
      (rr, zz) => stencil5FactorSolve(L, rr, zz),
      CG_REL_TOL,
      20 * n + 100,
    );
    cgIterations += res.iterations;
    if (!res.converged) {
      throw new SolverFailure('device: preconditioned CG did not reach the relative residual 1e-10', { rel_residual: res.relResidual });
    }
    return delta;
  };
  const iterations = newton(phi, residual, solveStep, s.vt);
  return { phi, dop, hx, dy, iterations, cgIterations };
}

/** Charge |p − n + N_D − N_A| relative to the local doping. */
function relativeCharge(phi: number, dop: number, ni: number): number {
  return Math.abs(ni * Math.exp(-phi) - ni * Math.exp(phi) + dop) / Math.abs(dop);
}

type References = ReturnType<typeof references>;
type DeviceCheck = ReturnType<typeof combineChecks>;

/** A bulk whose charge stays above this share of its doping is not neutral. */
const NEUTRAL = 1e-2;

/**
 * The closed forms hold for a junction between two neutral bulks: a side whose far end is still charged is too
 * short for its doping (depletion width plus a few Debye lengths), and the check cannot certify the result.
 */
const tooShort = (side: 'p' | 'n', lengthen: string) => `the ${side} region is too short: its bulk never becomes charge neutral (lengthen ${lengthen})`;

/** log10 of the electron and hole densities [1/m³] at scaled potential f. */
function log10Densities(inp: DeviceInputs): { log10n: (f: number) => number; log10p: (f: number) => number } {
  return {
    log10n: (f: number) => Math.log10(inp.intrinsic_m3) + f / Math.LN10,
    log10p: (f: number) => Math.log10(inp.intrinsic_m3) - f / Math.LN10,
  };
}

function run(inp: DeviceInputs): SolverOutput {
  const s = scaling(inp);
  const ref = references(inp);
  return inp.mode === 'pn1d' ? run1d(inp, s, ref) : run2d(inp, s, ref);
}

function run1d(inp: DeviceInputs, s: Scaled, ref: References): SolverOutput {
  const { vt } = s;
  const ni = s.niScaled;
  const { log10n, log10p } = log10Densities(inp);
  const { phi, h, dop, cellsP, iterations } = solve1d(inp, s);
  const m = phi.length;
  const psi = Float64Array.from(phi, (f) => f * vt);
  const x = cellCentres1d(h, s.lengthScale);
  const vbi = psi[m - 1]! - ref.psiP;
  const faceField = (j: number) => (Math.abs(phi[j + 1]! - phi[j]!) * vt) / (((h[j]! + h[j + 1]!) / 2) * s.lengthScale);
  const junctionField = faceField(cellsP - 1);
  let peak = 0;
  for (let j = 0; j < m - 1; j++) peak = Math.max(peak, faceField(j));
  const depletion = depletionWidth1d(phi, dop, h, x, ni, s.lengthScale);
  const parts: CheckPart[] = [
    checkPart('V_bi = V_T[asinh(N_D/2n_i) + asinh(N_A/2n_i)]', 'built-in potential', vbi, ref.vbi),
    checkPart('exact first integral of Poisson–Boltzmann', 'peak field at the junction', junctionField, ref.eMax),
  ];
  let check = combineChecks(parts);
  if (!check.passed && relativeCharge(phi[m - 1]!, dop[m - 1]!, ni) > NEUTRAL) check = refuseCheck(check, tooShort('n', 'length_n_m'));
  // The p contact holds its cell near the neutral potential, so a short p side shows as a field at the contact.
  else if (!check.passed && (relativeCharge(phi[0]!, dop[0]!, ni) > NEUTRAL || faceField(0) > NEUTRAL * junctionField))
    check = refuseCheck(check, tooShort('p', 'length_p_m'));
  const potential = boundProfile(psi);
  return {
    mode: 'pn1d',
    value: vbi,
    unit: 'V',
    output_class: 'profile',
    rule8: potential,
    rule8_array: 'potential',
    outputs: {
      potential,
      x_m: boundProfile(x),
      n_m3: boundProfile(Float64Array.from(phi, log10n)),
      p_m3: boundProfile(Float64Array.from(phi, log10p)),
      log10: true,
      peak_field_V_m: peak,
      junction_field_V_m: junctionField,
      depletion_width_m: depletion,
      newton_iterations: iterations,
      cells_used: m,
      cell_width_p_m: h[0]! * s.lengthScale,
      cell_width_n_m: h[m - 1]! * s.lengthScale,
    },
    check,
  };
}

/** Cell centres [m] of a 1-D grid of scaled widths h. */
function cellCentres1d(h: Float64Array, lengthScale: number): Float64Array {
  const m = h.length;
  const x = new Float64Array(m);
  let pos = 0;
  for (let j = 0; j < m; j++) {
    x[j] = (pos + h[j]! / 2) * lengthScale;
    pos += h[j]!;
  }
  return x;
}

/** Depletion: the span of cells whose charge exceeds half the local doping [m]. */
function depletionWidth1d(phi: Float64Array, dop: Float64Array, h: Float64Array, x: Float64Array, ni: number, lengthScale: number): number {
  let first = -1;
  let last = -1;
  for (let j = 0; j < phi.length; j++) {
    if (relativeCharge(phi[j]!, dop[j]!, ni) > 0.5) {
      if (first < 0) first = j;
      last = j;
    }
  }
  return first < 0 ? 0 : x[last]! - x[first]! + ((h[first]! + h[last]!) / 2) * lengthScale;
}

function run2d(inp: DeviceInputs, s: Scaled, ref: References): SolverOutput {
  const { vt } = s;
  const ni = s.niScaled;
  const { log10n, log10p } = log10Densities(inp);
  const { phi, dop, hx, dy, iterations, cgIterations } = solve2d(inp, s);
  const nx = inp.nx!;
  const ny = inp.ny!;
  const rows = (f: (k: number) => number) => {
    const out: Float64Array[] = [];
    for (let j = 0; j < ny; j++) {
      const row = new Float64Array(nx);
      for (let i = 0; i < nx; i++) row[i] = f(j * nx + i);
      out.push(row);
    }
    return out;
  };
  const psiRows = rows((k) => phi[k]! * vt);
  // n-bulk potential: mean of the bottom row (well) or of the right column (planar).
  const bulkCells = nBulkCells(inp.geometry === 'planar', nx, ny);
  let bulk = 0;
  for (const k of bulkCells) bulk += phi[k]! * vt;
  bulk /= bulkCells.length;
  const vbi = bulk - ref.psiP;

  // Distance between the centres of columns i and i+1 [m] (the column width on a uniform grid).
  const centreGap = (i: number) => ((hx[i]! + hx[i + 1]!) / 2) * s.lengthScale;
  const dyM = dy * s.lengthScale;
  const peak = peakField2d(phi, nx, ny, vt, centreGap, dyM);
  const parts: CheckPart[] = [checkPart('V_bi = V_T[asinh(N_D/2n_i) + asinh(N_A/2n_i)]', 'built-in potential', vbi, ref.vbi)];
  let junctionField: number | null = null;
  let depletion = 0;
  if (inp.geometry === 'planar') {
    // Junction face: between the last p column and the first n column; the mean over rows.
    let iJ = 0;
    while (dop[iJ]! < 0) iJ++;
    let sum = 0;
    for (let j = 0; j < ny; j++) sum += (Math.abs(phi[j * nx + iJ]! - phi[j * nx + iJ - 1]!) * vt) / centreGap(iJ - 1);
    junctionField = sum / ny;
    parts.push(checkPart('exact first integral of Poisson–Boltzmann', 'peak field at the junction', junctionField, ref.eMax));
    const jMid = Math.floor(ny / 2);
    for (let i = 0; i < nx; i++) if (relativeCharge(phi[jMid * nx + i]!, dop[jMid * nx + i]!, ni) > 0.5) depletion += hx[i]! * s.lengthScale;
  } else {
    // Along the vertical line through the well centre.
    const iMid = Math.floor(nx / 2);
    let count = 0;
    for (let j = 0; j < ny; j++) if (relativeCharge(phi[j * nx + iMid]!, dop[j * nx + iMid]!, ni) > 0.5) count++;
    depletion = count * dyM;
  }
  const check = refuse2dCheck(inp, combineChecks(parts), phi, dop, ni, bulkCells);

  const potential = boundField(psiRows);
  const x = columnCentres2d(inp.geometry === 'planar', hx, s.lengthScale);
  const y = Float64Array.from({ length: ny }, (_, j) => (j + 0.5) * dyM);
  return {
    mode: 'pn2d',
    value: vbi,
    unit: 'V',
    output_class: 'field',
    rule8: potential,
    rule8_array: 'potential',
    outputs: {
      potential,
      x_m: boundProfile(x, 64),
      y_m: boundProfile(y, 64),
      n_m3: boundField(rows((k) => log10n(phi[k]!))),
      p_m3: boundField(rows((k) => log10p(phi[k]!))),
      log10: true,
      peak_field_V_m: peak,
      junction_field_V_m: junctionField,
      depletion_width_m: depletion,
      newton_iterations: iterations,
      cg_iterations: cgIterations,
      dx_m: hx.reduce((a, b) => Math.min(a, b)) * s.lengthScale, // planar: the junction columns' width
      dx_max_m: hx.reduce((a, b) => Math.max(a, b)) * s.lengthScale,
      dy_m: dyM,
    },
    check,
  };
}

/** The n bulk: the right column (planar) or the bottom row (well). */
function nBulkCells(planar: boolean, nx: number, ny: number): number[] {
  const bulkCells: number[] = [];
  if (planar) for (let j = 0; j < ny; j++) bulkCells.push(j * nx + nx - 1);
  else for (let i = 0; i < nx; i++) bulkCells.push((ny - 1) * nx + i);
  return bulkCells;
}

/** Largest field magnitude across any horizontal or vertical face [V/m]. */
function peakField2d(phi: Float64Array, nx: number, ny: number, vt: number, centreGap: (i: number) => number, dyM: number): number {
  let peak = 0;
  for (let j = 0; j < ny; j++) {
    for (let i = 0; i < nx; i++) {
      const k = j * nx + i;
      if (i < nx - 1) peak = Math.max(peak, (Math.abs(phi[k + 1]! - phi[k]!) * vt) / centreGap(i));
      if (j < ny - 1) peak = Math.max(peak, (Math.abs(phi[k + nx]! - phi[k]!) * vt) / dyM);
    }
  }
  return peak;
}

/** A failed 2-D check that the grid or geometry explains is refused with the reason and the input to change. */
function refuse2dCheck(inp: DeviceInputs, check: DeviceCheck, phi: Float64Array, dop: Float64Array, ni: number, bulkCells: number[]): DeviceCheck {
  if (check.passed) return check;
  const nx = inp.nx!;
  const ny = inp.ny!;
  const mostCharge = (cells: Iterable<number>) => {
    let most = 0;
    for (const k of cells) most = Math.max(most, relativeCharge(phi[k]!, dop[k]!, ni));
    return most;
  };
  const lengthen = inp.geometry === 'planar' ? 'width_m' : 'depth_m / width_m';
  if (mostCharge(bulkCells) > NEUTRAL) return refuseCheck(check, tooShort('n', lengthen));
  // Planar: the p bulk is the column at the p contact.
  if (inp.geometry === 'planar' && mostCharge(Array.from({ length: ny }, (_, j) => j * nx)) > NEUTRAL) return refuseCheck(check, tooShort('p', 'width_m'));
  // Both bulks neutral and V_bi right: the graded columns are too coarse for the junction's field at this
  // doping ratio (the error falls as nx grows).
  if (inp.geometry === 'planar' && check.parts![0]!.passed)
    return refuseCheck(check, `the ${nx} columns do not resolve the junction field at this doping ratio: raise nx`);
  return check;
}

/** Column centres [m]: graded columns (planar) or uniform ones (well). */
function columnCentres2d(planar: boolean, hx: Float64Array, lengthScale: number): Float64Array {
  const nx = hx.length;
  const x = new Float64Array(nx);
  let left = 0;
  for (let i = 0; i < nx; i++) {
    x[i] = planar ? (left + hx[i]! / 2) * lengthScale : (i + 0.5) * (hx[0]! * lengthScale);
    left += hx[i]!;
  }
  return x;
}

const inputs: InputSpec[] = [
  { key: 'mode', unit: '', default: 'pn1d', range: 'pn1d | pn2d' },
  { key: 'acceptor_m3', unit: '1/m^3', default: '1e22 (pn1d) / 1e23 (pn2d)', range: '1e18 … 1e25' },
  { key: 'donor_m3', unit: '1/m^3', default: '1e22 (pn1d) / 1e21 (pn2d)', range: '1e18 … 1e25' },
  { key: 'intrinsic_m3', unit: '1/m^3', default: 1e16, range: '1e6 … 1e22' },
  { key: 'temperature_K', unit: 'K', default: 300, range: '50 … 800' },
  { key: 'rel_permittivity', unit: '1', default: 11.7, range: '1 … 100' },
  { key: 'length_p_m', unit: 'm', default: 2e-6, range: '1e-8 … 1e-3 (pn1d)' },
  { key: 'length_n_m', unit: 'm', default: 2e-6, range: '1e-8 … 1e-3 (pn1d)' },
  { key: 'cells', unit: '1', default: 2000, range: '100 … 100000 after refinement to dx ≤ L_D/16 (pn1d)' },
  { key: 'geometry', unit: '', default: 'well', range: 'well | planar (pn2d)' },
  { key: 'width_m', unit: 'm', default: 4e-6, range: '1e-8 … 1e-3 (pn2d)' },
  { key: 'depth_m', unit: 'm', default: 2e-6, range: '1e-8 … 1e-3 (pn2d)' },
  { key: 'well_width_m', unit: 'm', default: 2e-6, range: '< width_m (pn2d well)' },
  { key: 'well_depth_m', unit: 'm', default: 0.5e-6, range: '< depth_m (pn2d well)' },
  { key: 'nx', unit: '1', default: 100, range: '≥ 4, nx·ny ≤ 40000 (pn2d)' },
  { key: 'ny', unit: '1', default: 50, range: '≥ 4, nx·ny ≤ 40000 (pn2d)' },
];

export const device: SolverDef<DeviceInputs> = {
  id: 'device',
  kind: 'semiconductor device (1-D PN junction, 2-D diode)',
  endpoint: '/api/svc/device',
  catalogue: true,
  modes: [...MODES],
  stateful: false,
  inputs,
  schema: z.union([schemas.pn1d, schemas.well, schemas.planar]),
  resolve,
  run: (inp) => run(inp),
};

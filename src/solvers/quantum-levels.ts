// quantum_levels (solvers.md §4.4): 1-D Schrödinger eigenvalues from the 3-point FD Hamiltonian, k-th
// eigenvalue by Sturm-sequence bisection; checked against closed forms (harmonic, infinite well, Morse) or
// the transcendental finite-well roots found by Brent on each parity branch.
import { z } from 'zod';
import { InputError } from './errors.js';
import type { InputSpec, SolverDef, SolverOutput } from './types.js';
import { boundProfile, boundSpectrum, checkWorkLimit, intIn, makeCheck, numIn, parseInputs } from './util.js';
import { kthEigenvalue, offDiagonalSquares, tridiagonalEigenvector, type SymTridiagonal } from '../numerics/sturm.js';
import { brent } from '../numerics/roots.js';

const HBAR = 6.62607015e-34 / (2 * Math.PI);
const EV = 1.602176634e-19;
const ELECTRON_MASS = 9.1093837015e-31;
const H2_REDUCED_MASS = 8.367664e-28;

const POTENTIALS = ['harmonic', 'infinite_well', 'finite_well', 'morse'] as const;
type Potential = (typeof POTENTIALS)[number];

/** Finite-well grids: at most this many nodes (the evanescent tails grow as width·κ shrinks). */
const MAX_FINITE_WELL_NODES = 200_000;

export interface QuantumLevelsInputs extends Record<string, unknown> {
  potential: Potential;
  mass_kg: number;
  level: number;
  omega_rad_s?: number;
  width_m?: number;
  depth_J?: number;
  dissociation_energy_J?: number;
  morse_a_1_m?: number;
  grid_points?: number;
  cells_in_well?: number;
}

const common = {
  potential: z.enum(POTENTIALS).optional(),
  mass_kg: numIn(1e-32, 1e-24).optional(),
  level: intIn(0, 20).optional(),
};
const gridPoints = intIn(200, 50_000).optional();
const width = numIn(1e-12, 1e-6).optional();

// Finite energy and frequency ranges (solvers.md had "> 0"): ħω from ~1e-31 J (a slow trap) to 66 keV, wells from
// 1e-25 J to 1e-10 J (~600 MeV, nuclear), Morse D_e 1e-25 … 1e-15 J and a 1e6 … 1e12 /m around molecular values.
// Outside them the grid's h² or ħω under- or overflowed (NaN levels) and a 1e30 J well left Brent unbracketed (500).
const omega = numIn(1e3, 1e20).optional();
const depth = numIn(1e-25, 1e-10).optional();

// One strict schema per potential: a key another potential uses is refused as unknown here.
const schemas = {
  harmonic: z.object({ ...common, omega_rad_s: omega, grid_points: gridPoints }).strict(),
  infinite_well: z.object({ ...common, width_m: width, grid_points: gridPoints }).strict(),
  finite_well: z.object({ ...common, width_m: width, depth_J: depth, cells_in_well: intIn(50, 5000).optional() }).strict(),
  morse: z
    .object({
      ...common,
      dissociation_energy_J: numIn(1e-25, 1e-15).optional(),
      morse_a_1_m: numIn(1e6, 1e12).optional(),
      grid_points: gridPoints,
    })
    .strict(),
} as const;

const potentialSchema = z.object({ potential: z.enum(POTENTIALS).optional() }).loose();

/** Number of bound states of the finite square well: ⌈2 z0/π⌉, z0 = (L/2)√(2mV0)/ħ. */
function finiteWellBoundStates(mass: number, widthM: number, depth: number): number {
  const z0 = ((widthM / 2) * Math.sqrt(2 * mass * depth)) / HBAR;
  return Math.ceil((2 * z0) / Math.PI);
}

/** Number of Morse bound states: n < λ − ½, λ = √(2 m D_e)/(aħ). */
function morseBoundStates(mass: number, de: number, a: number): number {
  const lambda = Math.sqrt(2 * mass * de) / (a * HBAR);
  return Math.max(0, Math.ceil(lambda - 0.5));
}

/** Finite-well node layout: x_j = −width/2 + (j + ½)h, h = width/cells, `pad` nodes beyond each wall. */
function finiteWellLayout(mass: number, widthM: number, depth: number, cells: number): { h: number; pad: number } {
  const kappa = Math.sqrt(2 * mass * depth) / HBAR;
  const h = widthM / cells;
  return { h, pad: Math.ceil(12 / (kappa * h)) };
}

function spectrumCount(level: number): number {
  return Math.max(level + 1, Math.min(level + 5, 20));
}

function resolve(raw: unknown): QuantumLevelsInputs {
  const potential: Potential = parseInputs(potentialSchema, raw).potential ?? 'harmonic';
  const p = parseInputs(schemas[potential], raw) as Record<string, number | string | undefined>;
  const mass = (p.mass_kg as number | undefined) ?? (potential === 'morse' ? H2_REDUCED_MASS : ELECTRON_MASS);
  const level = (p.level as number | undefined) ?? 0;
  const out: QuantumLevelsInputs = { potential, mass_kg: mass, level };
  switch (potential) {
    case 'harmonic':
      out.omega_rad_s = (p.omega_rad_s as number | undefined) ?? 1e15;
      out.grid_points = (p.grid_points as number | undefined) ?? 2000;
      break;
    case 'infinite_well':
      out.width_m = (p.width_m as number | undefined) ?? 1e-9;
      out.grid_points = (p.grid_points as number | undefined) ?? 2000;
      break;
    case 'finite_well': {
      out.width_m = (p.width_m as number | undefined) ?? 1e-9;
      out.depth_J = (p.depth_J as number | undefined) ?? EV;
      out.cells_in_well = (p.cells_in_well as number | undefined) ?? 200;
      const bound = finiteWellBoundStates(mass, out.width_m, out.depth_J);
      if (level >= bound) {
        throw new InputError('level', `the well holds ${bound} bound state(s): level must be < ${bound}`, { min: 0, max: bound - 1 });
      }
      const { pad } = finiteWellLayout(mass, out.width_m, out.depth_J, out.cells_in_well);
      checkWorkLimit('cells_in_well', out.cells_in_well + 2 * pad, MAX_FINITE_WELL_NODES);
      break;
    }
    case 'morse': {
      out.dissociation_energy_J = (p.dissociation_energy_J as number | undefined) ?? 4.746 * EV;
      out.morse_a_1_m = (p.morse_a_1_m as number | undefined) ?? 1.9426e10;
      out.grid_points = (p.grid_points as number | undefined) ?? 2000;
      const bound = morseBoundStates(mass, out.dissociation_energy_J, out.morse_a_1_m);
      if (level >= bound) {
        throw new InputError('level', `the Morse well holds ${bound} bound state(s): level must be < ${bound}`, { min: 0, max: bound - 1 });
      }
      break;
    }
  }
  return out;
}

/** Node positions and potential values of the FD grid for each potential. */
function buildGrid(inp: QuantumLevelsInputs): { x: Float64Array; v: Float64Array; h: number } {
  const m = inp.mass_kg;
  switch (inp.potential) {
    case 'harmonic': {
      const omega = inp.omega_rad_s!;
      const x0 = Math.sqrt(HBAR / (m * omega));
      const half = (Math.sqrt(2 * inp.level + 1) + 8) * x0;
      const n = inp.grid_points!;
      const h = (2 * half) / (n + 1);
      const x = new Float64Array(n);
      const v = new Float64Array(n);
      for (let i = 0; i < n; i++) {
        x[i] = -half + (i + 1) * h;
        v[i] = 0.5 * m * omega * omega * x[i]! * x[i]!;
      }
      return { x, v, h };
    }
    case 'infinite_well': {
      const n = inp.grid_points!;
      const h = inp.width_m! / (n + 1);
      const x = new Float64Array(n);
      for (let i = 0; i < n; i++) x[i] = (i + 1) * h;
      return { x, v: new Float64Array(n), h };
    }
    case 'finite_well': {
      const w = inp.width_m!;
      const v0 = inp.depth_J!;
      const cells = inp.cells_in_well!;
      const { h, pad } = finiteWellLayout(m, w, v0, cells);
      const n = cells + 2 * pad;
      const x = new Float64Array(n);
      const v = new Float64Array(n);
      for (let j = 0; j < n; j++) {
        const k = j - pad; // cell index relative to the left wall; 0 … cells−1 inside
        x[j] = -w / 2 + (k + 0.5) * h;
        v[j] = k >= 0 && k < cells ? 0 : v0;
      }
      return { x, v, h };
    }
    case 'morse': {
      const a = inp.morse_a_1_m!;
      const de = inp.dissociation_energy_J!;
      const lo = -1.5 / a;
      const hi = 12 / a;
      const n = inp.grid_points!;
      const h = (hi - lo) / (n + 1);
      const x = new Float64Array(n);
      const v = new Float64Array(n);
      for (let i = 0; i < n; i++) {
        x[i] = lo + (i + 1) * h;
        const s = 1 - Math.exp(-a * x[i]!);
        v[i] = de * s * s;
      }
      return { x, v, h };
    }
  }
}

/** The reference energy of `level`, independent of the FD matrix. */
function referenceEnergy(inp: QuantumLevelsInputs): { value: number; name: string } {
  const m = inp.mass_kg;
  const n = inp.level;
  switch (inp.potential) {
    case 'harmonic':
      return { value: HBAR * inp.omega_rad_s! * (n + 0.5), name: 'harmonic oscillator ħω(n + ½)' };
    case 'infinite_well': {
      const L = inp.width_m!;
      return { value: ((n + 1) ** 2 * Math.PI ** 2 * HBAR ** 2) / (2 * m * L * L), name: 'infinite well (n+1)²π²ħ²/(2mL²)' };
    }
    case 'morse': {
      const a = inp.morse_a_1_m!;
      const de = inp.dissociation_energy_J!;
      const omega0 = a * Math.sqrt((2 * de) / m);
      const e = HBAR * omega0 * (n + 0.5);
      return { value: e - (e * e) / (4 * de), name: 'Morse ħω0(n+½) − [ħω0(n+½)]²/(4De)' };
    }
    case 'finite_well': {
      const L = inp.width_m!;
      const z0 = ((L / 2) * Math.sqrt(2 * m * inp.depth_J!)) / HBAR;
      const s = (z: number) => Math.sqrt(Math.max(z0 * z0 - z * z, 0));
      // even: z tan z = √(z0² − z²); odd: −z cot z = √(z0² − z²); written without the poles.
      const f = n % 2 === 0 ? (z: number) => z * Math.sin(z) - s(z) * Math.cos(z) : (z: number) => -z * Math.cos(z) - s(z) * Math.sin(z);
      const lo = (n * Math.PI) / 2;
      const hi = Math.min(((n + 1) * Math.PI) / 2, z0);
      const z = brent(f, lo, hi, 1e-15);
      return { value: (((2 * z) / L) ** 2 * (HBAR * HBAR)) / (2 * m), name: 'finite well transcendental root (Brent)' };
    }
  }
}

function run(inp: QuantumLevelsInputs): SolverOutput {
  const { x, v, h } = buildGrid(inp);
  const n = x.length;
  // Scaled Hamiltonian H/t, t = ħ²/(2mh²): diagonal 2 + V/t, off-diagonal −1.
  const t = (HBAR * HBAR) / (2 * inp.mass_kg * h * h);
  const diag = new Float64Array(n);
  for (let i = 0; i < n; i++) diag[i] = 2 + v[i]! / t;
  const off = new Float64Array(n - 1).fill(-1);
  const matrix: SymTridiagonal = { diag, off };
  const e2 = offDiagonalSquares(matrix);

  const count = spectrumCount(inp.level);
  const scaled = new Float64Array(count);
  for (let k = 0; k < count; k++) scaled[k] = kthEigenvalue(matrix, k, 1e-14, e2);
  const levels = Array.from(scaled, (s) => s * t);
  const energy = levels[inp.level]!;

  const vec = tridiagonalEigenvector(matrix, scaled[inp.level]!);
  const invSqrtH = 1 / Math.sqrt(h);
  const psi = Float64Array.from(vec, (c) => c * invSqrtH);

  const ref = referenceEnergy(inp);
  const check = makeCheck(ref.name, `E_${inp.level}`, energy, ref.value);
  const levelsOut = boundSpectrum(levels);
  return {
    mode: inp.potential,
    value: energy,
    unit: 'J',
    output_class: 'spectrum',
    rule8: levelsOut,
    rule8_array: 'levels',
    outputs: {
      levels: levelsOut,
      levels_eV: levelsOut.map((e) => e / EV),
      level_index: levelsOut.map((_, i) => i),
      wavefunction: boundProfile(psi),
      x_m: boundProfile(x),
      grid_spacing_m: h,
      grid_points: n,
    },
    check,
  };
}

const inputs: InputSpec[] = [
  { key: 'potential', unit: '', default: 'harmonic', range: 'harmonic | infinite_well | finite_well | morse' },
  { key: 'mass_kg', unit: 'kg', default: '9.1093837015e-31 (m_e); morse: 8.367664e-28 (H2 reduced mass)', range: '1e-32 … 1e-24' },
  { key: 'level', unit: '1', default: 0, range: '0 … 20 (finite_well / morse: < number of bound states)' },
  { key: 'omega_rad_s', unit: 'rad/s', default: 1e15, range: '1e3 … 1e20 (harmonic)' },
  { key: 'width_m', unit: 'm', default: 1e-9, range: '1e-12 … 1e-6 (infinite_well, finite_well)' },
  { key: 'depth_J', unit: 'J', default: EV, range: '1e-25 … 1e-10 (finite_well)' },
  { key: 'dissociation_energy_J', unit: 'J', default: 4.746 * EV, range: '1e-25 … 1e-15 (morse)' },
  { key: 'morse_a_1_m', unit: '1/m', default: 1.9426e10, range: '1e6 … 1e12 (morse)' },
  { key: 'grid_points', unit: '1', default: 2000, range: '200 … 50000 (harmonic, infinite_well, morse)' },
  { key: 'cells_in_well', unit: '1', default: 200, range: `50 … 5000 (finite_well; ≤ ${MAX_FINITE_WELL_NODES} nodes with tails)` },
];

export const quantumLevels: SolverDef<QuantumLevelsInputs> = {
  id: 'quantum_levels',
  kind: 'quantum energy levels (1-D Schrödinger)',
  endpoint: null,
  catalogue: true,
  modes: [...POTENTIALS],
  stateful: false,
  inputs,
  schema: z.union([schemas.harmonic, schemas.infinite_well, schemas.finite_well, schemas.morse]),
  resolve,
  run: (inp) => run(inp),
};

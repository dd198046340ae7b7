// fea — finite-element cantilever (solvers.md §3.13).
// Euler–Bernoulli beam clamped at x = 0, `elements` equal Hermite-cubic elements (w, θ per node), consistent load
// vector for the distributed load, tip load at the free node.
// static: banded Cholesky solve of K u = F; the check is PL³/(3EI) + wL⁴/(8EI) (Hermite elements are nodally exact).
// modal: consistent mass, K φ = ω² M φ by subspace iteration (banded Cholesky of K, Rayleigh–Ritz on the projected
// pencil); the check is (β_n L)²/(2πL²)·√(EI/ρA) with the roots of 1 + cos x cosh x = 0.
import { z } from 'zod';
import { bandedCholesky, bandedCholeskySolve, bandedSubspaceEigen } from '../numerics/linalg.js';
import {
  BEAM_BANDWIDTH,
  assembleBanded,
  assembleLoad,
  beamConsistentMass,
  beamDofMap,
  beamStiffness,
  beamUniformLoad,
  nodalDeflections,
  type BeamDofMap,
} from './beam-elements.js';
import { InputError, SolverFailure } from './errors.js';
import type { Check, InputSpec, SolverDef, SolverOutput } from './types.js';
import { boundProfile, intIn, makeCheck, numIn, parseInputs, refuseCheck, refuseOtherModeKeys } from './util.js';

export interface FeaInputs extends Record<string, unknown> {
  analysis: 'static' | 'modal';
  length_m: number;
  youngs_modulus_Pa: number;
  width_m: number;
  height_m: number;
  density_kg_m3: number;
  tip_load_N: number;
  distributed_load_N_m: number;
  elements: number;
  mode_number: number;
}

/** β_n L for a clamped-free beam: the first five roots of 1 + cos x cosh x = 0 (solvers.md §3.13). */
export const CANTILEVER_BETA_L = [1.875104068712, 4.694091132974, 7.854757438238, 10.995540734875, 14.137168391046] as const;

const LOAD_MAX = 1e12;
const LOAD_MIN_NONZERO = 1e-9;
/** A load: 0, or LOAD_MIN_NONZERO ≤ |load| ≤ LOAD_MAX. */
const load = (unit: string) =>
  numIn(-LOAD_MAX, LOAD_MAX).refine((v) => v === 0 || Math.abs(v) >= LOAD_MIN_NONZERO, `must be 0 or have magnitude 1e-9 … 1e12 ${unit}`);

const schema = z.strictObject({
  analysis: z.enum(['static', 'modal']).optional(),
  length_m: numIn(1e-3, 1e3).optional(),
  youngs_modulus_Pa: numIn(1e6, 1e12).optional(),
  // Finite ranges (solvers.md had "> 0" and "any"): a 1 µm micro-cantilever to a 100 m girder, aerogel to beyond
  // osmium, loads up to 1e12 N. Outside them the stiffness pivots under- or overflowed (a 500) and the root moment
  // and stress of a ±MAX_VALUE load were ∞ or NaN; a nonzero load below 1e-9 underflowed the closed form to 0.
  width_m: numIn(1e-6, 100).optional(),
  height_m: numIn(1e-6, 100).optional(),
  density_kg_m3: numIn(1, 1e5).optional(),
  tip_load_N: load('N').optional(),
  distributed_load_N_m: load('N/m').optional(),
  elements: intIn(1, 1000).optional(),
  mode_number: intIn(1, 5).optional(),
});

function resolve(raw: unknown): FeaInputs {
  const p = parseInputs(schema, raw);
  refuseOtherModeKeys(raw, 'analysis', p.analysis ?? 'static', { static: ['tip_load_N', 'distributed_load_N_m'], modal: ['mode_number', 'density_kg_m3'] });
  const inputs: FeaInputs = {
    analysis: p.analysis ?? 'static',
    length_m: p.length_m ?? 1.0,
    youngs_modulus_Pa: p.youngs_modulus_Pa ?? 200e9,
    width_m: p.width_m ?? 0.05,
    height_m: p.height_m ?? 0.1,
    density_kg_m3: p.density_kg_m3 ?? 7850,
    tip_load_N: p.tip_load_N ?? 1000,
    distributed_load_N_m: p.distributed_load_N_m ?? 0,
    elements: p.elements ?? 20,
    mode_number: p.mode_number ?? 1,
  };
  // The clamped mesh has 2·elements free DOFs, hence as many modes.
  if (inputs.analysis === 'modal' && inputs.mode_number > 2 * inputs.elements) {
    throw new InputError('mode_number', `a clamped mesh of ${inputs.elements} element(s) has only ${2 * inputs.elements} modes`, {
      min: 1,
      max: Math.min(5, 2 * inputs.elements),
    });
  }
  return inputs;
}

function section(inputs: FeaInputs): { I: number; A: number; EI: number } {
  const I = (inputs.width_m * Math.pow(inputs.height_m, 3)) / 12;
  const A = inputs.width_m * inputs.height_m;
  return { I, A, EI: inputs.youngs_modulus_Pa * I };
}

function nodeAxis(inputs: FeaInputs): number[] {
  const le = inputs.length_m / inputs.elements;
  return Array.from({ length: inputs.elements + 1 }, (_, j) => (j === inputs.elements ? inputs.length_m : j * le));
}

function runStatic(inputs: FeaInputs): SolverOutput {
  const { elements, length_m: L, tip_load_N: P, distributed_load_N_m: q } = inputs;
  const { I, EI } = section(inputs);
  const le = L / elements;
  const map = beamDofMap(elements, [0, 1]);
  const ke = beamStiffness(EI, le);
  const K = assembleBanded(ke, map);
  const fe = beamUniformLoad(q, le);
  const F = assembleLoad(fe, map);
  F[map.free[2 * elements]!]! += P;
  const Lfac = bandedCholesky(K, map.nFree, BEAM_BANDWIDTH);
  if (Lfac === null) throw new SolverFailure('stiffness matrix is not positive definite', { elements });
  const u = bandedCholeskySolve(Lfac, map.nFree, BEAM_BANDWIDTH, F);
  const w = nodalDeflections(u, map);
  const tip = w[elements]!;

  // Root bending moment M(0) = EI w''(0) from the clamp's reaction moment: R_θ = (k_e u_e)_θ1 − f_θ1 and M(0) = −R_θ
  // (nodal forces of Hermite elements are exact, so this equals PL + qL²/2).
  const w1 = u[map.free[2]!]!;
  const th1 = u[map.free[3]!]!;
  const rootMoment = -(ke[1 * 4 + 2]! * w1 + ke[1 * 4 + 3]! * th1 - fe[1]!);
  const maxStress = (Math.abs(rootMoment) * (inputs.height_m / 2)) / I;

  const reference = (P * L * L * L) / (3 * EI) + (q * L * L * L * L) / (8 * EI);
  let check: Check = makeCheck('cantilever_closed_form', 'tip deflection PL³/(3EI) + wL⁴/(8EI) [m]', tip, reference);
  if (reference === 0) check = refuseCheck(check, 'no net load: the closed-form tip deflection is zero, nothing to compare');

  const deflection = boundProfile(w);
  return {
    mode: 'static',
    value: tip,
    unit: 'm',
    output_class: 'profile',
    rule8: deflection,
    rule8_array: 'deflection',
    outputs: {
      deflection: { x_m: boundProfile(nodeAxis(inputs)), w_m: deflection },
      tip_deflection_m: tip,
      root_moment_N_m: rootMoment,
      max_bending_stress_Pa: maxStress,
      second_moment_m4: I,
      elements,
    },
    check,
  };
}

function runModal(inputs: FeaInputs): SolverOutput {
  const { elements, length_m: L, mode_number: n } = inputs;
  const { EI, A } = section(inputs);
  const rhoA = inputs.density_kg_m3 * A;
  const le = L / elements;
  const map: BeamDofMap = beamDofMap(elements, [0, 1]);
  const K = assembleBanded(beamStiffness(EI, le), map);
  const M = assembleBanded(beamConsistentMass(rhoA, le), map);
  const wanted = Math.max(n, Math.min(5, map.nFree));
  let eig: ReturnType<typeof bandedSubspaceEigen>;
  try {
    eig = bandedSubspaceEigen(K, M, map.nFree, BEAM_BANDWIDTH, wanted);
  } catch (err) {
    throw new SolverFailure('modal eigen solve failed', { reason: String(err) });
  }
  const frequencies = eig.values.map((lam) => Math.sqrt(lam) / (2 * Math.PI));
  const f = frequencies[n - 1]!;

  // Mode shape: nodal deflections scaled to max |w| = 1 with a positive tip (the free end always moves).
  const w = nodalDeflections(eig.vectors[n - 1]!, map);
  let peak = 0;
  for (const v of w) peak = Math.max(peak, Math.abs(v));
  const sign = w[elements]! < 0 ? -1 : 1;
  for (let j = 0; j < w.length; j++) w[j] = (sign * w[j]!) / peak;

  const betaL = CANTILEVER_BETA_L[n - 1]!;
  const reference = ((betaL * betaL) / (2 * Math.PI * L * L)) * Math.sqrt(EI / rhoA);
  const check = makeCheck('cantilever_frequency_closed_form', `f_${n} = (β_n L)²/(2πL²)·√(EI/ρA) [Hz]`, f, reference);

  const shape = boundProfile(w);
  return {
    mode: 'modal',
    value: f,
    unit: 'Hz',
    output_class: 'profile',
    rule8: shape,
    rule8_array: 'mode_shape',
    outputs: {
      mode_shape: { x_m: boundProfile(nodeAxis(inputs)), w: shape, normalisation: 'max |w| = 1, tip positive' },
      frequency_Hz: f,
      frequencies_Hz: frequencies,
      // Loads play no part in a free-vibration analysis.
      root_moment_N_m: null,
      max_bending_stress_Pa: null,
      subspace_sweeps: eig.sweeps,
      elements,
    },
    check,
  };
}

function run(inputs: FeaInputs): SolverOutput {
  return inputs.analysis === 'static' ? runStatic(inputs) : runModal(inputs);
}

const inputs: InputSpec[] = [
  { key: 'analysis', unit: '', default: 'static', range: 'static, modal' },
  { key: 'length_m', unit: 'm', default: 1.0, range: '1e-3 … 1e3' },
  { key: 'youngs_modulus_Pa', unit: 'Pa', default: 200e9, range: '1e6 … 1e12' },
  { key: 'width_m', unit: 'm', default: 0.05, range: '1e-6 … 100 (I = bh³/12, A = bh)' },
  { key: 'height_m', unit: 'm', default: 0.1, range: '1e-6 … 100 (I = bh³/12, A = bh)' },
  { key: 'density_kg_m3', unit: 'kg/m³', default: 7850, range: '1 … 1e5' },
  { key: 'tip_load_N', unit: 'N', default: 1000, range: '0 or 1e-9 ≤ |P| ≤ 1e12' },
  { key: 'distributed_load_N_m', unit: 'N/m', default: 0, range: '0 or 1e-9 ≤ |w| ≤ 1e12' },
  { key: 'elements', unit: '1', default: 20, range: '1 … 1000' },
  { key: 'mode_number', unit: '1', default: 1, range: '1 … 5 (modal; ≤ 2·elements)' },
];

export const fea: SolverDef<FeaInputs> = {
  id: 'fea',
  kind: 'finite-element cantilever',
  endpoint: '/api/svc/fea',
  catalogue: true,
  modes: ['static', 'modal'],
  stateful: false,
  inputs,
  schema,
  resolve,
  run,
};

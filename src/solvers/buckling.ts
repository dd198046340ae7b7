// buckling — Euler column buckling (solvers.md §4.6).
// Hermite-cubic beam elements: elastic stiffness K and consistent geometric stiffness K_G (per unit axial load);
// supports remove DOFs (pinned: w; fixed: w and θ). The buckling loads solve K φ = P K_G φ (both banded SPD once the
// supports are applied) by subspace iteration — block inverse iteration X ← K⁻¹ K_G X with Rayleigh–Ritz deflation.
// The check is the Euler load (kL)²EI/L² with the exact kL of each support case.
import { z } from 'zod';
import { bandedSubspaceEigen } from '../numerics/linalg.js';
import { brent } from '../numerics/roots.js';
import { BEAM_BANDWIDTH, assembleBanded, beamDofMap, beamGeometricStiffness, beamStiffness, nodalDeflections } from './beam-elements.js';
import { InputError, SolverFailure } from './errors.js';
import type { InputSpec, SolverDef, SolverOutput } from './types.js';
import { boundProfile, intIn, makeCheck, numIn, parseInputs } from './util.js';

export type Supports = 'pinned-pinned' | 'fixed-free' | 'fixed-pinned' | 'fixed-fixed';
const SUPPORTS: Supports[] = ['pinned-pinned', 'fixed-free', 'fixed-pinned', 'fixed-fixed'];

export interface BucklingInputs extends Record<string, unknown> {
  length_m: number;
  youngs_modulus_Pa: number;
  second_moment_m4: number;
  area_m2: number | null;
  supports: Supports;
  elements: number;
  mode: number;
}

const schema = z.strictObject({
  length_m: numIn(0.01, 1000).optional(),
  youngs_modulus_Pa: numIn(1e6, 1e12).optional(),
  // From a 10 µm fibre (4.9e-22 m⁴) to a ~35 m solid square section; the eigen solve itself fails below ~1e-200
  // and above ~1e150 (its pivots under- and overflow), so every value in range is far inside what it can do.
  second_moment_m4: numIn(1e-24, 1e4).optional(),
  area_m2: numIn(1e-12, 1e4).nullable().optional(),
  supports: z.enum(SUPPORTS).optional(),
  elements: intIn(2, 200).optional(),
  mode: intIn(1, 5).optional(),
});

/** Constrained global DOFs: node 0 is (w 0, θ 1), the last node (w 2N, θ 2N+1). */
function constrainedDofs(supports: Supports, elements: number): number[] {
  const wEnd = 2 * elements;
  const thEnd = 2 * elements + 1;
  switch (supports) {
    case 'pinned-pinned':
      return [0, wEnd];
    case 'fixed-free':
      return [0, 1];
    case 'fixed-pinned':
      return [0, 1, wEnd];
    case 'fixed-fixed':
      return [0, 1, wEnd, thEnd];
  }
}

function resolve(raw: unknown): BucklingInputs {
  const p = parseInputs(schema, raw);
  const inputs: BucklingInputs = {
    length_m: p.length_m ?? 3.0,
    youngs_modulus_Pa: p.youngs_modulus_Pa ?? 200e9,
    second_moment_m4: p.second_moment_m4 ?? 8.0e-6,
    area_m2: p.area_m2 ?? null,
    supports: p.supports ?? 'pinned-pinned',
    elements: p.elements ?? 20,
    mode: p.mode ?? 1,
  };
  const nFree = 2 * (inputs.elements + 1) - constrainedDofs(inputs.supports, inputs.elements).length;
  if (inputs.mode > nFree) {
    throw new InputError('mode', `${inputs.elements} elements with ${inputs.supports} supports have only ${nFree} buckling modes`, {
      min: 1,
      max: Math.min(5, nFree),
    });
  }
  return inputs;
}

/** The n-th positive root of tan x = x, i.e. of sin x − x cos x on (nπ, nπ + π/2). */
export function tanEqualsRoot(n: number): number {
  return brent((x) => Math.sin(x) - x * Math.cos(x), n * Math.PI, n * Math.PI + Math.PI / 2, 1e-15);
}

/** Exact kL of the n-th buckling mode (solvers.md §4.6). */
export function exactKL(supports: Supports, n: number): number {
  switch (supports) {
    case 'pinned-pinned':
      return n * Math.PI;
    case 'fixed-free':
      return ((2 * n - 1) * Math.PI) / 2;
    case 'fixed-pinned':
      return tanEqualsRoot(n);
    case 'fixed-fixed': {
      // Symmetric modes kL = 2πj and antisymmetric modes kL = 2z_j (tan z = z), merged in order.
      const candidates: number[] = [];
      for (let j = 1; j <= n; j++) candidates.push(2 * Math.PI * j, 2 * tanEqualsRoot(j));
      candidates.sort((a, b) => a - b);
      return candidates[n - 1]!;
    }
  }
}

function run(inputs: BucklingInputs): SolverOutput {
  const { length_m: L, elements, mode, supports } = inputs;
  const EI = inputs.youngs_modulus_Pa * inputs.second_moment_m4;
  const le = L / elements;
  const map = beamDofMap(elements, constrainedDofs(supports, elements));
  const K = assembleBanded(beamStiffness(EI, le), map);
  const KG = assembleBanded(beamGeometricStiffness(le), map);

  const modes = Math.min(5, map.nFree);
  let eig: ReturnType<typeof bandedSubspaceEigen>;
  try {
    eig = bandedSubspaceEigen(K, KG, map.nFree, BEAM_BANDWIDTH, modes);
  } catch (err) {
    throw new SolverFailure('buckling eigen solve failed', { reason: String(err), supports, elements });
  }
  const loads = eig.values;
  const P = loads[mode - 1]!;
  if (!(P > 0 && Number.isFinite(P))) throw new SolverFailure('non-positive buckling eigenvalue', { mode, value: P });

  // Mode shape: nodal deflections, max |w| = 1 and the largest entry positive.
  const w = nodalDeflections(eig.vectors[mode - 1]!, map);
  let peakIndex = 0;
  for (let j = 1; j < w.length; j++) if (Math.abs(w[j]!) > Math.abs(w[peakIndex]!)) peakIndex = j;
  const scale = 1 / w[peakIndex]!;
  for (let j = 0; j < w.length; j++) w[j] = w[j]! * scale;

  const kL = exactKL(supports, mode);
  const reference = (kL * kL * EI) / (L * L);
  const check = makeCheck('euler_exact_kL', `critical load (kL)²EI/L², kL = ${kL.toPrecision(13)} [N]`, P, reference);

  const kLComputed = L * Math.sqrt(P / EI);
  const effectiveLengthFactor = Math.PI / kLComputed;
  const A = inputs.area_m2;
  const radiusOfGyration = A === null ? null : Math.sqrt(inputs.second_moment_m4 / A);

  const x = Array.from({ length: elements + 1 }, (_, j) => (j === elements ? L : j * le));
  const shape = boundProfile(w);
  return {
    mode: supports,
    value: P,
    unit: 'N',
    output_class: 'profile',
    rule8: shape,
    rule8_array: 'mode_shape',
    outputs: {
      mode_shape: { x_m: boundProfile(x), w: shape, normalisation: 'max |w| = 1, largest entry positive' },
      critical_load_N: P,
      buckling_loads_N: loads,
      effective_length_factor: effectiveLengthFactor,
      critical_stress_Pa: A === null ? null : P / A,
      // Effective slenderness K·L/r (r = √(I/A)), so that σ_cr = π²E/slenderness².
      slenderness: radiusOfGyration === null ? null : (effectiveLengthFactor * L) / radiusOfGyration,
      subspace_sweeps: eig.sweeps,
      elements,
    },
    check,
  };
}

const inputs: InputSpec[] = [
  { key: 'length_m', unit: 'm', default: 3.0, range: '0.01 … 1000' },
  { key: 'youngs_modulus_Pa', unit: 'Pa', default: 200e9, range: '1e6 … 1e12' },
  { key: 'second_moment_m4', unit: 'm⁴', default: 8.0e-6, range: '1e-24 … 1e4' },
  { key: 'area_m2', unit: 'm²', default: null, range: '1e-12 … 1e4 or null (enables critical_stress_Pa, slenderness)' },
  { key: 'supports', unit: '', default: 'pinned-pinned', range: SUPPORTS.join(', ') },
  { key: 'elements', unit: '1', default: 20, range: '2 … 200' },
  { key: 'mode', unit: '1', default: 1, range: '1 … 5 (≤ free DOFs)' },
];

export const buckling: SolverDef<BucklingInputs> = {
  id: 'buckling',
  kind: 'column buckling',
  endpoint: null,
  catalogue: true,
  modes: SUPPORTS,
  stateful: false,
  inputs,
  schema,
  resolve,
  run,
};

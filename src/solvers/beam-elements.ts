// Hermite-cubic Euler–Bernoulli beam elements shared by `fea` (solvers.md §3.13) and `buckling` (§4.6).
// Uniform meshes of `elements` equal elements; node j carries the deflection w at DOF 2j and the slope θ at DOF 2j+1.
// Element matrices are 4×4 row-major Float64Arrays over (w1, θ1, w2, θ2).

/** Half-bandwidth of an assembled Hermite beam matrix (a node couples to the next node's two DOFs). */
export const BEAM_BANDWIDTH = 3;

/** Elastic stiffness EI/le³ [[12, 6le, −12, 6le], [6le, 4le², −6le, 2le²], [−12, −6le, 12, −6le], [6le, 2le², −6le, 4le²]]. */
export function beamStiffness(EI: number, le: number): Float64Array {
  const k = EI / (le * le * le);
  const l = le;
  const l2 = le * le;
  return Float64Array.from([12, 6 * l, -12, 6 * l, 6 * l, 4 * l2, -6 * l, 2 * l2, -12, -6 * l, 12, -6 * l, 6 * l, 2 * l2, -6 * l, 4 * l2].map((v) => v * k));
}

/** Consistent mass ρA le/420 [[156, 22le, 54, −13le], [22le, 4le², 13le, −3le²], [54, 13le, 156, −22le], [−13le, −3le², −22le, 4le²]]. */
export function beamConsistentMass(rhoA: number, le: number): Float64Array {
  const m = (rhoA * le) / 420;
  const l = le;
  const l2 = le * le;
  return Float64Array.from(
    [156, 22 * l, 54, -13 * l, 22 * l, 4 * l2, 13 * l, -3 * l2, 54, 13 * l, 156, -22 * l, -13 * l, -3 * l2, -22 * l, 4 * l2].map((v) => v * m),
  );
}

/**
 * Consistent geometric stiffness per unit compressive axial load,
 * (1/30le)[[36, 3le, −36, 3le], [3le, 4le², −3le, −le²], [−36, −3le, 36, −3le], [3le, −le², −3le, 4le²]].
 */
export function beamGeometricStiffness(le: number): Float64Array {
  const g = 1 / (30 * le);
  const l = le;
  const l2 = le * le;
  return Float64Array.from([36, 3 * l, -36, 3 * l, 3 * l, 4 * l2, -3 * l, -l2, -36, -3 * l, 36, -3 * l, 3 * l, -l2, -3 * l, 4 * l2].map((v) => v * g));
}

/** Consistent nodal load of a uniform distributed load q [N/m]: q le [1/2, le/12, 1/2, −le/12]. */
export function beamUniformLoad(q: number, le: number): Float64Array {
  return Float64Array.from([q * le * 0.5, (q * le * le) / 12, q * le * 0.5, (-q * le * le) / 12]);
}

/** Global DOF → free-DOF index (−1 for a constrained DOF). */
export interface BeamDofMap {
  elements: number;
  /** free[g] for every global DOF g in 0 … 2·(elements+1) − 1. */
  free: Int32Array;
  nFree: number;
}

/** The DOF map of a uniform mesh with the given global DOFs constrained to zero. */
export function beamDofMap(elements: number, constrained: readonly number[]): BeamDofMap {
  const nDof = 2 * (elements + 1);
  const fixed = new Uint8Array(nDof);
  for (const g of constrained) fixed[g] = 1;
  const free = new Int32Array(nDof);
  let nFree = 0;
  for (let g = 0; g < nDof; g++) free[g] = fixed[g] ? -1 : nFree++;
  return { elements, free, nFree };
}

/** Assemble one element matrix repeated over the mesh, free DOFs only, in the lower-banded layout of linalg.bandedCholesky. */
export function assembleBanded(elementMatrix: Float64Array, map: BeamDofMap): Float64Array {
  const w = BEAM_BANDWIDTH + 1;
  const band = new Float64Array(map.nFree * w);
  for (let e = 0; e < map.elements; e++) {
    for (let a = 0; a < 4; a++) {
      const i = map.free[2 * e + a]!;
      if (i < 0) continue;
      for (let b = 0; b < 4; b++) {
        const j = map.free[2 * e + b]!;
        if (j < 0 || j > i) continue;
        band[i * w + (i - j)]! += elementMatrix[a * 4 + b]!;
      }
    }
  }
  return band;
}

/** Assemble one element matrix repeated over the mesh, free DOFs only, as dense rows. */
export function assembleDense(elementMatrix: Float64Array, map: BeamDofMap): number[][] {
  const A: number[][] = Array.from({ length: map.nFree }, () => new Array<number>(map.nFree).fill(0));
  for (let e = 0; e < map.elements; e++) {
    for (let a = 0; a < 4; a++) {
      const i = map.free[2 * e + a]!;
      if (i < 0) continue;
      for (let b = 0; b < 4; b++) {
        const j = map.free[2 * e + b]!;
        if (j < 0) continue;
        A[i]![j]! += elementMatrix[a * 4 + b]!;
      }
    }
  }
  return A;
}

/** Assemble one element load vector repeated over the mesh into the free DOFs. */
export function assembleLoad(elementLoad: Float64Array, map: BeamDofMap): Float64Array {
  const f = new Float64Array(map.nFree);
  for (let e = 0; e < map.elements; e++) {
    for (let a = 0; a < 4; a++) {
      const i = map.free[2 * e + a]!;
      if (i >= 0) f[i]! += elementLoad[a]!;
    }
  }
  return f;
}

/** Nodal deflections w_j (j = 0 … elements) of a free-DOF vector; constrained deflections are 0. */
export function nodalDeflections(u: ArrayLike<number>, map: BeamDofMap): Float64Array {
  const w = new Float64Array(map.elements + 1);
  for (let j = 0; j <= map.elements; j++) {
    const i = map.free[2 * j]!;
    w[j] = i >= 0 ? u[i]! : 0;
  }
  return w;
}

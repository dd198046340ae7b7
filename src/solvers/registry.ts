// The solver registry: the 27 ids of solvers.md §2 in catalogue order, assembled from the solver groups.
import type { SolverDef } from './types.js';
import { solvers as continuumA } from './groups/continuum-a.js';
import { solvers as continuumB } from './groups/continuum-b.js';
import { solvers as structures } from './groups/structures.js';
import { solvers as dynamics } from './groups/dynamics.js';
import { solvers as discrete } from './groups/discrete.js';
import { solvers as optimisation } from './groups/optimisation.js';

/** The 27 ids in the order of solvers.md §2. */
export const SOLVER_IDS = [
  'action',
  'evolve',
  'heat',
  'lorenz',
  'wave',
  'flow',
  'fracture',
  'epi',
  'quant',
  'zeta',
  'sat',
  'gauge',
  'fea',
  'grid',
  'device',
  'react',
  'opt',
  'climate',
  'dock',
  'multibody',
  'predator_prey',
  'tumour',
  'kalman',
  'quantum_levels',
  'acoustic',
  'buckling',
  'blackhole',
] as const;
export type SolverId = (typeof SOLVER_IDS)[number];

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnySolver = SolverDef<any>;

export class SolverRegistry {
  private readonly byId = new Map<string, AnySolver>();

  constructor(solvers: readonly AnySolver[]) {
    for (const s of solvers) {
      if (this.byId.has(s.id)) throw new Error(`duplicate solver id ${s.id}`);
      this.byId.set(s.id, s);
    }
  }

  get(id: string): AnySolver | undefined {
    return this.byId.get(id);
  }

  /** Registered solvers in catalogue order. */
  list(): AnySolver[] {
    const order = new Map<string, number>(SOLVER_IDS.map((id, i) => [id, i]));
    return [...this.byId.values()].sort((a, b) => (order.get(a.id) ?? 99) - (order.get(b.id) ?? 99));
  }

  ids(): string[] {
    return this.list().map((s) => s.id);
  }

  /** A copy with some solvers replaced (tests use it to inject faults into the pipeline). */
  with(overrides: readonly AnySolver[]): SolverRegistry {
    const merged = new Map(this.byId);
    for (const s of overrides) merged.set(s.id, s);
    return new SolverRegistry([...merged.values()]);
  }
}

export function defaultRegistry(): SolverRegistry {
  return new SolverRegistry([...continuumA, ...continuumB, ...structures, ...dynamics, ...discrete, ...optimisation]);
}

// One group of solvers, owned by one author at a time; registry.ts assembles the groups.
import type { SolverDef } from '../types.js';
import { fracture } from '../fracture.js';
import { fea } from '../fea.js';
import { buckling } from '../buckling.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const solvers: SolverDef<any>[] = [fracture, fea, buckling];

// One group of solvers, owned by one author at a time; registry.ts assembles the groups.
import type { SolverDef } from '../types.js';
import { grid } from '../grid.js';
import { opt } from '../opt.js';
import { dock } from '../dock.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const solvers: SolverDef<any>[] = [grid, opt, dock];

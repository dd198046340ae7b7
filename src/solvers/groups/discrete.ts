// One group of solvers, owned by one author at a time; registry.ts assembles the groups.
import type { SolverDef } from '../types.js';
import { quant } from '../quant.js';
import { zeta } from '../zeta.js';
import { sat } from '../sat.js';
import { gauge } from '../gauge.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const solvers: SolverDef<any>[] = [quant, zeta, sat, gauge];

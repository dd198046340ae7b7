// One group of solvers, owned by one author at a time; registry.ts assembles the groups.
import type { SolverDef } from '../types.js';
import { heat } from '../heat.js';
import { wave } from '../wave.js';
import { flow } from '../flow.js';
import { climate } from '../climate.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const solvers: SolverDef<any>[] = [heat, wave, flow, climate];

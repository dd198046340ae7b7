// One group of solvers, owned by one author at a time; registry.ts assembles the groups.
import type { SolverDef } from '../types.js';
import { quantumLevels } from '../quantum-levels.js';
import { acoustic } from '../acoustic.js';
import { device } from '../device.js';
import { react } from '../react.js';
import { tumour } from '../tumour.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const solvers: SolverDef<any>[] = [device, react, tumour, quantumLevels, acoustic];

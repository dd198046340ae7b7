// One group of solvers, owned by one author at a time; registry.ts assembles the groups.
// Dynamics: ODE and particle integrators (lorenz, epi, predator_prey, blackhole, kalman, action, multibody, evolve).
import type { SolverDef } from '../types.js';
import { lorenz } from '../lorenz.js';
import { epi } from '../epi.js';
import { predatorPrey } from '../predator-prey.js';
import { blackhole } from '../blackhole.js';
import { kalman } from '../kalman.js';
import { action } from '../action.js';
import { multibody } from '../multibody.js';
import { evolve } from '../evolve.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const solvers: SolverDef<any>[] = [action, evolve, lorenz, epi, multibody, predatorPrey, kalman, blackhole];

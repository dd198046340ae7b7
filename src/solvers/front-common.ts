// Rules shared by the travelling-front solvers (react, tumour): the grid per front width, an even RK4 step
// count under the diffusion limit, a t_end that keeps the front inside [0.1 L, 0.9 L], and the measured speed.
// The crossing itself is numerics/front.ts `decreasingCrossing`.
import { InputError, SolverFailure } from './errors.js';

/** The resolved keys the step count depends on. */
export interface FrontGridInputs {
  diffusivity_m2_s: number;
  length_m: number;
  nx: number;
  t_end_s: number;
  cfl: number;
}

/** RK4 steps: an even count (so t_end/2 is a step boundary) with D dt/dx² ≤ cfl. */
export function frontStepCount(inp: FrontGridInputs): number {
  const dx = inp.length_m / (inp.nx - 1);
  const dtMax = (inp.cfl * dx * dx) / inp.diffusivity_m2_s;
  return 2 * Math.max(1, Math.ceil(inp.t_end_s / (2 * dtMax)));
}

/**
 * nx over `widths` front widths: nx − 1 intervals at 5 … 40 per width and at most `cap` nodes; the default is
 * 10 intervals per width, clamped into that range. min > max when the cap leaves no room.
 */
export function frontNxRange(widths: number, cap = Number.POSITIVE_INFINITY): { min: number; max: number; fallback: number } {
  const min = Math.ceil(5 * widths) + 1;
  const max = Math.min(Math.floor(40 * widths) + 1, cap);
  return { min, max, fallback: Math.min(Math.max(Math.round(10 * widths) + 1, min), max) };
}

/** The front starts at L/4 and moves right at c: it must still be inside [0.1 L, 0.9 L] at t_end. */
export function checkFrontEndTime(tEnd: number, length: number, c: number): void {
  const tMax = (0.65 * length) / c;
  if (tEnd > tMax) throw new InputError('t_end_s', 'the front would leave [0.1 L, 0.9 L] before t_end', { max: tMax });
}

/** Front speed between its positions at t_end/2 and t_end; SolverFailure when either crossing was lost. */
export function frontSpeed(solver: string, level: string, xHalf: number, xEnd: number, tEnd: number): number {
  if (!Number.isFinite(xHalf) || !Number.isFinite(xEnd)) {
    throw new SolverFailure(`${solver}: the ${level} front was lost (no crossing on the grid)`, { x_half_m: xHalf, x_end_m: xEnd });
  }
  return (xEnd - xHalf) / (tEnd / 2);
}

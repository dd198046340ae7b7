// Travelling-front diagnostics shared by the reaction-diffusion solvers (react, tumour).

/**
 * Position of the first crossing of `level` by samples u on the uniform grid x_i = x0 + i·dx, scanning from
 * the left for u[i] ≥ level > u[i+1] (a front that decreases to the right), by linear interpolation.
 * NaN when there is no such crossing.
 */
export function decreasingCrossing(u: ArrayLike<number>, x0: number, dx: number, level: number): number {
  for (let i = 0; i + 1 < u.length; i++) {
    const a = u[i]!;
    const b = u[i + 1]!;
    if (a >= level && b < level) return x0 + (i + (a - level) / (a - b)) * dx;
  }
  return NaN;
}

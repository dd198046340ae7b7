// KO42 modulation (rule 2): R(t) = S(t)[1 + a·sin(2π f t + φ0)], f = 1.287 Hz, a = 1e-3, f·T = 1,
// so at a stamp the argument is 2π·phase + φ0 with phase the position inside the tick.

export const MODULATION_AMPLITUDE = 1e-3;
export const PRECISION_BOUND = 1e-4;
export const TOLERANCE_GATE = 1e-3;
export const TICK_AVERAGE_SAMPLES = 64;

/** |R_t − 1| ≤ a, allowing for rounding: the bound every modulation factor keeps (gate and protocol step 7). */
export function withinModulationBound(R_t: number): boolean {
  return Math.abs(R_t - 1) <= MODULATION_AMPLITUDE * (1 + 1e-12);
}

/** R_t = 1 + a·sin(2π·phase + φ0). */
export function modulationFactor(phase: number, phi0 = 0): number {
  return 1 + MODULATION_AMPLITUDE * Math.sin(2 * Math.PI * phase + phi0);
}

/**
 * The tick average of R(t)·S over one tick by the trapezoid rule on 64 intervals. The sine averages to zero
 * over a period, so this recovers S; it is computed, not copied, and the gate checks it.
 */
export function tickAverage(standardValue: number, phi0 = 0): number {
  const n = TICK_AVERAGE_SAMPLES;
  let sum = 0;
  for (let i = 0; i <= n; i++) {
    const w = i === 0 || i === n ? 0.5 : 1;
    sum += w * standardValue * modulationFactor(i / n, phi0);
  }
  return sum / n;
}

// The parity check of rule 6. Tick variance of a computation = variance of its unwrapped tick positions at
// start and at stamp, (Δ/2)² with Δ the elapsed time in ticks. Above 0.0091 (Δ > 0.19 tick, ~148 ms) the
// kernel applies a metric shift: delta_alpha is the change of the modulation factor across the computation,
// which is taken back out so the stamp refers to the start phase. The value S is never touched (rule 5).
import { MODULATION_AMPLITUDE } from './modulation.js';

export const VARIANCE_THRESHOLD = 0.0091;

export interface MetricShift {
  applied: boolean;
  variance: number;
  threshold: number;
  elapsed_ticks: number;
  delta_alpha: number;
}

export function tickVariance(elapsedTicks: number): number {
  return (elapsedTicks / 2) ** 2;
}

export function metricShift(startPhase: number, elapsedTicks: number, phi0 = 0): MetricShift {
  const variance = tickVariance(elapsedTicks);
  const applied = variance > VARIANCE_THRESHOLD;
  const a = MODULATION_AMPLITUDE;
  const deltaAlpha = applied ? -a * (Math.sin(2 * Math.PI * (startPhase + elapsedTicks) + phi0) - Math.sin(2 * Math.PI * startPhase + phi0)) : 0;
  return { applied, variance, threshold: VARIANCE_THRESHOLD, elapsed_ticks: elapsedTicks, delta_alpha: deltaAlpha };
}

/** The same shift from a variance alone (POST /api/svc/shift): Δ = 2√variance ticks. */
export function metricShiftFromVariance(variance: number, phase: number, phi0 = 0): MetricShift {
  return metricShift(phase, 2 * Math.sqrt(variance), phi0);
}

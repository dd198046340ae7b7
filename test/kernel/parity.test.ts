// The parity check of rule 6: tick variance (Δ/2)² of a computation lasting Δ ticks; above 0.0091 the kernel
// applies a metric shift, at or below it none. Figures computed by hand: the threshold is crossed at
// Δ = 2·√0.0091 = 0.190788 tick = 148.24 ms of the 777.000777 ms tick.
import { describe, expect, it } from 'vitest';
import { modulationFactor } from '../../src/kernel/modulation.js';
import { metricShift, metricShiftFromVariance, tickVariance, VARIANCE_THRESHOLD } from '../../src/kernel/parity.js';

describe('tick variance', () => {
  it('is (Δ/2)² of the elapsed ticks', () => {
    expect(tickVariance(0)).toBe(0);
    expect(tickVariance(1)).toBe(0.25);
    expect(tickVariance(0.2)).toBeCloseTo(0.01, 15);
    expect(tickVariance(0.19)).toBeCloseTo(0.009025, 15);
  });

  it('has the spec threshold 0.0091', () => {
    expect(VARIANCE_THRESHOLD).toBe(0.0091);
  });
});

describe('metric shift (rule 6: variance > 0.0091 → shift)', () => {
  it('is not applied at or below the threshold, and carries delta_alpha 0', () => {
    for (const elapsed of [0, 0.1, 0.19, 0.1907]) {
      const s = metricShift(0.3, elapsed);
      expect(s).toEqual({ applied: false, variance: tickVariance(elapsed), threshold: 0.0091, elapsed_ticks: elapsed, delta_alpha: 0 });
    }
    // Exactly at the threshold: variance ≤ 0.0091 needs no shift.
    expect(metricShiftFromVariance(0.0091, 0.3).applied).toBe(false);
    expect(metricShiftFromVariance(0.0091, 0.3).variance).toBe(0.0091);
  });

  it('is applied just above the threshold', () => {
    expect(metricShift(0, 0.1908).applied).toBe(true); // (0.0954)² = 0.00910116
    expect(metricShift(0, 0.1908).variance).toBeCloseTo(0.00910116, 15);
    expect(metricShiftFromVariance(0.00911, 0).applied).toBe(true);
    // 148.24 ms is the boundary on the real tick: 150 ms shifts, 145 ms does not.
    const TICK_MS = 777.000777;
    expect(metricShift(0, 150 / TICK_MS).applied).toBe(true);
    expect(metricShift(0, 145 / TICK_MS).applied).toBe(false);
  });

  it('delta_alpha is −a·[sin(2π(s+Δ)+φ0) − sin(2πs+φ0)], with hand-computed values', () => {
    // s = 0, Δ = 1/4: −1e-3·(sin(π/2) − sin 0) = −1e-3.
    expect(metricShift(0, 0.25).delta_alpha).toBeCloseTo(-1e-3, 15);
    // s = 1/4, Δ = 1/2: −1e-3·(sin(3π/2) − sin(π/2)) = +2e-3.
    expect(metricShift(0.25, 0.5).delta_alpha).toBeCloseTo(2e-3, 15);
    // φ0 = π/2, s = 0, Δ = 1/2: −1e-3·(sin(3π/2) − sin(π/2)) = +2e-3.
    expect(metricShift(0, 0.5, Math.PI / 2).delta_alpha).toBeCloseTo(2e-3, 15);
    // A whole tick returns to the same phase: no change of the modulation factor.
    expect(metricShift(0.1, 1).delta_alpha).toBeCloseTo(0, 15);
    // From a variance: 0.0625 = (0.5/2)²·4 → Δ = 0.5.
    expect(metricShiftFromVariance(0.0625, 0.25)).toMatchObject({ applied: true, elapsed_ticks: 0.5 });
    expect(metricShiftFromVariance(0.0625, 0.25).delta_alpha).toBeCloseTo(2e-3, 15);
  });

  it('takes the modulation change back out: R at the stamp + delta_alpha = R at the start phase', () => {
    for (const [start, elapsed, phi0] of [
      [0.1, 0.3, 0],
      [0.7, 0.45, 1.2],
      [0.95, 2.6, 0.3],
    ] as const) {
      const s = metricShift(start, elapsed, phi0);
      expect(s.applied).toBe(true);
      const stampPhase = (start + elapsed) % 1;
      expect(modulationFactor(stampPhase, phi0) + s.delta_alpha).toBeCloseTo(modulationFactor(start, phi0), 14);
      expect(Math.abs(s.delta_alpha)).toBeLessThanOrEqual(2e-3);
    }
  });
});

// The tolerance gate of rule 4 (≤ 0.1 %, i.e. 1e-3 relative) and the closed-form gate of solvers.md §6 step 6,
// against hand-computed relative errors. The gate recomputes every part's error from computed and reference: a
// solver's own rel_error and passed flag are not trusted alone.
import { describe, expect, it } from 'vitest';
import { gateChainValues, gateClosedForm, gateModulation, gateSolverCheck } from '../../src/kernel/gate.js';
import { tickAverage } from '../../src/kernel/modulation.js';

type Check = Parameters<typeof gateSolverCheck>[0];

/** A chain whose operators' own checks are not in question here: S first, then the other operators' values. */
function chainOf(values: number[]): Parameters<typeof gateChainValues>[0] {
  return { value: values[0]!, master_sum: { terms: [{ value: 1 }, ...values.map((value) => ({ value }))] }, checks: [] };
}

/** A one-part check that claims to pass with the error it reports. */
function check(computed: number, reference: number, extra: Partial<Check> = {}): Check {
  const rel = Math.abs(computed - reference) / Math.abs(reference);
  return { name: 'test check', quantity: 'q', computed, reference, rel_error: rel, tolerance: 1e-3, passed: true, ...extra };
}

describe('gateSolverCheck (rule 4: ≤ 0.1 %)', () => {
  it('passes at exactly 0.1 % and below, fails just above', () => {
    // 1001 vs 1000: |Δ|/ref = 1/1000 = 0.001 exactly in binary64 as well.
    expect(gateSolverCheck(check(1001, 1000), 1)).toEqual({ passed: true, rel_error: 0.001, reason: null });
    expect(gateSolverCheck(check(999, 1000), 1)).toEqual({ passed: true, rel_error: 0.001, reason: null });
    const v = gateSolverCheck(check(1000.5, 1000), 1);
    expect(v.passed).toBe(true);
    expect(v.rel_error).toBeCloseTo(5e-4, 15);
    const over = gateSolverCheck(check(1001.001, 1000), 1);
    expect(over.passed).toBe(false);
    expect(over.rel_error).toBeCloseTo(1.001e-3, 12);
    expect(over.reason).toBe('test check: relative error 1.001e-3 exceeds 0.001');
  });

  it('recomputes the error instead of trusting the claimed rel_error and passed', () => {
    // The check claims 0 error and a pass; computed and reference differ by 1 %.
    const v = gateSolverCheck(check(1.01, 1, { rel_error: 0, passed: true }), 1.01);
    expect(v.passed).toBe(false);
    expect(v.rel_error).toBeCloseTo(0.01, 12);
  });

  it('takes the worst of several parts', () => {
    const parts = [check(1, 1), check(100.05, 100), check(2.0016, 2)];
    const v = gateSolverCheck({ ...check(1, 1), parts }, 1);
    expect(v.rel_error).toBeCloseTo(8e-4, 12); // 0.0016/2, the third part
    expect(v.passed).toBe(true);
    const bad = [...parts, check(10.02, 10)]; // 2e-3
    const w = gateSolverCheck({ ...check(1, 1), parts: bad }, 1);
    expect(w.passed).toBe(false);
    expect(w.rel_error).toBeCloseTo(2e-3, 12);
  });

  it('never passes a refused check, a failed check, or a non-finite value', () => {
    const refused = gateSolverCheck(check(1, 1, { refused: 'not finished: raise t_end_days' }), 1);
    expect(refused).toEqual({ passed: false, rel_error: 0, reason: 'not finished: raise t_end_days' });
    const failed = gateSolverCheck(check(1, 1, { passed: false }), 1);
    expect(failed).toEqual({ passed: false, rel_error: 0, reason: 'test check: check did not pass' });
    for (const value of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      expect(gateSolverCheck(check(1, 1), value)).toEqual({ passed: false, rel_error: Number.POSITIVE_INFINITY, reason: 'value is not finite' });
    }
  });

  it('treats an error that cannot be formed (reference 0, NaN) as infinite', () => {
    expect(gateSolverCheck(check(1e-9, 0), 1).passed).toBe(false);
    expect(gateSolverCheck(check(1e-9, 0), 1).rel_error).toBe(Number.POSITIVE_INFINITY);
    expect(gateSolverCheck(check(Number.NaN, 1), 1).passed).toBe(false);
    expect(gateSolverCheck(check(Number.NaN, Number.NaN), 1).passed).toBe(false);
  });

  it('passes exact agreement with a reference of 0 (a fixed point): 0/0 is no error, as the solvers read it', () => {
    expect(gateSolverCheck(check(0, 0, { rel_error: 0 }), 0)).toEqual({ passed: true, rel_error: 0, reason: null });
    const parts = [check(0, 0, { rel_error: 0 }), check(1.0005, 1)];
    expect(gateSolverCheck({ ...parts[1]!, parts }, 1)).toMatchObject({ passed: true, rel_error: expect.closeTo(5e-4, 12) });
  });
});

describe('closed-form gate (solvers.md §6 step 6)', () => {
  it('the tick average of R(t)·S recovers S: the sine sums to zero over 64 equal steps of one period', () => {
    for (const phi0 of [0, 0.3, Math.PI / 2, 2]) {
      for (const S of [1, -273.15, 6.02214076e23, 1e-30]) {
        expect(Math.abs(tickAverage(S, phi0) - S) / Math.abs(S)).toBeLessThan(1e-14);
      }
    }
    expect(tickAverage(0, 0.3)).toBe(0);
  });

  it('passes finite values whose tick average recovers S, and |R_t − 1| ≤ a = 1e-3', () => {
    const v = gateClosedForm(chainOf([3.5, 2]), 1.001, 0.3);
    expect(v.passed).toBe(true);
    expect(v.reason).toBeNull();
    expect(v.rel_error).toBeLessThan(1e-14);
    expect(v.tick_average).toBeCloseTo(3.5, 13);
    expect(gateClosedForm(chainOf([0]), 0.999, 0)).toMatchObject({ passed: true, rel_error: 0, tick_average: 0 });
  });

  it('fails on a non-finite operator value', () => {
    const v = gateChainValues(chainOf([1, Number.NaN]), 0);
    expect(v).toMatchObject({ passed: false, rel_error: Number.POSITIVE_INFINITY, reason: 'an operator value is not finite' });
    expect(gateClosedForm(chainOf([Number.POSITIVE_INFINITY]), 1, 0).passed).toBe(false);
  });

  it('fails when R_t is outside 1 ± 1e-3, keeping the chain verdict otherwise', () => {
    const chain = gateChainValues(chainOf([5]), 0);
    expect(gateModulation(chain, 1.0011)).toMatchObject({ passed: false, reason: '|R_t - 1| exceeds 1e-3', tick_average: chain.tick_average });
    expect(gateModulation(chain, 0.9989).passed).toBe(false);
    expect(gateModulation(chain, 1 + 1e-3)).toBe(chain);
    expect(gateModulation(chain, 1 - 1e-3)).toBe(chain);
    // A chain that already failed stays failed with its own reason, whatever the stamp.
    const bad = gateChainValues(chainOf([Number.NaN]), 0);
    expect(gateModulation(bad, 1)).toBe(bad);
  });
});

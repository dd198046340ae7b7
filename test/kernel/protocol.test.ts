// The seven-step protocol of rule 7: seven steps in the spec's order, each failing exactly when its condition
// does (KO42 first; 1–3 domain operators; ≤ 0.1 % precision; field terms or rule-8 nulls; |R_t − 1| ≤ 1e-3 and
// a phase in [0, 1) at the stamp).
import { describe, expect, it } from 'vitest';
import { protocolSteps, unstampedSteps, verifyStep, type ProtocolFacts } from '../../src/kernel/protocol.js';

const facts: ProtocolFacts = {
  operatorChain: ['KO42', 'NM21', 'QM1'],
  domainOperatorCount: 2,
  domain: 'quantum',
  relError: 2.5e-5,
  fieldTerms: false,
  value: 1.5,
  unit: 'eV',
  R_t: 1.0004,
  phase: 0.25,
  svcond: 123456,
};

const passedOf = (f: ProtocolFacts) => protocolSteps(f).map((s) => s.passed);

describe('rule 7: the seven-step protocol', () => {
  it('has the spec seven steps, numbered 1–7, in order, all passing on a valid computation', () => {
    const steps = protocolSteps(facts);
    expect(steps.map((s) => s.step)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(steps.map((s) => s.name)).toEqual([
      'KO42 included',
      'select 1-3 domain operators plus KO42',
      'match operator scale to domain',
      'target <= 0.1 % precision',
      'compile master field equation',
      'execute functional equation',
      'verify',
    ]);
    expect(steps.every((s) => s.passed)).toBe(true);
    expect(steps[0]!.detail).toBe('chain KO42 → NM21 → QM1');
    expect(steps[1]!.detail).toBe('2 domain operator(s), 3 in all');
    expect(steps[3]!.detail).toBe('relative error 2.500e-5');
    expect(steps[5]!.detail).toBe('S = 1.5 eV');
    expect(steps[6]!.detail).toBe('R_t 1.000400000, phase 0.250000, svcond 123456, precision bound 1e-4, proof HMAC-SHA256');
  });

  it('step 1 fails unless KO42 is the first operator', () => {
    expect(passedOf({ ...facts, operatorChain: ['NM21', 'KO42'] })).toEqual([false, true, true, true, true, true, true]);
    expect(passedOf({ ...facts, operatorChain: ['NM21'] })[0]).toBe(false);
  });

  it('step 2 passes for 1–3 domain operators (4 in all at most), fails for 0 or 4', () => {
    for (const n of [1, 2, 3]) expect(passedOf({ ...facts, domainOperatorCount: n })[1]).toBe(true);
    for (const n of [0, 4]) expect(passedOf({ ...facts, domainOperatorCount: n })).toEqual([true, false, true, true, true, true, true]);
  });

  it('step 4 passes at a relative error of 0.1 % and fails above it', () => {
    expect(passedOf({ ...facts, relError: 1e-3 })[3]).toBe(true);
    expect(passedOf({ ...facts, relError: 1.000001e-3 })).toEqual([true, true, true, false, true, true, true]);
    expect(passedOf({ ...facts, relError: Number.POSITIVE_INFINITY })[3]).toBe(false);
    expect(passedOf({ ...facts, relError: Number.NaN })[3]).toBe(false);
  });

  it('step 5 says where the terms come from: the field, or null for a scalar result (rule 8)', () => {
    expect(protocolSteps({ ...facts, fieldTerms: false })[4]!.detail).toBe('scalar result: field terms null (rule 8)');
    expect(protocolSteps({ ...facts, fieldTerms: true })[4]!.detail).toBe('six terms computed from the returned field');
  });

  it('step 7 fails when |R_t − 1| > 1e-3 or the phase is outside [0, 1)', () => {
    expect(verifyStep({ R_t: 1.001, phase: 0, svcond: 1 }).passed).toBe(true);
    expect(verifyStep({ R_t: 0.999, phase: 0.999999, svcond: 1 }).passed).toBe(true);
    expect(verifyStep({ R_t: 1.0011, phase: 0.5, svcond: 1 }).passed).toBe(false);
    expect(verifyStep({ R_t: 0.9989, phase: 0.5, svcond: 1 }).passed).toBe(false);
    expect(verifyStep({ R_t: 1, phase: 1, svcond: 1 }).passed).toBe(false);
    expect(verifyStep({ R_t: 1, phase: -0.01, svcond: 1 }).passed).toBe(false);
    expect(passedOf({ ...facts, R_t: 1.002 })).toEqual([true, true, true, true, true, true, false]);
  });

  it('steps 1–6 do not depend on the stamp: unstamped + verify = the whole protocol', () => {
    const { R_t, phase, svcond, ...rest } = facts;
    expect([...unstampedSteps(rest), verifyStep({ R_t, phase, svcond })]).toEqual(protocolSteps(facts));
    expect(unstampedSteps(rest)).toHaveLength(6);
  });
});

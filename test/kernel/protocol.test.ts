// The seven-step protocol of rule 7: seven steps in the spec's order, each failing exactly when its condition
// does (KO42 first; 1–3 domain operators; physical domains and dimensions; ≤ 0.1 % precision; the master sum and
// field terms or rule-8 nulls; the independent evaluation or the reality check; |R_t − 1| ≤ 1e-3 and a phase in
// [0, 1) at the stamp).
import { describe, expect, it } from 'vitest';
import { evaluateChain } from '../../src/kernel/operators/chain.js';
import { chainChecks, protocolSteps, solverChecks, unstampedSteps, verifyStep, type ProtocolFacts } from '../../src/kernel/protocol.js';

const facts: ProtocolFacts = {
  operatorChain: ['KO42', 'NM21', 'QM1'],
  domainOperatorCount: 2,
  relError: 2.5e-5,
  scale: { passed: true, detail: 'scale checked' },
  master: { passed: true, detail: 'master checked' },
  execution: { passed: true, detail: 'S = 1.5 eV' },
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

  it('steps 3, 5 and 6 carry their computed checks', () => {
    expect(passedOf({ ...facts, scale: { passed: false, detail: 'x' } })).toEqual([true, true, false, true, true, true, true]);
    expect(passedOf({ ...facts, master: { passed: false, detail: 'x' } })).toEqual([true, true, true, true, false, true, true]);
    expect(passedOf({ ...facts, execution: { passed: false, detail: 'x' } })).toEqual([true, true, true, true, true, false, true]);
  });

  it('a closed-form chain: steps 3, 5 and 6 computed from its operators, and each can fail', () => {
    const MOD = { R_t: 1.0005, svcond: 7, phase: 0.1 };
    const chain = evaluateChain({ domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } }, MOD);
    const ok = chainChecks(chain);
    expect(ok.scale).toEqual({
      passed: true,
      detail: 'every operator of mechanics: inputs and result within their physical domains; dimensional analysis: MECH_KINETIC_ENERGY m^2*kg*s^-2 = J',
    });
    expect(ok.master.passed).toBe(true);
    expect(ok.master.detail).toBe(
      'master sum: KO42 factor and 1 operator term(s), total = S of MECH_KINETIC_ENERGY (9 J); field terms null: scalar result (rule 8)',
    );
    expect(ok.execution.passed).toBe(true);
    expect(ok.execution.detail).toMatch(
      /^S = 9 J; independent interval evaluation of each formula: MECH_KINETIC_ENERGY in \[8\.9999999999999\d*, 9\.0000000000000\d*\] \(rel\. error 0\.000e\+0\)$/,
    );

    // A result outside its domain (a negative kinetic energy), a master sum whose total is not S, a value that
    // disagrees with the independent evaluation: each fails its own step.
    const negative = { ...chain, checks: [{ ...chain.checks[0]!, result_in_domain: false, value: -9 }] };
    expect(chainChecks(negative).scale).toMatchObject({ passed: false, detail: expect.stringContaining('MECH_KINETIC_ENERGY result -9 J') });
    const total = { ...chain, master_sum: { ...chain.master_sum, total: 9.5 } };
    expect(chainChecks(total).master.passed).toBe(false);
    const far = { ...chain, checks: [{ ...chain.checks[0]!, rel_error: 0.01 }] };
    expect(chainChecks(far).execution.passed).toBe(false);
    const badDimension = { ...chain, checks: [{ ...chain.checks[0]!, dimension_ok: false, dimension: 'm*kg*s^-1' }] };
    expect(chainChecks(badDimension).scale).toMatchObject({ passed: false, detail: expect.stringContaining('MECH_KINETIC_ENERGY m*kg*s^-1 ≠ J') });
  });

  it('a solver run: step 5 says where the terms come from (the field, or null for a scalar result), step 6 is its check', () => {
    const check = { name: 'energy drift', quantity: 'E', computed: 1.0001, reference: 1, rel_error: 1e-4, tolerance: 1e-3, passed: true };
    const run = { solver: 'action', value: 1.0001, unit: 'J', uncertainty: 1e-4, check, fieldTerms: null, gate: { passed: true, rel_error: 1e-4 } };
    const scalar = solverChecks(run);
    expect(scalar.master).toEqual({ passed: true, detail: 'scalar result: field terms null (rule 8)' });
    expect(scalar.scale.passed).toBe(true);
    expect(scalar.execution).toEqual({ passed: true, detail: 'energy drift: E 1.0001 against reference 1 (rel. error 1.000e-4)' });
    expect(solverChecks({ ...run, fieldTerms: [1, 2, 3, 4, 5, 6] }).master).toEqual({
      passed: true,
      detail: 'six terms computed from the returned field, all finite',
    });
    expect(solverChecks({ ...run, fieldTerms: [1, 2, 3, 4, 5, Number.NaN] }).master.passed).toBe(false);
    expect(solverChecks({ ...run, uncertainty: Number.POSITIVE_INFINITY }).scale.passed).toBe(false);
    expect(solverChecks({ ...run, gate: { passed: false, rel_error: 0.01 } }).execution.passed).toBe(false);
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

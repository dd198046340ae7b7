// Assertions shared by the solver tests: input rejection and the gate on a 1 %-perturbed result.
import { expect } from 'vitest';
import { gateSolverCheck, type GateVerdict } from '../../src/kernel/gate.js';
import { InputError } from '../../src/solvers/errors.js';
import type { Check } from '../../src/solvers/types.js';

/** What an InputError must carry besides its field; each given member is checked. */
export interface InputErrorExpectation {
  /** HTTP status (every InputError is 400). */
  status?: number;
  /** The reason text: equal to a string, or matching a RegExp. */
  reason?: string | RegExp;
  /** The `allowed` member, compared with toEqual. */
  allowed?: unknown;
}

/** fn must throw an InputError on `field` (and with what `expected` names); returns it for further checks. */
export function expectInputError(fn: () => unknown, field: string, expected: InputErrorExpectation = {}): InputError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(InputError);
    const err = e as InputError;
    expect(err.field).toBe(field);
    if (expected.status !== undefined) expect(err.status).toBe(expected.status);
    if (typeof expected.reason === 'string') expect(err.reason).toBe(expected.reason);
    else if (expected.reason) expect(err.reason).toMatch(expected.reason);
    if ('allowed' in expected) expect(err.allowed).toEqual(expected.allowed);
    return err;
  }
  throw new Error(`expected InputError on ${field}`);
}

/** expectInputError on `solver.resolve(raw)`, with `defaults` checked on every call. */
export function inputErrorOnResolve(
  solver: { resolve(raw: unknown): unknown },
  defaults: InputErrorExpectation = {},
): (raw: unknown, field: string, expected?: InputErrorExpectation) => InputError {
  return (raw, field, expected = {}) => expectInputError(() => solver.resolve(raw), field, { ...defaults, ...expected });
}

/**
 * Runs the gate (kernel/gate.ts) on a solver's result and on that result perturbed: each check part's computed value
 * moved by 1 % of its reference in turn, with the solver's own rel_error and passed left as it claimed them (as a
 * wrong solver would report them). The result as run must pass the gate; every perturbed one must fail it, with the
 * error the gate recomputes. Returns the perturbed verdicts.
 */
export function expectGateRefusesPerturbed(out: { value: number; check: Check }): GateVerdict[] {
  const honest = gateSolverCheck(out.check, out.value);
  expect(honest.passed, honest.reason ?? '').toBe(true);
  const parts = out.check.parts && out.check.parts.length > 0 ? out.check.parts : null;
  const verdicts: GateVerdict[] = [];
  for (const [i, part] of (parts ?? [out.check]).entries()) {
    const computed = part.computed + 0.01 * Math.abs(part.reference);
    const perturbed: Check = parts ? { ...out.check, parts: parts.map((q, j) => (j === i ? { ...q, computed } : q)) } : { ...out.check, computed };
    const verdict = gateSolverCheck(perturbed, out.value === part.computed ? computed : out.value);
    expect(verdict.passed, `${part.name} perturbed`).toBe(false);
    expect(verdict.reason).toMatch(/relative error .* exceeds 0\.001$/);
    expect(verdict.rel_error).toBeGreaterThanOrEqual(Math.abs(computed - part.reference) / Math.abs(part.reference));
    verdicts.push(verdict);
  }
  return verdicts;
}

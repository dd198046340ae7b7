// Assertions shared by the solver tests: input rejection and the 1 % perturbation of the check gate.
import { expect } from 'vitest';
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

/** Relative error of a check (or one of its parts) against its reference when the computed value is 1 % off. */
export function perturbedError(p: { computed: number; reference: number }): number {
  return Math.abs(p.computed * 1.01 - p.reference) / Math.abs(p.reference);
}

/** perturbedError of each check part (or of the check itself when it has none). */
export function perturbedErrors(check: Check): number[] {
  return (check.parts ?? [check]).map(perturbedError);
}

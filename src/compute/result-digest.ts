// The digests re-execution compares (architecture.md §4, rule 5): the request digest names what was asked (solver
// or operator chain and its validated inputs), the result digest what came out. Both exclude stamps and proofs, so
// any node that runs the same request gets the same two digests.
import { canonicalDigest } from '../kernel/canonical.js';
import type { SolverOutput } from '../solvers/types.js';

/** JSON round trip: what a client will see (typed arrays → arrays, NaN → null, no undefined). */
export function plainJson<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** A solver run's request: the solver id and its resolved inputs. */
export function solverRequestDigest(solverId: string, inputs: Record<string, unknown>): string {
  return canonicalDigest({ solver: solverId, inputs });
}

/** A closed-form chain's request: domain, operator chain and its resolved inputs. */
export function chainRequestDigest(domain: string, operators: readonly string[], inputs: unknown): string {
  return canonicalDigest({ domain, operators, inputs });
}

/** A solver run's result digest; `outputs` are the plain (JSON) outputs. */
export function solverResultDigest(solverId: string, inputs: Record<string, unknown>, out: Pick<SolverOutput, 'value' | 'unit'>, outputs: unknown): string {
  return canonicalDigest({ solver: solverId, inputs, value: out.value, unit: out.unit, fields: canonicalDigest(outputs) });
}

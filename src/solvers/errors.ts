// Errors a solver may throw. The HTTP layer renders every ServiceError as a part-7 body.
import { ServiceError } from '../kernel/errors.js';

/** Bad solver input (solvers.md §1): 400 SVC_INVALID_INPUT with field, reason, allowed. */
export class InputError extends ServiceError {
  readonly field: string;
  readonly reason: string;
  readonly allowed: unknown;
  constructor(field: string, reason: string, allowed: unknown = null) {
    super(400, 'SVC_INVALID_INPUT', `invalid input ${field}: ${reason}`, { field, reason, allowed });
    this.name = 'InputError';
    this.field = field;
    this.reason = reason;
    this.allowed = allowed;
  }
}

/** A numerical failure before the check (non-convergence, budget exhausted): 500 SVC_SOLVER_ERROR. */
export class SolverFailure extends ServiceError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super(500, 'SVC_SOLVER_ERROR', message, { details }, details);
    this.name = 'SolverFailure';
  }
}

// Errors a solver may throw. They are defined in the kernel (which also throws InputError for operator inputs)
// so the kernel never imports solvers/; solvers keep importing them from here.
export { InputError, SolverFailure } from '../kernel/errors.js';

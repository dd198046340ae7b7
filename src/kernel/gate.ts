// The tolerance gate (rule 4). It does not trust a solver's own verdict alone: every part's relative error is
// recomputed from computed and reference, and a refused check never passes.
import { relativeError, type Check, type CheckPart } from './check.js';
import { ServiceError } from './errors.js';
import { PRECISION_BOUND, TOLERANCE_GATE, tickAverage, withinModulationBound } from './modulation.js';
import type { OperatorCheck } from './operators/independent.js';

export interface GateVerdict {
  passed: boolean;
  rel_error: number;
  reason: string | null;
}

function relError(p: CheckPart): number {
  return relativeError(p.computed, p.reference);
}

export function gateSolverCheck(check: Check, value: number): GateVerdict {
  if (!Number.isFinite(value)) return { passed: false, rel_error: Number.POSITIVE_INFINITY, reason: 'value is not finite' };
  const parts = check.parts && check.parts.length > 0 ? check.parts : [check];
  let worst = 0;
  for (const p of parts) worst = Math.max(worst, relError(p));
  if (check.refused) return { passed: false, rel_error: worst, reason: check.refused };
  if (!check.passed) return { passed: false, rel_error: worst, reason: `${check.name}: check did not pass` };
  if (!(worst <= TOLERANCE_GATE)) {
    return { passed: false, rel_error: worst, reason: `${check.name}: relative error ${worst.toExponential(3)} exceeds ${TOLERANCE_GATE}` };
  }
  return { passed: true, rel_error: worst, reason: null };
}

/** What the closed-form gate reads of an evaluated chain (kernel/operators/chain.ts ChainResult). */
export interface GatedChain {
  value: number;
  master_sum: { terms: { value: number }[] };
  checks: OperatorCheck[];
}

/**
 * The gate of a closed-form chain (solvers.md §6 step 6): every value finite, every operator's check passed (inputs
 * and result within their physical domains, the formula's dimension its unit, the value within the tolerance of the
 * independent evaluation), the tick average of R(t)·S recovers S within the precision bound, and |R_t − 1| ≤ a.
 */
export function gateClosedForm(chain: GatedChain, R_t: number, phi0: number): GateVerdict & { tick_average: number } {
  return gateModulation(gateChainValues(chain, phi0), R_t);
}

/**
 * The part of the closed-form gate that does not depend on the stamp: a chain's values decide it once. rel_error is
 * the worst of the operators' disagreement with their independent evaluation and the tick average's.
 */
export function gateChainValues(chain: GatedChain, phi0: number): GateVerdict & { tick_average: number } {
  const primary = chain.value;
  const values = chain.master_sum.terms.slice(1).map((t) => t.value);
  const avg = tickAverage(primary, phi0);
  if (!values.every(Number.isFinite))
    return { passed: false, rel_error: Number.POSITIVE_INFINITY, reason: 'an operator value is not finite', tick_average: avg };
  let worst = 0;
  for (const c of chain.checks) worst = Math.max(worst, c.rel_error);
  const failed = chain.checks.find((c) => !c.passed || !(c.rel_error <= TOLERANCE_GATE));
  if (failed) return { passed: false, rel_error: worst, reason: failed.reason ?? `${failed.operator}: check did not pass`, tick_average: avg };
  const rel = primary === 0 ? Math.abs(avg) : Math.abs(avg - primary) / Math.abs(primary);
  if (!(rel <= PRECISION_BOUND)) return { passed: false, rel_error: rel, reason: 'tick average does not recover S', tick_average: avg };
  return { passed: true, rel_error: Math.max(worst, rel), reason: null, tick_average: avg };
}

/** The stamp's part of the closed-form gate, after gateChainValues: |R_t − 1| ≤ a. */
export function gateModulation(verdict: GateVerdict & { tick_average: number }, R_t: number): GateVerdict & { tick_average: number } {
  if (!verdict.passed) return verdict;
  if (!withinModulationBound(R_t)) return { passed: false, rel_error: verdict.rel_error, reason: '|R_t - 1| exceeds 1e-3', tick_average: verdict.tick_average };
  return verdict;
}

/**
 * The one 422 of part 7: the result failed the tolerance gate and nothing was sealed (code SVC_TOLERANCE_GATE,
 * docs/decisions.md). A solver's failure names the solver and carries its check, with the recomputed rel_error; a
 * solver output that cannot be sealed whatever its check says (`unsealable`: a number JSON cannot carry, the
 * verdict's reason says which) names the solver and the reason.
 */
export function toleranceGateError(verdict: GateVerdict, solver?: { id: string; check: Check } | { id: string; unsealable: true }): ServiceError {
  if (solver && 'unsealable' in solver)
    return new ServiceError(
      422,
      'SVC_TOLERANCE_GATE',
      `reality check cannot pass: ${verdict.reason}`,
      { rel_error: verdict.rel_error, solver: solver.id },
      { reason: verdict.reason },
    );
  if (!solver)
    return new ServiceError(
      422,
      'SVC_TOLERANCE_GATE',
      `tolerance gate failed: ${verdict.reason}`,
      { rel_error: verdict.rel_error },
      { reason: verdict.reason },
    );
  const check = { ...solver.check, rel_error: verdict.rel_error, passed: false };
  return new ServiceError(
    422,
    'SVC_TOLERANCE_GATE',
    `reality check failed: ${verdict.reason}`,
    { rel_error: verdict.rel_error, solver: solver.id },
    { check, reason: verdict.reason },
  );
}

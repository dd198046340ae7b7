// The body of a sealed result (spec 2.2), built from what the pipeline decided: pure (kernel only) and key-free
// except for the tick receipt's HMAC, so the seal worker can build and serialise it off the main thread. The
// ledger's members (charge, envelope, audit row) and the proof are added afterwards (finishSeal).
import type { TickStamp } from '../kernel/clock.js';
import type { SlottedJson } from '../kernel/member-slots.js';
import { fieldTerms } from '../kernel/master.js';
import { PRECISION_BOUND, TOLERANCE_GATE, tickAverage } from '../kernel/modulation.js';
import type { MetricShift } from '../kernel/parity.js';
import { chainChecks, solverChecks, unstampedSteps, verifyStep } from '../kernel/protocol.js';
import { prepareSeal, stateFields, tickReceipt } from '../kernel/receipt.js';
import { ko42Equation, type ChainResult } from '../kernel/operators/chain.js';
import type { SolverOutput } from '../solvers/types.js';
import type { ExecutedBy } from '../records/types.js';

/** How a closed-form result's `uncertainty` is computed (kernel/operators/independent.ts). */
export const CHAIN_UNCERTAINTY_BASIS =
  'interval arithmetic: max |S - y| over every value y of the primary formula on the same inputs, with each measured ' +
  'constant anywhere within its CODATA 2018 standard uncertainty and every rounding bounded outwards';
/** A solver that states its own uncertainty (a Monte Carlo standard error, a discretisation estimate). */
export const SOLVER_OWN_UNCERTAINTY_BASIS = "the solver's own estimate: the standard error of its Monte Carlo average";
/** Otherwise: the reality check's relative error applied to the value. */
export const SOLVER_CHECK_UNCERTAINTY_BASIS = "rel_error of the solver's reality check × |value|";

/** Members of a sealed body that come from the ledger when the seal is committed. */
export const LEDGER_MEMBERS = ['audit', 'envelope', 'tally_charge'] as const;

/** What every sealed body carries about its stamp and origin. */
export interface StampParts {
  stamp: TickStamp;
  R_t: number;
  /** null for an unsealed (playground) result. */
  resultId: string | null;
  resultDigest: string;
  shift: MetricShift;
  phi0: number;
  node: string;
  kernelVersion: string;
  /** The contributing node that executed the run and its bond (consensus/executed-by.ts); null when none was at stake. */
  executedBy: ExecutedBy | null;
}

export type BodyJob =
  | {
      kind: 'compute';
      parts: StampParts;
      chain: ChainResult;
      average: number;
      relError: number;
    }
  | {
      kind: 'solver';
      parts: StampParts;
      solver: { id: string; kind: string };
      /** Plain JSON values (the pipeline makes solver arrays plain first). */
      inputs: Record<string, unknown>;
      out: SolverOutput;
      outputs: Record<string, unknown>;
      relError: number;
      extra: Record<string, unknown>;
    };

/** The body without the ledger's members and the proof. */
export function buildBody(receiptKey: Buffer, job: BodyJob): Record<string, unknown> {
  return job.kind === 'compute' ? chainBody(receiptKey, job) : solverBody(receiptKey, job);
}

/** buildBody, serialised for sealing: canonical UTF-8 with slots for the ledger's members and the proofs. */
export function prepareBody(receiptKey: Buffer, job: BodyJob): SlottedJson {
  return prepareSeal(buildBody(receiptKey, job), LEDGER_MEMBERS);
}

/** What every body computes from its stamp: the KO42 line, step 7, and the tick receipt. */
function stampValues(receiptKey: Buffer, parts: StampParts, result: { value: number; unit: string; fields: ReturnType<typeof stateFields> }) {
  const { stamp, R_t } = parts;
  return {
    ko42Equation: ko42Equation({ R_t, svcond: stamp.svcond, phase: stamp.phase, phi0: parts.phi0 }),
    verifyStep: verifyStep({ R_t, phase: stamp.phase, svcond: stamp.svcond }),
    receipt: tickReceipt(receiptKey, {
      svcond: stamp.svcond,
      phase: stamp.phase,
      R_t,
      value: result.value,
      unit: result.unit,
      result_digest: parts.resultDigest,
      fields: result.fields,
    }),
  };
}

/**
 * A closed-form chain's body. The chain may have been evaluated at another stamp (ComputeService keeps a request's
 * evaluation, rule 5): its KO42 line and term are taken from this body's own stamp.
 */
function chainBody(receiptKey: Buffer, job: Extract<BodyJob, { kind: 'compute' }>): Record<string, unknown> {
  const { chain, parts } = job;
  const stamped = stampValues(receiptKey, parts, { value: chain.value, unit: chain.unit, fields: stateFields(chain.value, chain.unit) });
  const masterSum = { ...chain.master_sum, terms: chain.master_sum.terms.map((t, i) => (i === 0 ? { ...t, value: parts.R_t } : t)) };
  const protocol = unstampedSteps({
    operatorChain: chain.operators,
    domainOperatorCount: chain.domain_operator_count,
    relError: job.relError,
    ...chainChecks({ ...chain, master_sum: masterSum }),
  });
  return {
    result_id: parts.resultId,
    kind: 'compute',
    domain: chain.domain,
    value: chain.value,
    unit: chain.unit,
    uncertainty: chain.checks[0]!.uncertainty,
    uncertainty_basis: CHAIN_UNCERTAINTY_BASIS,
    operator_id: chain.operator_id,
    operators: chain.operators,
    inputs: chain.resolved,
    equations: [stamped.ko42Equation, ...chain.equations.slice(1)],
    master_sum: masterSum,
    masterEquation: `${chain.operators.join(' ∘ ')}: S = ${chain.value} ${chain.unit}; field terms null (scalar result, rule 8)`,
    master_equation: null,
    functional_equation: null,
    spectral_propagator: null,
    protocol: [...protocol, stamped.verifyStep],
    ...stampedFields(parts, stamped.receipt, { operatorChain: chain.operators, masterSum, value: chain.value, unit: chain.unit, average: job.average }),
  };
}

/** A solver's body (its field terms are computed at the stamp's R_t). */
function solverBody(receiptKey: Buffer, job: Extract<BodyJob, { kind: 'solver' }>): Record<string, unknown> {
  const { parts, solver, out } = job;
  const stamped = stampValues(receiptKey, parts, { value: out.value, unit: out.unit, fields: stateFields(out.value, out.unit, out.receipt_fields) });
  const operatorChain = ['KO42', `SOLVER:${solver.id}`];
  const terms = out.output_class !== 'scalar' && out.rule8 ? fieldTerms(out.rule8, parts.R_t) : null;
  const masterSum = {
    terms: [
      { operator: 'KO42', value: parts.R_t, unit: '1' },
      { operator: `SOLVER:${solver.id}`, value: out.value, unit: out.unit },
    ],
    total: out.value,
    unit: out.unit,
    field_terms: terms ? terms.master_equation.masterSum : null,
  };
  const uncertainty = out.uncertainty ?? out.check.rel_error * Math.abs(out.value);
  const protocol = unstampedSteps({
    operatorChain,
    domainOperatorCount: 1,
    relError: job.relError,
    ...solverChecks({
      solver: solver.id,
      value: out.value,
      unit: out.unit,
      uncertainty,
      check: out.check,
      fieldTerms: terms ? terms.master_equation.masterSum.terms.map((t) => t.value) : null,
      gate: { passed: out.check.passed && out.check.refused === undefined && job.relError <= TOLERANCE_GATE, rel_error: job.relError },
    }),
  });
  return {
    ...job.extra,
    result_id: parts.resultId,
    kind: 'solver',
    solver: solver.id,
    mode: out.mode,
    value: out.value,
    unit: out.unit,
    uncertainty,
    uncertainty_basis: out.uncertainty !== undefined ? SOLVER_OWN_UNCERTAINTY_BASIS : SOLVER_CHECK_UNCERTAINTY_BASIS,
    operator_id: solver.id,
    inputs: job.inputs,
    output_class: out.output_class,
    rule8_array: out.rule8_array,
    outputs: job.outputs,
    check: out.check,
    ...(out.state !== undefined ? { state: out.state } : {}),
    equations: [
      stamped.ko42Equation,
      `${solver.id}: ${out.check.name}: ${out.check.quantity} = ${out.value} ${out.unit} (reference ${out.check.reference}, rel. error ${out.check.rel_error.toExponential(3)})`,
    ],
    master_sum: masterSum,
    masterEquation: terms ? `${terms.master_equation.equation} from ${out.rule8_array}` : `${solver.id}: scalar result; field terms null (rule 8)`,
    master_equation: terms ? terms.master_equation : null,
    functional_equation: terms ? terms.functional_equation : null,
    spectral_propagator: terms ? terms.spectral_propagator : null,
    protocol: [...protocol, stamped.verifyStep],
    ...stampedFields(parts, stamped.receipt, { operatorChain, masterSum, value: out.value, unit: out.unit, average: tickAverage(out.value, parts.phi0) }),
  };
}

/** The stamp, CKO (rule 9), tick receipts and origin (digest, node, kernel version) every sealed result carries (spec 2.2). */
function stampedFields(
  parts: StampParts,
  receipt: Record<string, unknown>,
  a: { operatorChain: string[]; masterSum: unknown; value: number; unit: string; average: number },
): Record<string, unknown> {
  const { stamp, R_t } = parts;
  return {
    R_t,
    phase: stamp.phase,
    svcond: stamp.svcond,
    unix_ns: stamp.unix_ns,
    precisionBound: PRECISION_BOUND,
    result_digest: parts.resultDigest,
    node: parts.node,
    kernel_version: parts.kernelVersion,
    executed_by: parts.executedBy,
    cko: {
      operatorChain: a.operatorChain,
      masterSum: a.masterSum,
      R_t,
      phase: stamp.phase,
      svcond: stamp.svcond,
      precisionBound: PRECISION_BOUND,
      metric_shift: parts.shift,
    },
    svcond_receipt: receipt,
    svcond_averaged: { value: a.average, unit: a.unit, samples: 64, method: 'trapezoid of R(t)·S over one tick', standard_value: a.value },
  };
}

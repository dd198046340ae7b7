// The body of a sealed result (spec 2.2), built from what the pipeline decided: pure (kernel only) and key-free
// except for the tick receipt's HMAC, so the seal worker can build and serialise it off the main thread. The
// ledger's members (charge, envelope, audit row) and the proof are added afterwards (finishSeal).
// A body is a template with holes where the stamp's values go (the stamp, the result's identity, and what is
// computed from the stamp), filled per result. A closed-form chain's template depends on its request (rule 5) and on
// the node that seals it (its digest, node id and kernel version are text in it), so it is serialised once per
// distinct request and only the holes are serialised per result.
import type { TickStamp } from '../kernel/clock.js';
import { CanonicalText, canonicalJson, fillHoles, fillTemplate, Hole, holeTexts, type MemberSlots, type Template, type TemplateTexts } from '../kernel/canonical.js';
import { storedTemplate, type StoredTemplate } from '../tally/stored-result.js';
import { fieldTerms } from '../kernel/master.js';
import { PRECISION_BOUND, tickAverage } from '../kernel/modulation.js';
import type { MetricShift } from '../kernel/parity.js';
import { unstampedSteps, verifyStep } from '../kernel/protocol.js';
import { sealTemplate, stateFields, tickReceiptText } from '../kernel/receipt.js';
import { ko42Equation, type ChainResult } from '../kernel/operators/chain.js';
import type { SolverOutput } from '../solvers/types.js';

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

/** The holes of a body: values that change from result to result of the same request. */
const HOLE = {
  result_id: new Hole('result_id'),
  R_t: new Hole('R_t'),
  phase: new Hole('phase'),
  svcond: new Hole('svcond'),
  unix_ns: new Hole('unix_ns'),
  ko42_equation: new Hole('ko42_equation'),
  verify_step: new Hole('verify_step'),
  metric_shift: new Hole('metric_shift'),
  svcond_receipt: new Hole('svcond_receipt'),
} as const;

type HoleValues = { [K in keyof typeof HOLE]: unknown };

/** The body without the ledger's members and the proof. */
export function buildBody(receiptKey: Buffer, job: BodyJob): Record<string, unknown> {
  return fillHoles(bodyTemplate(job), holeValues(receiptKey, job));
}

/** A body ready to be finished (finishSeal): its texts, and for a body filled from a kept template, that template as stored. */
export interface PreparedBody {
  texts: MemberSlots | TemplateTexts;
  fromTemplate?: StoredTemplate;
}

/** A body made whole (its own buffer, e.g. from the sealer). */
export function wholeBody(m: MemberSlots): PreparedBody {
  return { texts: m };
}

/** A request's serialised body template, kept by its owner (ComputeService keeps one per repeated chain request). */
export interface KeptTemplate {
  template: Template;
  stored: StoredTemplate;
  /** What the template holds as text and not as holes: the same for every result of its request on this node. */
  origin: Origin;
}

/** The parts of a body that are neither the stamp's nor the result's own: its request's digest and the node that seals it. */
type Origin = Pick<StampParts, 'resultDigest' | 'node' | 'kernelVersion'>;

/**
 * The template of a job's body: everything but the holes serialised once. For a closed-form chain it depends on the
 * request only (rule 5), so every later result of the same request is filled from it (fillKept).
 */
export function keptTemplate(job: BodyJob): KeptTemplate {
  const template = sealTemplate(bodyTemplate(job), LEDGER_MEMBERS);
  const { resultDigest, node, kernelVersion } = job.parts;
  return { template, stored: storedTemplate(template), origin: { resultDigest, node, kernelVersion } };
}

/** Can this job's body be filled from `kept`? (Its digest, node and kernel version are the template's own.) */
export function fitsKept(kept: KeptTemplate, job: BodyJob): boolean {
  const o = kept.origin;
  const p = job.parts;
  return o.resultDigest === p.resultDigest && o.node === p.node && o.kernelVersion === p.kernelVersion;
}

/** A body filled from its request's kept template, on the calling thread (a few µs: less than a worker round trip). */
export function fillKept(receiptKey: Buffer, kept: KeptTemplate, job: BodyJob): PreparedBody {
  return { texts: { template: kept.template, holes: holeTexts(kept.template, holeValues(receiptKey, job)) }, fromTemplate: kept.stored };
}

/** buildBody, serialised for sealing: canonical UTF-8 with slots for the ledger's members and the proofs. */
export function prepareBody(receiptKey: Buffer, job: BodyJob): MemberSlots {
  return fillTemplate(sealTemplate(bodyTemplate(job), LEDGER_MEMBERS), holeValues(receiptKey, job));
}

function bodyTemplate(job: BodyJob): Record<string, unknown> {
  return job.kind === 'compute' ? chainTemplate(job) : solverTemplate(job);
}

function holeValues(receiptKey: Buffer, job: BodyJob): HoleValues {
  const { parts } = job;
  const { stamp, R_t } = parts;
  const result = job.kind === 'compute' ? { value: job.chain.value, unit: job.chain.unit, fields: stateFields(job.chain.value, job.chain.unit) } : { value: job.out.value, unit: job.out.unit, fields: stateFields(job.out.value, job.out.unit, job.out.receipt_fields) };
  // The stamp's numbers are serialised once, for the body and for its tick receipt.
  const texts = { R_t: canonicalJson(R_t), phase: canonicalJson(stamp.phase), svcond: canonicalJson(stamp.svcond) };
  return {
    result_id: parts.resultId,
    R_t: new CanonicalText(texts.R_t),
    phase: new CanonicalText(texts.phase),
    svcond: new CanonicalText(texts.svcond),
    unix_ns: stamp.unix_ns,
    ko42_equation: ko42Equation({ R_t, svcond: stamp.svcond, phase: stamp.phase, phi0: parts.phi0 }),
    verify_step: verifyStep({ R_t, phase: stamp.phase, svcond: stamp.svcond }),
    metric_shift: parts.shift,
    svcond_receipt: new CanonicalText(
      tickReceiptText(receiptKey, { svcond: stamp.svcond, phase: stamp.phase, R_t, value: result.value, unit: result.unit, result_digest: parts.resultDigest, fields: result.fields }, texts),
    ),
  };
}

/** A closed-form chain's body: everything but the holes comes from the request (the KO42 line and term are holes). */
function chainTemplate(job: Extract<BodyJob, { kind: 'compute' }>): Record<string, unknown> {
  const { chain } = job;
  const masterSum = { ...chain.master_sum, terms: chain.master_sum.terms.map((t, i) => (i === 0 ? { ...t, value: HOLE.R_t } : t)) };
  const protocol = unstampedSteps({
    operatorChain: chain.operators,
    domainOperatorCount: chain.domain_operator_count,
    domain: chain.domain,
    relError: job.relError,
    fieldTerms: false,
    value: chain.value,
    unit: chain.unit,
  });
  return {
    result_id: HOLE.result_id,
    kind: 'compute',
    domain: chain.domain,
    value: chain.value,
    unit: chain.unit,
    uncertainty: Math.abs(chain.value) * PRECISION_BOUND,
    operator_id: chain.operator_id,
    operators: chain.operators,
    inputs: chain.resolved,
    unused_inputs: chain.unused_inputs ?? [],
    equations: [HOLE.ko42_equation, ...chain.equations.slice(1)],
    master_sum: masterSum,
    masterEquation: `${chain.operators.join(' ∘ ')}: S = ${chain.value} ${chain.unit}; field terms null (scalar result, rule 8)`,
    master_equation: null,
    functional_equation: null,
    spectral_propagator: null,
    protocol: [...protocol, HOLE.verify_step],
    ...stampedFields(job.parts, { operatorChain: chain.operators, masterSum, value: chain.value, unit: chain.unit, average: job.average }),
  };
}

/** A solver's body. Its field terms are computed at the stamp's R_t, so it is never kept. */
function solverTemplate(job: Extract<BodyJob, { kind: 'solver' }>): Record<string, unknown> {
  const { parts, solver, out } = job;
  const operatorChain = ['KO42', `SOLVER:${solver.id}`];
  const terms = out.output_class !== 'scalar' && out.rule8 ? fieldTerms(out.rule8, parts.R_t) : null;
  const masterSum = {
    terms: [
      { operator: 'KO42', value: HOLE.R_t, unit: '1' },
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
    domain: solver.kind,
    relError: job.relError,
    fieldTerms: terms !== null,
    value: out.value,
    unit: out.unit,
  });
  return {
    ...job.extra,
    result_id: HOLE.result_id,
    kind: 'solver',
    solver: solver.id,
    mode: out.mode,
    value: out.value,
    unit: out.unit,
    uncertainty,
    operator_id: solver.id,
    inputs: job.inputs,
    output_class: out.output_class,
    rule8_array: out.rule8_array,
    outputs: job.outputs,
    check: out.check,
    ...(out.state !== undefined ? { state: out.state } : {}),
    equations: [HOLE.ko42_equation, `${solver.id}: ${out.check.name}: ${out.check.quantity} = ${out.value} ${out.unit} (reference ${out.check.reference}, rel. error ${out.check.rel_error.toExponential(3)})`],
    master_sum: masterSum,
    masterEquation: terms ? `${terms.master_equation.equation} from ${out.rule8_array}` : `${solver.id}: scalar result; field terms null (rule 8)`,
    master_equation: terms ? terms.master_equation : null,
    functional_equation: terms ? terms.functional_equation : null,
    spectral_propagator: terms ? terms.spectral_propagator : null,
    protocol: [...protocol, HOLE.verify_step],
    ...stampedFields(parts, { operatorChain, masterSum, value: out.value, unit: out.unit, average: tickAverage(out.value, parts.phi0) }),
  };
}

/** The stamp, CKO (rule 9), tick receipts and origin (digest, node, kernel version) every sealed result carries (spec 2.2). */
function stampedFields(origin: Origin, a: { operatorChain: string[]; masterSum: unknown; value: number; unit: string; average: number }): Record<string, unknown> {
  return {
    R_t: HOLE.R_t,
    phase: HOLE.phase,
    svcond: HOLE.svcond,
    unix_ns: HOLE.unix_ns,
    precisionBound: PRECISION_BOUND,
    result_digest: origin.resultDigest,
    node: origin.node,
    kernel_version: origin.kernelVersion,
    cko: { operatorChain: a.operatorChain, masterSum: a.masterSum, R_t: HOLE.R_t, phase: HOLE.phase, svcond: HOLE.svcond, precisionBound: PRECISION_BOUND, metric_shift: HOLE.metric_shift },
    svcond_receipt: HOLE.svcond_receipt,
    svcond_averaged: { value: a.average, unit: a.unit, samples: 64, method: 'trapezoid of R(t)·S over one tick', standard_value: a.value },
  };
}

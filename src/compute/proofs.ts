// The stamp-and-sign family beside the sealing pipeline (a sealed result's check is verify-result.ts): a signed
// 7-step receipt for a chain and its check (POST /api/svc/prove, /prove/verify), the metric shift for a tick variance
// (POST /api/svc/shift) and a chain swept over one input (POST /api/svc/lattice). Nothing here is charged or stored:
// each answer is computed at the current stamp and signed with the node's keys.
import { canonicalJson } from '../kernel/canonical.js';
import { stampAt, type Clock, type TickStamp } from '../kernel/clock.js';
import { gateClosedForm, toleranceGateError } from '../kernel/gate.js';
import { modulationFactor, PRECISION_BOUND } from '../kernel/modulation.js';
import { metricShiftFromVariance } from '../kernel/parity.js';
import { chainChecks, protocolSteps } from '../kernel/protocol.js';
import { hmacHex, hexEqual, signBody } from '../kernel/receipt.js';
import { evaluateChain, type ChainRequest } from '../kernel/operators/chain.js';
import { getOperator, isDomain, KO42_ID, operatorsInDomain } from '../kernel/operators/registry.js';
import { plainJson } from './result-digest.js';

/** What the family reads of the node: its clock, phi0, its keys and id. */
export interface ProofContext {
  clock: Clock;
  phi0: number;
  receiptKey: Buffer;
  proveKey: Buffer;
  nodeId: () => string;
  /** Called when the tolerance gate refuses a proof: the node's metrics count it. */
  onGateRefused?: (kind: 'prove') => void;
}

/** What a prove receipt and a lattice body end with: the stamp, R(t) at it, the precision bound and the node. */
function stampedBy(stamp: TickStamp, R_t: number, node: string) {
  return { R_t, phase: stamp.phase, svcond: stamp.svcond, unix_ns: stamp.unix_ns, precisionBound: PRECISION_BOUND, node };
}

/**
 * The chain a prove request names (part 2.3: domain and operators each optional). Without operators: KO42 and the
 * domain's first operator; without a domain: the domain of the first operator after KO42; without either: kinetic
 * energy (mechanics). A name that is not a domain or an operator is left for the chain to refuse.
 */
export function proveRequestChain(req: { domain?: string; operators?: string[] }): { domain: string; operators: string[] } {
  const named = req.operators?.find((id) => id !== KO42_ID);
  const domain = req.domain ?? (named !== undefined ? getOperator(named)?.domain : undefined) ?? 'mechanics';
  const first = isDomain(domain) ? operatorsInDomain(domain)[0] : undefined;
  return { domain, operators: req.operators ?? [KO42_ID, first?.id ?? 'MECH_KINETIC_ENERGY'] };
}

/** POST /api/svc/prove: a signed 7-step receipt for a chain (default: kinetic energy at its defaults). */
export function proveChain(ctx: ProofContext, req: { domain?: string; operators?: string[]; inputs?: Record<string, number> }): Record<string, unknown> {
  const { domain, operators } = proveRequestChain(req);
  const request: ChainRequest = { domain, operators, inputs: req.inputs ?? {} };
  const stamp = stampAt(ctx.clock.nowNs());
  const R_t = modulationFactor(stamp.phase, ctx.phi0);
  const chain = evaluateChain(request, { R_t, svcond: stamp.svcond, phase: stamp.phase, phi0: ctx.phi0 });
  const gate = gateClosedForm(chain, R_t, ctx.phi0);
  if (!gate.passed) {
    ctx.onGateRefused?.('prove');
    throw toleranceGateError(gate);
  }
  const steps = protocolSteps({
    operatorChain: chain.operators,
    domainOperatorCount: chain.domain_operator_count,
    relError: gate.rel_error,
    ...chainChecks(chain),
    R_t,
    phase: stamp.phase,
    svcond: stamp.svcond,
  });
  const receipt = plainJson({
    keyPrefix: 'PROVE',
    domain,
    operatorIds: operators,
    inputs: chain.resolved,
    value: chain.value,
    unit: chain.unit,
    equations: chain.equations,
    steps,
    ...stampedBy(stamp, R_t, ctx.nodeId()),
  });
  return { receipt, signature: hmacHex(ctx.proveKey, canonicalJson(receipt)), algorithm: 'HMAC-SHA256' };
}

/** POST /api/svc/prove/verify: a prove receipt's signature checked with this node's prove key. */
export function verifyProof(
  proveKey: Buffer,
  body: unknown,
): { valid: boolean; R_t: number | null; svcond: number | null; operatorIds: string[]; keyPrefix: 'PROVE' } {
  const b = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
  const receipt = b.receipt as Record<string, unknown> | undefined;
  let valid = false;
  if (receipt && typeof receipt === 'object' && !Array.isArray(receipt)) {
    try {
      valid = receipt.keyPrefix === 'PROVE' && hexEqual(b.signature, hmacHex(proveKey, canonicalJson(receipt)));
    } catch {
      valid = false;
    }
  }
  const r = receipt ?? {};
  return {
    valid,
    R_t: valid && typeof r.R_t === 'number' ? r.R_t : null,
    svcond: valid && typeof r.svcond === 'number' ? r.svcond : null,
    operatorIds: valid && Array.isArray(r.operatorIds) ? (r.operatorIds as string[]) : [],
    keyPrefix: 'PROVE',
  };
}

/** POST /api/svc/shift: the metric shift for a given tick variance (rule 6). */
export function shiftAt(ctx: ProofContext, variance: number, phase?: number): Record<string, unknown> {
  const stamp = stampAt(ctx.clock.nowNs());
  const p = phase ?? stamp.phase;
  return { ...metricShiftFromVariance(variance, p, ctx.phi0), phase: p, svcond: stamp.svcond };
}

/** POST /api/svc/lattice: a closed-form chain swept over one input (≤ 64 points), stamped and signed. */
export function chainLattice(
  ctx: ProofContext,
  req: {
    domain: string;
    operators: string[];
    inputs: Record<string, number>;
    sweep: { key: string; from: number; to: number; points: number };
  },
): Record<string, unknown> {
  const stamp = stampAt(ctx.clock.nowNs());
  const R_t = modulationFactor(stamp.phase, ctx.phi0);
  const { key, from, to, points } = req.sweep;
  const xs: number[] = [];
  const ys: number[] = [];
  let unit = '';
  for (let i = 0; i < points; i++) {
    const x = points === 1 ? from : from + ((to - from) * i) / (points - 1);
    const chain = evaluateChain({ ...req, inputs: { ...req.inputs, [key]: x } }, { R_t, svcond: stamp.svcond, phase: stamp.phase });
    xs.push(x);
    ys.push(chain.value);
    unit = chain.unit;
  }
  const body = plainJson({
    kind: 'lattice',
    domain: req.domain,
    operators: req.operators,
    sweep: { key, values: xs },
    values: ys,
    unit,
    ...stampedBy(stamp, R_t, ctx.nodeId()),
  });
  return { ...body, svcProof: signBody(ctx.receiptKey, body) };
}

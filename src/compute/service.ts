// The computation pipeline of architecture.md §3: validate → protocol → run → gate → parity → seal.
// Every route that computes (compute, solver endpoints, /solve, /auto, prove) goes through here. Chain requests are
// compiled in compiled-chain.ts; the stamp-and-sign family (verify, prove, shift, lattice) is proofs.ts.
import { ServiceError, SolverFailure } from '../kernel/errors.js';
import { stampAt, TICK_NS_NUMBER, type Clock, type TickStamp } from '../kernel/clock.js';
import { gateModulation, gateSolverCheck, toleranceGateError } from '../kernel/gate.js';
import { modulationFactor } from '../kernel/modulation.js';
import { metricShift } from '../kernel/parity.js';
import { finishSeal, sealWhole, type SealSigner } from '../kernel/receipt.js';
import type { ChainRequest } from '../kernel/operators/chain.js';
import { InputError } from '../solvers/errors.js';
import type { SolverRegistry, AnySolver } from '../solvers/registry.js';
import type { SolverOutput } from '../solvers/types.js';
import { routeQuery, splitConstants } from '../solvers/auto.js';
import type { EnvelopeRecord, Ledger, SealContext } from '../tally/ledger.js';
import { buildBody, type BodyJob, type StampParts } from './sealed-body.js';
import type { Sealer } from './sealer.js';
import { timeoutError, type SolverExecutor } from './executor.js';
import type { QuotaService } from '../tally/quota.js';
import { unsealableOutput } from './finite-output.js';
import { COSTS } from '../tally/costs.js';
import type { Tier, TierBook } from '../tally/tiers.js';
import { assertTierAllows } from '../tally/tier-gates.js';
import type { Op } from '../store/db.js';
import { chainRequestDigest, plainJson, solverRequestDigest, solverResultDigest } from './result-digest.js';
import {
  NOTHING_TO_RECORD,
  type Caller,
  type CanonicalRequest,
  type ExecutedBy,
  type ResultRecorder,
  type SealedFacts,
  type SealRecorder,
} from '../records/types.js';
import { randomHex } from '../util/random-hex.js';
import { CompiledChains, type CompiledChain } from './compiled-chain.js';
import { chainLattice, proveChain, shiftAt, verifyProof } from './proofs.js';
import { verifySealedResult, type ResultVerification } from './verify-result.js';

/** Part 8's costs (the one table: tally/costs.ts). */
export const COST = { computePerOperator: COSTS.computePerOperator, solver: COSTS.solver, auto: COSTS.auto } as const;

export interface ComputeDeps {
  clock: Clock;
  registry: SolverRegistry;
  ledger: Ledger;
  quota: QuotaService;
  /** Where solver runs execute (worker threads in a running node). */
  executor: SolverExecutor;
  /** Where sealed bodies are built and serialised (the seal worker in a running node). */
  sealer: Sealer;
  receiptKey: Buffer;
  /** This node's Ed25519 signature of a body (seal_signature; its key made once: one signature a seal). */
  sealSigner: SealSigner;
  /** Is a peer id a node known to this node's mesh (itself included)? What verification accepts as a sealer. */
  isKnownNode: (node: string) => boolean;
  /** base64 Ed25519 check by a peer id's embedded key (mesh/wire.ts verifyText). */
  verifySignature: (signer: string, text: string, signature: string) => boolean;
  proveKey: Buffer;
  phi0: number;
  kernelVersion: string;
  /** Callers' tiers: the time limit, the day allowance and the tier gates follow the caller's tier. */
  tiers: TierBook;
  /** Where SVC_TIER_LOCKED sends the caller (this node's tier sheet). */
  upgradeUrl: () => string;
  /** Override of every tier's time limit (tests). */
  timeLimitSeconds?: number;
  nodeId: () => string;
  /** Called after a result is durable (events go out only then). */
  /** After the seal's batch is durable; `published`: its owner publishes it (the record lists it). */
  onSealed?: (summary: SealedSummary, published: boolean) => void;
  /** Called when the tolerance gate refuses a result (nothing is sealed): the node's metrics count it. */
  onGateRefused?: (kind: 'compute' | 'solver' | 'prove') => void;
  /**
   * executed_by for a run this node executed itself (consensus/executed-by.ts), or null when its operator is not
   * contributing (nothing at stake). Absent: never.
   */
  attest?: (requestDigest: () => string, resultDigest: string, svcond: number) => ExecutedBy | null;
  /** Where solver runs may be placed instead of this node's executor (consensus/offload.ts). */
  placement?: SolverPlacement;
  /** What the sealing batch also records about the result (tally/record.ts). */
  records?: ResultRecorder;
  /** Events owed for the result (webhooks/outbox.ts): written in the sealing batch, so never sent before it is durable. */
  outbox?: ResultRecorder;
  /** Called when an identity's computation fails after its request was accepted (computation.error events). */
  onFailed?: (failure: ComputationFailure) => void;
}

/** An identity's computation that failed (no seal): what computation.error reports. */
export interface ComputationFailure {
  owner: string;
  kind: 'compute' | 'solver';
  solver: string | null;
  status: number;
  code: string;
  message: string;
}

/** Per-call additions to one seal (streams: the channel's new head, in the same batch as the seal). */
export interface SealHooks {
  /** Ops for the sealing batch, given the sealed facts and the run (its value, final state of a stateful solver …). */
  ops?: (facts: SealedFacts, run: SealedRun) => Op[];
  /** Rolls back what ops() changed in memory when the batch fails. */
  rollback?: () => void;
}

/** A solver run a contributing peer executed: its output, its result digest (checked by the placement), its signature. */
export interface PlacedRun {
  out: SolverOutput;
  resultDigest: string;
  executedBy: ExecutedBy;
}

export interface PlacementRequest {
  solverId: string;
  /** Resolved inputs, plain JSON. */
  inputs: Record<string, unknown>;
  requestDigest: string;
  /** The tick the run is placed at. */
  svcond: number;
  timeLimitSeconds: number;
}

export interface SolverPlacement {
  /**
   * Run on a contributing peer, or null to run here (offload off, this node not busy, no peer, or every peer tried
   * failed: a failed peer is skipped, never an error for the caller). `gone` (the caller left): a run still waiting
   * at the peer is stopped there and this rejects with the signal's reason; one already on the peer's worker is
   * awaited and returned, as a local run that had started.
   */
  offload(req: PlacementRequest, gone?: AbortSignal): Promise<PlacedRun | null>;
}

export type { ChainRequest };

/** What a sealed run hands to a caller that records it in the same batch (SealHooks: streams, batches, reactor, agents). */
export interface SealedRun {
  result_id: string;
  result_digest: string;
  svcond: number;
  value: number;
  unit: string;
  /** The run's final state (plain JSON), for stateful solvers. */
  state: unknown;
  outputs: Record<string, unknown>;
}

const NO_RUN: Omit<SealedRun, 'result_id' | 'result_digest' | 'svcond'> = { value: 0, unit: '', state: undefined, outputs: {} };

/** A sealed (or signed) result: its UTF-8 JSON, serialised once for storage and the response. */
export interface Sealed {
  bytes: Buffer;
}

/** What the mesh announces about a sealed result. */
export interface SealedSummary {
  result_id: string;
  result_digest: string;
  kind: 'compute' | 'solver';
  solver: string | null;
  operators: string[] | null;
  svcond: number;
  value: number;
  unit: string;
}

function elapsedTicks(startNs: bigint, endNs: bigint): number {
  return Number(endNs - startNs) / TICK_NS_NUMBER;
}

export class ComputeService {
  /** Compiled chains by request (compiled-chain.ts). */
  private readonly chains: CompiledChains;

  constructor(private readonly deps: ComputeDeps) {
    this.chains = new CompiledChains(deps.phi0);
  }

  private gateRefused(kind: 'compute' | 'solver' | 'prove', err: Error): Error {
    this.deps.onGateRefused?.(kind);
    return err;
  }

  get registry(): SolverRegistry {
    return this.deps.registry;
  }

  private timeLimit(tier: Tier): number {
    return this.deps.timeLimitSeconds ?? this.deps.tiers.timeLimitSeconds(tier);
  }

  private assertInTime(tier: Tier, startNs: bigint, endNs: bigint): void {
    const elapsed = Number(endNs - startNs) / 1e9;
    const limit = this.timeLimit(tier);
    if (elapsed > limit) throw timeoutError(limit, elapsed, tier);
  }

  /** The parts of a body that depend on the stamp. */
  private stampParts(
    stamp: TickStamp,
    R_t: number,
    resultId: string | null,
    resultDigest: string,
    shift: ReturnType<typeof metricShift>,
    executedBy: ExecutedBy | null,
  ): StampParts {
    return { stamp, R_t, resultId, resultDigest, shift, phi0: this.deps.phi0, node: this.deps.nodeId(), kernelVersion: this.deps.kernelVersion, executedBy };
  }

  /**
   * Common tail: stamp, body (built and serialised by the sealer), then the ledger's atomic seal, whose build step
   * adds the charge, envelope and audit row to the serialised body and signs it (finishSeal; docs/sealing.md).
   * Nothing of the ledger changes before the body is ready, so a failure up to the commit leaves no trace but the
   * released quota slot.
   */
  private async sealResult(args: {
    caller: Caller;
    tier: Tier;
    action: string;
    cost: number;
    startNs: bigint;
    reservation: { names: string[]; release(): void };
    /** Check the elapsed time against the tier limit here (false when the executor already enforced it). */
    checkTime: boolean;
    /** SHA-256 of the canonical core of the result (what the mesh and re-execution compare). */
    resultDigest: string;
    /** SHA-256 of the canonical request (result-digest.ts): what executed_by signs beside the result digest; asked only then. */
    requestDigest: () => string;
    request: CanonicalRequest;
    /** Set when a contributing peer executed the run; else this node attests its own run (deps.attest). */
    executedBy?: ExecutedBy | null;
    /** The body job at the stamp (may throw, e.g. the tolerance gate). */
    job: (parts: StampParts) => BodyJob;
    summary: Omit<SealedSummary, 'result_id' | 'result_digest' | 'svcond'>;
    hooks?: SealHooks;
    /** What the hooks are told of the run besides its seal (value, unit, final state, outputs). */
    run?: Omit<SealedRun, 'result_id' | 'result_digest' | 'svcond'>;
  }): Promise<Sealed> {
    const { caller } = args;
    try {
      const loading = this.deps.ledger.prepare(caller);
      if (loading !== undefined) await loading;
      // What the result's records and webhooks owe, read for its owner now (a cache miss reads the store). Only those
      // with something to write are kept: an owner that publishes nothing and has no webhooks pays nothing further.
      const owner = caller.kind === 'identity' ? caller.zid : null;
      let recorders: SealRecorder[] | null = null;
      let published = false;
      if (this.deps.records) {
        const bound = this.deps.records.forOwner(owner);
        const recorder = bound instanceof Promise ? await bound : bound;
        if (recorder !== NOTHING_TO_RECORD) {
          published = true;
          (recorders ??= []).push(recorder);
        }
      }
      if (this.deps.outbox) {
        const bound = this.deps.outbox.forOwner(owner);
        const recorder = bound instanceof Promise ? await bound : bound;
        if (recorder !== NOTHING_TO_RECORD) (recorders ??= []).push(recorder);
      }
      const endNs = this.deps.clock.nowNs();
      if (args.checkTime) this.assertInTime(args.tier, args.startNs, endNs);
      const stamp = stampAt(endNs);
      const startStamp = stampAt(args.startNs);
      const shift = metricShift(startStamp.phase, elapsedTicks(args.startNs, endNs), this.deps.phi0);
      const R_t = modulationFactor(stamp.phase, this.deps.phi0);
      const { resultDigest } = args;
      const resultId = `res_${stamp.svcond}_${randomHex(16)}`;
      const executedBy = args.executedBy ?? this.deps.attest?.(args.requestDigest, resultDigest, startStamp.svcond) ?? null;
      const job = args.job(this.stampParts(stamp, R_t, resultId, resultDigest, shift, executedBy));
      const prepared = await this.deps.sealer.prepare(job);
      const s = args.summary;
      // What else the sealing batch writes: the result's records, the webhook deliveries it owes, the caller's hooks.
      // The facts they are told are made only when one of them is there.
      let extra: { ops: Op[]; bump: string[] } | null = null;
      const hookOps = args.hooks?.ops;
      if (recorders !== null || hookOps !== undefined) {
        const facts: SealedFacts = {
          result_id: resultId,
          owner,
          kind: s.kind,
          solver: s.solver,
          operators: s.operators,
          result_digest: resultDigest,
          svcond: stamp.svcond,
          executed_by: executedBy,
          request: args.request,
          execution_time_ms: Number(endNs - args.startNs) / 1e6,
        };
        const found: { ops: Op[]; bump: string[] } = { ops: [], bump: [] };
        if (recorders !== null)
          for (const recorder of recorders) {
            const x = recorder.sealOps(facts);
            if (!x) continue;
            found.ops.push(...x.ops);
            found.bump.push(...x.bump);
          }
        if (hookOps !== undefined)
          found.ops.push(...hookOps(facts, { result_id: resultId, result_digest: resultDigest, svcond: stamp.svcond, ...(args.run ?? NO_RUN) }));
        if (found.ops.length > 0 || found.bump.length > 0) extra = found;
      }
      const sealed = await this.deps.ledger.seal({
        caller,
        action: args.action,
        cost: args.cost,
        resultId,
        resultDigest,
        svcond: stamp.svcond,
        unixMs: Number(endNs / 1_000_000n),
        counterNames: args.reservation.names,
        ...(extra !== null ? { extra } : {}),
        // The ledger's members go into the prepared text at their slots; the proof signs the whole body.
        build: (ctx: SealContext) =>
          finishSeal(this.deps.receiptKey, this.deps.sealSigner, prepared, {
            tally_charge: ctx.tally_charge,
            envelope: ctx.envelope ? envelopeView(ctx.envelope) : null,
            audit: ctx.audit ? auditMember(caller.kind === 'identity' ? caller.slug : null, ctx.audit.seq, ctx.audit.hash) : null,
          }).bytes,
      });
      if (this.deps.onSealed) {
        // Written out, not spread and extended (a new hidden class per call in V8; see ChainService.appendOps).
        this.deps.onSealed(
          {
            result_id: resultId,
            result_digest: resultDigest,
            kind: s.kind,
            solver: s.solver,
            operators: s.operators,
            svcond: stamp.svcond,
            value: s.value,
            unit: s.unit,
          },
          published,
        );
      }
      return sealed;
    } catch (err) {
      args.hooks?.rollback?.();
      args.reservation.release();
      throw err;
    }
  }

  private reserve(caller: Caller, tier: Tier): { names: string[]; release(): void } {
    return this.deps.quota.reserve(caller, Number(this.deps.clock.nowNs() / 1_000_000n), tier);
  }

  /**
   * POST /api/svc/compute: a closed-form operator chain (solvers.md §6). `requestText`: the JSON text `req` was
   * parsed from, when the caller has it (it keys the kept evaluation without serialising `req` again).
   */
  async compute(caller: Caller, req: ChainRequest, options: { seal: boolean; requestText?: string } = { seal: true }, hooks?: SealHooks): Promise<Sealed> {
    if (!options.seal || this.deps.onFailed === undefined || caller.kind !== 'identity') return this.computeInner(caller, req, options, hooks);
    try {
      return await this.computeInner(caller, req, options, hooks);
    } catch (err) {
      this.failed(caller, 'compute', null, err);
      throw err;
    }
  }

  /** Report an identity's failed computation (computation.error); never throws. */
  private failed(caller: Caller, kind: 'compute' | 'solver', solver: string | null, err: unknown): void {
    if (caller.kind !== 'identity' || this.deps.onFailed === undefined) return;
    const e = err instanceof ServiceError ? err : null;
    try {
      this.deps.onFailed({
        owner: caller.zid,
        kind,
        solver,
        status: e?.status ?? 500,
        code: e?.code ?? 'SVC_INTERNAL_ERROR',
        message: e?.message ?? 'internal error',
      });
    } catch {
      /* an event that cannot be queued does not change the answer */
    }
  }

  private async computeInner(
    caller: Caller,
    req: ChainRequest,
    options: { seal: boolean; requestText?: string },
    hooks: SealHooks | undefined,
  ): Promise<Sealed> {
    const startNs = this.deps.clock.nowNs();
    const chain = this.chains.of(req, startNs, options.requestText);
    const { preview, cost } = chain;
    if (!options.seal) {
      const body = this.unsealedChain(chain, startNs);
      return { bytes: Buffer.from(JSON.stringify(body), 'utf8') };
    }
    const tier = this.deps.tiers.ofCaller(caller);
    const reservation = this.reserve(caller, tier);
    try {
      const checking = this.deps.ledger.assertCanPay(caller, cost);
      if (checking !== undefined) await checking;
    } catch (err) {
      reservation.release();
      throw err;
    }
    return this.sealResult({
      caller,
      tier,
      action: 'compute',
      cost,
      startNs,
      reservation,
      checkTime: true,
      resultDigest: chain.resultDigest,
      requestDigest: () => chainRequestDigest(preview.domain, preview.operators, preview.resolved),
      request: { kind: 'compute', domain: req.domain, operators: req.operators, inputs: req.inputs ?? {} },
      job: (parts) => {
        const gate = gateModulation(chain.gate, parts.R_t);
        if (!gate.passed) throw this.gateRefused('compute', toleranceGateError(gate));
        return { kind: 'compute', parts, chain: preview, average: gate.tick_average, relError: gate.rel_error };
      },
      summary: { kind: 'compute', solver: null, operators: preview.operators, value: preview.value, unit: preview.unit },
      ...(hooks !== undefined ? { hooks, run: { value: preview.value, unit: preview.unit, state: undefined, outputs: {} } } : {}),
    });
  }

  private unsealedChain(compiled: CompiledChain, startNs: bigint): Record<string, unknown> {
    const chain = compiled.preview;
    const stamp = stampAt(startNs);
    const R_t = modulationFactor(stamp.phase, this.deps.phi0);
    const gate = gateModulation(compiled.gate, R_t);
    if (!gate.passed) throw this.gateRefused('compute', toleranceGateError(gate));
    const parts = this.stampParts(stamp, R_t, null, compiled.resultDigest, metricShift(stamp.phase, 0, this.deps.phi0), null);
    const body: Record<string, unknown> = plainJson({
      ...buildBody(this.deps.receiptKey, { kind: 'compute', parts, chain, average: gate.tick_average, relError: gate.rel_error }),
      sealed: false,
    });
    return sealWhole(this.deps.receiptKey, this.deps.sealSigner, body);
  }

  /** Resolve and validate a solver request (400s) without running it. */
  resolveSolver(solverId: string, rawInputs: unknown, rawState: unknown): { solver: AnySolver; inputs: Record<string, unknown>; state: unknown } {
    const solver = this.deps.registry.get(solverId);
    if (!solver) throw new InputError('solver', `unknown solver ${JSON.stringify(solverId)}`, this.deps.registry.ids());
    const inputs = solver.resolve(rawInputs === undefined ? {} : rawInputs);
    let state: unknown = undefined;
    if (rawState !== undefined && rawState !== null) {
      if (!solver.stateful || !solver.resolveState) throw new InputError('initialState', `${solver.id} is not stateful`, null);
      state = solver.resolveState(rawState, inputs);
    }
    return { solver, inputs, state };
  }

  /**
   * A solver run, sealed (every solver endpoint, /solve and /auto). `gone`: its caller left (http/client-gone.ts); a run
   * still waiting for a worker, here or at the peer it was offloaded to, stops, and nothing is sealed or charged.
   */
  async solve(
    caller: Caller,
    solverId: string,
    rawInputs: unknown,
    rawState: unknown,
    extra: Record<string, unknown> = {},
    hooks?: SealHooks,
    gone?: AbortSignal,
  ): Promise<Sealed> {
    if (this.deps.onFailed === undefined || caller.kind !== 'identity') return this.solveInner(caller, solverId, rawInputs, rawState, extra, hooks, gone);
    try {
      return await this.solveInner(caller, solverId, rawInputs, rawState, extra, hooks, gone);
    } catch (err) {
      this.failed(caller, 'solver', solverId, err);
      throw err;
    }
  }

  private async solveInner(
    caller: Caller,
    solverId: string,
    rawInputs: unknown,
    rawState: unknown,
    extra: Record<string, unknown>,
    hooks: SealHooks | undefined,
    gone: AbortSignal | undefined,
  ): Promise<Sealed> {
    const startNs = this.deps.clock.nowNs();
    const { solver, inputs, state } = this.resolveSolver(solverId, rawInputs, rawState);
    const cost = extra.router ? COST.auto : COST.solver;
    const tier = this.deps.tiers.ofCaller(caller);
    assertTierAllows(solver.id, inputs, tier, this.deps.upgradeUrl(), state);
    const reservation = this.reserve(caller, tier);
    const plainInputs = plainJson(inputs);
    const requestDigest = solverRequestDigest(solver.id, plainInputs);
    let out: SolverOutput;
    let placed: PlacedRun | null = null;
    try {
      await this.deps.ledger.assertCanPay(caller, cost);
      // A stateful run stays here (its state is the caller's, not part of a re-executable request).
      if (this.deps.placement && state === undefined) {
        placed = await this.deps.placement.offload(
          {
            solverId: solver.id,
            inputs: plainInputs,
            requestDigest,
            svcond: stampAt(startNs).svcond,
            timeLimitSeconds: this.timeLimit(tier),
          },
          gone,
        );
      }
      out = placed ? placed.out : await this.deps.executor.run(solver.id, inputs, state, this.timeLimit(tier), runOwner(caller), tier, gone);
    } catch (err) {
      reservation.release();
      throw err;
    }
    const verdict = gateSolverCheck(out.check, out.value);
    if (!verdict.passed) {
      reservation.release();
      throw this.gateRefused('solver', toleranceGateError(verdict, { id: solver.id, check: plainJson(out.check) }));
    }
    const unsealable = unsealableOutput(out);
    if (unsealable !== null) {
      reservation.release();
      throw this.gateRefused(
        'solver',
        toleranceGateError({ passed: false, rel_error: verdict.rel_error, reason: unsealable }, { id: solver.id, unsealable: true }),
      );
    }
    const outputs = plainJson(out.outputs);
    const plainOut: SolverOutput = { ...out, check: plainJson(out.check), ...(out.state !== undefined ? { state: plainJson(out.state) } : {}) };
    const resultDigest = placed ? placed.resultDigest : solverResultDigest(solver.id, inputs, out, outputs);
    return this.sealResult({
      caller,
      tier,
      action: solver.id,
      cost,
      startNs,
      reservation,
      checkTime: placed !== null || !this.deps.executor.enforcesTimeLimit,
      resultDigest,
      requestDigest: () => requestDigest,
      request: { kind: 'solver', solver: solver.id, inputs: plainInputs },
      executedBy: placed?.executedBy ?? null,
      job: (parts) => ({
        kind: 'solver',
        parts,
        solver: { id: solver.id, kind: solver.kind },
        inputs: plainInputs,
        out: plainOut,
        outputs,
        relError: verdict.rel_error,
        extra,
      }),
      summary: { kind: 'solver', solver: solver.id, operators: null, value: out.value, unit: out.unit },
      ...(hooks !== undefined ? { hooks, run: { value: out.value, unit: out.unit, state: plainOut.state, outputs } } : {}),
    });
  }

  /** 402 when the caller could not pay `cost` credits (a stream channel's autotick turned back on: one tick's price). */
  async assertCanPayCost(caller: Caller, cost: number): Promise<void> {
    await this.deps.ledger.assertCanPay(caller, cost);
  }

  /** 402 when the caller could not pay the dearest closed-form compute (a chain reactor's /next). */
  async assertCanPayCompute(caller: Caller): Promise<void> {
    await this.deps.ledger.assertCanPay(caller, COST.computePerOperator);
  }

  /**
   * A stateful solver's next run without sealing or charging anything (the reactor's /next): resolved, run here and
   * gated like a sealed run (422 when the check fails), but nothing is written. 402 when the caller could not pay
   * for the sealed run.
   */
  async preview(caller: Caller, solverId: string, rawInputs: unknown, rawState: unknown): Promise<{ out: SolverOutput; outputs: Record<string, unknown> }> {
    const { solver, inputs, state } = this.resolveSolver(solverId, rawInputs, rawState);
    const tier = this.deps.tiers.ofCaller(caller);
    assertTierAllows(solver.id, inputs, tier, this.deps.upgradeUrl(), state);
    await this.deps.ledger.assertCanPay(caller, COST.solver);
    const out = await this.deps.executor.run(solver.id, inputs, state, this.timeLimit(tier), runOwner(caller), tier);
    const verdict = gateSolverCheck(out.check, out.value);
    if (!verdict.passed) throw toleranceGateError(verdict, { id: solver.id, check: plainJson(out.check) });
    const outputs = plainJson(out.outputs) as Record<string, unknown>;
    return { out: { ...out, check: plainJson(out.check), ...(out.state !== undefined ? { state: plainJson(out.state) } : {}) }, outputs };
  }

  /** POST /api/svc/auto: route the query, then run the chosen solver with the accepted constants. */
  async auto(caller: Caller, query: string, constants: Record<string, unknown>, gone?: AbortSignal): Promise<Record<string, unknown>> {
    const route = routeQuery(query);
    const solver = this.deps.registry.get(route.solver);
    if (!solver) throw new SolverFailure(`router chose unregistered solver ${route.solver}`);
    const { inputs, ignored_constants } = splitConstants(solver, constants);
    const result = await this.solve(caller, route.solver, inputs, undefined, { router: true }, undefined, gone);
    return {
      solver: route.solver,
      confidence: route.confidence,
      matched: route.matched,
      ignored_constants,
      result: JSON.parse(result.bytes.toString('utf8')) as Record<string, unknown>,
    };
  }

  /** POST /api/svc/verify (verify-result.ts): with this node's receipt key, its mesh's nodes as known sealers. */
  verifyResult(body: unknown): ResultVerification {
    return verifySealedResult(this.deps, body);
  }

  /** POST /api/svc/prove (proofs.ts). */
  prove(req: Parameters<typeof proveChain>[1]): Record<string, unknown> {
    return proveChain(this.deps, req);
  }

  /** POST /api/svc/prove/verify (proofs.ts). */
  proveVerify(body: unknown): ReturnType<typeof verifyProof> {
    return verifyProof(this.deps.proveKey, body);
  }

  /** POST /api/svc/shift (proofs.ts). */
  shift(variance: number, phase?: number): Record<string, unknown> {
    return shiftAt(this.deps, variance, phase);
  }

  /** POST /api/svc/lattice (proofs.ts). */
  lattice(req: Parameters<typeof chainLattice>[1]): Record<string, unknown> {
    return chainLattice(this.deps, req);
  }
}

/** Whose queue a solver run joins (executor.ts): an identity by ZID, a demo key by its id, anyone else by IP. */
export function runOwner(caller: Caller): string {
  return caller.kind === 'identity' ? `zid:${caller.zid}` : caller.kind === 'demo' ? `demo:${caller.key.key_id}` : `ip:${caller.ip}`;
}

/** The sealed body's `envelope` member: the caller's envelope as the result shows it (its svcond as `tick`). */
export function envelopeView(
  e: Pick<EnvelopeRecord, 'token_id' | 'face_value' | 'folder' | 'funding' | 'soulbound' | 'svcond' | 'hash'>,
): Record<string, unknown> {
  return { token_id: e.token_id, face_value: e.face_value, folder: e.folder, funding: e.funding, soulbound: e.soulbound, tick: e.svcond, hash: e.hash };
}

/** The sealed body's `audit` member: where the seal's row is in the caller's chain (slug null when there is none). */
export function auditMember(slug: string | null, seq: number, hash: string): Record<string, unknown> {
  return { slug, seq, hash };
}

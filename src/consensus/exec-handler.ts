// The executor's side of /svc/exec/1.0.0 (architecture.md §6): a contributing node runs a run a peer placed on it,
// on its own worker pool, and answers the output, its result digest and executed_by signed with its node key. It
// refuses (an answer with a code, never silence) when its operator is not contributing, when the request is not
// from a mesh member (handshake), malformed, stale, or not what its request digest says. A mode switch preempts
// the runs it holds: each gets SVC_PREEMPTED at once (the worker's result is dropped) and its requester re-places it.
// A run the requester cancels (its caller left; /svc/exec/1.1.0) leaves the queue if it still waits for a worker,
// answered SVC_BAD_REQUEST; one on a worker finishes and is answered, as a local run whose caller left.
import { timingSafeEqual } from 'node:crypto';
import type { Stream } from '@libp2p/interface';
import { ServiceError } from '../kernel/errors.js';
import { bodyDigest, handshakeFor } from '../mesh/wire.js';
import { MAX_SKEW_TICKS } from '../mesh/validator.js';
import type { SolverOutput } from '../solvers/types.js';
import { plainJson, solverRequestDigest, solverResultDigest } from '../compute/result-digest.js';
import { unsealableOutput } from '../compute/finite-output.js';
import type { ExecutedBy } from '../records/types.js';
import { answerFrame, readRequestFrame } from '../mesh/frame.js';
import { EXEC_REFUSALS, MAX_REQUEST_BYTES, execRequestSchema, type ExecAnswer, type ExecRequest } from './exec-protocol.js';
import { serveSession } from './exec-session.js';

/** A request must arrive whole within this (the run's own time comes after). */
const REQUEST_READ_MS = 10_000;

export interface ExecHandlerDeps {
  meshSecret: string | null;
  nowSvcond: () => number;
  /** Is this node's operator contributing now? */
  contributing: () => boolean;
  /** Validate a solver request (throws InputError / ServiceError 400): ComputeService.resolveSolver. */
  resolve: (solverId: string, inputs: unknown) => Record<string, unknown>;
  /** Run on this node's executor (worker pool), queued as `owner`; `signal`: a run still waiting leaves the queue. */
  run: (solverId: string, inputs: Record<string, unknown>, timeLimitSeconds: number, owner: string, signal?: AbortSignal) => Promise<SolverOutput>;
  /** This node's own tier limit (caps the requester's). */
  timeLimitSeconds: number;
  /** executed_by for a run executed here (null when not contributing). */
  attest: (requestDigest: string, resultDigest: string, svcond: number) => ExecutedBy | null;
  /** Test composition only (architecture.md §8): rewrite the answer before it is sent (garbage, bad signature, hang). */
  rewrite?: (answer: ExecAnswer, request: ExecRequest) => unknown;
  logger?: { warn(obj: object, msg?: string): void; debug(obj: object, msg?: string): void };
}

class Preempted extends Error {}

function refusal(code: string, message: string): ExecAnswer {
  return { ok: false, code, message };
}

export class ExecHandler {
  /** Runs in progress here for peers: each can be preempted. */
  private readonly inFlight = new Set<(err: Error) => void>();
  /** Figures for diagnostics and tests. */
  readonly stats = { served: 0, refused: 0, preempted: 0, cancelled: 0 };

  constructor(private readonly deps: ExecHandlerDeps) {}

  /** Runs currently held for peers. */
  get running(): number {
    return this.inFlight.size;
  }

  /** Preempt every run held for peers (the operator switched mode). Returns how many. */
  preemptAll(): number {
    const n = this.inFlight.size;
    for (const stop of [...this.inFlight]) stop(new Preempted('the executing node switched mode; re-place the run'));
    return n;
  }

  /** Serve one inbound stream: read the request, answer once, close. Never throws. */
  async serve(stream: Stream, remotePeer: string): Promise<void> {
    let answer: unknown;
    try {
      const request = await readRequestFrame(stream, MAX_REQUEST_BYTES, REQUEST_READ_MS);
      answer = 'refused' in request ? refusal(EXEC_REFUSALS.badRequest, request.refused.message) : await this.answerTo(request.value, remotePeer);
    } catch (err) {
      // The stream failed (aborted, reset, the deadline): nobody to answer.
      this.deps.logger?.debug({ err: String(err), peer: remotePeer }, 'exec stream failed');
      stream.abort(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    if (answer === null || typeof answer !== 'object' || (answer as { ok?: unknown }).ok !== true) this.stats.refused++;
    const undelivered = await answerFrame(stream, answer);
    if (undelivered) this.deps.logger?.debug({ err: String(undelivered), peer: remotePeer }, 'exec answer not delivered');
  }

  /** Serve a long-lived session stream (/svc/exec/1.1.0, exec-session.ts): every request answered as its run ends. */
  async serveSession(stream: Stream, remotePeer: string): Promise<void> {
    await serveSession(
      stream,
      async (raw, cancelled) => {
        const answer = await this.answerTo(raw, remotePeer, cancelled);
        if (answer === null || typeof answer !== 'object' || (answer as { ok?: unknown }).ok !== true) this.stats.refused++;
        return answer;
      },
      (err) => this.deps.logger?.debug({ err: String(err), peer: remotePeer }, 'exec session failed'),
    );
  }

  /** The answer to one raw request (checked here): a refusal or the run's signed result. */
  private async answerTo(raw: unknown, remotePeer: string, cancelled?: AbortSignal): Promise<unknown> {
    const parsed = execRequestSchema.safeParse(raw);
    if (!parsed.success) return refusal(EXEC_REFUSALS.badRequest, `malformed request: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    const request = parsed.data;
    const a = await this.execute(request, remotePeer, cancelled);
    return this.deps.rewrite ? await this.deps.rewrite(a, request) : a;
  }

  private checkHandshake(request: ExecRequest, remotePeer: string): boolean {
    const secret = this.deps.meshSecret;
    if (secret === null) return false;
    const { handshake, ...rest } = request;
    const expected = Buffer.from(handshakeFor(secret, remotePeer, request.svcond, bodyDigest(rest)), 'utf8');
    const given = Buffer.from(handshake, 'utf8');
    return expected.length === given.length && timingSafeEqual(expected, given);
  }

  private async execute(request: ExecRequest, remotePeer: string, cancelled?: AbortSignal): Promise<ExecAnswer> {
    if (!this.checkHandshake(request, remotePeer)) return refusal(EXEC_REFUSALS.badHandshake, 'the handshake does not match this request from this peer');
    if (Math.abs(request.svcond - this.deps.nowSvcond()) > MAX_SKEW_TICKS) return refusal(EXEC_REFUSALS.badRequest, 'the request tick is too far from now');
    if (!this.deps.contributing()) return refusal(EXEC_REFUSALS.notContributing, "this node's operator is not contributing");
    let inputs: Record<string, unknown>;
    try {
      inputs = this.deps.resolve(request.solver, request.inputs);
    } catch (err) {
      return refusal(EXEC_REFUSALS.badRequest, err instanceof Error ? err.message : String(err));
    }
    const plainInputs = plainJson(inputs);
    if (solverRequestDigest(request.solver, plainInputs) !== request.request_digest)
      return refusal(EXEC_REFUSALS.badRequest, 'request_digest does not match the solver and inputs');
    const limit = Math.min(request.time_limit_s, this.deps.timeLimitSeconds);
    let stop: (err: Error) => void = () => undefined;
    const preempted = new Promise<never>((_, reject) => {
      stop = reject;
    });
    this.inFlight.add(stop);
    let out: SolverOutput;
    try {
      out = await Promise.race([this.deps.run(request.solver, inputs, limit, `peer:${remotePeer}`, cancelled), preempted]);
    } catch (err) {
      if (err instanceof Preempted) {
        this.stats.preempted++;
        return refusal(EXEC_REFUSALS.preempted, err.message);
      }
      if (cancelled?.aborted) {
        this.stats.cancelled++;
        return refusal(EXEC_REFUSALS.cancelled, "the requesting node's caller left before the run got a worker here: it was not run");
      }
      const code = err instanceof ServiceError ? err.code : EXEC_REFUSALS.failed;
      return refusal(code, err instanceof Error ? err.message : String(err));
    } finally {
      this.inFlight.delete(stop);
      // The losing promise of the race: nobody waits on it.
      preempted.catch(() => undefined);
    }
    const unsealable = unsealableOutput(out);
    if (unsealable !== null) return refusal(EXEC_REFUSALS.unsealable, `the result cannot be sealed: ${unsealable}`);
    const output = plainJson(out);
    const resultDigest = solverResultDigest(request.solver, inputs, out, output.outputs);
    const executedBy = this.deps.attest(request.request_digest, resultDigest, request.svcond);
    // Switched away from contributing between the run and now: nothing at stake, so no answer to give.
    if (executedBy === null) {
      this.stats.preempted++;
      return refusal(EXEC_REFUSALS.preempted, "this node's operator stopped contributing during the run");
    }
    this.stats.served++;
    return { ok: true, output, result_digest: resultDigest, executed_by: executedBy };
  }
}

// Placing solver runs on contributing peers (architecture.md §6, config `contribution.offload`):
//   never      every run here;
//   when-busy  on a peer only while this node's worker pool has no free slot;
//   always     on a peer whenever a contributing one is known.
// The peer: among the nodes whose tick events say contributing with a bond that this node's registry confirms, the
// one with the most free execution slots; ties by rendezvous hash (SHA-256 of request digest | peer id, highest
// wins), so equal peers share the load by request. The request goes over one long-lived session per peer
// (/svc/exec/1.1.0, exec-session.ts; `exchange`), or one stream per run (/svc/exec/1.0.0, exec-protocol.ts).
// The home checks everything the answer claims before it is used: well-formed, the result digest recomputed from
// the returned output, executed_by naming that peer, its registered bond, this request and tick, and its Ed25519
// signature. A peer that fails any of it, times out or cannot be reached is skipped for a while and the run happens
// here: placing never costs the caller its answer. The home then gates and seals as for a local run.
//
// A caller that leaves (http/client-gone.ts) is treated as at home: the peer is asked to drop the run if it still
// waits for a worker there (a session's cancel), and its answer is awaited: a refusal ends the run for nobody (not
// run here, the peer not skipped), an output is sealed and charged as a run that had started. A peer that cannot be
// told (one stream per run, /svc/exec/1.0.0) is waited for as one whose run had started.
import { createHash } from 'node:crypto';
import type { Stream } from '@libp2p/interface';
import { bodyDigest, handshakeFor } from '../mesh/wire.js';
import type { PlacedRun, PlacementRequest, SolverPlacement } from '../compute/service.js';
import type { SolverOutput } from '../solvers/types.js';
import { solverResultDigest } from '../compute/result-digest.js';
import { BoundedMap } from '../util/bounded-map.js';
import { verifyExecution } from './executed-by.js';
import { EXEC_PROTOCOL, EXEC_REFUSALS, MAX_ANSWER_BYTES, execAnswerSchema, readFrame, writeFrame, type ExecRequest } from './exec-protocol.js';
import { SessionFull } from './exec-session.js';
import type { ExecutedBy } from '../records/types.js';

export type OffloadPolicy = 'never' | 'when-busy' | 'always';

/** How long a peer that failed is skipped. */
export const SKIP_PEER_MS = 60_000;
/** Slack over the run's time limit before a peer counts as hung. */
const ANSWER_SLACK_MS = 2_000;
const SKIPPED_MAX = 1024;

export interface OffloadPeer {
  peerId: string;
  mode: string | null;
  bondId: string | null;
  freeSlots: number | null;
  connected: boolean;
}

export interface OffloaderDeps {
  policy: OffloadPolicy;
  selfId: () => string;
  peers: () => readonly OffloadPeer[];
  /** The active bond id of a node in this node's registry (consensus/bonds.ts), or null. */
  bondOf: (node: string) => string | null;
  /** This node's free worker slots (executor.freeSlots()). */
  freeSlots: () => number;
  meshSecret: string | null;
  open: (peerId: string, protocol: string, signal: AbortSignal) => Promise<Stream>;
  /**
   * One request on a long-lived session with the peer (exec-session.ts); without it, one stream per run (1.0.0).
   * `cancel`: the caller left; the peer is asked to drop the run if it has not started it.
   */
  exchange?: (peerId: string, request: ExecRequest, signal: AbortSignal, cancel?: AbortSignal) => Promise<unknown>;
  verify: (signer: string, text: string, signature: string) => boolean;
  /** How long to wait for a peer's answer (default: the run's time limit + 2 s). */
  answerTimeoutMs?: (timeLimitSeconds: number) => number;
  skipPeerMs?: number;
  now?: () => number;
  logger?: { warn(obj: object, msg?: string): void; info(obj: object, msg?: string): void };
}

/** Why a placement ended where it did (counted in stats). */
export type OffloadOutcome =
  | 'offloaded'
  | 'no_peer'
  | 'not_busy'
  | 'never'
  | 'unreachable'
  | 'timeout'
  | 'garbage'
  | 'bad_signature'
  | 'refused'
  | 'preempted'
  /** The peer's queue for this home was full (429): run here, the peer is not skipped. */
  | 'busy'
  /** The caller left while the run waited at the peer: dropped there, not run here, the peer not skipped. */
  | 'left';

export class Offloader implements SolverPlacement {
  /** Peers skipped until a time (ms). */
  private readonly skipped = new BoundedMap<string, number>(SKIPPED_MAX);
  readonly stats: Record<OffloadOutcome, number> = {
    offloaded: 0,
    no_peer: 0,
    not_busy: 0,
    never: 0,
    unreachable: 0,
    timeout: 0,
    garbage: 0,
    bad_signature: 0,
    refused: 0,
    preempted: 0,
    busy: 0,
    left: 0,
  };

  constructor(private readonly deps: OffloaderDeps) {}

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  /** Is a peer skipped now (it failed recently)? */
  isSkipped(peerId: string): boolean {
    const until = this.skipped.get(peerId);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.skipped.delete(peerId);
    return false;
  }

  /** Until when (ms) a peer was last set to be skipped, or null: past or not. */
  skippedUntil(peerId: string): number | null {
    return this.skipped.get(peerId) ?? null;
  }

  /** The peer a request would go to, or null (policy, load and the peers decide). */
  choose(requestDigest: string): OffloadPeer | null {
    const { policy } = this.deps;
    if (policy === 'never') return null;
    const busy = this.deps.freeSlots() <= 0;
    if (policy === 'when-busy' && !busy) return null;
    const self = this.deps.selfId();
    let best: OffloadPeer | null = null;
    let bestRank = '';
    for (const p of this.deps.peers()) {
      if (p.peerId === self || !p.connected || p.mode !== 'contributing' || p.bondId === null) continue;
      if (this.deps.bondOf(p.peerId) !== p.bondId || this.isSkipped(p.peerId)) continue;
      const slots = p.freeSlots ?? 0;
      // When busy, a peer with no free slot would only queue the run elsewhere.
      if (policy === 'when-busy' && slots <= 0) continue;
      const rank = rendezvous(requestDigest, p.peerId);
      const bestSlots = best?.freeSlots ?? 0;
      if (best === null || slots > bestSlots || (slots === bestSlots && rank > bestRank)) {
        best = p;
        bestRank = rank;
      }
    }
    return best;
  }

  async offload(req: PlacementRequest, gone?: AbortSignal): Promise<PlacedRun | null> {
    gone?.throwIfAborted();
    if (this.deps.policy === 'never') {
      this.stats.never++;
      return null;
    }
    const peer = this.choose(req.requestDigest);
    if (peer === null) {
      this.stats[this.deps.policy === 'when-busy' && this.deps.freeSlots() > 0 ? 'not_busy' : 'no_peer']++;
      return null;
    }
    // Whatever goes wrong with the peer, the caller keeps its answer: the run happens here.
    const outcome = await this.placeOn(peer, req, gone).catch((err: unknown) => ({ failed: 'garbage' as const, reason: String(err) }));
    if ('run' in outcome) {
      this.stats.offloaded++;
      return outcome.run;
    }
    this.stats[outcome.failed]++;
    if (outcome.failed !== 'busy' && outcome.failed !== 'left') {
      this.skipped.set(peer.peerId, this.now() + (this.deps.skipPeerMs ?? SKIP_PEER_MS));
      const next = gone?.aborted ? 'its caller had left' : 'running it here';
      this.deps.logger?.warn({ peer: peer.peerId, outcome: outcome.failed, reason: outcome.reason }, `offloaded run failed; ${next}`);
    }
    // The caller left: the run is not started here either.
    gone?.throwIfAborted();
    return null;
  }

  /** Send the request to one peer and check its answer. */
  private async placeOn(
    peer: OffloadPeer,
    req: PlacementRequest,
    gone: AbortSignal | undefined,
  ): Promise<{ run: PlacedRun } | { failed: Exclude<OffloadOutcome, 'offloaded'>; reason: string }> {
    const secret = this.deps.meshSecret;
    if (secret === null) return { failed: 'unreachable', reason: 'no mesh secret' };
    const unsigned = {
      v: 1 as const,
      solver: req.solverId,
      inputs: req.inputs,
      request_digest: req.requestDigest,
      svcond: req.svcond,
      time_limit_s: req.timeLimitSeconds,
    };
    const request: ExecRequest = { ...unsigned, handshake: handshakeFor(secret, this.deps.selfId(), req.svcond, bodyDigest(unsigned)) };
    const timeoutMs = this.deps.answerTimeoutMs?.(req.timeLimitSeconds) ?? req.timeLimitSeconds * 1000 + ANSWER_SLACK_MS;
    const signal = AbortSignal.timeout(timeoutMs);
    if (this.deps.exchange) {
      let answer: unknown;
      try {
        answer = await this.deps.exchange(peer.peerId, request, signal, gone);
      } catch (err) {
        if (err instanceof SessionFull) return { failed: 'busy', reason: err.message };
        // Left before the request was sent: the peer did nothing wrong.
        if (gone?.aborted && err === gone.reason) return { failed: 'left', reason: 'the caller left before the run was sent' };
        return { failed: signal.aborted ? 'timeout' : 'unreachable', reason: String(err) };
      }
      return this.check(peer, req, answer, gone);
    }
    let stream: Stream;
    try {
      stream = await this.deps.open(peer.peerId, EXEC_PROTOCOL, signal);
    } catch (err) {
      return { failed: signal.aborted ? 'timeout' : 'unreachable', reason: String(err) };
    }
    const onAbort = () => stream.abort(new Error(`no answer within ${timeoutMs} ms`));
    signal.addEventListener('abort', onAbort, { once: true });
    let raw: unknown;
    try {
      await writeFrame(stream, request);
      raw = await readFrame(stream.source, MAX_ANSWER_BYTES);
    } catch (err) {
      stream.abort(err instanceof Error ? err : new Error(String(err)));
      return { failed: signal.aborted ? 'timeout' : 'garbage', reason: String(err) };
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
    void stream.close().catch(() => undefined);
    return this.check(peer, req, raw, undefined);
  }

  private check(
    peer: OffloadPeer,
    req: PlacementRequest,
    raw: unknown,
    gone: AbortSignal | undefined,
  ): { run: PlacedRun } | { failed: Exclude<OffloadOutcome, 'offloaded'>; reason: string } {
    const parsed = execAnswerSchema.safeParse(raw);
    if (!parsed.success) return { failed: 'garbage', reason: `malformed answer: ${parsed.error.issues[0]?.message ?? 'invalid'}` };
    const answer = parsed.data;
    if (!answer.ok) return { failed: refusalOutcome(answer.code, gone?.aborted === true), reason: `${answer.code}: ${answer.message}` };
    const out = answer.output as SolverOutput;
    const digest = solverResultDigest(req.solverId, req.inputs, out, out.outputs);
    if (digest !== answer.result_digest) return { failed: 'garbage', reason: 'the result digest does not match the output' };
    const e: ExecutedBy = answer.executed_by;
    if (e.node !== peer.peerId) return { failed: 'bad_signature', reason: 'executed_by names another node' };
    if (e.bond_id !== this.deps.bondOf(peer.peerId)) return { failed: 'bad_signature', reason: "executed_by names a bond that is not the peer's" };
    if (e.request_digest !== req.requestDigest || e.svcond !== req.svcond) return { failed: 'bad_signature', reason: 'executed_by is for another request' };
    if (!verifyExecution(this.deps.verify, e, digest)) return { failed: 'bad_signature', reason: 'the executed_by signature does not verify' };
    return { run: { out, resultDigest: digest, executedBy: e } };
  }
}

/** What a peer's refusal counts as; `cancelled`: this node asked it to drop the run (its caller left). */
function refusalOutcome(code: string, cancelled: boolean): Exclude<OffloadOutcome, 'offloaded'> {
  if (cancelled && code === EXEC_REFUSALS.cancelled) return 'left';
  if (code === EXEC_REFUSALS.preempted) return 'preempted';
  if (code === EXEC_REFUSALS.busy) return 'busy';
  return 'refused';
}

/** Rendezvous rank of a peer for a request: the larger wins. */
export function rendezvous(requestDigest: string, peerId: string): string {
  return createHash('sha256').update(`${requestDigest}|${peerId}`).digest('hex');
}

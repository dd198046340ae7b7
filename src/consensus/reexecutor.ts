// The committee member's part (architecture.md §6): on a challenge whose committee names this node, re-execute the
// canonical request at its recorded stamping tick with this node's own kernel and solvers, commit to the digest it
// gets (SHA-256(digest|salt), a fresh random salt), and reveal the vote {digest, salt} once every member's commit is
// heard or the commit window has passed — so no member sees another's digest before it is bound to its own. Both
// are signed with this node's key. One commit per challenge: a commit already cast (kept in the challenge's entry)
// is not cast again. The salt lives in memory only: a member restarted between its commit and its reveal cannot
// reveal, and its vote is lost (the others decide, or the deadline). A run that fails here commits nothing — a
// member never votes a digest it did not compute.
import type { ChallengeEntry, ChallengeService } from './challenges.js';
import { randomBytes } from 'node:crypto';
import { commitDeadlineOf, commitmentOf, commitSigningText, voteSigningText, type SignedCommit, type VoteRecord } from './challenge-wire.js';
import { isTerminal } from './challenge-lifecycle.js';
import type { Json } from '../store/db.js';
import { chainRequestDigest, plainJson, solverRequestDigest, solverResultDigest } from '../compute/result-digest.js';
import type { ChainRequest, ComputeService } from '../compute/service.js';
import type { SolverExecutor } from '../compute/executor.js';

export interface ReexecutorOptions {
  challenges: ChallengeService;
  nodeId: () => string;
  nowSvcond: () => number;
  sign: (text: string) => string;
  /** Run a canonical request as stamped at `stampSvcond`; resolves to its request and result digests. */
  execute: (request: Json, stampSvcond: number) => Promise<Rerun>;
  onError?: (challengeId: string, err: unknown) => void;
}

export class Reexecutor {
  private readonly inFlight = new Set<string>();
  /** Committed, not yet revealed: the digest and salt of this node's commit, by challenge id. */
  private readonly unrevealed = new Map<string, { digest: string; salt: string }>();

  constructor(private readonly o: ReexecutorOptions) {
    o.challenges.onOpened(async (e) => {
      await this.consider(e);
    });
    o.challenges.onCommit(async (e) => {
      await this.revealIfDue(e);
    });
  }

  /**
   * Reveal every vote whose time has come (the commit window passed without every member's commit). On a timer. A
   * vote is revealed after a verdict too: it changes nothing then, and is kept as evidence.
   */
  async revealDue(): Promise<void> {
    for (const id of [...this.unrevealed.keys()]) {
      const e = this.o.challenges.get(id) ?? (await this.o.challenges.find(id));
      if (!e) this.unrevealed.delete(id);
      else await this.revealIfDue(e);
    }
  }

  /** Reveal this node's vote once every member has committed, or once the commit window has passed. */
  private async revealIfDue(e: ChallengeEntry): Promise<void> {
    const c = e.challenge.challenge;
    const mine = this.unrevealed.get(c.challenge_id);
    if (!mine) return;
    const committed = new Set((e.commits ?? []).map((k) => k.commit.voter));
    if (!c.committee.every((m) => committed.has(m)) && this.o.nowSvcond() <= commitDeadlineOf(c)) return;
    this.unrevealed.delete(c.challenge_id);
    const vote: VoteRecord = { challenge_id: c.challenge_id, voter: this.o.nodeId(), digest: mine.digest, svcond: this.o.nowSvcond(), salt: mine.salt };
    await this.o.challenges.castVote({ vote, signature: this.o.sign(voteSigningText(vote)) });
  }

  /** Vote on every open challenge whose committee names this node and that has no vote of it yet (at start). */
  async resume(): Promise<void> {
    for (const e of this.o.challenges.all()) await this.consider(e);
  }

  /** Re-execute and commit when this node sits on the challenge's committee and has not committed; reveal when due. */
  async consider(entry: ChallengeEntry): Promise<SignedCommit | null> {
    const c = entry.challenge.challenge;
    const me = this.o.nodeId();
    if (!c.committee.includes(me) || isTerminal(entry.state)) return null;
    const committed = (entry.commits ?? []).some((k) => k.commit.voter === me) || entry.votes.some((v) => v.vote.voter === me);
    if (committed || this.inFlight.has(c.challenge_id)) return null;
    this.inFlight.add(c.challenge_id);
    try {
      let digest: string;
      try {
        const run = await this.o.execute(c.request, c.stamp_svcond);
        // The executor signed the digest of the request it ran: a challenge carrying another request is not voted on.
        if (run.requestDigest !== c.executed_by.request_digest) throw new Error("the challenge's request is not the one the executor signed");
        digest = run.resultDigest;
      } catch (err) {
        this.o.onError?.(c.challenge_id, err);
        return null;
      }
      const salt = randomBytes(16).toString('hex');
      const commit = { challenge_id: c.challenge_id, voter: me, commitment: commitmentOf(digest, salt), svcond: this.o.nowSvcond() };
      const signed: SignedCommit = { commit, signature: this.o.sign(commitSigningText(commit)) };
      this.unrevealed.set(c.challenge_id, { digest, salt });
      await this.o.challenges.castCommit(signed);
      const now = this.o.challenges.get(c.challenge_id);
      if (now) await this.revealIfDue(now);
      return signed;
    } finally {
      this.inFlight.delete(c.challenge_id);
    }
  }
}

/** What a re-execution needs of this node: its own solvers (through its executor) and its own chain evaluation. */
export interface RerunDeps {
  compute: Pick<ComputeService, 'resolveSolver' | 'compute'>;
  executor: Pick<SolverExecutor, 'run'>;
  timeLimitSeconds: number;
}

/**
 * The request and result digests of a canonical request run here ({kind: 'solver', solver, inputs} or {kind: 'compute', domain,
 * operators, inputs}), as the sealing pipeline computes it (compute/service.ts), without sealing or charging. The
 * digest excludes stamps (rule 5), so the recorded tick does not change it; it is taken for the record.
 */
export interface Rerun {
  requestDigest: string;
  resultDigest: string;
}

export async function rerunDigest(deps: RerunDeps, request: Json, _stampSvcond: number): Promise<Rerun> {
  const r = request as { kind?: unknown; solver?: unknown; inputs?: unknown; domain?: unknown; operators?: unknown } | null;
  if (r && r.kind === 'solver' && typeof r.solver === 'string') {
    const { solver, inputs } = deps.compute.resolveSolver(r.solver, r.inputs, undefined);
    const out = await deps.executor.run(solver.id, inputs, undefined, deps.timeLimitSeconds, 'consensus:reexecution');
    return {
      requestDigest: solverRequestDigest(solver.id, plainJson(inputs)),
      resultDigest: solverResultDigest(solver.id, inputs, out, plainJson(out.outputs)),
    };
  }
  if (r && r.kind === 'compute') {
    const sealed = await deps.compute.compute(
      { kind: 'anonymous', ip: 'consensus' },
      { domain: r.domain, operators: r.operators, inputs: r.inputs } as ChainRequest,
      {
        seal: false,
      },
    );
    const body = JSON.parse(sealed.bytes.toString('utf8')) as { result_digest?: unknown; domain?: unknown; operators?: unknown; inputs?: unknown };
    if (typeof body.result_digest !== 'string' || typeof body.domain !== 'string' || !Array.isArray(body.operators))
      throw new Error('the chain evaluation gave no result digest');
    return { requestDigest: chainRequestDigest(body.domain, body.operators as string[], body.inputs), resultDigest: body.result_digest };
  }
  throw new Error('the challenged request is neither a solver run nor a chain');
}

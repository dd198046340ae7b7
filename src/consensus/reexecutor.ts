// The committee member's part (architecture.md §6): on a challenge whose committee names this node, re-execute the
// canonical request at its recorded stamping tick with this node's own kernel and solvers, commit to the digest it
// gets (SHA-256(digest|salt), a fresh random salt), and reveal the vote {digest, salt} once every member's commit is
// heard or the commit window has passed — so no member sees another's digest before it is bound to its own. Both
// are signed with this node's key. One commit per challenge and round: a commit already cast (kept in the
// challenge's entry) is not cast again; when round 0 escalates, a member of the larger committee commits again in
// round 1. The {digest, salt} between commit and reveal is a store row written in the commit's batch and deleted in
// the vote's (or once the challenge is final), so a member restarted between the two still reveals. A run that fails
// here commits nothing — a member never votes a digest it did not compute.
import type { ChallengeEntry, ChallengeService } from './challenges.js';
import { randomBytes } from 'node:crypto';
import {
  commitDeadlineOf,
  commitmentOf,
  escalationOf,
  everyMemberCommitted,
  commitSigningText,
  roundOf,
  voteSigningText,
  type Round,
  type SignedCommit,
  type VoteRecord,
} from './challenge-wire.js';
import { isTerminal } from './challenge-lifecycle.js';
import type { Json, Op, Store, Sublevel } from '../store/db.js';
import { chainRequestDigest, plainJson, solverRequestDigest, solverResultDigest } from '../compute/result-digest.js';
import type { ChainRequest, ComputeService } from '../compute/service.js';
import type { SolverExecutor } from '../compute/executor.js';

export interface ReexecutorOptions {
  challenges: ChallengeService;
  /** Holds the committed, not yet revealed {digest, salt} of this node's commits (sublevel `commit-salts`). */
  store: Store;
  nodeId: () => string;
  nowSvcond: () => number;
  sign: (text: string) => string;
  /** Run a canonical request as stamped at `stampSvcond`; resolves to its request and result digests. */
  execute: (request: Json, stampSvcond: number) => Promise<Rerun>;
  onError?: (challengeId: string, err: unknown) => void;
}

/** A commit of this node not yet revealed: the digest and salt it opens with. */
interface Unrevealed {
  challenge_id: string;
  round: Round;
  digest: string;
  salt: string;
}

export class Reexecutor {
  private readonly inFlight = new Set<string>();
  private readonly salts: Sublevel;
  /** Committed, not yet revealed, by `challenge_id|round` (the store row's key). */
  private readonly unrevealed = new Map<string, Unrevealed>();

  constructor(private readonly o: ReexecutorOptions) {
    this.salts = o.store.sub('commit-salts');
    o.challenges.onOpened(async (e) => {
      await this.consider(e);
    });
    o.challenges.onEscalated(async (e) => {
      await this.consider(e);
    });
    o.challenges.onCommit(async (e) => {
      await this.revealIfDue(e);
    });
  }

  /** At start: the commits this node made and has not revealed (a row of a final challenge is deleted). */
  async load(): Promise<void> {
    const stale: Op[] = [];
    for (const { key, value } of await this.o.store.range<Unrevealed>(this.salts)) {
      const e = await this.o.challenges.find(value.challenge_id);
      if (!e || isTerminal(e.state)) stale.push({ type: 'del', sub: this.salts, key });
      else this.unrevealed.set(key, value);
    }
    if (stale.length > 0) await this.o.store.commit(stale);
  }

  /**
   * Reveal every vote whose time has come (the commit window passed without every member's commit). On a timer. A
   * vote is revealed after a verdict too: it changes nothing then, and is kept as evidence.
   */
  async revealDue(): Promise<void> {
    for (const [key, mine] of [...this.unrevealed]) {
      const e = this.o.challenges.get(mine.challenge_id) ?? (await this.o.challenges.find(mine.challenge_id));
      if (!e) {
        this.unrevealed.delete(key);
        await this.o.store.commit([{ type: 'del', sub: this.salts, key }]);
      } else await this.revealIfDue(e);
    }
  }

  /**
   * Reveal this node's vote of the current round once every member has committed, or once the commit window has
   * passed — except in a round 0 that can escalate, whose vote is revealed only once every member committed: short
   * of a commit it escalates, and the vote is revealed (as evidence, counting for nothing) only after round 1's
   * commit window, so no round-1 member sees it before it is bound to its own digest.
   */
  private async revealIfDue(e: ChallengeEntry): Promise<void> {
    const view = this.o.challenges.currentRound(e);
    const now = this.o.nowSvcond();
    const round1 = escalationOf(e.challenge.challenge);
    for (const round of [0, 1] as const) {
      const key = saltKey(view.challenge_id, round);
      const mine = this.unrevealed.get(key);
      if (!mine) continue;
      if (round === view.round) {
        const all = everyMemberCommitted(view, e.commits ?? []);
        if (!all && (now <= commitDeadlineOf(view) || (round === 0 && round1 !== null))) continue;
      } else if (round1 && now <= commitDeadlineOf(round1)) continue;
      this.unrevealed.delete(key);
      const vote: VoteRecord = {
        challenge_id: view.challenge_id,
        voter: this.o.nodeId(),
        digest: mine.digest,
        svcond: this.o.nowSvcond(),
        salt: mine.salt,
        ...(round === 1 ? { round: 1 as const } : {}),
      };
      await this.o.challenges.castVote({ vote, signature: this.o.sign(voteSigningText(vote)) }, [{ type: 'del', sub: this.salts, key }]);
    }
  }

  /** Vote on every open challenge whose committee names this node and that has no vote of it yet (at start). */
  async resume(): Promise<void> {
    for (const e of this.o.challenges.all()) await this.consider(e);
    await this.revealDue();
  }

  /**
   * Re-execute and commit when this node sits on the committee of the challenge's current round and has not
   * committed in it; reveal when due.
   */
  async consider(entry: ChallengeEntry): Promise<SignedCommit | null> {
    const c = entry.challenge.challenge;
    const view = this.o.challenges.currentRound(entry);
    const me = this.o.nodeId();
    if (!view.committee.includes(me) || isTerminal(entry.state)) return null;
    const inRound = (r: { voter: string; round?: 1 }) => r.voter === me && roundOf(r) === view.round;
    const committed = (entry.commits ?? []).some((k) => inRound(k.commit)) || entry.votes.some((v) => inRound(v.vote));
    const key = saltKey(c.challenge_id, view.round);
    if (committed || this.unrevealed.has(key) || this.inFlight.has(key)) return null;
    this.inFlight.add(key);
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
      const commit = {
        challenge_id: c.challenge_id,
        voter: me,
        commitment: commitmentOf(digest, salt),
        svcond: this.o.nowSvcond(),
        ...(view.round === 1 ? { round: 1 as const } : {}),
      };
      const signed: SignedCommit = { commit, signature: this.o.sign(commitSigningText(commit)) };
      const mine: Unrevealed = { challenge_id: c.challenge_id, round: view.round, digest, salt };
      this.unrevealed.set(key, mine);
      await this.o.challenges.castCommit(signed, [{ type: 'put', sub: this.salts, key, value: mine as unknown as Json }]);
      const now = this.o.challenges.get(c.challenge_id);
      if (now) await this.revealIfDue(now);
      return signed;
    } finally {
      this.inFlight.delete(key);
    }
  }
}

function saltKey(challengeId: string, round: Round): string {
  return `${challengeId}|${round}`;
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

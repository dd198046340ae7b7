// Challenges (architecture.md §6), the service: intake at the challenger's home, the four gossip rows of
// svc/consensus/1 that carry a challenge to every node, and the direct deliveries to the nodes that must hear it:
//   consensus.challenge.opened  {challenge, signature, result} signed by the challenger's home (the opener); result:
//                                                             the challenged sealed result, signed by its sealer
//   consensus.vote.commit       {commit, signature}           a member's commitment to its digest, signed by it
//   consensus.vote              {vote, signature}             the member's reveal (digest and salt), signed by it
//   consensus.verdict           {challenge, votes, verdict}   the verdict with the signed votes it rests on
// Every node keeps every challenge it hears of — once it has checked it against its own bond registry and the tick
// events it heard (stateFault: the eligible set and committee are the draw it would make itself) — folds the
// revealed votes itself (verdict.ts) and reaches the same outcome; a node that missed commits or votes takes them
// from the verdict event, after checking each signature and re-running the fold. The result a challenge (and so a
// verdict) carries is checked everywhere too (challenge-wire.ts carriedResultFault): an event too large to carry it
// names it by result_sha256, and the receiver asks the opener or the result's home for it (sealedBody) before any
// check that needs it. A refusal is a gossipsub Reject.
// The lifecycle is challenge-lifecycle.ts (the transition table); the records, schemas and checks challenge-wire.ts;
// who is sent what directly challenge-deliveries.ts; votes heard before their challenge early-votes.ts.
// Ledger effects (stake, slashing) belong to slashing.ts; re-execution and votes to reexecutor.ts.
import type { Logger } from 'pino';
import { z } from 'zod';
import { canonicalJson } from '../kernel/canonical.js';
import { InputError, ServiceError } from '../kernel/errors.js';
import type { Json, Op, Store, Sublevel } from '../store/db.js';
import { GossipError } from '../mesh/gossip-error.js';
import type { GossipHandler } from '../mesh/gossip-handlers.js';
import { MAX_TICK_INTERVAL } from '../mesh/tick-interval.js';
import { TICK_AHEAD_TICKS } from '../mesh/peer-table.js';
import type { MeshEvent } from '../mesh/wire.js';
import { BoundedSet } from '../util/bounded-map.js';
import { KeyedLock } from '../util/keyed-lock.js';
import { BOND_HEARD_SLACK_TICKS, type BondService } from './bonds.js';
import { inSenderIntervals, liveReach } from './liveness.js';
import { committeeOf, eligibleNodes, heardContributing, type Candidate, type EligibilityRule } from './committee.js';
import { quorumOf, type ContributionPolicy } from './policy.js';
import type { SendFn } from './outbox.js';
import { ChallengeDeliveries } from './challenge-deliveries.js';
import { ChallengeIndex } from './challenge-index.js';
import { EarlyVotes, type EarlyVoteLimits } from './early-votes.js';
import { announces, OwedEffects, owedBy, type OwedKind } from './owed-effects.js';
import type { ExecutedBy } from '../records/types.js';
import { isTerminal, move, STATES, type ChallengeState } from './challenge-lifecycle.js';
import {
  CHALLENGE_OPENED_EVENT,
  COMMIT_EVENT,
  VERDICT_EVENT,
  VOTE_EVENT,
  challengeFault,
  commitDeadlineOf,
  commitFault,
  escalationOf,
  foldChallenge,
  passedRoundsOf,
  roundDeadlineOf,
  roundOf,
  roundView,
  type Round,
  type RoundView,
  signedCommitSchema,
  type SignedCommit,
  challengeIdOf,
  challengeSigningText,
  drawEventOf,
  drawSeedOf,
  type DrawEvent,
  signedChallengeSchema,
  signedVoteSchema,
  verdictDocumentSchema,
  verifyVerdictDocument,
  voteFault,
  type ChallengeRecord,
  type SignedChallenge,
  type SignedVote,
  type VerdictDocument,
  type VerdictRecord,
  type VerifyFn,
  carriedResultFault,
  forMesh,
  sealedDigestOf,
  withSealedDigest,
  type ResultVerifyFn,
  type SealedResult,
} from './challenge-wire.js';

export type { ExecutedBy };

/**
 * Ticks of leeway between nodes' records of who was heard when (a tick event in flight at the challenge's tick): a
 * listed node must have been heard within the live window widened by it, and a node heard within the window narrowed
 * by it must be listed.
 */
export const LIVE_SLACK_TICKS = 2;

/**
 * Ticks of leeway for the draw event: a tick event of a listed node signed more than this before the draw's tick
 * (after T) makes the draw not the first. Wider than LIVE_SLACK_TICKS: the opener takes the first to arrive, and
 * gossip on a loaded mesh can hold an earlier one back a few ticks.
 */
export const DRAW_SLACK_TICKS = 4;

/** The challenger's stake as its home holds it (only at that node). */
export interface StakeHold {
  zid: string;
  amount: number;
  from_free: number;
  from_paid: number;
}

export interface ChallengeEntry {
  challenge: SignedChallenge;
  state: ChallengeState;
  /** Distinct signed member commits heard within the commit window (an equivocator's two both kept, as evidence). */
  commits?: SignedCommit[];
  /** Distinct signed member votes heard (an equivocator's two votes both kept, as evidence). */
  votes: SignedVote[];
  /**
   * Member votes heard only after their round's deadline + grace on this node's clock, whatever tick they claim: kept
   * as evidence (at most two per voter and round), never folded.
   */
  heard_late?: SignedVote[];
  non_member_votes: number;
  /** Vote events refused here: bad signature, sender not the voter, another challenge's vote. */
  refused_votes: number;
  verdict: VerdictRecord | null;
  stake: StakeHold | null;
  /** Local tick at which this node learned of the challenge. */
  received_svcond: number;
  /** At the opener: the bond's home acknowledged the verdict (outbox.ts); it is not sent again after a restart. */
  verdict_delivered?: boolean;
}
// ---------------------------------------------------------------- the service

/** What a challenge needs to know of a result (exec's lookup by result id). */
export interface ChallengedResult {
  result_id: string;
  request: Json;
  stamp_svcond: number;
  result_digest: string;
  executed_by: ExecutedBy | null;
  owner: string | null;
  published: boolean;
  /** The sealed result itself, as its home or the challenger gave it: the challenge carries it (challenge-wire.ts). */
  sealed?: SealedResult;
}

export interface ChallengeServiceOptions {
  store: Store;
  policy: ContributionPolicy;
  bonds: BondService;
  nodeId: () => string;
  nowSvcond: () => number;
  sign: (text: string) => string;
  verify: VerifyFn;
  publish?: (type: string, body: unknown) => Promise<void>;
  /**
   * A result by id, wherever it is kept (null when no node knows it); `carried`: the sealed result the challenge
   * carries, used when no node's record holds it (result-lookup.ts carriedResult).
   */
  lookup: (resultId: string, carried?: unknown) => Promise<ChallengedResult | null>;
  /** Nodes that may sit on a committee: active bonds with the tick events heard from their nodes (liveness.ts). */
  candidates: () => Candidate[];
  /**
   * Does this node's liveness record hold every tick event heard from tick `from` on? Where it does not (the node
   * started later), a challenge's eligible set is checked against bonds only. `every`: for tick events of that
   * interval (kept longer, liveness.ts). Default: always.
   */
  livenessCovers?: (from: number, every?: number) => boolean;
  /** The mesh's base tick interval (mesh.tickEvery, default 4): liveTicks is read in each sender's intervals against it. */
  baseEvery?: number;
  /** The latest signed tick event heard from each node: where the intake takes its draw event (drawEventOf). */
  tickEvents: () => readonly DrawEvent[];
  /** Milliseconds between looks for the draw event at intake. Default 50. */
  drawPollMs?: number;
  /**
   * Checks a sealed result as POST /api/svc/verify does: every challenge and verdict must carry the challenged
   * result, which must verify and be the record's (challenge-wire.ts carriedResultFault).
   */
  verifyResult?: ResultVerifyFn;
  /**
   * Where a challenge's sealed result can be asked for when a mesh event left it out (forMesh): the opener's copy
   * of the challenge, the result's home. Each `get` answers the body (null: it has none) or throws.
   */
  sealedSources?: (sc: SignedChallenge) => SealedSource[];
  /** Rounds of asking the sources before a challenge or verdict whose sealed result cannot be had is refused. Default 3. */
  sealedAttempts?: number;
  /** Milliseconds before the second round of asking (doubled before each next). Default 250. */
  sealedRetryMs?: number;
  /** Does exec's `executed_by` signature hold for this result (digest, request, tick)? */
  verifyExecution?: (r: { executed_by: ExecutedBy; result_digest: string }) => boolean;
  /** The stake taken at intake: ops (in the challenge's batch) and their undo; 402 thrown when it cannot be paid. */
  holdStake: (zid: string, amount: number) => Promise<{ hold: StakeHold; ops: Op[]; rollback: () => void }>;
  /** Ticks after the deadline before the opener declares no_quorum (votes in flight). */
  graceTicks?: number;
  /** Send one event straight to one node (its HTTP mesh entrance); throws unless the node acknowledged it (outbox.ts). */
  send?: SendFn;
  /**
   * Ask a node for its verdict document of a challenge: null when it has none yet; throws when it cannot be asked or
   * does not know the challenge.
   */
  ask?: (node: string, challengeId: string) => Promise<VerdictDocument | null>;
  /**
   * Ticks after the deadline + grace during which a node other than the opener waits for the opener's verdict before
   * it declares no_quorum on its own clock (the opener unreachable). Default: 4 × deadlineTicks.
   */
  askPatienceTicks?: number;
  /** Settled challenges kept in memory at most; older ones are read from the store on demand. Default 512. */
  maxSettledInMemory?: number;
  /** Votes held for challenges not heard of yet: challenges at most (default 256), votes each (default 16), ticks kept (default deadline + grace). */
  earlyVotes?: EarlyVoteLimits;
  /** Where a failed attempt at an owed effect is logged (debug: it is attempted again). */
  logger?: Pick<Logger, 'debug'>;
}

/** One place a challenge's sealed result can be asked for (ChallengeServiceOptions.sealedSources). */
export interface SealedSource {
  /** Who is asked, as a refusal's reason names it. */
  from: string;
  get: () => Promise<unknown>;
}

export type ChallengeListener = (entry: ChallengeEntry) => void | Promise<void>;

/** A decided challenge's verdict document: the challenge, the votes the verdict rests on, the verdict (null before). */
export function documentOf(e: ChallengeEntry): VerdictDocument | null {
  if (!e.verdict) return null;
  // The commits and votes it rests on: one heard after the verdict (a late one, or an equivocation) changes nothing.
  const commits = e.commits ?? [];
  return {
    challenge: e.challenge,
    commits: commits.slice(0, e.verdict.rests_on_commits ?? commits.length),
    votes: e.votes.slice(0, e.verdict.rests_on_votes ?? e.votes.length),
    verdict: e.verdict,
  };
}

export class ChallengeService {
  private readonly sub: Sublevel;
  /** Listings page from it (challenge-index.ts), written with each entry. */
  private readonly index: ChallengeIndex;
  /** Effects of verdicts owed by this node (owed-effects.ts): what the pass at start reads. */
  private readonly owed: OwedEffects;
  /** Every open challenge, and the most recently settled ones (at most maxSettledInMemory); the store holds them all. */
  private readonly entries = new Map<string, ChallengeEntry>();
  /** Ids of the settled challenges in memory, least recently stored first. */
  private readonly settled = new Set<string>();
  private readonly pending = new Set<string>();
  private readonly openedListeners: ChallengeListener[] = [];
  private readonly verdictListeners: ChallengeListener[] = [];
  private readonly commitListeners: ChallengeListener[] = [];
  private readonly escalationListeners: ChallengeListener[] = [];
  /** Writes of one challenge's entry run one at a time (votes arrive concurrently). */
  private readonly lock = new KeyedLock();
  /** Signed votes of challenges not heard of yet (gossip does not keep order). */
  private readonly early: EarlyVotes;
  /** Direct deliveries of its events (challenge-deliveries.ts); none without a way to send. */
  private readonly deliveries: ChallengeDeliveries | null;
  private sweeping = false;
  /** Fetches of sealed results under way, by result_sha256 (sealedBody). */
  private readonly fetching = new Map<string, Promise<SealedResult>>();
  /** Challenges whose opener this node asked for its verdict and could not reach (addsLate: any node's document then). */
  private readonly openerUnreachable = new BoundedSet<string>(4096);
  private readonly counts = {
    refused_votes: 0,
    non_member_votes: 0,
    equivocations: 0,
    unknown_challenge_votes: 0,
    early_votes_taken: 0,
    early_votes_dropped: 0,
    verdicts_asked: 0,
    /** Challenges and verdicts refused here: failing a check against this node's own state, or forged. */
    refused_challenges: 0,
    refused_verdicts: 0,
    /**
     * Challenges (alone or under a verdict) not kept because this node's records cannot check them: an executor's bond
     * not known here, a tick before its record of tick events, a listed node it has no record of (stateCheck).
     */
    unverifiable_challenges: 0,
    /** Challenges and verdicts refused because their sealed result, carried by digest, could not be had. */
    sealed_unavailable: 0,
    /** Commits refused (forged) or arriving after their window here. */
    refused_commits: 0,
    late_commits: 0,
    /** Member votes heard after their round's deadline + grace here: kept as evidence, not counted (takeVote). */
    late_votes: 0,
    /** Verdict documents from a node other than the opener that would add votes this node did not hear in time. */
    late_vote_documents: 0,
    /** Attempts at owed effects (owed-effects.ts) that failed, each to be made again (retryOwedEffects). */
    owed_effect_failures: 0,
  };
  /** Whether a marker of an owed effect may be left: set by every verdict's batch, cleared by a pass that finds none. */
  private owedLeft = true;
  private retryingOwed = false;

  constructor(private readonly o: ChallengeServiceOptions) {
    this.sub = o.store.sub('challenges');
    this.index = new ChallengeIndex(o.store, STATES);
    this.owed = new OwedEffects(o.store);
    this.deliveries = o.send
      ? new ChallengeDeliveries({
          send: o.send,
          nowSvcond: o.nowSvcond,
          nodeId: () => o.nodeId(),
          graceTicks: this.graceTicks(),
          verdictDelivered: (id) => this.update(id, (cur) => ({ ...cur, verdict_delivered: true })),
        })
      : null;
    this.early = new EarlyVotes(
      o.earlyVotes ?? {},
      () => o.policy.deadlineTicks + this.graceTicks(),
      (votes) => (this.counts.early_votes_dropped += votes),
    );
  }

  /**
   * At start: every open challenge into memory, found by the by-state index; no settled challenge is read (those
   * whose effects are owed are read by resumeEffects, the others on demand). The counts per state from their record.
   */
  async load(): Promise<void> {
    const indexed = await this.index.backfill(this.sub);
    const bondActive = (bondId: string) => {
      const zid = this.o.bonds.get(bondId)?.bond?.bond.zid;
      return zid !== undefined && this.o.bonds.ofZid(zid)?.bond.bond_id === bondId;
    };
    await this.owed.backfill(this.sub, this.o.nodeId(), this.deliveries !== null, this.o.nowSvcond() - this.o.policy.deadlineTicks, bondActive);
    await this.index.count(indexed > 0);
    const open = await this.index.idsIn(STATES.filter((s) => !isTerminal(s)));
    for (const id of open) {
      const e = await this.o.store.get<ChallengeEntry>(this.sub, id);
      if (e && !isTerminal(e.state)) this.cache(e);
    }
  }

  /** Called with a challenge this node has just learned of (the re-executor votes from here). */
  onOpened(l: ChallengeListener): void {
    this.openedListeners.push(l);
  }

  /** Called when a member's commit is recorded here (the re-executor reveals once every member has committed). */
  onCommit(l: ChallengeListener): void {
    this.commitListeners.push(l);
  }

  /** Called when a challenge's round 0 ended without a quorum and it escalated here (the re-executor commits again). */
  onEscalated(l: ChallengeListener): void {
    this.escalationListeners.push(l);
  }

  /** Called once a verdict is recorded here, and again at start for every recorded verdict (effects resume). */
  onVerdict(l: ChallengeListener): void {
    this.verdictListeners.push(l);
  }

  /** A challenge held in memory: every open one, and the recently settled ones (find reads the others). */
  get(id: string): ChallengeEntry | null {
    return this.entries.get(id) ?? null;
  }

  /** A challenge, from memory or the store. */
  async find(id: string): Promise<ChallengeEntry | null> {
    return this.entries.get(id) ?? (await this.o.store.get<ChallengeEntry>(this.sub, id)) ?? null;
  }

  /** The challenges in memory: every open one and the recently settled ones. */
  all(): ChallengeEntry[] {
    return [...this.entries.values()];
  }

  /** How many stored challenges are in each state (kept with every write: challenge-index.ts). */
  countsByState(): Record<ChallengeState, number> {
    return Object.fromEntries(STATES.map((s) => [s, this.index.countOf(s)])) as Record<ChallengeState, number>;
  }

  stats(): Record<string, number> {
    return { ...this.counts };
  }

  /** What this node holds in memory (bounded: open challenges, settled ones up to the bound, early votes, deliveries). */
  memory(): { open: number; settled: number; early_votes: number; deliveries: number } {
    return {
      open: this.entries.size - this.settled.size,
      settled: this.settled.size,
      early_votes: this.early.size(),
      deliveries: this.deliveries?.size() ?? 0,
    };
  }

  /** Open challenges against a bond (the release hook; open challenges are all in memory). */
  openAgainst(bondId: string): string[] {
    return this.all()
      .filter((e) => e.challenge.challenge.executed_by.bond_id === bondId && !isTerminal(e.state))
      .map((e) => e.challenge.challenge.challenge_id)
      .sort();
  }

  /** Challenges against a bond, any state, newest tick first (from the by-bond index: those entries only). */
  async ofBond(bondId: string): Promise<ChallengeEntry[]> {
    const entries = await Promise.all((await this.index.ofBond(bondId)).map((id) => this.find(id)));
    return entries.filter((e): e is ChallengeEntry => e !== null);
  }

  /** Newest first, filtered by state, paged (read from the store, which holds every challenge). */
  async list(opts: { state?: ChallengeState; limit: number; offset: number }): Promise<{ total: number; items: ChallengeEntry[] }> {
    // One page of ids from the index by tick (by state and tick), then those entries only (memory, else the store).
    const { total, ids } = await this.index.page(opts.state, opts.limit, opts.offset);
    const items = await Promise.all(ids.map((id) => this.find(id)));
    return { total, items: items.filter((e): e is ChallengeEntry => e !== null) };
  }

  /**
   * Intake at the challenger's home: `zid` challenges `resultId` with `claimedDigest`. 404 unknown result; 403
   * SVC_RESULT_UNPUBLISHED; 409 SVC_NOT_AT_STAKE (no bond behind the result); 400 a claim equal to the executor's
   * digest; 409 a second challenge of the result by the identity; 409 SVC_NO_COMMITTEE; 402 for the stake. The
   * stake and the challenge land in one batch; then the challenge is gossiped, and sent to each committee member and
   * the bond's home directly (outbox.ts) until they acknowledge it or the deadline passes.
   */
  async open(zid: string, resultId: string, claimedDigest: string, carried?: unknown): Promise<ChallengeEntry> {
    const id = challengeIdOf(resultId, zid);
    const conflict = (state: ChallengeState) =>
      new ServiceError(409, 'SVC_CONFLICT', 'this identity has already challenged this result', { challenge_id: id, state });
    if (this.pending.has(id)) throw conflict('opened');
    this.pending.add(id);
    try {
      const again = await this.find(id);
      if (again) throw conflict(again.state);
      const r = await this.o.lookup(resultId, carried);
      if (!r) throw new ServiceError(404, 'SVC_NOT_FOUND', `no published result ${resultId} is known to the mesh`, { result_id: resultId });
      if (!r.published)
        throw new ServiceError(403, 'SVC_RESULT_UNPUBLISHED', `result ${resultId} is not published by its owner: only published results can be challenged`, {
          result_id: resultId,
        });
      if (!r.executed_by)
        throw new ServiceError(409, 'SVC_NOT_AT_STAKE', `result ${resultId} was not executed by a contributing node: no bond is at stake`, {
          result_id: resultId,
        });
      if (claimedDigest === r.result_digest) throw new InputError('claimed_digest', "equals the executor's digest: there is nothing to challenge", null);
      if (this.o.verifyExecution && !this.o.verifyExecution({ ...r, executed_by: r.executed_by }))
        throw new ServiceError(409, 'SVC_NOT_AT_STAKE', `result ${resultId}: its executed_by signature does not verify`, { result_id: resultId });
      const bondFault = this.executorBondFault(r.executed_by);
      if (bondFault)
        throw new ServiceError(409, 'SVC_NOT_AT_STAKE', `result ${resultId}: ${bondFault.fault}`, {
          result_id: resultId,
          bond_id: r.executed_by.bond_id,
          node: r.executed_by.node,
        });
      const now = this.o.nowSvcond();
      const home = this.o.nodeId();
      const p = this.o.policy;
      const eligible = eligibleNodes(this.o.candidates(), {
        ...this.exclusions(r.executed_by, home),
        svcond: now,
        settleTicks: p.settleTicks,
        live: { from: now - p.liveTicks, to: now, ...this.liveReading() },
      });
      const quorum = quorumOf(p.committeeSize);
      // A smaller committee would let fewer members decide than the policy promises: never formed.
      if (eligible.length < p.committeeSize)
        throw new ServiceError(
          409,
          'SVC_NO_COMMITTEE',
          `${eligible.length} node(s) are bonded, settled and heard contributing in the last ${p.liveTicks} ticks; a committee needs ${p.committeeSize}`,
          { eligible: eligible.length, committee_size: p.committeeSize, live_ticks: p.liveTicks },
        );
      // T and the eligible set are fixed before the draw event exists: nobody who knows them can pick the seed.
      const draw = await this.awaitDraw(eligible, now, this.drawPatience(eligible));
      const committee = committeeOf(drawSeedOf({ result_id: resultId, draw }), eligible, p.committeeSize);
      const challenge: ChallengeRecord = {
        challenge_id: id,
        result_id: resultId,
        challenger: zid,
        challenger_home: home,
        claimed_digest: claimedDigest,
        executor_digest: r.result_digest,
        executed_by: r.executed_by,
        request: r.request,
        stamp_svcond: r.stamp_svcond,
        svcond: now,
        deadline_svcond: draw.svcond + p.deadlineTicks,
        committee_size: p.committeeSize,
        quorum,
        eligible,
        committee,
        draw,
      };
      const signed = withSealedDigest({
        challenge,
        signature: this.o.sign(challengeSigningText(challenge)),
        ...(r.sealed !== undefined ? { result: r.sealed } : {}),
      });
      // Every node refuses a challenge whose carried result fails: it is not opened (nor its stake held) here either.
      const resultFault = this.resultFault(signed);
      if (resultFault)
        throw new InputError(
          'result',
          r.sealed === undefined ? `a challenge carries the sealed result: the home of ${resultId} gave none (none kept); carry it in \`result\`` : resultFault,
          null,
        );
      const stake = await this.o.holdStake(zid, p.challengeStake);
      const entry = this.newEntry(signed, stake.hold);
      try {
        await this.write(entry, null, stake.ops);
      } catch (err) {
        stake.rollback();
        throw err;
      }
      this.cache(entry);
      await this.gossip(CHALLENGE_OPENED_EVENT, forMesh(signed));
      this.deliveries?.challenge(entry, { ...challenge, round: 0 });
      this.fire(this.openedListeners, entry);
      return entry;
    } finally {
      this.pending.delete(id);
    }
  }

  /**
   * The draw event of a challenge at tick `T` over `eligible`: the first tick event a node of the set signs after T
   * (drawEventOf over the latest heard from each), looked for until one comes; 409 SVC_NO_COMMITTEE when none has
   * come within `patience` ticks (every node of the set was heard within as many before T).
   */
  private async awaitDraw(eligible: readonly string[], T: number, patience: number): Promise<DrawEvent> {
    for (;;) {
      const draw = drawEventOf(this.o.tickEvents(), eligible, T);
      if (draw) return draw;
      if (this.o.nowSvcond() > T + patience)
        throw new ServiceError(409, 'SVC_NO_COMMITTEE', `no node of the eligible set ticked in the ${patience} ticks after the challenge's tick`, {
          eligible: eligible.length,
          committee_size: this.o.policy.committeeSize,
          live_ticks: this.o.policy.liveTicks,
        });
      await new Promise((r) => setTimeout(r, this.o.drawPollMs ?? 50));
    }
  }

  /** How long the intake waits for a draw event: liveTicks read in the longest interval a node of the set ticks at. */
  private drawPatience(eligible: readonly string[]): number {
    const set = new Set(eligible);
    const p = this.o.policy;
    let ticks = p.liveTicks;
    for (const c of this.o.candidates())
      if (set.has(c.node)) ticks = Math.max(ticks, inSenderIntervals(p.liveTicks, c.heard[c.heard.length - 1]?.every, this.o.baseEvery ?? 4));
    return ticks;
  }

  /**
   * Record this node's own commit (the re-executor) with `extra` ops in its batch (its salt, kept until it reveals),
   * gossip it, and send it to the opener until it acknowledges.
   */
  async castCommit(commit: SignedCommit, extra: Op[] = []): Promise<void> {
    await this.recordCommit(commit, extra);
    await this.gossip(COMMIT_EVENT, commit);
    const e = await this.find(commit.commit.challenge_id);
    if (e) this.deliveries?.commit(e, commit);
  }

  /**
   * Record this node's own vote (the re-executor) with `extra` ops in its batch (its salt deleted), gossip it, and
   * send it to the opener until it acknowledges.
   */
  async castVote(vote: SignedVote, extra: Op[] = []): Promise<void> {
    await this.recordVote(vote, extra);
    await this.gossip(VOTE_EVENT, vote);
    const e = await this.find(vote.vote.challenge_id);
    if (e) this.deliveries?.vote(e, vote);
  }

  /** The verdict document of a decided challenge in memory (null before, or when not in memory: see documentOf). */
  document(id: string): VerdictDocument | null {
    const e = this.entries.get(id);
    return e ? documentOf(e) : null;
  }

  /**
   * Past the deadline and a grace for votes in flight: the opener declares no_quorum from the votes it holds; any other
   * node first asks the opener for its verdict (gossip may have missed it votes, and a verdict folded from fewer votes
   * than the opener's would differ from everyone else's), and only once the opener has stayed unreachable for
   * askPatienceTicks more does it declare no_quorum on its own. Called on a timer.
   */
  async sweepDeadlines(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      const now = this.o.nowSvcond();
      this.early.expire(now);
      const grace = this.graceTicks();
      const me = this.o.nodeId();
      const due = this.all().filter((e) => !isTerminal(e.state) && now > this.currentDeadline(e) + grace);
      await Promise.all(
        due.map(async (e) => {
          const c = e.challenge.challenge;
          // Round 0 of a challenge that can escalate: every node folds it itself; no_quorum there is no verdict, only
          // the larger committee, and a node that missed votes is moved on by the opener's verdict when it comes.
          if (e.state !== 'escalated' && escalationOf(c) !== null) {
            await this.lock.run(c.challenge_id, async () => {
              const cur = await this.find(c.challenge_id);
              if (cur && !isTerminal(cur.state) && cur.state !== 'escalated') await this.refold(cur, 1, false);
            });
            return;
          }
          if (c.challenger_home !== me && this.o.ask) {
            this.counts.verdicts_asked++;
            const doc = await this.o.ask(c.challenger_home, c.challenge_id).catch(() => {
              this.openerUnreachable.add(c.challenge_id);
              return null;
            });
            if (
              doc &&
              (await this.applyVerdict(doc, c.challenger_home).then(
                () => true,
                () => false,
              ))
            )
              return;
            if (now <= this.currentDeadline(e) + grace + this.askPatience()) return;
          }
          await this.lock.run(c.challenge_id, async () => {
            const cur = await this.find(c.challenge_id);
            if (cur && !isTerminal(cur.state)) await this.refold(cur, cur.state === 'escalated' ? 2 : 1, false);
          });
        }),
      );
    } finally {
      this.sweeping = false;
    }
  }

  /** Attempt the direct deliveries that are due (outbox.ts). Called on the consensus timer. */
  async flushDeliveries(): Promise<void> {
    await this.deliveries?.flush();
  }

  deliveryStats(): Record<string, number> {
    return this.deliveries?.stats() ?? { queued: 0 };
  }

  /**
   * Gossip keeps no history: a node that missed a challenge's events would never learn its verdict. The opener and
   * the committee announce each verdict again, for `deadlineTicks` after it was decided; a node that has it already
   * changes nothing. (The bond's home, which applies the slashing, also gets it directly from the opener.)
   */
  async reannounceVerdicts(): Promise<void> {
    // From the markers put in each verdict's batch where this node announces (owed-effects.ts): a stop in the window
    // does not end it, and a verdict out of memory is read; a marker past its window is deleted.
    const now = this.o.nowSvcond();
    const done: Op[] = [];
    for (const { id, decided } of await this.owed.announcing()) {
      const e = now - decided > this.o.policy.deadlineTicks ? null : await this.find(id);
      if (!e?.verdict) done.push(this.owed.announceDone(id));
      else await this.gossip(VERDICT_EVENT, forMesh(documentOf(e)!));
    }
    if (done.length > 0) await this.o.store.commit(done);
  }

  /**
   * At start: run the verdict listeners again for every verdict with an effect still owed here (owed-effects.ts; each
   * effect is idempotent), and queue again the direct deliveries not yet acknowledged (the verdicts this node opened,
   * its votes and challenges still open). Only the challenges the markers name are read.
   */
  async resumeEffects(): Promise<void> {
    await this.retryOwedEffects();
    const me = this.o.nodeId();
    for (const e of this.all()) {
      if (isTerminal(e.state)) continue;
      const round = this.currentRound(e);
      if (e.challenge.challenge.challenger_home === me) this.deliveries?.challenge(e, round);
      const mine = e.votes.find((v) => v.vote.voter === me && roundOf(v.vote) === round.round);
      if (mine) this.deliveries?.vote(e, mine);
    }
  }
  /**
   * Attempt again every effect still owed here (its marker left: an attempt failed, e.g. the bond's home could not
   * reach the custodians of the identities it writes, or the node stopped first), and queue again the verdicts to
   * deliver. Each effect is idempotent on its own record, so one done stays done. Run at start and on the consensus
   * timer; no scan while no marker is left. A failed attempt is logged at debug and counted (owed_effect_failures).
   */
  async retryOwedEffects(): Promise<void> {
    if (!this.owedLeft || this.retryingOwed) return;
    this.retryingOwed = true;
    // Cleared before the markers are read: a verdict whose batch lands meanwhile sets it again.
    this.owedLeft = false;
    try {
      const owed = await this.owed.owed();
      if (owed.size > 0) this.owedLeft = true;
      for (const [id, kinds] of owed) await this.attemptOwed(id, kinds);
    } catch (err) {
      this.owedLeft = true;
      throw err;
    } finally {
      this.retryingOwed = false;
    }
  }

  private async attemptOwed(id: string, kinds: readonly OwedKind[]): Promise<void> {
    const e = await this.find(id);
    if (!e?.verdict) {
      await this.o.store.commit(this.owed.clearOps(id));
      return;
    }
    // A delivery only is the outbox's to retry (queued again below); the listeners apply every other kind.
    const applies = kinds.some((k) => k !== 'deliver');
    for (const l of applies ? this.verdictListeners : []) {
      try {
        await l(e);
      } catch (err) {
        this.counts.owed_effect_failures++;
        this.o.logger?.debug({ challengeId: id, err: String(err) }, 'an owed verdict effect failed: attempted again');
      }
    }
    this.deliveries?.verdict(e, documentOf(e));
  }

  // ---------------------------------------------------------------- gossip rows

  handlers(): [GossipHandler<SignedChallenge>, GossipHandler<SignedCommit>, GossipHandler<SignedVote>, GossipHandler<VerdictDocument>] {
    return [
      { type: CHALLENGE_OPENED_EVENT, body: signedChallengeSchema as unknown as z.ZodType<SignedChallenge>, handle: (b, e) => this.applyOpened(b, e) },
      { type: COMMIT_EVENT, body: signedCommitSchema, handle: (b, e) => this.applyCommit(b, e) },
      { type: VOTE_EVENT, body: signedVoteSchema, handle: (b, e) => this.applyVote(b, e) },
      { type: VERDICT_EVENT, body: verdictDocumentSchema as unknown as z.ZodType<VerdictDocument>, handle: (b, e) => this.applyVerdict(b, e.sender) },
    ];
  }

  /** [REJECT] a challenge not sent by its opener or failing its checks; known bonds must have settled. Idempotent. */
  async applyOpened(sc: SignedChallenge, event: Pick<MeshEvent, 'sender'>): Promise<void> {
    const c = sc.challenge;
    if (event.sender !== c.challenger_home) throw new GossipError('reject', 400, 'INVALID_CHALLENGE', "a challenge must be gossiped by the challenger's home");
    await this.learnChallenge(sc);
  }

  private async learnChallenge(sc: SignedChallenge): Promise<ChallengeEntry> {
    const c = sc.challenge;
    const known = await this.find(c.challenge_id);
    if (known) {
      if (canonicalJson(known.challenge.challenge) !== canonicalJson(c))
        throw new GossipError('reject', 400, 'INVALID_CHALLENGE', 'another challenge under a known id');
      return known;
    }
    const refuse = (fault: string): never => {
      this.counts.refused_challenges++;
      throw new GossipError('reject', 400, 'INVALID_CHALLENGE', fault);
    };
    const fault = challengeFault(sc, this.o.verify);
    if (fault) refuse(fault);
    const state = this.stateCheck(c);
    if (state?.unverifiable) {
      // Not wrong, only not checkable here: the sender is not penalised, and nothing of it is kept or acted on.
      this.counts.unverifiable_challenges++;
      throw new GossipError('ignore', 409, 'INVALID_CHALLENGE', `not checkable against this node's records: ${state.fault}`);
    }
    if (state) refuse(state.fault);
    // Checked and kept with its sealed result in full, fetched when the event carried only its digest.
    const full = await this.sealedBody(sc, null).catch((err: unknown) => refuse(sealedRefusal(err)));
    const resultFault = this.resultFault(full);
    if (resultFault) refuse(resultFault);
    const entry = this.newEntry(withSealedDigest(full), null);
    let added = false;
    await this.lock.run(c.challenge_id, async () => {
      if (await this.find(c.challenge_id)) return;
      await this.write(entry, null);
      this.cache(entry);
      added = true;
    });
    if (added) {
      this.fire(this.openedListeners, entry);
      await this.takeEarlyVotes(c.challenge_id);
    }
    return (await this.find(c.challenge_id))!;
  }

  /**
   * [REJECT] forged votes (signature, sender); [IGNORE] votes of non-members (counted) and of challenges not heard of
   * yet — those are held (bounded, expiring) and counted once their challenge arrives.
   */
  async applyVote(sv: SignedVote, event: Pick<MeshEvent, 'sender'>): Promise<void> {
    const id = sv.vote.challenge_id;
    if (event.sender !== sv.vote.voter) {
      this.counts.refused_votes++;
      throw new GossipError('reject', 400, 'INVALID_VOTE', 'a vote must be gossiped by its voter');
    }
    const fault = voteFault(sv, id, this.o.verify);
    const e = await this.find(id);
    if (fault) {
      this.counts.refused_votes++;
      if (e) await this.update(id, (cur) => ({ ...cur, refused_votes: cur.refused_votes + 1 }));
      throw new GossipError('reject', 400, 'INVALID_VOTE', fault);
    }
    if (!e) {
      this.counts.unknown_challenge_votes++;
      this.early.hold(sv, this.o.nowSvcond());
      throw new GossipError('ignore', 404, 'SVC_NOT_FOUND', `no challenge ${id} is known here yet: the vote is held until it arrives`);
    }
    if (!(await this.takeVote(sv, this.o.nowSvcond())))
      throw new GossipError('ignore', 403, 'SVC_NOT_A_MEMBER', `${sv.vote.voter} is not on the committee of ${id}`);
  }

  /**
   * [REJECT] forged commits (signature, sender); [IGNORE] commits of challenges not known here, of non-members, and
   * those arriving after the commit window (+ grace) by this node's clock: a commit made once reveals are out could
   * copy one, so it is not taken, whatever tick it claims.
   */
  async applyCommit(sc: SignedCommit, event: Pick<MeshEvent, 'sender'>): Promise<void> {
    const id = sc.commit.challenge_id;
    if (event.sender !== sc.commit.voter) {
      this.counts.refused_commits++;
      throw new GossipError('reject', 400, 'INVALID_VOTE', 'a commit must be gossiped by its voter');
    }
    const fault = commitFault(sc, id, this.o.verify);
    if (fault) {
      this.counts.refused_commits++;
      throw new GossipError('reject', 400, 'INVALID_VOTE', fault);
    }
    const e = await this.find(id);
    if (!e) throw new GossipError('ignore', 404, 'SVC_NOT_FOUND', `no challenge ${id} is known here`);
    const view = roundView(e.challenge.challenge, roundOf(sc.commit));
    if (!view?.committee.includes(sc.commit.voter))
      throw new GossipError('ignore', 403, 'SVC_NOT_A_MEMBER', `${sc.commit.voter} is not on the committee of ${id} in round ${roundOf(sc.commit)}`);
    if (this.o.nowSvcond() > commitDeadlineOf(view) + this.graceTicks()) {
      this.counts.late_commits++;
      throw new GossipError('ignore', 409, 'INVALID_VOTE', `the commit window of ${id} has closed here`);
    }
    await this.recordCommit(sc);
  }

  /**
   * A verdict from another node (`from`: the node that signed the event or answered the ask): its challenge and votes
   * are checked and folded here; then it is this node's too. Past a round's deadline + grace on this node's clock, only
   * the opener's document may add votes or commits this node did not hear in time (takeVote): anyone holding a
   * member's held-back reveal could otherwise wrap it in a document of their own and split the verdict from the
   * opener's. Once this node has failed to reach the opener, or the opener has stayed silent for askPatienceTicks
   * more, any node's document is taken: a node that missed votes while the opener is down converges on the
   * committee's announced verdict rather than declaring its own no_quorum.
   */
  async applyVerdict(doc: VerdictDocument, from?: string): Promise<void> {
    const check = verifyVerdictDocument(doc, this.o.verify);
    const passed = passedRoundsOf(doc.verdict);
    const deadlineOk = passed === 0 || this.o.nowSvcond() > roundDeadlineOf(doc.challenge.challenge, passed === 2 ? 1 : 0);
    if (!check.valid) {
      this.counts.refused_verdicts++;
      throw new GossipError('reject', 400, 'INVALID_VERDICT', check.reasons.join('; '));
    }
    if (!deadlineOk) throw new GossipError('ignore', 409, 'INVALID_VERDICT', 'the deadline the verdict rests on has not passed here');
    // Its challenge is checked against this node's own state (stateFault) unless this node accepted it already.
    const e = await this.learnChallenge(doc.challenge).catch((err: unknown) => {
      if (err instanceof GossipError && err.action === 'reject') {
        this.counts.refused_verdicts++;
        throw new GossipError('reject', 400, 'INVALID_VERDICT', `its challenge is refused here: ${err.message}`);
      }
      throw err;
    });
    // Whether this node knew the challenge or not, the result this document carries must be the challenged one.
    const refuse = (fault: string): never => {
      this.counts.refused_verdicts++;
      throw new GossipError('reject', 400, 'INVALID_VERDICT', `its carried result is refused here: ${fault}`);
    };
    const full = await this.sealedBody(doc.challenge, e).catch((err: unknown) => refuse(sealedRefusal(err)));
    const resultFault = this.resultFault(full);
    if (resultFault) refuse(resultFault);
    const id = e.challenge.challenge.challenge_id;
    await this.lock.run(id, async () => {
      const cur = await this.find(id);
      if (!cur || isTerminal(cur.state)) return;
      const late = from === e.challenge.challenge.challenger_home ? 0 : this.addsLate(cur, doc);
      if (late > 0) {
        this.counts.late_vote_documents++;
        throw new GossipError(
          'ignore',
          409,
          'INVALID_VERDICT',
          `it adds ${late} vote(s) or commit(s) this node did not hear before their window closed; only the opener's document may`,
        );
      }
      const merged = mergeVotes(cur.votes, doc.votes);
      // Its commits were checked with the document (verifyVerdictDocument): the opener's record of the window.
      const commits = mergeCommits(cur.commits ?? [], doc.commits ?? []);
      await this.refold({ ...cur, votes: merged, commits }, passed, false);
    });
  }

  /**
   * What is wrong with a challenge judged from this node's own state (null when nothing; the signed record's own
   * checks are challengeFault's), as one reason (stateCheck).
   */
  stateFault(c: ChallengeRecord): string | null {
    return this.stateCheck(c)?.fault ?? null;
  }

  /**
   * A challenge judged from this node's own state (null when nothing is wrong; the signed record's own checks are
   * challengeFault's): the policy's committee size, never a smaller committee, and its deadline the draw's tick +
   * deadlineTicks; the executor's bond held under the executor's node; every listed node bonded here, its bond
   * settled by the challenge's tick, one per operator, not the executor's operator, and heard contributing around
   * that tick; the draw event the first tick event after it; and no node this node heard contributing well inside the
   * window left out.
   * `unverifiable`: nothing found wrong, but this node's records cannot confirm it — the executor's bond is not known
   * here, the challenge's tick is before this node's record of tick events, a listed node was not heard where this
   * node's record does not reach back over its live window, or its bond record was heard here too recently to count
   * as settled. Such a challenge is not kept and no verdict resting on it is applied here: a node never acts on a
   * committee it could not check (docs/decisions.md, "Consensus: a challenge is acted on only where it was checked").
   */
  stateCheck(c: ChallengeRecord): { fault: string; unverifiable?: true } | null {
    const p = this.o.policy;
    const unverifiable = (fault: string) => ({ fault, unverifiable: true as const });
    if (c.committee_size !== p.committeeSize) return { fault: `the committee size is ${c.committee_size}; the policy's is ${p.committeeSize}` };
    if (c.committee.length !== c.committee_size) return { fault: `a committee of ${c.committee.length} is smaller than the policy's ${c.committee_size}` };
    if (c.deadline_svcond !== c.draw.svcond + p.deadlineTicks)
      return {
        fault: `the deadline is tick ${c.deadline_svcond}; the policy's is the draw event's tick + ${p.deadlineTicks} = ${c.draw.svcond + p.deadlineTicks}`,
      };
    // A draw event dated ahead of every clock was signed in advance: whoever signed it chose its committee.
    if (c.draw.svcond > this.o.nowSvcond() + TICK_AHEAD_TICKS)
      return { fault: `the draw event is dated ${c.draw.svcond}, more than ${TICK_AHEAD_TICKS} ticks ahead of this node's clock` };
    const bond = this.executorBondFault(c.executed_by);
    if (bond) return bond.unknown ? unverifiable(bond.fault) : { fault: bond.fault };
    const covers = this.o.livenessCovers ?? (() => true);
    // The draw event must be the first after T, and the listed nodes live around T: a node that was not recording at
    // T cannot tell (a back-dated T is exactly that).
    if (!covers(c.svcond)) return unverifiable(`the challenge's tick ${c.svcond} is before this node's record of tick events`);
    const rule = { ...this.exclusions(c.executed_by, c.challenger_home), svcond: c.svcond, settleTicks: p.settleTicks };
    const candidates = this.o.candidates();
    const byNode = new Map(candidates.map((x) => [x.node, x]));
    const zids = new Set<string>();
    const loose = { from: c.svcond - p.liveTicks - LIVE_SLACK_TICKS, to: c.svcond + LIVE_SLACK_TICKS, ...this.liveReading() };
    let doubt: string | null = null;
    for (const node of c.eligible) {
      const cand = byNode.get(node);
      if (!cand) return { fault: `node ${node} is listed eligible, but holds no bond known here` };
      if (c.svcond - cand.bondSvcond < p.settleTicks) return { fault: `node ${node} is listed eligible, but its bond had not settled by the challenge's tick` };
      if (zids.has(cand.zid)) return { fault: `operator ${cand.zid} holds more than one seat` };
      zids.add(cand.zid);
      if (rule.executorZid && cand.zid === rule.executorZid) return { fault: `node ${node} is the executor's operator's` };
      // A bond record heard here long after its own tick settles from when it was heard (bonds.ts settledFrom).
      if (cand.settledFrom !== undefined && c.svcond - cand.settledFrom < p.settleTicks)
        doubt ??= `node ${node}'s bond was first heard here at tick ${cand.settledFrom + BOND_HEARD_SLACK_TICKS}, too late to count as settled by the challenge's tick`;
      if (heardContributing(cand, loose)) continue;
      // A node that ticks seldom is judged only where this node's record reaches back over its own live span; where
      // it does not, its liveness is not confirmed: the challenge is not checkable here.
      const every = cand.heard.length > 0 ? cand.heard[cand.heard.length - 1]!.every : MAX_TICK_INTERVAL;
      if (covers(loose.from - liveReach(p.liveTicks, every, loose.baseEvery), every))
        return { fault: `node ${node} is listed eligible, but was not heard contributing around the challenge's tick` };
      doubt ??= `node ${node} is listed eligible and was not heard here, whose record does not reach back over its live window`;
    }
    // The draw event must be the first after T: one signed later while another node of the set had ticked well
    // before it is the opener choosing among seeds. (This node's own record of itself is not its tick events.)
    const me = this.o.nodeId();
    for (const node of c.eligible) {
      if (node === me) continue;
      // Only a tick event advertising a bond can be a draw (it carries the draw proof: mesh/draw-proof.ts).
      const earlier = byNode.get(node)?.heard.find((h) => h.bondId !== null && h.svcond > c.svcond && h.svcond <= c.draw.svcond - DRAW_SLACK_TICKS);
      if (earlier)
        return {
          fault: `node ${node} ticked at ${earlier.svcond}, before the draw event's tick ${c.draw.svcond}: the draw takes the first tick event after the challenge's tick`,
        };
    }
    if (covers(c.svcond - p.liveTicks)) {
      const listed = new Set(c.eligible);
      const strict = eligibleNodes(candidates, {
        ...rule,
        live: { from: c.svcond - p.liveTicks + LIVE_SLACK_TICKS, to: c.svcond - LIVE_SLACK_TICKS, ...this.liveReading() },
      });
      const missing = strict.filter((n) => !listed.has(n) && !zids.has(byNode.get(n)!.zid));
      if (missing.length > 0) return { fault: `node(s) ${missing.join(', ')} were heard contributing before the challenge's tick but are not listed eligible` };
    }
    return doubt === null ? null : unverifiable(doubt);
  }

  /**
   * Is the bond a result's executed_by names held by the node it names, in this node's registry? A bond id counts
   * only for the node the registry holds it under: another node's bond is a fault (a liar framing its holder); a bond
   * not known here is `unknown` (gossip keeps no order: the bond may come later).
   */
  executorBondFault(e: ExecutedBy): { fault: string; unknown?: true } | null {
    const holder = this.o.bonds.holderOf(e.bond_id);
    if (holder === null) return { fault: `executed_by names bond ${e.bond_id}, which is not known here`, unknown: true };
    if (holder !== e.node) return { fault: `executed_by names bond ${e.bond_id}, which is held by node ${holder}, not by the executor ${e.node}` };
    return null;
  }

  /**
   * stateFault for a challenge from elsewhere (a verdict document to verify): none for one this node accepted already
   * under the same record (it was checked then, against the state of that moment).
   */
  async checkAgainstState(c: ChallengeRecord): Promise<string | null> {
    const known = await this.find(c.challenge_id);
    if (known && canonicalJson(known.challenge.challenge) === canonicalJson(c)) return null;
    return this.stateFault(c);
  }

  /** What is wrong with the result a challenge carries (carriedResultFault; null without a result verifier). */
  resultFault(sc: SignedChallenge): string | null {
    return this.o.verifyResult ? carriedResultFault(sc, this.o.verifyResult) : null;
  }

  // ---------------------------------------------------------------- internals

  /**
   * The signed challenge with its sealed result in full: as it came, when it came with it (or names none: the
   * checks refuse that); else the copy this node holds under the same result_sha256, else asked for from the
   * sources (the opener, the result's home), a body counting only when its digest is the one named. Rounds of
   * asking are bounded (sealedAttempts, backing off); after the last it throws a SealedUnavailable naming why.
   * Concurrent asks for one digest share one fetch.
   */
  private async sealedBody(sc: SignedChallenge, known: ChallengeEntry | null): Promise<SignedChallenge> {
    const want = sc.result_sha256;
    if (sc.result !== undefined || want === undefined) return sc;
    const held = known?.challenge.result;
    if (held !== undefined && sealedDigestOf(held) === want) return { ...sc, result: held };
    let fetching = this.fetching.get(want);
    if (!fetching) {
      fetching = this.fetchSealed(sc, want).finally(() => this.fetching.delete(want));
      this.fetching.set(want, fetching);
    }
    return { ...sc, result: await fetching };
  }

  private async fetchSealed(sc: SignedChallenge, want: string): Promise<SealedResult> {
    const attempts = Math.max(1, this.o.sealedAttempts ?? 3);
    let why = 'no node to ask';
    for (let attempt = 0; attempt < attempts; attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, (this.o.sealedRetryMs ?? 250) * 2 ** (attempt - 1)));
      for (const source of this.o.sealedSources?.(sc) ?? []) {
        try {
          const body = await source.get();
          if (body === null || body === undefined || typeof body !== 'object' || Array.isArray(body)) why = `${source.from} gave no sealed result`;
          else if (sealedDigestOf(body) !== want) why = `the sealed result ${source.from} gave is not the one result_sha256 names`;
          else return body as SealedResult;
        } catch (err) {
          why = `${source.from} could not be asked: ${err instanceof Error ? err.message : String(err)}`;
        }
      }
    }
    this.counts.sealed_unavailable++;
    throw new SealedUnavailable(`its sealed result (result_sha256 ${want}) could not be had in ${attempts} rounds of asking: ${why}`);
  }

  /** How a live window reads each tick event: liveTicks in the sender's intervals against the mesh's base interval. */
  private liveReading(): { liveTicks: number; baseEvery: number } {
    return { liveTicks: this.o.policy.liveTicks, baseEvery: this.o.baseEvery ?? 4 };
  }

  /** Who never sits on a challenge's committee: the executor, the challenger's home, the executor's operator. */
  private exclusions(executedBy: ExecutedBy, challengerHome: string): Pick<EligibilityRule, 'executor' | 'challengerHome' | 'executorZid'> {
    const bond = this.o.bonds.get(executedBy.bond_id)?.bond?.bond;
    // Only a bond the executor holds names its operator (another node's bond is refused before this matters).
    const executorZid = bond?.node === executedBy.node ? bond.zid : (this.o.bonds.ofNode(executedBy.node)?.bond.zid ?? null);
    return { executor: executedBy.node, challengerHome, executorZid };
  }

  /**
   * A vote whose signature holds, for a known challenge, heard at `heardAt` on this node's clock: a non-member's is
   * counted (false), a member's recorded — unless it was heard after its round's deadline + grace while the challenge
   * is open: then it is kept as evidence and refused (409), whatever tick it claims. A vote's tick is its signer's
   * word; a member that held back its reveal and signed it with an earlier tick once the opener had declared
   * no_quorum would otherwise be counted by the nodes it reaches and not by the opener, and the verdict would split.
   */
  private async takeVote(sv: SignedVote, heardAt: number): Promise<boolean> {
    const id = sv.vote.challenge_id;
    const e = await this.find(id);
    if (!e) return false;
    const c = e.challenge.challenge;
    const round = roundOf(sv.vote);
    if (!roundView(c, round)?.committee.includes(sv.vote.voter)) {
      this.counts.non_member_votes++;
      await this.update(id, (cur) => ({ ...cur, non_member_votes: cur.non_member_votes + 1 }));
      return false;
    }
    if (!isTerminal(e.state) && heardAt > this.voteCutoff(c, round)) {
      this.counts.late_votes++;
      await this.update(id, (cur) => ({ ...cur, heard_late: mergeVotes(cur.heard_late ?? [], [sv]) }));
      throw new GossipError(
        'ignore',
        409,
        'INVALID_VOTE',
        `the voting window of ${id} (round ${round}) has closed here: the vote is kept as evidence, not counted`,
      );
    }
    await this.recordVote(sv);
    return true;
  }

  /**
   * How many of a document's votes and commits are new here and past their window on this node's clock: 0 once this
   * node has failed to reach the opener (the committee's announcements are then what it has) or the opener has stayed
   * silent for askPatienceTicks past the document's round.
   */
  private addsLate(cur: ChallengeEntry, doc: VerdictDocument): number {
    const c = cur.challenge.challenge;
    const now = this.o.nowSvcond();
    if (this.openerUnreachable.has(c.challenge_id) || now > this.voteCutoff(c, doc.verdict.round ?? 0) + this.askPatience()) return 0;
    // What mergeVotes and mergeCommits would add: a (voter, round, value) not held here.
    const key = (r: { voter: string; round?: 1 }, value: string): string => `${r.voter}|${roundOf(r)}|${value}`;
    const heldVotes = new Set(cur.votes.map((v) => key(v.vote, v.vote.digest)));
    const heldCommits = new Set((cur.commits ?? []).map((k) => key(k.commit, k.commit.commitment)));
    let late = 0;
    for (const v of doc.votes) if (!heldVotes.has(key(v.vote, v.vote.digest)) && now > this.voteCutoff(c, roundOf(v.vote))) late++;
    for (const k of doc.commits ?? []) {
      const view = roundView(c, roundOf(k.commit));
      if (!heldCommits.has(key(k.commit, k.commit.commitment)) && view && now > commitDeadlineOf(view) + this.graceTicks()) late++;
    }
    return late;
  }

  /** Ticks past deadline + grace that a node other than the opener waits for the opener's verdict. */
  private askPatience(): number {
    return this.o.askPatienceTicks ?? 4 * this.o.policy.deadlineTicks;
  }

  /** The last tick on this node's clock at which a vote of `round` is taken: the round's deadline + grace. */
  private voteCutoff(c: ChallengeRecord, round: Round): number {
    return roundDeadlineOf(c, round) + this.graceTicks();
  }

  /** The held votes of a challenge that has just arrived, each taken as heard when it was held. */
  private async takeEarlyVotes(id: string): Promise<void> {
    for (const { vote, heardAt } of this.early.take(id)) {
      this.counts.early_votes_taken++;
      await this.takeVote(vote, heardAt).catch(() => false);
    }
  }

  /** A member's commit (signature checked): kept once; a vote that arrived before it is folded again with it. */
  private async recordCommit(sc: SignedCommit, extra: Op[] = []): Promise<void> {
    const id = sc.commit.challenge_id;
    let added = false;
    await this.lock.run(id, async () => {
      const cur = await this.find(id);
      if (!cur) return;
      const commits = mergeCommits(cur.commits ?? [], [sc]);
      if (commits.length === (cur.commits ?? []).length) return;
      added = true;
      await this.refold({ ...cur, commits }, 0, true, extra);
    });
    const e = added ? await this.find(id) : null;
    if (e) this.fire(this.commitListeners, e);
  }

  private async recordVote(sv: SignedVote, extra: Op[] = []): Promise<void> {
    const id = sv.vote.challenge_id;
    await this.lock.run(id, async () => {
      const cur = await this.find(id);
      if (!cur) return;
      const votes = mergeVotes(cur.votes, [sv]);
      if (votes.length === cur.votes.length) {
        if (extra.length > 0) await this.o.store.commit(extra);
        return;
      }
      if (cur.votes.some((v) => v.vote.voter === sv.vote.voter && roundOf(v.vote) === roundOf(sv.vote))) this.counts.equivocations++;
      await this.refold({ ...cur, votes }, 0, true, extra);
    });
  }

  /** Change a stored entry (one at a time per challenge). */
  private async update(id: string, change: (cur: ChallengeEntry) => ChallengeEntry): Promise<void> {
    await this.lock.run(id, async () => {
      const cur = await this.find(id);
      if (!cur) return;
      const next = change(cur);
      await this.write(next, cur.state);
      this.cache(next);
    });
  }

  /**
   * Fold the entry's votes over `passedRounds` passed deadlines (at least round 0's once it escalated), move it
   * through the table, store it with `extra` ops; on a verdict, tell the listeners and gossip it; on an escalation,
   * tell the escalation listeners.
   */
  private async refold(entry: ChallengeEntry, passedRounds: 0 | 1 | 2, decidedHere: boolean, extra: Op[] = []): Promise<void> {
    const c = entry.challenge.challenge;
    if (isTerminal(entry.state)) {
      // A verdict stands; a vote after it is kept as evidence (equivocation) and changes nothing.
      await this.o.store.commit([...extra, ...this.putOps(entry)]);
      this.cache(entry);
      return;
    }
    const passed = entry.state === 'escalated' ? (Math.max(1, passedRounds) as 1 | 2) : passedRounds;
    const fold = foldChallenge(c, entry.votes, entry.commits ?? [], passed);
    const { path, effects } = move(entry.state, fold);
    const state = path.length > 0 ? path[path.length - 1]! : entry.state;
    const now = this.o.nowSvcond();
    const verdict: VerdictRecord | null =
      fold.outcome !== null && effects.includes('verdict')
        ? {
            challenge_id: c.challenge_id,
            outcome: fold.outcome,
            deciding_digest: fold.decidingDigest,
            tally: fold.tally,
            equivocators: fold.equivocators,
            non_member_votes: fold.nonMemberVotes + entry.non_member_votes,
            late_votes: fold.lateVotes,
            uncommitted_votes: fold.uncommittedVotes,
            decided_svcond: now,
            ticks_taken: Math.max(0, now - c.svcond),
            rests_on_votes: entry.votes.length,
            rests_on_commits: (entry.commits ?? []).length,
            ...(fold.round === 1 ? { round: 1 as const } : {}),
          }
        : null;
    const next: ChallengeEntry = { ...entry, state, verdict };
    // The effects this node owes for the verdict are marked in its batch (deleted by each effect's batch).
    const me = this.o.nodeId();
    const owed = verdict ? owedBy(next, me, this.deliveries !== null).map((k) => this.owed.put(c.challenge_id, k)) : [];
    if (verdict && announces(next, me)) owed.push(this.owed.announcePut(c.challenge_id, verdict.decided_svcond));
    await this.write(next, entry.state, [...owed, ...extra]);
    if (owed.length > 0) this.owedLeft = true;
    this.cache(next);
    if (effects.includes('escalate')) {
      const view = escalationOf(c);
      if (view) this.deliveries?.challenge(next, view);
      this.fire(this.escalationListeners, next);
    }
    if (!verdict) return;
    // The opener and the committee gossip the verdict they reached from votes, so a node that missed votes gets them.
    const members = fold.round === 1 ? (escalationOf(c)?.committee ?? c.committee) : c.committee;
    if (decidedHere && (c.challenger_home === me || members.includes(me) || c.executed_by.node === me))
      void this.gossip(VERDICT_EVENT, forMesh(documentOf(next)!));
    this.deliveries?.verdict(next, documentOf(next));
    this.fire(this.verdictListeners, next);
  }

  /** Keep an entry in memory: open ones always, settled ones up to the bound (the least recently stored go first). */
  private cache(e: ChallengeEntry): void {
    const id = e.challenge.challenge.challenge_id;
    this.entries.set(id, e);
    this.settled.delete(id);
    if (!isTerminal(e.state)) return;
    this.settled.add(id);
    while (this.settled.size > this.maxSettled()) {
      const oldest = this.settled.values().next().value!;
      this.settled.delete(oldest);
      this.entries.delete(oldest);
    }
  }

  /** The round a challenge is voted in now: 1 once it escalated here. */
  currentRound(e: ChallengeEntry): RoundView {
    const c = e.challenge.challenge;
    return (e.state === 'escalated' ? escalationOf(c) : null) ?? { ...c, round: 0 };
  }

  /** The deadline of the round a challenge is voted in now. */
  private currentDeadline(e: ChallengeEntry): number {
    return this.currentRound(e).deadline_svcond;
  }

  private maxSettled(): number {
    return Math.max(1, this.o.maxSettledInMemory ?? 512);
  }

  private graceTicks(): number {
    return this.o.graceTicks ?? 2;
  }

  private newEntry(sc: SignedChallenge, stake: StakeHold | null): ChallengeEntry {
    return {
      challenge: sc,
      state: 'opened',
      commits: [],
      votes: [],
      non_member_votes: 0,
      refused_votes: 0,
      verdict: null,
      stake,
      received_svcond: this.o.nowSvcond(),
    };
  }

  /**
   * Store an entry (before: in state `from`, null when new) with `extra` ops, in one batch with its index ops and the
   * per-state counts moved (in this turn, so batches land in the order the counts moved; undone if it fails).
   */
  private async write(next: ChallengeEntry, from: ChallengeState | null, extra: Op[] = []): Promise<void> {
    const moved = this.index.moveOps(from, next.state);
    try {
      await this.o.store.commit([...extra, ...this.putOps(next), ...moved.ops]);
    } catch (err) {
      moved.undo();
      throw err;
    }
  }

  /** The entry's put and its index ops (challenge-index.ts), for one batch; a verdict acknowledged is no longer owed. */
  private putOps(e: ChallengeEntry): Op[] {
    const id = e.challenge.challenge.challenge_id;
    const ops: Op[] = [{ type: 'put', sub: this.sub, key: id, value: e as unknown as Json }, ...this.index.ops(e)];
    if (e.verdict_delivered) ops.push(this.owed.done(id, 'deliver'));
    return ops;
  }

  private fire(listeners: ChallengeListener[], entry: ChallengeEntry): void {
    for (const l of listeners) void Promise.resolve(l(entry)).catch(() => undefined);
  }

  private async gossip(type: string, body: unknown): Promise<void> {
    if (!this.o.publish) return;
    await this.o.publish(type, body).catch(() => undefined);
  }
}

/** A sealed result carried by digest that no source gave (ChallengeService.sealedBody). */
class SealedUnavailable extends Error {}

/** The reason a refusal names for a failed sealedBody. */
function sealedRefusal(err: unknown): string {
  if (err instanceof SealedUnavailable) return err.message;
  throw err;
}

/**
 * What one voter keeps per round, votes or commits: two different ones show an equivocation, and more add only bytes
 * (a member signing ever new digests made every node rewrite a growing entry, and the verdict document outgrew its
 * schema, so it could not spread).
 */
const KEPT_PER_VOTER_AND_ROUND = 2;

/** Commits of `a` and `b`, each (voter, round, commitment) once, at most two of a voter in a round. */
function mergeCommits(a: readonly SignedCommit[], b: readonly SignedCommit[]): SignedCommit[] {
  return mergeKept(
    a,
    b,
    (k) => k.commit,
    (k) => k.commit.commitment,
  );
}

/** Votes of `a` and `b`, each (voter, round, digest) once, at most two of a voter in a round. */
function mergeVotes(a: readonly SignedVote[], b: readonly SignedVote[]): SignedVote[] {
  return mergeKept(
    a,
    b,
    (v) => v.vote,
    (v) => v.vote.digest,
  );
}

function mergeKept<T>(a: readonly T[], b: readonly T[], record: (x: T) => { voter: string; round?: 1 }, value: (x: T) => string): T[] {
  const out = [...a];
  for (const x of b) {
    const { voter } = record(x);
    const round = roundOf(record(x));
    const same = out.filter((y) => record(y).voter === voter && roundOf(record(y)) === round);
    if (same.length < KEPT_PER_VOTER_AND_ROUND && !same.some((y) => value(y) === value(x))) out.push(x);
  }
  return out;
}

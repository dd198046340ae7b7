// Challenges (architecture.md §6): intake at the challenger's home, the lifecycle as an explicit transition table,
// and the three gossip rows of svc/consensus/1 that carry a challenge to every node:
//   consensus.challenge.opened  {challenge, signature}        signed by the challenger's home (the opener)
//   consensus.vote              {vote, signature}             signed by a committee member
//   consensus.verdict           {challenge, votes, verdict}   the verdict with the signed votes it rests on
// Every node keeps every challenge it hears of, folds the votes itself (verdict.ts) and reaches the same outcome;
// a node that missed votes takes them from the verdict event, after checking each signature and re-running the fold.
// The challenge id is derived (chl_ + SHA-256(result_id|challenger)), not drawn: the opener cannot grind ids to
// pick a committee (the ranking hashes the id), and a second challenge of a result by one identity has the same id.
// Ledger effects (stake, slashing) belong to slashing.ts; re-execution and votes to reexecutor.ts.
import { z } from 'zod';
import { canonicalJson } from '../kernel/canonical.js';
import { sha256Hex } from '../kernel/bytes.js';
import { InputError, ServiceError } from '../kernel/errors.js';
import type { Json, Op, Store, Sublevel } from '../store/db.js';
import { GossipError } from '../mesh/gossip-error.js';
import type { GossipHandler } from '../mesh/gossip-handlers.js';
import type { MeshEvent } from '../mesh/wire.js';
import type { BondService } from './bonds.js';
import { committeeOf, eligibleNodes, type Candidate } from './committee.js';
import { quorumOf, type ContributionPolicy } from './policy.js';
import { foldVotes, OUTCOMES, type Fold, type Outcome } from './verdict.js';
import { executedBySchema, verifyExecution, type ExecutedBy } from './executed-by.js';

export type { ExecutedBy };

export const CHALLENGE_OPENED_EVENT = 'consensus.challenge.opened';
export const VOTE_EVENT = 'consensus.vote';
export const VERDICT_EVENT = 'consensus.verdict';

export const CHALLENGE_ID_PATTERN = /^chl_[0-9a-f]{32}$/;
export const DIGEST_PATTERN = /^[0-9a-f]{64}$/;

// ---------------------------------------------------------------- lifecycle

export const STATES = ['opened', 'voting', ...OUTCOMES] as const;
export type ChallengeState = (typeof STATES)[number];
/** What moves a challenge: a counted vote with no decision yet, a decision of the fold, or the deadline passing. */
export type LifecycleEvent = 'vote' | 'quorum_claim' | 'quorum_executor' | 'quorum_other' | 'deadline';

/** The lifecycle, one row per allowed move; anything else (every move out of a verdict) is refused. */
export const TRANSITIONS: readonly { from: ChallengeState; on: LifecycleEvent; to: ChallengeState }[] = [
  { from: 'opened', on: 'vote', to: 'voting' },
  { from: 'opened', on: 'deadline', to: 'no_quorum' },
  { from: 'voting', on: 'vote', to: 'voting' },
  { from: 'voting', on: 'quorum_claim', to: 'upheld' },
  { from: 'voting', on: 'quorum_executor', to: 'rejected' },
  { from: 'voting', on: 'quorum_other', to: 'not_reproducible' },
  { from: 'voting', on: 'deadline', to: 'no_quorum' },
];

/** The state after `on`, or null when the table has no such row. */
export function transition(from: ChallengeState, on: LifecycleEvent): ChallengeState | null {
  return TRANSITIONS.find((t) => t.from === from && t.on === on)?.to ?? null;
}

export function isTerminal(state: ChallengeState): boolean {
  return !TRANSITIONS.some((t) => t.from === state);
}

const EVENT_OF: Record<Outcome, LifecycleEvent> = {
  upheld: 'quorum_claim',
  rejected: 'quorum_executor',
  not_reproducible: 'quorum_other',
  no_quorum: 'deadline',
};

/**
 * The path from `state` through the table to what `fold` says: a first counted vote moves opened → voting, then
 * the decision (if any). Returns the states visited (empty when nothing moves).
 */
export function advance(state: ChallengeState, fold: Fold): ChallengeState[] {
  const path: ChallengeState[] = [];
  let s = state;
  const step = (on: LifecycleEvent) => {
    const next = transition(s, on);
    if (next !== null) {
      if (next !== s) path.push(next);
      s = next;
    }
  };
  if (fold.outcome === 'no_quorum') step('deadline');
  else {
    if (fold.counted.length > 0 && s === 'opened') step('vote');
    if (fold.outcome !== null) step(EVENT_OF[fold.outcome]);
  }
  return path;
}

// ---------------------------------------------------------------- records

export interface ChallengeRecord {
  challenge_id: string;
  result_id: string;
  /** The challenger's identity and home node (the opener, which signs). */
  challenger: string;
  challenger_home: string;
  claimed_digest: string;
  executor_digest: string;
  executed_by: ExecutedBy;
  /** The canonical request the result answered, and the tick it was stamped at: what the committee re-executes. */
  request: Json;
  stamp_svcond: number;
  /** The challenge's tick. */
  svcond: number;
  deadline_svcond: number;
  committee_size: number;
  quorum: number;
  /** Eligible nodes at the challenge's tick (sorted) and the committee drawn from them. */
  eligible: string[];
  committee: string[];
}

export interface SignedChallenge {
  challenge: ChallengeRecord;
  signature: string;
}

export interface VoteRecord {
  challenge_id: string;
  voter: string;
  digest: string;
  svcond: number;
}

export interface SignedVote {
  vote: VoteRecord;
  signature: string;
}

export interface VerdictRecord {
  challenge_id: string;
  outcome: Outcome;
  deciding_digest: string | null;
  tally: Record<string, number>;
  equivocators: string[];
  non_member_votes: number;
  late_votes: number;
  /** Local tick at which this node recorded the verdict, and the ticks from the challenge's tick to it. */
  decided_svcond: number;
  ticks_taken: number;
  /** How many of the entry's votes (the first ones heard) the verdict rests on: its document carries those. */
  rests_on_votes: number;
}

/** A verdict with what it rests on: anyone can check it (POST /api/protocol/pohc/verify). */
export interface VerdictDocument {
  challenge: SignedChallenge;
  votes: SignedVote[];
  verdict: Pick<VerdictRecord, 'challenge_id' | 'outcome' | 'deciding_digest'> & Partial<VerdictRecord>;
}

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
  /** Distinct signed member votes heard (an equivocator's two votes both kept, as evidence). */
  votes: SignedVote[];
  non_member_votes: number;
  /** Vote events refused here: bad signature, sender not the voter, another challenge's vote. */
  refused_votes: number;
  verdict: VerdictRecord | null;
  stake: StakeHold | null;
  /** Local tick at which this node learned of the challenge. */
  received_svcond: number;
}

export function challengeIdOf(resultId: string, challenger: string): string {
  return `chl_${sha256Hex(`${resultId}|${challenger}`).slice(0, 32)}`;
}

export function challengeSigningText(c: ChallengeRecord): string {
  return canonicalJson({ attests: 'challenge', challenge: c });
}

export function voteSigningText(v: VoteRecord): string {
  return canonicalJson({ attests: 'vote', vote: v });
}

// ---------------------------------------------------------------- wire schemas

const PEER = z.string().min(1).max(128);
const DIGEST = z.string().regex(DIGEST_PATTERN, '64 lower-case hex digits');
const SIG = z.string().min(1).max(128);
const TICK = z.number().int().nonnegative();

export const signedChallengeSchema = z
  .object({
    challenge: z
      .object({
        challenge_id: z.string().regex(CHALLENGE_ID_PATTERN),
        result_id: z.string().min(1).max(128),
        challenger: z.string().min(1).max(128),
        challenger_home: PEER,
        claimed_digest: DIGEST,
        executor_digest: DIGEST,
        executed_by: executedBySchema,
        request: z.unknown().refine((v) => v !== undefined, 'request is required') as z.ZodType<Json>,
        stamp_svcond: TICK,
        svcond: TICK,
        deadline_svcond: TICK,
        committee_size: z.number().int().min(1).max(99),
        quorum: z.number().int().min(1).max(99),
        eligible: z.array(PEER).max(512),
        committee: z.array(PEER).max(99),
      })
      .strict(),
    signature: SIG,
  })
  .strict();

export const signedVoteSchema = z
  .object({
    vote: z.object({ challenge_id: z.string().regex(CHALLENGE_ID_PATTERN), voter: PEER, digest: DIGEST, svcond: TICK }).strict(),
    signature: SIG,
  })
  .strict();

export const verdictDocumentSchema = z
  .object({
    challenge: signedChallengeSchema,
    votes: z.array(signedVoteSchema).max(200),
    verdict: z
      .object({
        challenge_id: z.string().regex(CHALLENGE_ID_PATTERN),
        outcome: z.enum(OUTCOMES),
        deciding_digest: DIGEST.nullable(),
      })
      .passthrough(),
  })
  .strict();

// ---------------------------------------------------------------- checks anyone can run

export type VerifyFn = (signer: string, text: string, signature: string) => boolean;

/**
 * What is wrong with a signed challenge on its own (null when nothing): the opener's signature, the committee as
 * the ranking of its eligible set, the quorum of its size, the executor and the opener left out.
 */
export function challengeFault(sc: SignedChallenge, verify: VerifyFn): string | null {
  const c = sc.challenge;
  if (c.challenge_id !== challengeIdOf(c.result_id, c.challenger)) return 'the challenge id is not chl_ + SHA-256(result_id|challenger)';
  if (!verify(c.challenger_home, challengeSigningText(c), sc.signature)) return "the challenge is not signed by the challenger's home";
  if (c.quorum !== quorumOf(c.committee_size)) return `the quorum of a committee of ${c.committee_size} is ${quorumOf(c.committee_size)}`;
  if (c.eligible.includes(c.executed_by.node) || c.eligible.includes(c.challenger_home)) return "the executor and the challenger's home cannot be eligible";
  const sorted = [...new Set(c.eligible)].sort();
  if (canonicalJson(sorted) !== canonicalJson(c.eligible)) return 'the eligible set must be sorted, each node once';
  if (canonicalJson(committeeOf(c.challenge_id, c.eligible, c.committee_size)) !== canonicalJson(c.committee))
    return 'the committee is not the top of the eligible set ranked by SHA-256(challenge_id|peer id)';
  if (c.claimed_digest === c.executor_digest) return "the claim equals the executor's digest";
  if (!verifyExecution(verify, c.executed_by, c.executor_digest)) return "executed_by is not the executor's signature over its digest";
  if (c.deadline_svcond < c.svcond) return 'the deadline is before the challenge';
  return null;
}

/** What is wrong with a signed vote for `challengeId` (null when nothing). */
export function voteFault(sv: SignedVote, challengeId: string, verify: VerifyFn): string | null {
  if (sv.vote.challenge_id !== challengeId) return 'a vote for another challenge';
  if (!verify(sv.vote.voter, voteSigningText(sv.vote), sv.signature)) return 'the vote is not signed by its voter';
  return null;
}

/** The fold over a challenge's votes (the ones given; signatures checked by the caller). */
export function foldOf(c: ChallengeRecord, votes: readonly SignedVote[], deadlinePassed: boolean): Fold {
  return foldVotes({
    committee: c.committee,
    quorum: c.quorum,
    claimedDigest: c.claimed_digest,
    executorDigest: c.executor_digest,
    votes: votes.map((v) => ({ voter: v.vote.voter, digest: v.vote.digest, svcond: v.vote.svcond })),
    deadlineSvcond: c.deadline_svcond,
    deadlinePassed,
  });
}

/**
 * Check a verdict document: the challenge (signature, committee), every vote's signature, and the fold over the
 * votes, which must give the verdict's outcome and deciding digest. A no_quorum verdict holds when the votes
 * decide nothing (whether its deadline has passed is the reader's clock; `nowSvcond` checks it when given).
 */
export function verifyVerdictDocument(
  doc: VerdictDocument,
  verify: VerifyFn,
  nowSvcond?: number,
): { valid: boolean; reasons: string[]; fold: Fold | null; bad_votes: number } {
  const reasons: string[] = [];
  const c = doc.challenge.challenge;
  const fault = challengeFault(doc.challenge, verify);
  if (fault) reasons.push(`challenge: ${fault}`);
  if (doc.verdict.challenge_id !== c.challenge_id) reasons.push('the verdict names another challenge');
  const good: SignedVote[] = [];
  let bad = 0;
  for (const v of doc.votes) {
    const f = voteFault(v, c.challenge_id, verify);
    if (f) {
      bad++;
      reasons.push(`vote of ${v.vote.voter}: ${f}`);
    } else good.push(v);
  }
  const passed = doc.verdict.outcome === 'no_quorum';
  if (passed && nowSvcond !== undefined && nowSvcond <= c.deadline_svcond) reasons.push(`no_quorum before the deadline tick ${c.deadline_svcond}`);
  const fold = foldOf(c, good, passed);
  if (fold.outcome !== doc.verdict.outcome) reasons.push(`the votes fold to ${fold.outcome ?? 'no outcome yet'}, not ${doc.verdict.outcome}`);
  else if (fold.decidingDigest !== doc.verdict.deciding_digest) reasons.push('the deciding digest is not the one the votes give');
  return { valid: reasons.length === 0, reasons, fold, bad_votes: bad };
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
  /** A result by id, wherever it is kept (null when no node knows it). */
  lookup: (resultId: string) => Promise<ChallengedResult | null>;
  /** Nodes that may sit on a committee: active bonds with their operators' modes. */
  candidates: () => Candidate[];
  /** Does exec's `executed_by` signature hold for this result (digest, request, tick)? */
  verifyExecution?: (r: { executed_by: ExecutedBy; result_digest: string }) => boolean;
  /** The stake taken at intake: ops (in the challenge's batch) and their undo; 402 thrown when it cannot be paid. */
  holdStake: (zid: string, amount: number) => Promise<{ hold: StakeHold; ops: Op[]; rollback: () => void }>;
  /** Ticks after the deadline before this node declares no_quorum itself (votes in flight). */
  graceTicks?: number;
}

export type ChallengeListener = (entry: ChallengeEntry) => void | Promise<void>;

export class ChallengeService {
  private readonly sub: Sublevel;
  private readonly entries = new Map<string, ChallengeEntry>();
  private readonly pending = new Set<string>();
  private readonly openedListeners: ChallengeListener[] = [];
  private readonly verdictListeners: ChallengeListener[] = [];
  /** Writes of one challenge's entry run one at a time (votes arrive concurrently). */
  private readonly tails = new Map<string, Promise<void>>();
  private readonly counts = { refused_votes: 0, non_member_votes: 0, equivocations: 0, unknown_challenge_votes: 0 };

  constructor(private readonly o: ChallengeServiceOptions) {
    this.sub = o.store.sub('challenges');
  }

  async load(): Promise<void> {
    for (const { value } of await this.o.store.range<ChallengeEntry>(this.sub)) this.entries.set(value.challenge.challenge.challenge_id, value);
  }

  /** Called with a challenge this node has just learned of (the re-executor votes from here). */
  onOpened(l: ChallengeListener): void {
    this.openedListeners.push(l);
  }

  /** Called once a verdict is recorded here, and again at start for every recorded verdict (effects resume). */
  onVerdict(l: ChallengeListener): void {
    this.verdictListeners.push(l);
  }

  get(id: string): ChallengeEntry | null {
    return this.entries.get(id) ?? null;
  }

  all(): ChallengeEntry[] {
    return [...this.entries.values()];
  }

  stats(): Record<string, number> {
    return { ...this.counts };
  }

  /** Open challenges against a bond (the release hook). */
  openAgainst(bondId: string): string[] {
    return this.all()
      .filter((e) => e.challenge.challenge.executed_by.bond_id === bondId && !isTerminal(e.state))
      .map((e) => e.challenge.challenge.challenge_id)
      .sort();
  }

  /** Challenges against a bond, any state, newest first. */
  against(bondId: string): ChallengeEntry[] {
    return this.all()
      .filter((e) => e.challenge.challenge.executed_by.bond_id === bondId)
      .sort((a, b) => b.challenge.challenge.svcond - a.challenge.challenge.svcond);
  }

  /** Newest first, filtered by state, paged. */
  list(opts: { state?: ChallengeState; limit: number; offset: number }): { total: number; items: ChallengeEntry[] } {
    const all = this.all()
      .filter((e) => opts.state === undefined || e.state === opts.state)
      .sort(
        (a, b) =>
          b.challenge.challenge.svcond - a.challenge.challenge.svcond || (a.challenge.challenge.challenge_id < b.challenge.challenge.challenge_id ? -1 : 1),
      );
    return { total: all.length, items: all.slice(opts.offset, opts.offset + opts.limit) };
  }

  /**
   * Intake at the challenger's home: `zid` challenges `resultId` with `claimedDigest`. 404 unknown result; 403
   * SVC_RESULT_UNPUBLISHED; 409 SVC_NOT_AT_STAKE (no bond behind the result); 400 a claim equal to the executor's
   * digest; 409 a second challenge of the result by the identity; 409 SVC_NO_COMMITTEE; 402 for the stake. The
   * stake and the challenge land in one batch; then the challenge is gossiped.
   */
  async open(zid: string, resultId: string, claimedDigest: string): Promise<ChallengeEntry> {
    const id = challengeIdOf(resultId, zid);
    const again = this.entries.get(id);
    if (again || this.pending.has(id))
      throw new ServiceError(409, 'SVC_CONFLICT', 'this identity has already challenged this result', { challenge_id: id, state: again?.state ?? 'opened' });
    this.pending.add(id);
    try {
      const r = await this.o.lookup(resultId);
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
      const now = this.o.nowSvcond();
      const home = this.o.nodeId();
      const p = this.o.policy;
      const eligible = eligibleNodes(this.o.candidates(), { svcond: now, settleTicks: p.settleTicks, executor: r.executed_by.node, challengerHome: home });
      const committee = committeeOf(id, eligible, p.committeeSize);
      const quorum = quorumOf(p.committeeSize);
      if (committee.length < quorum)
        throw new ServiceError(409, 'SVC_NO_COMMITTEE', `${committee.length} node(s) can re-execute now; a verdict needs ${quorum}`, {
          eligible: eligible.length,
          quorum,
        });
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
        deadline_svcond: now + p.deadlineTicks,
        committee_size: p.committeeSize,
        quorum,
        eligible,
        committee,
      };
      const signed: SignedChallenge = { challenge, signature: this.o.sign(challengeSigningText(challenge)) };
      const stake = await this.o.holdStake(zid, p.challengeStake);
      const entry = this.newEntry(signed, stake.hold);
      try {
        await this.o.store.commit([...stake.ops, this.putOp(entry)]);
      } catch (err) {
        stake.rollback();
        throw err;
      }
      this.entries.set(id, entry);
      await this.gossip(CHALLENGE_OPENED_EVENT, signed);
      this.fire(this.openedListeners, entry);
      return entry;
    } finally {
      this.pending.delete(id);
    }
  }

  /** Record this node's own vote (the re-executor), then gossip it. */
  async castVote(vote: SignedVote): Promise<void> {
    await this.recordVote(vote);
    await this.gossip(VOTE_EVENT, vote);
  }

  /** The verdict document of a decided challenge (null before). */
  document(id: string): VerdictDocument | null {
    const e = this.entries.get(id);
    if (!e?.verdict) return null;
    // The votes it rests on: a vote heard after the verdict (a late one, or an equivocation) changes nothing.
    return { challenge: e.challenge, votes: e.votes.slice(0, e.verdict.rests_on_votes ?? e.votes.length), verdict: e.verdict };
  }

  /** Declare no_quorum where the deadline (and a grace for votes in flight) has passed. Called on a timer. */
  async sweepDeadlines(): Promise<void> {
    const now = this.o.nowSvcond();
    const grace = this.o.graceTicks ?? 2;
    for (const e of this.all()) {
      if (isTerminal(e.state) || now <= e.challenge.challenge.deadline_svcond + grace) continue;
      await this.serial(e.challenge.challenge.challenge_id, async () => {
        const cur = this.entries.get(e.challenge.challenge.challenge_id)!;
        if (!isTerminal(cur.state)) await this.refold(cur, true, false);
      });
    }
  }

  /**
   * Gossip keeps no history: a node that missed a challenge's events (above all the executor's home, which applies the
   * slashing) would never learn its verdict. The opener and the committee announce each verdict again, for
   * `deadlineTicks` after it was decided; a node that has it already changes nothing.
   */
  async reannounceVerdicts(): Promise<void> {
    const now = this.o.nowSvcond();
    const me = this.o.nodeId();
    for (const e of this.all()) {
      const c = e.challenge.challenge;
      if (!e.verdict || now - e.verdict.decided_svcond > this.o.policy.deadlineTicks) continue;
      if (c.challenger_home !== me && !c.committee.includes(me)) continue;
      await this.gossip(VERDICT_EVENT, this.document(c.challenge_id));
    }
  }

  /** At start: run the verdict listeners again for every recorded verdict (each effect is idempotent). */
  async resumeEffects(): Promise<void> {
    for (const e of this.all()) if (e.verdict) for (const l of this.verdictListeners) await l(e);
  }

  // ---------------------------------------------------------------- gossip rows

  handlers(): [GossipHandler<SignedChallenge>, GossipHandler<SignedVote>, GossipHandler<VerdictDocument>] {
    return [
      { type: CHALLENGE_OPENED_EVENT, body: signedChallengeSchema as unknown as z.ZodType<SignedChallenge>, handle: (b, e) => this.applyOpened(b, e) },
      { type: VOTE_EVENT, body: signedVoteSchema, handle: (b, e) => this.applyVote(b, e) },
      { type: VERDICT_EVENT, body: verdictDocumentSchema as unknown as z.ZodType<VerdictDocument>, handle: (b) => this.applyVerdict(b) },
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
    const known = this.entries.get(c.challenge_id);
    if (known) {
      if (canonicalJson(known.challenge.challenge) !== canonicalJson(c))
        throw new GossipError('reject', 400, 'INVALID_CHALLENGE', 'another challenge under a known id');
      return known;
    }
    const fault = challengeFault(sc, this.o.verify);
    if (fault) throw new GossipError('reject', 400, 'INVALID_CHALLENGE', fault);
    for (const node of c.eligible) {
      const bond = this.o.bonds.ofNode(node);
      // A bond this node knows must have settled by the challenge's tick; one it has not heard of yet is taken on the opener's word.
      if (bond && c.svcond - bond.bond.svcond < this.o.policy.settleTicks)
        throw new GossipError('reject', 400, 'INVALID_CHALLENGE', `node ${node} is listed eligible, but its bond had not settled by the challenge's tick`);
    }
    const entry = this.newEntry(sc, null);
    await this.serial(c.challenge_id, async () => {
      if (this.entries.has(c.challenge_id)) return;
      await this.o.store.commit([this.putOp(entry)]);
      this.entries.set(c.challenge_id, entry);
    });
    const stored = this.entries.get(c.challenge_id)!;
    if (stored === entry) this.fire(this.openedListeners, entry);
    return stored;
  }

  /** [REJECT] forged votes (signature, sender); [IGNORE] votes of unknown challenges and of non-members (counted). */
  async applyVote(sv: SignedVote, event: Pick<MeshEvent, 'sender'>): Promise<void> {
    if (event.sender !== sv.vote.voter) {
      this.counts.refused_votes++;
      throw new GossipError('reject', 400, 'INVALID_VOTE', 'a vote must be gossiped by its voter');
    }
    const e = this.entries.get(sv.vote.challenge_id);
    if (!e) {
      this.counts.unknown_challenge_votes++;
      throw new GossipError('ignore', 404, 'SVC_NOT_FOUND', `no challenge ${sv.vote.challenge_id} is known here`);
    }
    const fault = voteFault(sv, e.challenge.challenge.challenge_id, this.o.verify);
    if (fault) {
      this.counts.refused_votes++;
      await this.serial(e.challenge.challenge.challenge_id, async () => {
        const cur = this.entries.get(sv.vote.challenge_id)!;
        const next = { ...cur, refused_votes: cur.refused_votes + 1 };
        await this.o.store.commit([this.putOp(next)]);
        this.entries.set(sv.vote.challenge_id, next);
      });
      throw new GossipError('reject', 400, 'INVALID_VOTE', fault);
    }
    if (!e.challenge.challenge.committee.includes(sv.vote.voter)) {
      this.counts.non_member_votes++;
      await this.serial(e.challenge.challenge.challenge_id, async () => {
        const cur = this.entries.get(sv.vote.challenge_id)!;
        const next = { ...cur, non_member_votes: cur.non_member_votes + 1 };
        await this.o.store.commit([this.putOp(next)]);
        this.entries.set(sv.vote.challenge_id, next);
      });
      throw new GossipError('ignore', 403, 'SVC_NOT_A_MEMBER', `${sv.vote.voter} is not on the committee of ${sv.vote.challenge_id}`);
    }
    await this.recordVote(sv);
  }

  /** A verdict from another node: its challenge and votes are checked and folded here; then it is this node's too. */
  async applyVerdict(doc: VerdictDocument): Promise<void> {
    const check = verifyVerdictDocument(doc, this.o.verify);
    const deadlineOk = doc.verdict.outcome !== 'no_quorum' || this.o.nowSvcond() > doc.challenge.challenge.deadline_svcond;
    if (!check.valid) throw new GossipError('reject', 400, 'INVALID_VERDICT', check.reasons.join('; '));
    if (!deadlineOk) throw new GossipError('ignore', 409, 'INVALID_VERDICT', 'no_quorum before the deadline has passed here');
    const e = await this.learnChallenge(doc.challenge);
    const id = e.challenge.challenge.challenge_id;
    await this.serial(id, async () => {
      const cur = this.entries.get(id)!;
      if (isTerminal(cur.state)) return;
      const merged = mergeVotes(cur.votes, doc.votes);
      await this.refold({ ...cur, votes: merged }, doc.verdict.outcome === 'no_quorum', false);
    });
  }

  // ---------------------------------------------------------------- internals

  private async recordVote(sv: SignedVote): Promise<void> {
    const id = sv.vote.challenge_id;
    await this.serial(id, async () => {
      const cur = this.entries.get(id);
      if (!cur) return;
      if (cur.votes.some((v) => v.vote.voter === sv.vote.voter && v.vote.digest === sv.vote.digest)) return;
      if (cur.votes.some((v) => v.vote.voter === sv.vote.voter)) this.counts.equivocations++;
      await this.refold({ ...cur, votes: [...cur.votes, sv] }, false, true);
    });
  }

  /** Fold the entry's votes, move it through the table, store it; on a verdict, tell the listeners and gossip it. */
  private async refold(entry: ChallengeEntry, deadlinePassed: boolean, decidedHere: boolean): Promise<void> {
    const c = entry.challenge.challenge;
    if (isTerminal(entry.state)) {
      // A verdict stands; a vote after it is kept as evidence (equivocation) and changes nothing.
      await this.o.store.commit([this.putOp(entry)]);
      this.entries.set(c.challenge_id, entry);
      return;
    }
    const fold = foldOf(c, entry.votes, deadlinePassed);
    const path = advance(entry.state, fold);
    const state = path.length > 0 ? path[path.length - 1]! : entry.state;
    const now = this.o.nowSvcond();
    const verdict: VerdictRecord | null =
      fold.outcome !== null && isTerminal(state)
        ? {
            challenge_id: c.challenge_id,
            outcome: fold.outcome,
            deciding_digest: fold.decidingDigest,
            tally: fold.tally,
            equivocators: fold.equivocators,
            non_member_votes: fold.nonMemberVotes + entry.non_member_votes,
            late_votes: fold.lateVotes,
            decided_svcond: now,
            ticks_taken: Math.max(0, now - c.svcond),
            rests_on_votes: entry.votes.length,
          }
        : null;
    const next: ChallengeEntry = { ...entry, state, verdict };
    await this.o.store.commit([this.putOp(next)]);
    this.entries.set(c.challenge_id, next);
    if (!verdict) return;
    const me = this.o.nodeId();
    // The opener and the committee gossip the verdict they reached from votes, so a node that missed votes gets them.
    if (decidedHere && (c.challenger_home === me || c.committee.includes(me) || c.executed_by.node === me))
      void this.gossip(VERDICT_EVENT, this.document(c.challenge_id));
    this.fire(this.verdictListeners, next);
  }

  private newEntry(sc: SignedChallenge, stake: StakeHold | null): ChallengeEntry {
    return { challenge: sc, state: 'opened', votes: [], non_member_votes: 0, refused_votes: 0, verdict: null, stake, received_svcond: this.o.nowSvcond() };
  }

  private putOp(e: ChallengeEntry): Op {
    return { type: 'put', sub: this.sub, key: e.challenge.challenge.challenge_id, value: e as unknown as Json };
  }

  private fire(listeners: ChallengeListener[], entry: ChallengeEntry): void {
    for (const l of listeners) void Promise.resolve(l(entry)).catch(() => undefined);
  }

  private async serial(id: string, work: () => Promise<void>): Promise<void> {
    const before = this.tails.get(id) ?? Promise.resolve();
    const run = before.then(work);
    const tail = run.catch(() => undefined);
    this.tails.set(id, tail);
    try {
      await run;
    } finally {
      if (this.tails.get(id) === tail) this.tails.delete(id);
    }
  }

  private async gossip(type: string, body: unknown): Promise<void> {
    if (!this.o.publish) return;
    await this.o.publish(type, body).catch(() => undefined);
  }
}

/** Votes of `a` and `b`, each (voter, digest) once. */
function mergeVotes(a: readonly SignedVote[], b: readonly SignedVote[]): SignedVote[] {
  const out = [...a];
  for (const v of b) if (!out.some((x) => x.vote.voter === v.vote.voter && x.vote.digest === v.vote.digest)) out.push(v);
  return out;
}

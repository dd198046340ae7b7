// The wire of svc/consensus/1's challenges (architecture.md §6): the records four gossip rows carry, their zod
// schemas, the texts the opener and the voters sign, and the checks anyone can run on them offline — a signed
// challenge, a signed commit, a signed vote (the reveal), and a verdict document re-folded from its commits and votes
// (POST /api/protocol/pohc/verify).
// Votes are committed, then revealed: a member first signs commitment = SHA-256(digest|salt) and reveals {digest,
// salt} only once every member's commit is heard or the commit window has passed; a vote counts only if it opens a
// commit its voter signed within the window, so a member cannot copy a digest revealed before it committed.
// The challenge id is derived (chl_ + SHA-256(result_id|challenger)), so a second challenge of a result by one
// identity has the same id. The committee is not ranked by the id (a challenger can mint identities and grind ids):
// it is ranked by a seed drawn after the challenge's tick T from material neither the challenger nor the executor
// signs — the draw event, the first tick event signed after T by a node of the eligible set (ties: the lowest peer
// id) that advertises a bond, carried in the record: seed = SHA-256(result_id|its VRF output) (drawSeedOf; the VRF
// proof is in the event's body, mesh/draw-proof.ts, one output per sender and tick). The opener holds the stake and
// fixes T and the eligible set before the draw event exists; every node checks the event's signature, signer and
// tick from the record alone, and from its own record of tick events that none came earlier (challenges.ts).
// A challenge is voted in rounds: round 0 by the signed committee of k; when it ends without a quorum it escalates
// once to round 1, a committee of 2k + 1 drawn by the same ranking over the same signed eligible set (escalationOf:
// every node derives it, nothing new is signed), with its own window; round 1's fold is final. Commits and votes
// name their round (absent: round 0).
import { z } from 'zod';
import { canonicalDigest, canonicalJson } from '../kernel/canonical.js';
import { MAX_BODY_BYTES } from '../mesh/validator.js';
import { sha256Hex } from '../kernel/bytes.js';
import { drawOutput } from '../mesh/draw-proof.js';
import type { Json } from '../store/db.js';
import { committeeOf } from './committee.js';
import { quorumOf } from './policy.js';
import { foldVotes, OUTCOMES, type Fold, type Outcome } from './verdict.js';
import { executedBySchema, verifyExecution } from './executed-by.js';
import type { ExecutedBy } from '../records/types.js';
import type { ResultVerification } from '../compute/verify-result.js';

export const CHALLENGE_OPENED_EVENT = 'consensus.challenge.opened';
export const VOTE_EVENT = 'consensus.vote';
export const COMMIT_EVENT = 'consensus.vote.commit';
export const VERDICT_EVENT = 'consensus.verdict';

export const CHALLENGE_ID_PATTERN = /^chl_[0-9a-f]{32}$/;
export const DIGEST_PATTERN = /^[0-9a-f]{64}$/;
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
  /** The draw event: the seed's material (drawSeedOf). */
  draw: DrawEvent;
}

/** A signed tick event (docs/protocol.md §7) of a node of the eligible set: the material of the committee's seed. */
export interface DrawEvent {
  type: 'tick';
  sender: string;
  svcond: number;
  body: Json;
  signature: string;
}

export interface SignedChallenge {
  challenge: ChallengeRecord;
  signature: string;
  /**
   * The challenged sealed result itself, as its sealer sent it (outside the opener's signature: its own
   * seal_signature speaks for it). Every node checks it against the record (carriedResultFault), so a verdict
   * document shows, on its own, that the executor's digest the fold compares is that of a result its sealer signed.
   * An HTTP document carries it whatever its size; a mesh event only when the event still fits its bound (forMesh).
   */
  result?: SealedResult;
  /** SHA-256 of the sealed result's canonical JSON (sealedDigestOf): always on the mesh, where `result` may be left out. */
  result_sha256?: string;
}

/** A sealed result body (compute/verify-result.ts checks it). */
export type SealedResult = Record<string, Json>;

/** The digest a challenge names its sealed result by: SHA-256 of its canonical JSON. */
export function sealedDigestOf(body: unknown): string {
  return canonicalDigest(body);
}

/** A signed challenge with its result_sha256 set from the result it carries (as it is stored and served). */
export function withSealedDigest(sc: SignedChallenge): SignedChallenge {
  return sc.result === undefined ? sc : { ...sc, result_sha256: sealedDigestOf(sc.result) };
}

/**
 * A signed challenge or verdict document as a mesh event carries it (one event body, MAX_BODY_BYTES of JCS): with
 * the sealed result inline when the whole body fits, else by its result_sha256 alone; a receiver fetches it
 * (challenges.ts sealedBody).
 */
export function forMesh<T extends SignedChallenge | VerdictDocument>(body: T): T {
  const sc = 'challenge' in body && 'signature' in body ? (body as SignedChallenge) : (body as VerdictDocument).challenge;
  const full = withSealedDigest(sc);
  const put = (c: SignedChallenge): T => (sc === body ? (c as T) : ({ ...body, challenge: c } as T));
  const inline = put(full);
  if (carriedBytes(inline) <= MAX_BODY_BYTES) return inline;
  const { result: _left, ...byDigest } = full;
  return put(byDigest);
}

export interface VoteRecord {
  challenge_id: string;
  voter: string;
  digest: string;
  svcond: number;
  /** The salt of the voter's commit (hex): SHA-256(digest|salt) is its commitment. */
  salt?: string;
  /** The round voted in: 1 for the escalated committee, absent for round 0. */
  round?: 1;
}

export interface CommitRecord {
  challenge_id: string;
  voter: string;
  /** SHA-256(digest|salt), hex. */
  commitment: string;
  svcond: number;
  /** The round committed in: 1 for the escalated committee, absent for round 0. */
  round?: 1;
}

export interface SignedCommit {
  commit: CommitRecord;
  signature: string;
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
  /** Votes that open no commit of their voter (copied, or never committed): not counted. */
  uncommitted_votes?: number;
  /** Local tick at which this node recorded the verdict, and the ticks from the challenge's tick to it. */
  decided_svcond: number;
  ticks_taken: number;
  /** How many of the entry's votes (the first ones heard) the verdict rests on: its document carries those. */
  rests_on_votes: number;
  /** How many of the entry's commits (the first ones heard) it rests on. */
  rests_on_commits?: number;
  /** The round whose fold decided: 1 when round 0 ended without a quorum and escalated (absent: round 0). */
  round?: Round;
}

/** A verdict with what it rests on: anyone can check it (POST /api/protocol/pohc/verify). */
export interface VerdictDocument {
  challenge: SignedChallenge;
  /** The members' signed commits the votes open. */
  commits?: SignedCommit[];
  votes: SignedVote[];
  verdict: Pick<VerdictRecord, 'challenge_id' | 'outcome' | 'deciding_digest'> & Partial<VerdictRecord>;
}

export type Round = 0 | 1;

/** The round a commit or vote belongs to. */
export function roundOf(r: { round?: 1 }): Round {
  return r.round === 1 ? 1 : 0;
}

/** What one round of a challenge is voted by: its committee, quorum and window (round 0: the signed record's). */
export type RoundView = ChallengeRecord & { round: Round };

/**
 * The size of the escalated committee for a committee of `k` over `eligible` nodes: 2k + 1, else the largest odd
 * size ≥ k + 2 the eligible set holds, else null (the first round's no_quorum is final).
 */
export function escalatedSize(k: number, eligible: number): number | null {
  if (eligible >= 2 * k + 1) return 2 * k + 1;
  const odd = eligible % 2 === 1 ? eligible : eligible - 1;
  return odd >= k + 2 ? odd : null;
}

/**
 * Round 1 of a challenge, or null when it cannot escalate: the committee of escalatedSize drawn by the same ranking
 * over the same eligible set (round 0's members are its top k), its quorum, and a window twice round 0's starting at
 * round 0's deadline (it opens only once round 0's no_quorum is declared, grace ticks later, and has more members).
 */
export function escalationOf(c: ChallengeRecord): RoundView | null {
  const size = escalatedSize(c.committee_size, c.eligible.length);
  if (size === null) return null;
  const span = Math.max(1, c.deadline_svcond - c.svcond);
  return {
    ...c,
    round: 1,
    committee_size: size,
    quorum: quorumOf(size),
    committee: committeeOf(drawSeedOf(c), c.eligible, size),
    svcond: c.deadline_svcond,
    deadline_svcond: c.deadline_svcond + 2 * span,
  };
}

/** A round of a challenge (null: round 1 of one that cannot escalate). */
export function roundView(c: ChallengeRecord, round: Round): RoundView | null {
  return round === 0 ? { ...c, round: 0 } : escalationOf(c);
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

export function commitSigningText(c: CommitRecord): string {
  return canonicalJson({ attests: 'commit', commit: c });
}

/** The commitment to a digest: hex SHA-256(digest|salt). */
export function commitmentOf(digest: string, salt: string): string {
  return sha256Hex(`${digest}|${salt}`);
}

/**
 * The last tick at which a member's commit counts: half the way from the round's start — the draw event's tick in
 * round 0 (the committee is known from then), the round's own tick in round 1 — to its deadline (at least 1 tick).
 */
export function commitDeadlineOf(c: Pick<ChallengeRecord, 'svcond' | 'deadline_svcond'> & { draw?: Pick<DrawEvent, 'svcond'> }): number {
  const start = Math.max(c.svcond, c.draw?.svcond ?? c.svcond);
  return start + Math.max(1, Math.floor((c.deadline_svcond - start) / 2));
}

/**
 * The draw event's VRF output (hex), the seed's material: its `drawProof` verified under its sender's key over its
 * tick (mesh/draw-proof.ts); null when it carries none, advertises no bond, or the proof does not verify.
 */
export function drawOutputOf(d: DrawEvent): string | null {
  const body = d.body as { drawProof?: unknown; bondId?: unknown } | null;
  if (typeof body !== 'object' || body === null || typeof body.drawProof !== 'string' || typeof body.bondId !== 'string' || body.bondId === '') return null;
  return drawOutput(d.sender, d.svcond, body.drawProof);
}

/**
 * The seed the committee is ranked by: hex SHA-256 of `result_id|` and the draw event's VRF output. The output is
 * one value per sender and tick, whatever else the event's body says, so the draw's signer cannot try bodies for a
 * committee. Throws for a draw without a valid proof: challengeFault refuses such a record before it ranks anything.
 */
export function drawSeedOf(c: Pick<ChallengeRecord, 'result_id' | 'draw'>): string {
  const output = drawOutputOf(c.draw);
  if (output === null) throw new Error('the draw event carries no valid draw proof');
  return sha256Hex(`${c.result_id}|${output}`);
}

/** The text a draw event's sender signed (docs/protocol.md §7). */
export function drawSigningText(d: DrawEvent): string {
  return canonicalJson({ type: d.type, sender: d.sender, svcond: d.svcond, body: d.body });
}

/**
 * The draw event among `events` (signed tick events, signatures checked by the caller) for a challenge at tick `T`
 * over `eligible`: the earliest one signed after T by a node of the set that advertises a bond with a valid draw
 * proof (the only tick events that can give a seed), ties to the lowest peer id; null when none.
 */
export function drawEventOf(events: readonly DrawEvent[], eligible: readonly string[], T: number): DrawEvent | null {
  const set = new Set(eligible);
  let best: DrawEvent | null = null;
  for (const e of events) {
    if (e.type !== 'tick' || !set.has(e.sender) || e.svcond <= T || drawOutputOf(e) === null) continue;
    if (!best || e.svcond < best.svcond || (e.svcond === best.svcond && e.sender < best.sender)) best = e;
  }
  return best;
}

// ---------------------------------------------------------------- wire schemas

const PEER = z.string().min(1).max(128);
const DIGEST = z.string().regex(DIGEST_PATTERN, '64 lower-case hex digits');
const SIG = z.string().min(1).max(128);
const TICK = z.number().int().nonnegative();
const SALT_PATTERN = /^[0-9a-f]{32,64}$/;

/** A sealed result body, at any size (the HTTP body bound holds it; a mesh event leaves it out when too large: forMesh). */
export function sealedResultSchema(): z.ZodType<SealedResult> {
  return z.record(z.string(), z.unknown()) as unknown as z.ZodType<SealedResult>;
}

/** A body's canonical JSON size in bytes (Infinity when it has none). */
export function carriedBytes(body: unknown): number {
  try {
    return Buffer.byteLength(canonicalJson(body), 'utf8');
  } catch {
    return Infinity;
  }
}

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
        draw: z
          .object({
            type: z.literal('tick'),
            sender: PEER,
            svcond: TICK,
            body: z.record(z.string(), z.unknown()) as unknown as z.ZodType<Json>,
            signature: SIG,
          })
          .strict(),
      })
      .strict(),
    signature: SIG,
    result: sealedResultSchema().optional(),
    result_sha256: DIGEST.optional(),
  })
  .strict();

export const signedVoteSchema = z
  .object({
    vote: z
      .object({
        challenge_id: z.string().regex(CHALLENGE_ID_PATTERN),
        voter: PEER,
        digest: DIGEST,
        svcond: TICK,
        salt: z.string().regex(SALT_PATTERN).optional(),
        round: z.literal(1).optional(),
      })
      .strict(),
    signature: SIG,
  })
  .strict();

export const signedCommitSchema = z
  .object({
    commit: z
      .object({ challenge_id: z.string().regex(CHALLENGE_ID_PATTERN), voter: PEER, commitment: DIGEST, svcond: TICK, round: z.literal(1).optional() })
      .strict(),
    signature: SIG,
  })
  .strict();

export const verdictDocumentSchema = z
  .object({
    challenge: signedChallengeSchema,
    commits: z.array(signedCommitSchema).max(200).optional(),
    votes: z.array(signedVoteSchema).max(200),
    verdict: z
      .object({
        challenge_id: z.string().regex(CHALLENGE_ID_PATTERN),
        outcome: z.enum(OUTCOMES),
        deciding_digest: DIGEST.nullable(),
        round: z.union([z.literal(0), z.literal(1)]).optional(),
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
  if (!c.eligible.includes(c.draw.sender)) return 'the draw event is not from a node of the eligible set';
  if (c.draw.svcond <= c.svcond || c.draw.svcond >= c.deadline_svcond) return "the draw event is not signed after the challenge's tick and before its deadline";
  if (!verify(c.draw.sender, drawSigningText(c.draw), c.draw.signature)) return 'the draw event is not signed by its sender';
  if (drawOutputOf(c.draw) === null) return "the draw event advertises no bond or carries no valid drawProof (its sender's VRF proof over its tick)";
  if (canonicalJson(committeeOf(drawSeedOf(c), c.eligible, c.committee_size)) !== canonicalJson(c.committee))
    return 'the committee is not the top of the eligible set ranked by SHA-256(seed|peer id), seed = SHA-256(result_id|draw VRF output)';
  if (c.claimed_digest === c.executor_digest) return "the claim equals the executor's digest";
  if (!verifyExecution(verify, c.executed_by, c.executor_digest)) return "executed_by is not the executor's signature over its digest";
  if (c.deadline_svcond < c.svcond) return 'the deadline is before the challenge';
  return null;
}

/** Checks a sealed result as POST /api/svc/verify does (compute/verify-result.ts), with this node's key and mesh. */
export type ResultVerifyFn = (body: unknown) => ResultVerification;

/**
 * What is wrong with the sealed result a challenge carries (null when nothing): it must be there, be the one its
 * result_sha256 names (when it names one), verify as any
 * sealed result does — its proof and tick receipt, its seal_signature under the key of the node it names as sealer,
 * a node this mesh knows, its own result_digest — and be the challenged one: its result_id the record's, its
 * result_digest the executor's digest the fold compares, its executed_by the record's. Its sealer is the executor
 * (executed_by.node), or the home that placed the run on the executor (consensus/offload.ts): then the executor's
 * own signature over that digest is the body's executed_by, which the sealer's signature covers.
 */
export function carriedResultFault(sc: SignedChallenge, verifyResult: ResultVerifyFn): string | null {
  const c = sc.challenge;
  const body = sc.result;
  if (body === undefined) return 'the challenge carries no sealed result';
  if (sc.result_sha256 !== undefined && sealedDigestOf(body) !== sc.result_sha256) return 'the carried result is not the one its result_sha256 names';
  const v = verifyResult(body);
  if (!v.valid) return `the carried result does not verify: ${v.reasons.map((r) => r.code).join(', ')}`;
  if (body.result_id !== c.result_id) return `the carried result is ${String(body.result_id)}, not the challenge's ${c.result_id}`;
  if (body.result_digest !== c.executor_digest) return "the carried result's result_digest is not the challenge's executor_digest";
  if (canonicalJson(body.executed_by ?? null) !== canonicalJson(c.executed_by))
    return "the carried result's executed_by is not the challenge's: another executor, bond or signature";
  return null;
}

/** What is wrong with a signed vote for `challengeId` (null when nothing). */
export function voteFault(sv: SignedVote, challengeId: string, verify: VerifyFn): string | null {
  if (sv.vote.challenge_id !== challengeId) return 'a vote for another challenge';
  if (!verify(sv.vote.voter, voteSigningText(sv.vote), sv.signature)) return 'the vote is not signed by its voter';
  return null;
}

/** What is wrong with a signed commit for `challengeId` (null when nothing). */
export function commitFault(sc: SignedCommit, challengeId: string, verify: VerifyFn): string | null {
  if (sc.commit.challenge_id !== challengeId) return 'a commit for another challenge';
  if (!verify(sc.commit.voter, commitSigningText(sc.commit), sc.signature)) return 'the commit is not signed by its voter';
  return null;
}

/**
 * The votes of `c`'s round that open a commit: the vote's SHA-256(digest|salt) is the commitment of its voter's one
 * commit of that round signed by the round's commit deadline. A voter with two different commitments opens neither
 * (it equivocated); a vote without a salt, or whose commit is missing or another, is not counted (uncommitted).
 * Commits and votes of the other round are left out.
 */
export function revealedVotes(
  c: ChallengeRecord & { round?: Round },
  votes: readonly SignedVote[],
  commits: readonly SignedCommit[],
): { votes: SignedVote[]; uncommitted: number; equivocators: string[] } {
  const round = c.round ?? 0;
  const last = commitDeadlineOf(c);
  const byVoter = new Map<string, Set<string>>();
  for (const k of commits) {
    if (k.commit.challenge_id !== c.challenge_id || roundOf(k.commit) !== round || k.commit.svcond > last) continue;
    let set = byVoter.get(k.commit.voter);
    if (!set) byVoter.set(k.commit.voter, (set = new Set()));
    set.add(k.commit.commitment);
  }
  // A round-1 commit with another voter's round-0 commitment is a copy of a round-0 reveal: it opens nothing.
  if (round === 1) {
    const round0 = new Map<string, string>();
    for (const k of commits) if (k.commit.challenge_id === c.challenge_id && roundOf(k.commit) === 0) round0.set(k.commit.commitment, k.commit.voter);
    for (const [voter, set] of byVoter) for (const commitment of set) if ((round0.get(commitment) ?? voter) !== voter) set.delete(commitment);
  }
  const out: SignedVote[] = [];
  let uncommitted = 0;
  for (const v of votes) {
    if (roundOf(v.vote) !== round) continue;
    const set = byVoter.get(v.vote.voter);
    if (v.vote.salt !== undefined && set?.size === 1 && set.has(commitmentOf(v.vote.digest, v.vote.salt))) out.push(v);
    else uncommitted++;
  }
  const equivocators = [...byVoter].filter(([, set]) => set.size > 1).map(([voter]) => voter);
  return { votes: out, uncommitted, equivocators };
}

/** The fold over one round's revealed votes (the ones given that open their voters' commits; signatures checked by the caller). */
export function foldOf(
  c: ChallengeRecord & { round?: Round },
  votes: readonly SignedVote[],
  deadlinePassed: boolean,
  commits: readonly SignedCommit[] = [],
): Fold & { uncommittedVotes: number } {
  const revealed = revealedVotes(c, votes, commits);
  const fold = foldVotes({
    committee: c.committee,
    quorum: c.quorum,
    claimedDigest: c.claimed_digest,
    executorDigest: c.executor_digest,
    votes: revealed.votes.map((v) => ({ voter: v.vote.voter, digest: v.vote.digest, svcond: v.vote.svcond })),
    deadlineSvcond: c.deadline_svcond,
    deadlinePassed,
  });
  // A member that committed twice could reveal whichever digest wins: it equivocated, like one that voted twice.
  const equivocators = [...new Set([...fold.equivocators, ...revealed.equivocators.filter((v) => c.committee.includes(v))])].sort();
  return { ...fold, equivocators, uncommittedVotes: revealed.uncommitted };
}

/** Has every member of the round committed (one commitment each) by the round's commit deadline? */
export function everyMemberCommitted(view: ChallengeRecord & { round?: Round }, commits: readonly SignedCommit[]): boolean {
  const round = view.round ?? 0;
  const last = commitDeadlineOf(view);
  const committed = new Set(
    commits.filter((k) => k.commit.challenge_id === view.challenge_id && roundOf(k.commit) === round && k.commit.svcond <= last).map((k) => k.commit.voter),
  );
  return view.committee.every((m) => committed.has(m));
}

/** A challenge's fold: the round it rests on, and whether round 0 ended without a quorum and escalated. */
export type ChallengeFold = Fold & { uncommittedVotes: number; round: Round; escalated: boolean };

/**
 * The fold of a challenge over its rounds: round 0's, unless round 0's deadline has passed (`passedRounds` ≥ 1)
 * without a quorum and the challenge can escalate (escalationOf) — then round 1's, whose no_quorum is final once its
 * own deadline has passed (`passedRounds` = 2).
 */
export function foldChallenge(c: ChallengeRecord, votes: readonly SignedVote[], commits: readonly SignedCommit[], passedRounds: 0 | 1 | 2): ChallengeFold {
  // Where round 0 can escalate, its reveals count only once every member committed in its window: a round short of
  // a commit escalates with no reveal of it counted (nor made, reexecutor.ts), so round 1 commits before any round-0
  // digest is out.
  const canEscalate = escalationOf(c) !== null;
  const first = foldOf(c, canEscalate && !everyMemberCommitted({ ...c, round: 0 }, commits) ? [] : votes, passedRounds >= 1, commits);
  const escalated = first.outcome === 'no_quorum' && canEscalate ? escalationOf(c) : null;
  if (!escalated) return { ...first, round: 0, escalated: false };
  return { ...foldOf(escalated, votes, passedRounds >= 2, commits), round: 1, escalated: true };
}

/** How many rounds' deadlines a verdict asserts have passed: the rounds before its own, and its own for no_quorum. */
export function passedRoundsOf(verdict: Pick<VerdictRecord, 'outcome' | 'round'>): 0 | 1 | 2 {
  return ((verdict.round ?? 0) + (verdict.outcome === 'no_quorum' ? 1 : 0)) as 0 | 1 | 2;
}

/** The last tick of round `round`'s window (round 1 of a challenge that cannot escalate: round 0's). */
export function roundDeadlineOf(c: ChallengeRecord, round: Round): number {
  return (roundView(c, round) ?? c).deadline_svcond;
}

/**
 * Check a verdict document: the challenge (signature, committee), every commit's and vote's signature, and the fold
 * over the votes that open their commits, which must give the verdict's outcome and deciding digest in the verdict's
 * round (round 1: the committee of escalationOf, after round 0 folded to no_quorum). A no_quorum verdict holds when
 * the votes decide nothing in a round that cannot escalate further; whether the deadlines it rests on have passed is
 * the reader's clock (`nowSvcond` checks it when given).
 */
export function verifyVerdictDocument(
  doc: VerdictDocument,
  verify: VerifyFn,
  nowSvcond?: number,
): { valid: boolean; reasons: string[]; fold: ChallengeFold | null; bad_votes: number } {
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
  const commits: SignedCommit[] = [];
  for (const k of doc.commits ?? []) {
    const f = commitFault(k, c.challenge_id, verify);
    if (f) {
      bad++;
      reasons.push(`commit of ${k.commit.voter}: ${f}`);
    } else commits.push(k);
  }
  const round = doc.verdict.round ?? 0;
  const passed = passedRoundsOf(doc.verdict);
  if (nowSvcond !== undefined && passed > 0) {
    const last = roundDeadlineOf(c, passed === 2 ? 1 : 0);
    if (nowSvcond <= last) reasons.push(`the verdict rests on the deadline tick ${last}, not passed yet`);
  }
  const fold = foldChallenge(c, good, commits, passed);
  if (fold.round !== round) reasons.push(`the votes decide in round ${fold.round}, not round ${round}`);
  else if (fold.outcome !== doc.verdict.outcome) reasons.push(`the votes fold to ${fold.outcome ?? 'no outcome yet'}, not ${doc.verdict.outcome}`);
  else if (fold.decidingDigest !== doc.verdict.deciding_digest) reasons.push('the deciding digest is not the one the votes give');
  return { valid: reasons.length === 0, reasons, fold, bad_votes: bad };
}

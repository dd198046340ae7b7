// A challenge's escalation (architecture.md §6, docs/protocol.md §15): round 0 by the signed committee of k; no
// quorum by its deadline escalates once to round 1, 2k + 1 (or the largest odd size ≥ k + 2) drawn by the same
// ranking over the same eligible set, whose fold is final. Pure: the sizes, the round-1 view, the fold over both
// rounds (one case per lifecycle row the escalation adds), and the verdict document's check of its round, on
// documents signed with real Ed25519 keys.
import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  challengeIdOf,
  challengeSigningText,
  commitDeadlineOf,
  commitmentOf,
  commitSigningText,
  escalatedSize,
  escalationOf,
  foldChallenge,
  verifyVerdictDocument,
  voteSigningText,
  type ChallengeRecord,
  type SignedCommit,
  type SignedVote,
  type VerdictDocument,
} from '../../src/consensus/challenge-wire.js';
import { move } from '../../src/consensus/challenge-lifecycle.js';
import { quorumOf } from '../../src/consensus/policy.js';
import { signExecution } from '../../src/consensus/executed-by.js';
import { signText, verifyText } from '../../src/mesh/wire.js';
import { drawEvent, drawnCommittee, key, type Key } from './helpers.js';

const CLAIM = 'c'.repeat(64);
const EXEC = 'e'.repeat(64);
const OTHER = '0'.repeat(64);
/** A member's salt in a round (a fresh random one in a node: distinct per member and round). */
const saltOf = (voter: string, round: 0 | 1) => createHash('sha256').update(`${voter}|${round}`).digest('hex').slice(0, 32);
const T = 1_000;
const K = 3;

let opener: Key;
let executor: Key;
let members: Key[] = [];
let challenge: ChallengeRecord;
const byId = new Map<string, Key>();

beforeAll(async () => {
  [opener, executor] = await Promise.all([key(), key()]);
  members = await Promise.all([0, 1, 2, 3, 4].map(() => key()));
  for (const m of members) byId.set(m.id, m);
  const id = challengeIdOf('res_escalation', 'zid_challenger');
  const eligible = members.map((m) => m.id).sort();
  challenge = {
    challenge_id: id,
    result_id: 'res_escalation',
    challenger: 'zid_challenger',
    challenger_home: opener.id,
    claimed_digest: CLAIM,
    executor_digest: EXEC,
    executed_by: signExecution(
      (t) => signText(executor.priv, t),
      { node: executor.id, bond_id: 'bond_0123456789abcdef01234567', svcond: T - 5, request_digest: 'd'.repeat(64) },
      EXEC,
    ),
    request: { kind: 'solver', solver: 'zeta', inputs: { n: 100, count: 1 } },
    stamp_svcond: T - 5,
    svcond: T,
    deadline_svcond: T + 10,
    committee_size: K,
    quorum: quorumOf(K),
    eligible,
    committee: drawnCommittee('res_escalation', drawEvent(byId.get(eligible[0]!)!, T + 1), eligible, K),
    draw: drawEvent(byId.get(eligible[0]!)!, T + 1),
  };
});

/** A member's commit and its reveal of `digest` in `round`, signed by it at `svcond`. */
function ballot(voter: string, digest: string, round: 0 | 1, svcond: number, salt = saltOf(voter, round)): { commit: SignedCommit; vote: SignedVote } {
  const k = byId.get(voter)!;
  const r = round === 1 ? { round: 1 as const } : {};
  const commit = { challenge_id: challenge.challenge_id, voter, commitment: commitmentOf(digest, salt), svcond, ...r };
  const vote = { challenge_id: challenge.challenge_id, voter, digest, svcond, salt, ...r };
  return { commit: { commit, signature: signText(k.priv, commitSigningText(commit)) }, vote: { vote, signature: signText(k.priv, voteSigningText(vote)) } };
}

function ballots(list: { voter: string; digest: string; round: 0 | 1 }[]): { commits: SignedCommit[]; votes: SignedVote[] } {
  const made = list.map((b) => ballot(b.voter, b.digest, b.round, b.round === 0 ? T + 2 : T + 12));
  return { commits: made.map((m) => m.commit), votes: made.map((m) => m.vote) };
}

function documentOf(b: { commits: SignedCommit[]; votes: SignedVote[] }, verdict: VerdictDocument['verdict']): VerdictDocument {
  return { challenge: { challenge, signature: signText(opener.priv, challengeSigningText(challenge)) }, ...b, verdict };
}

describe('the size and committee of the escalated round', () => {
  it('2k + 1 when the eligible set holds it, else the largest odd size ≥ k + 2, else none', () => {
    expect(escalatedSize(3, 9)).toBe(7);
    expect(escalatedSize(3, 7)).toBe(7);
    expect(escalatedSize(3, 6)).toBe(5);
    expect(escalatedSize(3, 5)).toBe(5);
    expect(escalatedSize(3, 4)).toBeNull();
    expect(escalatedSize(3, 3)).toBeNull();
    expect(escalatedSize(2, 4)).toBeNull();
    expect(escalatedSize(2, 5)).toBe(5);
    expect(escalatedSize(1, 3)).toBe(3);
  });

  it("round 1 keeps round 0's members (the same ranking), adds the next ones, and votes in a window twice round 0's after it", () => {
    const r1 = escalationOf(challenge)!;
    expect(r1.round).toBe(1);
    expect(r1.committee_size).toBe(5);
    expect(r1.quorum).toBe(3);
    expect(r1.committee.slice(0, K)).toEqual(challenge.committee);
    expect([...r1.committee].sort()).toEqual(challenge.eligible);
    expect(r1.svcond).toBe(challenge.deadline_svcond);
    expect(r1.deadline_svcond).toBe(challenge.deadline_svcond + 20);
    expect(commitDeadlineOf(r1)).toBe(challenge.deadline_svcond + 10);
    expect(escalationOf({ ...challenge, eligible: challenge.eligible.slice(0, 4) })).toBeNull();
  });
});

describe('the fold over both rounds, one case per row the escalation adds', () => {
  const split = () => {
    const [m0, m1] = challenge.committee;
    return [
      { voter: m0!, digest: EXEC, round: 0 as const },
      { voter: m1!, digest: OTHER, round: 0 as const },
    ];
  };

  it('voting --escalate--> escalated: round 0 split by its deadline, round 1 open', () => {
    const b = ballots(split());
    expect(foldChallenge(challenge, b.votes, b.commits, 0)).toMatchObject({ outcome: null, round: 0, escalated: false });
    const f = foldChallenge(challenge, b.votes, b.commits, 1);
    expect(f).toMatchObject({ outcome: null, round: 1, escalated: true, counted: [] });
    expect(move('voting', f)).toEqual({ path: ['escalated'], effects: ['escalate'] });
  });

  it('opened --escalate--> escalated: nobody voted in round 0 (a dead committee)', () => {
    const f = foldChallenge(challenge, [], [], 1);
    expect(f).toMatchObject({ outcome: null, round: 1, escalated: true });
    expect(move('opened', f)).toEqual({ path: ['escalated'], effects: ['escalate'] });
  });

  it("escalated --quorum_executor--> rejected: round 1's majority on the executor's digest; round 0's votes stay in round 0", () => {
    const r1 = escalationOf(challenge)!.committee;
    const b = ballots([...split(), ...r1.slice(0, 3).map((voter) => ({ voter, digest: EXEC, round: 1 as const }))]);
    const f = foldChallenge(challenge, b.votes, b.commits, 1);
    expect(f).toMatchObject({ outcome: 'rejected', decidingDigest: EXEC, round: 1, tally: { [EXEC]: 3 } });
    expect(move('escalated', f)).toEqual({ path: ['rejected'], effects: ['verdict'] });
  });

  it("escalated --quorum_other--> upheld, and escalated --vote--> escalated below round 1's quorum", () => {
    const r1 = escalationOf(challenge)!.committee;
    const two = ballots(r1.slice(2, 4).map((voter) => ({ voter, digest: CLAIM, round: 1 as const })));
    const f2 = foldChallenge(challenge, two.votes, two.commits, 1);
    expect(f2).toMatchObject({ outcome: null, round: 1 });
    expect(move('escalated', f2)).toEqual({ path: [], effects: [] });
    const three = ballots(r1.slice(2, 5).map((voter) => ({ voter, digest: CLAIM, round: 1 as const })));
    const f3 = foldChallenge(challenge, three.votes, three.commits, 1);
    expect(f3).toMatchObject({ outcome: 'upheld', claimMatched: true, round: 1 });
    expect(move('escalated', f3)).toEqual({ path: ['upheld'], effects: ['verdict'] });
  });

  it("escalated --deadline--> no_quorum: round 1's deadline passed without a majority is final", () => {
    const r1 = escalationOf(challenge)!.committee;
    const b = ballots([
      { voter: r1[0]!, digest: EXEC, round: 1 },
      { voter: r1[1]!, digest: OTHER, round: 1 },
    ]);
    const f = foldChallenge(challenge, b.votes, b.commits, 2);
    expect(f).toMatchObject({ outcome: 'no_quorum', round: 1 });
    expect(move('escalated', f)).toEqual({ path: ['no_quorum'], effects: ['verdict'] });
  });

  it("a round-1 vote of a node outside round 1's committee, or one that opens a round-0 commit, is not counted", () => {
    const r1 = escalationOf(challenge)!;
    const outsider = challenge.eligible.find((n) => !r1.committee.includes(n));
    expect(outsider).toBeUndefined(); // five eligible, a committee of five: everyone sits on round 1
    const m = r1.committee[4]!;
    const r0 = ballot(m, CLAIM, 0, T + 2);
    const r1vote = ballot(m, CLAIM, 1, T + 12).vote;
    const f = foldChallenge(challenge, [r1vote], [r0.commit], 1);
    expect(f).toMatchObject({ counted: [], uncommittedVotes: 1 });
  });

  it("a round-1 member that copies a round-0 reveal gains nothing: its commit repeats another's round-0 commitment and opens nothing; short of a round-0 commit no round-0 reveal counts", () => {
    const [m0, m1, m2] = challenge.committee;
    // Every round-0 member committed, m2 never revealed: round 0's reveals are out, and it escalates.
    const r0 = [ballot(m0!, EXEC, 0, T + 2), ballot(m1!, OTHER, 0, T + 2), ballot(m2!, EXEC, 0, T + 2)];
    const copier = escalationOf(challenge)!.committee[3]!;
    // The copier commits in round 1 to m0's revealed digest and salt (the same commitment), and reveals them.
    const copied = ballot(copier, EXEC, 1, T + 12, r0[0]!.vote.vote.salt);
    expect(copied.commit.commit.commitment).toBe(r0[0]!.commit.commit.commitment);
    const honest = [m0!, m2!].map((v) => ballot(v, EXEC, 1, T + 12));
    const commits = [...r0.map((b) => b.commit), copied.commit, ...honest.map((b) => b.commit)];
    const votes = [r0[0]!.vote, r0[1]!.vote, copied.vote, ...honest.map((b) => b.vote)];
    const f = foldChallenge(challenge, votes, commits, 1);
    expect(f).toMatchObject({ round: 1, outcome: null, tally: { [EXEC]: 2 }, uncommittedVotes: 1 });
    expect(f.counted.map((c) => c.voter)).not.toContain(copier);
    // Round 0 short of m2's commit: m0's and m1's reveals count for nothing, even two agreeing ones.
    const agreeing = [ballot(m0!, EXEC, 0, T + 2), ballot(m1!, EXEC, 0, T + 2)];
    const short = foldChallenge(
      challenge,
      agreeing.map((b) => b.vote),
      agreeing.map((b) => b.commit),
      0,
    );
    expect(short).toMatchObject({ outcome: null, round: 0, counted: [] });
    expect(
      foldChallenge(
        challenge,
        agreeing.map((b) => b.vote),
        agreeing.map((b) => b.commit),
        1,
      ),
    ).toMatchObject({ round: 1, escalated: true });
  });
});

describe('the verdict document names its round, and every check folds that round', () => {
  it('a round-1 verdict verifies; the same votes called round 0 do not', () => {
    const r1 = escalationOf(challenge)!.committee;
    const b = ballots([...r1.slice(0, 3).map((voter) => ({ voter, digest: EXEC, round: 1 as const }))]);
    const good = documentOf(b, { challenge_id: challenge.challenge_id, outcome: 'rejected', deciding_digest: EXEC, round: 1 });
    expect(verifyVerdictDocument(good, verifyText, T + 13)).toMatchObject({ valid: true, reasons: [] });
    const wrongRound = verifyVerdictDocument({ ...good, verdict: { ...good.verdict, round: 0 } }, verifyText, T + 13);
    expect(wrongRound.valid).toBe(false);
    // Called round 0, the same votes are read in round 0, where nobody voted.
    expect(wrongRound.reasons.join()).toMatch(/no outcome yet, not rejected/);
    // Before round 0's deadline, no round-1 verdict can hold on this node's clock.
    expect(verifyVerdictDocument(good, verifyText, T + 5).reasons.join()).toMatch(/deadline tick 1010/);
  });

  it("round 0's no_quorum is not final where the eligible set holds a larger committee: refused; final where it does not", () => {
    const b = ballots([]);
    const early = documentOf(b, { challenge_id: challenge.challenge_id, outcome: 'no_quorum', deciding_digest: null });
    const r = verifyVerdictDocument(early, verifyText, T + 40);
    expect(r.valid).toBe(false);
    expect(r.reasons.join()).toMatch(/round 1, not round 0/);
    const late = documentOf(b, { challenge_id: challenge.challenge_id, outcome: 'no_quorum', deciding_digest: null, round: 1 });
    expect(verifyVerdictDocument(late, verifyText, T + 40)).toMatchObject({ valid: true });
    expect(verifyVerdictDocument(late, verifyText, T + 25).reasons.join()).toMatch(/deadline tick 1030/);
  });

  it("a round-1 verdict over round 0's quorum is refused: round 0 decided", () => {
    const b = ballots(challenge.committee.slice(0, 2).map((voter) => ({ voter, digest: EXEC, round: 0 as const })));
    // The third member committed too (its reveal is not needed): every member committed, so round 0's reveals count.
    b.commits.push(ballot(challenge.committee[2]!, OTHER, 0, T + 2).commit);
    const doc = documentOf(b, { challenge_id: challenge.challenge_id, outcome: 'rejected', deciding_digest: EXEC, round: 1 });
    const r = verifyVerdictDocument(doc, verifyText, T + 13);
    expect(r.valid).toBe(false);
    expect(r.reasons.join()).toMatch(/round 0, not round 1/);
    expect(verifyVerdictDocument({ ...doc, verdict: { ...doc.verdict, round: 0 } }, verifyText, T + 3)).toMatchObject({ valid: true });
  });
});

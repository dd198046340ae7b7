// The verdict (architecture.md §6): a pure fold over the votes of a challenge, run by every node on the same signed
// votes, so every node reaches the same outcome.
//   - a vote from a node outside the committee is ignored and counted (non_member_votes), and so is a member's vote
//     signed after the deadline tick (late_votes): the outcome is a function of the vote set alone, whenever a node
//     folds it;
//   - a member's repeated identical vote counts once;
//   - a member that voted two different digests equivocated: it is recorded, and none of its votes count (a member
//     that says both cannot speak for either);
//   - a digest with ≥ quorum counted votes decides: equal to the claim and not the executor's → upheld; equal to
//     the executor's → rejected; neither → not_reproducible;
//   - no deciding digest once the deadline has passed → no_quorum; before it, no outcome yet (null).
// Signatures are checked before votes reach the fold (challenges.ts, and pohc verify for a verdict document).
// Pure: no clock (the caller says whether the deadline has passed), no store.

export const OUTCOMES = ['upheld', 'rejected', 'not_reproducible', 'no_quorum'] as const;
export type Outcome = (typeof OUTCOMES)[number];

export interface BallotVote {
  voter: string;
  digest: string;
  /** The tick the voter signed its vote at: a vote after the deadline does not count (late_votes). */
  svcond: number;
}

export interface FoldInput {
  committee: readonly string[];
  quorum: number;
  claimedDigest: string;
  executorDigest: string;
  votes: readonly BallotVote[];
  /** The last tick at which a vote counts. */
  deadlineSvcond: number;
  deadlinePassed: boolean;
}

export interface Fold {
  outcome: Outcome | null;
  /** The digest that decided (null for no_quorum or no outcome yet). */
  decidingDigest: string | null;
  /** Counted votes by digest (members that did not equivocate, one vote each). */
  tally: Record<string, number>;
  /** Members whose vote counts, with it, sorted by voter. */
  counted: { voter: string; digest: string }[];
  /** Members that voted two different digests, sorted. */
  equivocators: string[];
  /** Votes from nodes outside the committee (ignored). */
  nonMemberVotes: number;
  /** Member votes signed after the deadline (ignored). */
  lateVotes: number;
}

export function foldVotes(input: FoldInput): Fold {
  const members = new Set(input.committee);
  const byVoter = new Map<string, Set<string>>();
  let nonMemberVotes = 0;
  let lateVotes = 0;
  for (const v of input.votes) {
    if (!members.has(v.voter)) {
      nonMemberVotes++;
      continue;
    }
    if (v.svcond > input.deadlineSvcond) {
      lateVotes++;
      continue;
    }
    let set = byVoter.get(v.voter);
    if (!set) byVoter.set(v.voter, (set = new Set()));
    set.add(v.digest);
  }
  const equivocators: string[] = [];
  const counted: { voter: string; digest: string }[] = [];
  const tally: Record<string, number> = {};
  for (const voter of [...byVoter.keys()].sort()) {
    const digests = byVoter.get(voter)!;
    if (digests.size > 1) {
      equivocators.push(voter);
      continue;
    }
    const digest = [...digests][0]!;
    counted.push({ voter, digest });
    tally[digest] = (tally[digest] ?? 0) + 1;
  }
  // At most one digest can reach a strict majority of the committee; quorum ≤ 0 is not a quorum.
  let deciding: string | null = null;
  if (input.quorum > 0) {
    for (const d of Object.keys(tally).sort()) if (tally[d]! >= input.quorum) deciding = deciding ?? d;
  }
  let outcome: Outcome | null = null;
  if (deciding !== null) {
    if (deciding === input.executorDigest) outcome = 'rejected';
    else if (deciding === input.claimedDigest) outcome = 'upheld';
    else outcome = 'not_reproducible';
  } else if (input.deadlinePassed) outcome = 'no_quorum';
  return { outcome, decidingDigest: deciding, tally, counted, equivocators, nonMemberVotes, lateVotes };
}

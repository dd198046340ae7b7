// The verdict (architecture.md §6): a pure fold over the votes of a challenge, run by every node on the same signed
// votes, so every node reaches the same outcome.
//   - a vote from a node outside the committee is ignored and counted (non_member_votes), and so is a member's vote
//     signed after the deadline tick (late_votes): the outcome is a function of the vote set alone, whenever a node
//     folds it;
//   - a member's repeated identical vote counts once;
//   - a member that voted two different digests equivocated: it is recorded, and none of its votes count (a member
//     that says both cannot speak for either);
//   - a digest with ≥ quorum counted votes decides, and the fold is about the executor: equal to the executor's →
//     rejected; any other digest → upheld, whatever the challenger claimed (claimMatched says whether the claim was
//     the deciding digest: only then is the challenger rewarded);
//   - no deciding digest once the deadline has passed → no_quorum; before it, no outcome yet (null).
// effectsOf gives what each outcome does to the executor's bond and the challenger's stake (docs/protocol.md §16,
// the table of outcomes and effects, held to this file by test/consensus/verdict.test.ts).
// Signatures are checked before votes reach the fold (challenges.ts, and pohc verify for a verdict document).
// Pure: no clock (the caller says whether the deadline has passed), no store.

export const OUTCOMES = ['upheld', 'rejected', 'no_quorum'] as const;
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
  /** The deciding digest is the challenger's claim (upheld with the claim proven: the challenger is rewarded). */
  claimMatched: boolean;
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
  if (deciding !== null) outcome = deciding === input.executorDigest ? 'rejected' : 'upheld';
  else if (input.deadlinePassed) outcome = 'no_quorum';
  const claimMatched = deciding !== null && deciding === input.claimedDigest;
  return { outcome, decidingDigest: deciding, claimMatched, tally, counted, equivocators, nonMemberVotes, lateVotes };
}

/** What an outcome does: to the executor's bond, to the challenger's stake, and the challenger's reward. */
export interface OutcomeEffects {
  /** The executor's bond is slashed (marked in every registry; its envelopes move at its home). */
  slashBond: boolean;
  stake: 'burned' | 'returned';
  /** The challenger receives its share of the slashed envelopes (the rest go to the foundation account). */
  rewardChallenger: boolean;
}

/** The effects of a verdict: `outcome` and whether the claim was the deciding digest. */
export function effectsOf(outcome: Outcome, claimMatched: boolean): OutcomeEffects {
  return {
    slashBond: outcome === 'upheld',
    stake: outcome === 'rejected' ? 'burned' : 'returned',
    rewardChallenger: outcome === 'upheld' && claimMatched,
  };
}

/** How many of `slashed` envelopes a rewarded challenger receives: `share` of them, rounded down. */
export function rewardCount(slashed: number, share: number): number {
  return Math.floor(slashed * share + 1e-9);
}

// The fold of votes (architecture.md §6): each outcome, non-members ignored and counted, one vote per member,
// equivocation recorded and discounted, late votes, no_quorum only once the deadline has passed.
import { describe, expect, it } from 'vitest';
import { foldVotes, type BallotVote } from '../../src/consensus/verdict.js';

const CLAIM = 'c'.repeat(64);
const EXEC = 'e'.repeat(64);
const OTHER = '0'.repeat(64);
const committee = ['m1', 'm2', 'm3'];
const v = (voter: string, digest: string, svcond = 10): BallotVote => ({ voter, digest, svcond });
const fold = (votes: BallotVote[], deadlinePassed = false) =>
  foldVotes({ committee, quorum: 2, claimedDigest: CLAIM, executorDigest: EXEC, votes, deadlineSvcond: 20, deadlinePassed });

describe('foldVotes', () => {
  it('two of three on the claim → upheld', () => {
    const f = fold([v('m1', CLAIM), v('m2', CLAIM), v('m3', EXEC)]);
    expect(f).toMatchObject({ outcome: 'upheld', decidingDigest: CLAIM, tally: { [CLAIM]: 2, [EXEC]: 1 }, equivocators: [], nonMemberVotes: 0 });
  });
  it("two on the executor's digest → rejected (a lying member is outvoted)", () => {
    expect(fold([v('m1', EXEC), v('m2', OTHER), v('m3', EXEC)]).outcome).toBe('rejected');
  });
  it('two on a third digest → not_reproducible', () => {
    expect(fold([v('m1', OTHER), v('m2', OTHER)])).toMatchObject({ outcome: 'not_reproducible', decidingDigest: OTHER });
  });
  it('one vote: no outcome before the deadline, no_quorum after it', () => {
    expect(fold([v('m1', CLAIM)]).outcome).toBeNull();
    expect(fold([v('m1', CLAIM)], true)).toMatchObject({ outcome: 'no_quorum', decidingDigest: null });
    expect(fold([], true).outcome).toBe('no_quorum');
  });
  it('a quorum decides even once the deadline has passed (the votes came in time)', () => {
    expect(fold([v('m1', EXEC), v('m2', EXEC)], true).outcome).toBe('rejected');
  });
  it('votes from non-members are ignored and counted', () => {
    const f = fold([v('x', CLAIM), v('y', CLAIM), v('m1', CLAIM)]);
    expect(f.outcome).toBeNull();
    expect(f.nonMemberVotes).toBe(2);
    expect(f.counted).toEqual([{ voter: 'm1', digest: CLAIM }]);
  });
  it('a repeated identical vote counts once', () => {
    expect(fold([v('m1', CLAIM), v('m1', CLAIM, 11)]).tally).toEqual({ [CLAIM]: 1 });
  });
  it('an equivocating member is recorded and none of its votes count', () => {
    const f = fold([v('m1', CLAIM), v('m1', EXEC), v('m2', CLAIM)]);
    expect(f.equivocators).toEqual(['m1']);
    expect(f.outcome).toBeNull();
    expect(f.tally).toEqual({ [CLAIM]: 1 });
    // With the third member's honest vote the quorum is reached without it.
    expect(fold([v('m1', CLAIM), v('m1', EXEC), v('m2', CLAIM), v('m3', CLAIM)]).outcome).toBe('upheld');
  });
  it('a vote signed after the deadline tick does not count', () => {
    const f = fold([v('m1', CLAIM), v('m2', CLAIM, 21)]);
    expect(f).toMatchObject({ outcome: null, lateVotes: 1 });
  });
  it('the outcome does not depend on the order of the votes', () => {
    const votes = [v('m1', CLAIM), v('x', EXEC), v('m2', EXEC), v('m3', CLAIM), v('m2', OTHER)];
    const a = fold(votes);
    const b = fold([...votes].reverse());
    expect(b).toEqual(a);
    expect(a).toMatchObject({ outcome: 'upheld', equivocators: ['m2'] });
  });
});

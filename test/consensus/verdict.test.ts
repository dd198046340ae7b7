// The fold of votes (architecture.md §6): each outcome, non-members ignored and counted, one vote per member,
// equivocation recorded and discounted, late votes, no_quorum only once the deadline has passed; and docs/protocol.md
// §16's table of outcomes and effects, read out of the document, one test per row through the fold and effectsOf.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { effectsOf, foldVotes, rewardCount, type BallotVote } from '../../src/consensus/verdict.js';

const CLAIM = 'c'.repeat(64);
const EXEC = 'e'.repeat(64);
const OTHER = '0'.repeat(64);
const committee = ['m1', 'm2', 'm3'];
const v = (voter: string, digest: string, svcond = 10): BallotVote => ({ voter, digest, svcond });
const fold = (votes: BallotVote[], deadlinePassed = false) =>
  foldVotes({ committee, quorum: 2, claimedDigest: CLAIM, executorDigest: EXEC, votes, deadlineSvcond: 20, deadlinePassed });

describe('foldVotes', () => {
  it('two of three on the claim → upheld, the claim matched', () => {
    const f = fold([v('m1', CLAIM), v('m2', CLAIM), v('m3', EXEC)]);
    expect(f).toMatchObject({
      outcome: 'upheld',
      decidingDigest: CLAIM,
      claimMatched: true,
      tally: { [CLAIM]: 2, [EXEC]: 1 },
      equivocators: [],
      nonMemberVotes: 0,
    });
  });
  it("two on the executor's digest → rejected (a lying member is outvoted)", () => {
    expect(fold([v('m1', EXEC), v('m2', OTHER), v('m3', EXEC)])).toMatchObject({ outcome: 'rejected', claimMatched: false });
  });
  it('two on a third digest → upheld: the executor is wrong whatever the challenger claimed; the claim did not match', () => {
    expect(fold([v('m1', OTHER), v('m2', OTHER)])).toMatchObject({ outcome: 'upheld', decidingDigest: OTHER, claimMatched: false });
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

/** docs/protocol.md §16's table: row number → its cells. */
function outcomeTable(): { row: string; deciding: string; outcome: string; bond: string; stake: string; reward: string }[] {
  const doc = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'protocol.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## 16. Verdicts and their effects'));
  const rows = [...section.matchAll(/^\| (\d+) \| ([^|]+) \| ([^|]+) \| ([^|]+) \| ([^|]+) \| ([^|]+) \|$/gm)];
  return rows.map((m) => ({ row: m[1]!, deciding: m[2]!.trim(), outcome: m[3]!.trim(), bond: m[4]!.trim(), stake: m[5]!.trim(), reward: m[6]!.trim() }));
}

describe('docs/protocol.md §16: the table of outcomes and effects is the fold', () => {
  const table = outcomeTable();
  it('has its five rows', () => {
    expect(table.map((r) => r.row)).toEqual(['1', '2', '3', '4', '5']);
  });
  // Each row's deciding digest, as votes of two of the three members (none: one vote), and whether the deadline passed.
  const votesOf: Record<string, { votes: BallotVote[]; deadlinePassed: boolean }> = {
    "the executor's": { votes: [v('m1', EXEC), v('m2', EXEC), v('m3', CLAIM)], deadlinePassed: false },
    'the claim': { votes: [v('m1', CLAIM), v('m2', CLAIM), v('m3', EXEC)], deadlinePassed: false },
    'another digest': { votes: [v('m1', OTHER), v('m2', OTHER), v('m3', CLAIM)], deadlinePassed: false },
    'none by the deadline': { votes: [v('m1', CLAIM), v('m2', EXEC)], deadlinePassed: true },
    'none yet': { votes: [v('m1', CLAIM)], deadlinePassed: false },
  };
  it.each(table.map((r) => [`row ${r.row}: ${r.deciding} → ${r.outcome}`, r] as const))('%s', (_name, r) => {
    const input = votesOf[r.deciding];
    expect(input, `a deciding digest the test knows: ${r.deciding}`).toBeDefined();
    const f = fold(input!.votes, input!.deadlinePassed);
    if (r.outcome === 'no outcome') {
      expect(f.outcome).toBeNull();
      expect([r.bond, r.stake, r.reward]).toEqual(['kept', 'held', 'none']);
      return;
    }
    expect(`\`${f.outcome}\``).toBe(r.outcome);
    const e = effectsOf(f.outcome!, f.claimMatched);
    expect(e.slashBond ? 'slashed' : 'kept').toBe(r.bond);
    expect(e.stake).toBe(r.stake);
    expect(e.rewardChallenger ? 'its share' : 'none').toBe(r.reward);
  });
  it('a share of the slashed envelopes is rounded down, and never more than all of them', () => {
    expect(rewardCount(1000, 0.25)).toBe(250);
    expect(rewardCount(3, 0.5)).toBe(1);
    expect(rewardCount(2, 1)).toBe(2);
    expect(rewardCount(7, 0)).toBe(0);
  });
});

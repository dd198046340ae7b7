// The committee (architecture.md §6): eligibility by settle ticks, mode and exclusions; rendezvous ranking by
// SHA-256(challenge_id|peer id) computed here independently with node:crypto; the top k; quorum ⌊k/2⌋+1.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { committeeOf, eligibleNodes, quorumOf, rankWeight, type Candidate } from '../../src/consensus/committee.js';

const sha = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
const nodes = ['12D3KooWA', '12D3KooWB', '12D3KooWC', '12D3KooWD', '12D3KooWE', '12D3KooWF'];

describe('eligibility', () => {
  const rule = { svcond: 100, settleTicks: 8, executor: '12D3KooWA', challengerHome: '12D3KooWB' };
  it('keeps contributing nodes whose bond is at least settleTicks old, without the executor and the challenger home', () => {
    const cands: Candidate[] = [
      { node: '12D3KooWA', bondSvcond: 0, contributing: true }, // executor
      { node: '12D3KooWB', bondSvcond: 0, contributing: true }, // challenger's home
      { node: '12D3KooWC', bondSvcond: 92, contributing: true }, // exactly 8 ticks old: settled
      { node: '12D3KooWD', bondSvcond: 93, contributing: true }, // 7 ticks: not yet
      { node: '12D3KooWE', bondSvcond: 10, contributing: false }, // idle
      { node: '12D3KooWF', bondSvcond: 10, contributing: true },
      { node: '12D3KooWF', bondSvcond: 10, contributing: true }, // listed twice, kept once
    ];
    expect(eligibleNodes(cands, rule)).toEqual(['12D3KooWC', '12D3KooWF']);
  });
  it('a settle of 0 admits a bond made at the challenge tick', () => {
    expect(eligibleNodes([{ node: 'x', bondSvcond: 100, contributing: true }], { ...rule, settleTicks: 0 })).toEqual(['x']);
  });
});

describe('ranking and committee', () => {
  it('the weight is SHA-256 of challenge_id|peer id', () => {
    expect(rankWeight('chl_1', 'peer')).toBe(sha('chl_1|peer'));
  });
  it('the committee is the k highest weights, highest first, whatever the order of the eligible list', () => {
    const id = 'chl_' + 'ab'.repeat(16);
    const expected = [...nodes].sort((a, b) => (sha(`${id}|${a}`) > sha(`${id}|${b}`) ? -1 : 1)).slice(0, 3);
    expect(committeeOf(id, nodes, 3)).toEqual(expected);
    expect(committeeOf(id, [...nodes].reverse(), 3)).toEqual(expected);
    // Another challenge id draws another ranking (rendezvous hashing), from the same set.
    const other = committeeOf('chl_' + 'cd'.repeat(16), nodes, 6);
    expect([...other].sort()).toEqual([...nodes].sort());
  });
  it('fewer eligible nodes than k: all of them; k 0: none', () => {
    expect(committeeOf('chl_x', ['a', 'b'], 3)).toHaveLength(2);
    expect(committeeOf('chl_x', nodes, 0)).toEqual([]);
  });
  it('quorum is ⌊k/2⌋+1', () => {
    expect([1, 2, 3, 4, 5, 7].map(quorumOf)).toEqual([1, 2, 2, 3, 3, 4]);
  });
});

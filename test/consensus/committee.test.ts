// The committee (architecture.md §6): eligibility by settle ticks, mode and exclusions; rendezvous ranking by
// SHA-256(challenge_id|peer id) computed here independently with node:crypto; the top k; quorum ⌊k/2⌋+1.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { committeeCandidates, committeeOf, eligibleNodes, quorumOf, rankWeight, type Candidate } from '../../src/consensus/committee.js';

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

describe('committee candidates', () => {
  const SELF = '12D3KooWSelf';
  const active = [
    { bond: { node: SELF, zid: 'zid_self', bond_id: 'bond_self', svcond: 5 } },
    { bond: { node: '12D3KooWP1', zid: 'zid_p1', bond_id: 'bond_p1', svcond: 6 } },
    { bond: { node: '12D3KooWP2', zid: 'zid_p2', bond_id: 'bond_p2', svcond: 7 } },
    { bond: { node: '12D3KooWP3', zid: 'zid_p3', bond_id: 'bond_p3', svcond: 8 } },
    { bond: { node: '12D3KooWGone', zid: 'zid_gone', bond_id: 'bond_gone', svcond: 9 } },
  ];
  const peers = [
    { peerId: '12D3KooWP1', mode: 'contributing', bondId: 'bond_p1' },
    { peerId: '12D3KooWP2', mode: 'contributing', bondId: 'bond_old' }, // a tick from before its current bond
    { peerId: '12D3KooWP3', mode: 'idle', bondId: 'bond_p3' },
    // A peer's word about this node counts for nothing: this node reads its own operator's mode.
    { peerId: SELF, mode: 'idle', bondId: 'bond_self' },
  ];

  it('every active bond, in order, with its tick; contributing from the own mode here and a peer’s tick elsewhere', () => {
    const got = committeeCandidates(active, peers, SELF, (zid) => (zid === 'zid_self' ? 'contributing' : 'idle'));
    expect(got).toEqual([
      { node: SELF, bondSvcond: 5, contributing: true },
      { node: '12D3KooWP1', bondSvcond: 6, contributing: true },
      { node: '12D3KooWP2', bondSvcond: 7, contributing: false },
      { node: '12D3KooWP3', bondSvcond: 8, contributing: false },
      { node: '12D3KooWGone', bondSvcond: 9, contributing: false },
    ]);
  });

  it('this node is not contributing when its operator is not, whatever the peers say', () => {
    const got = committeeCandidates(active, [{ peerId: SELF, mode: 'contributing', bondId: 'bond_self' }], SELF, () => 'idle');
    expect(got[0]).toEqual({ node: SELF, bondSvcond: 5, contributing: false });
  });
});

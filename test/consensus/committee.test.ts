// The committee (architecture.md §6): eligibility by settle ticks, liveness (tick events heard contributing, kept by
// the liveness log), one seat per operator and exclusions; rendezvous ranking by SHA-256(challenge_id|peer id)
// computed here independently with node:crypto; the top k; quorum ⌊k/2⌋+1.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { committeeCandidates, committeeOf, eligibleNodes, quorumOf, rankWeight, type Candidate } from '../../src/consensus/committee.js';
import { LivenessLog } from '../../src/consensus/liveness.js';
import { TICK_SECONDS_EXACT } from '../../src/kernel/clock.js';

const sha = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
const nodes = ['12D3KooWA', '12D3KooWB', '12D3KooWC', '12D3KooWD', '12D3KooWE', '12D3KooWF'];

/** A candidate bonded at `bondSvcond`, heard contributing with its bond at each of `ticks`. */
const cand = (node: string, bondSvcond: number, ticks: number[], zid = `zid_${node}`, mode = 'contributing'): Candidate => ({
  node,
  zid,
  bondId: `bond_${node}`,
  bondSvcond,
  heard: ticks.map((svcond) => ({ svcond, mode, bondId: `bond_${node}` })),
});

describe('eligibility', () => {
  const rule = { svcond: 100, settleTicks: 8, live: { from: 68, to: 100 }, executor: '12D3KooWA', challengerHome: '12D3KooWB' };
  it('keeps nodes heard contributing whose bond is at least settleTicks old, without the executor and the challenger home', () => {
    const cands: Candidate[] = [
      cand('12D3KooWA', 0, [99]), // executor
      cand('12D3KooWB', 0, [99]), // challenger's home
      cand('12D3KooWC', 92, [99]), // exactly 8 ticks old: settled
      cand('12D3KooWD', 93, [99]), // 7 ticks: not yet
      cand('12D3KooWE', 10, [99], 'zid_12D3KooWE', 'idle'), // idle
      cand('12D3KooWF', 10, [99]),
      cand('12D3KooWF', 10, [99]), // listed twice, kept once
      { ...cand('12D3KooWG', 10, []), heard: [{ svcond: 99, mode: 'contributing', bondId: 'bond_before' }] }, // a tick of another bond
    ];
    expect(eligibleNodes(cands, rule)).toEqual(['12D3KooWC', '12D3KooWF']);
  });
  it('a settle of 0 admits a bond made at the challenge tick', () => {
    expect(eligibleNodes([cand('x', 100, [100])], { ...rule, settleTicks: 0 })).toEqual(['x']);
  });
  it('live: a tick event inside the window, both ends included; none, or only older ones, is not live', () => {
    const cands = [cand('n1', 0, [68]), cand('n2', 0, [67]), cand('n3', 0, []), cand('n4', 0, [10, 40, 100])];
    expect(eligibleNodes(cands, rule)).toEqual(['n1', 'n4']);
    // Liveness not judged (the reader has no record of the window): bonds and settling only.
    expect(eligibleNodes(cands, { ...rule, live: null })).toEqual(['n1', 'n2', 'n3', 'n4']);
  });
  it("one seat per operator identity (its lowest node id); none for the executor's operator", () => {
    const cands = [cand('n2', 0, [99], 'zid_op'), cand('n1', 0, [99], 'zid_op'), cand('n3', 0, [99], 'zid_exec'), cand('n4', 0, [99])];
    expect(eligibleNodes(cands, { ...rule, executorZid: 'zid_exec' })).toEqual(['n1', 'n4']);
  });
  it('a node dead for 100 s is never drawn: its last tick event is 129 ticks behind every challenge after it', () => {
    const log = new LivenessLog({ keepTicks: 1024 });
    const nodesHere = ['n1', 'n2', 'n3', 'n4', 'dead'];
    const deadFor = Math.ceil(100 / TICK_SECONDS_EXACT);
    expect(deadFor).toBe(129);
    // Every node ticks every 4 ticks from tick 0; `dead` stops at tick 200.
    for (let t = 0; t <= 200 + deadFor + 50; t += 4)
      for (const n of nodesHere) if (n !== 'dead' || t <= 200) log.record(n, { svcond: t, mode: 'contributing', bondId: `bond_${n}` }, t);
    const active = nodesHere.map((n) => ({ bond: { node: n, zid: `zid_${n}`, bond_id: `bond_${n}`, svcond: 0 } }));
    const candidates = committeeCandidates(active, (n) => log.heardIn(n, 0, Number.MAX_SAFE_INTEGER));
    const liveTicks = 32;
    for (let t = 200 + deadFor; t <= 200 + deadFor + 50; t++) {
      const eligible = eligibleNodes(candidates, { svcond: t, settleTicks: 8, live: { from: t - liveTicks, to: t }, executor: 'x', challengerHome: 'y' });
      expect(eligible).toEqual(['n1', 'n2', 'n3', 'n4']);
      // Whatever the challenge id, the committee is drawn from the live nodes only.
      for (const id of ['chl_a', 'chl_b', 'chl_c']) expect(committeeOf(`${id}${t}`, eligible, 3)).not.toContain('dead');
    }
    // While it was alive it was eligible.
    const before = eligibleNodes(candidates, { svcond: 200, settleTicks: 8, live: { from: 168, to: 200 }, executor: 'x', challengerHome: 'y' });
    expect(before).toContain('dead');
  });
});

describe('ranking and committee', () => {
  it('the weight is SHA-256 of seed|peer id', () => {
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

describe('committee candidates and the liveness log', () => {
  const active = [{ bond: { node: 'n1', zid: 'zid_1', bond_id: 'bond_1', svcond: 5 } }, { bond: { node: 'n2', zid: 'zid_2', bond_id: 'bond_2', svcond: 6 } }];

  it('every active bond, in order, with its bond and the tick events heard from its node', () => {
    const log = new LivenessLog({ keepTicks: 100 });
    log.record('n1', { svcond: 10, mode: 'contributing', bondId: 'bond_1' }, 10);
    log.record('n1', { svcond: 9, mode: 'idle', bondId: 'bond_1' }, 11); // older than its latest: skipped
    log.record('n1', { svcond: 14, mode: 'idle', bondId: 'bond_1' }, 14);
    const got = committeeCandidates(active, (n) => log.heardIn(n, 0, 100));
    expect(got).toEqual([
      {
        node: 'n1',
        zid: 'zid_1',
        bondId: 'bond_1',
        bondSvcond: 5,
        heard: [
          { svcond: 10, mode: 'contributing', bondId: 'bond_1' },
          { svcond: 14, mode: 'idle', bondId: 'bond_1' },
        ],
      },
      { node: 'n2', zid: 'zid_2', bondId: 'bond_2', bondSvcond: 6, heard: [] },
    ]);
  });

  it('the log covers the ticks from its first record on, within what it keeps; older tick events are dropped', () => {
    const log = new LivenessLog({ keepTicks: 20 });
    expect(log.covers(0)).toBe(false);
    log.record('n1', { svcond: 50, mode: 'contributing', bondId: 'b' }, 50);
    expect(log.covers(49)).toBe(false);
    expect(log.covers(50)).toBe(true);
    log.record('n1', { svcond: 80, mode: 'contributing', bondId: 'b' }, 80);
    expect(log.covers(55)).toBe(false); // past what it keeps (80 - 20)
    expect(log.covers(60)).toBe(true);
    expect(log.heardIn('n1', 0, 100).map((h) => h.svcond)).toEqual([80]);
  });
});

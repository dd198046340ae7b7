// Live eligibility read in the sender's own tick interval (liveness.ts, committee.ts): liveTicks is written for the
// mesh's base interval (mesh.tickEvery) and a tick event declaring a longer interval keeps its sender live
// liveTicks × every / base ticks; the log keeps an event as long as it can make its sender live, and always a node's
// latest.
import { describe, expect, it } from 'vitest';
import { eligibleNodes, heardContributing, type Candidate } from '../../src/consensus/committee.js';
import { LivenessLog, inSenderIntervals } from '../../src/consensus/liveness.js';

const heardAt = (svcond: number, every?: number) => ({ svcond, mode: 'contributing', bondId: 'b', ...(every === undefined ? {} : { every }) });
const candidate = (node: string, svcond: number, every?: number): Candidate => ({
  node,
  zid: `z_${node}`,
  bondId: 'b',
  bondSvcond: 0,
  heard: [heardAt(svcond, every)],
});

describe('live eligibility in the sender’s intervals', () => {
  // A challenge at tick 1 000, liveTicks 8 at a base interval of 2 (four tick events): [992, 1 000] at the base.
  const live = { from: 992, to: 1_000, liveTicks: 8, baseEvery: 2 };

  it('a node that declares every = 8, heard 20 ticks ago, is live; one that declares every = 2 is not', () => {
    expect(inSenderIntervals(8, 8, 2)).toBe(32);
    expect(inSenderIntervals(8, 2, 2)).toBe(8);
    // No longer than the base, or no interval declared: read in ticks.
    expect(inSenderIntervals(8, 1, 2)).toBe(8);
    expect(inSenderIntervals(8, undefined, 2)).toBe(8);
    expect(inSenderIntervals(8, 3, 2)).toBe(12);
    expect(heardContributing(candidate('slow', 980, 8), live)).toBe(true);
    expect(heardContributing(candidate('fast', 980, 2), live)).toBe(false);
    // 32 ticks back is the slow node's span, inclusive; 33 is past it.
    expect(heardContributing(candidate('slow', 968, 8), live)).toBe(true);
    expect(heardContributing(candidate('slow', 967, 8), live)).toBe(false);
    expect(heardContributing(candidate('fast', 992, 2), live)).toBe(true);
    expect(heardContributing(candidate('fast', 991, 2), live)).toBe(false);
    // A tick event without `every` (an older node), or a window without liveTicks: liveTicks alone.
    expect(heardContributing(candidate('old', 980), live)).toBe(false);
    expect(heardContributing(candidate('slow', 980, 8), { from: 992, to: 1_000 })).toBe(false);
    // The window's far end does not move: an event after the challenge's tick is not counted.
    expect(heardContributing(candidate('slow', 1_001, 8), live)).toBe(false);
    const rule = { svcond: 1_000, settleTicks: 0, live, executor: 'x', challengerHome: 'y' };
    expect(eligibleNodes([candidate('slow', 980, 8), candidate('fast', 980, 2), candidate('old', 995)], rule)).toEqual(['old', 'slow']);
  });

  it('the log keeps an event while it can make its sender live, and always the latest', () => {
    const log = new LivenessLog({ keepTicks: 10, baseEvery: 1 });
    log.record('slow', heardAt(100, 50), 100);
    log.record('fast', heardAt(100, 1), 100);
    log.record('fast', heardAt(200, 1), 200);
    log.record('slow', heardAt(150, 50), 200);
    // fast: 100 is more than keepTicks behind 200; slow: 100 is within 10 × 50.
    expect(log.heardIn('fast', 0, 1_000).map((h) => h.svcond)).toEqual([200]);
    expect(log.heardIn('slow', 0, 1_000).map((h) => [h.svcond, h.every])).toEqual([
      [100, 50],
      [150, 50],
    ]);
    // At 650 the slow node's event at 100 is past 10 × 50 ticks; the one at 150 is just within.
    log.record('slow', heardAt(600, 50), 650);
    expect(log.heardIn('slow', 0, 1_000).map((h) => h.svcond)).toEqual([150, 600]);
    // The record covers a slow sender's span further back than keepTicks, and nothing before it started.
    expect(log.covers(650 - 10)).toBe(true);
    expect(log.covers(650 - 11)).toBe(false);
    expect(log.covers(650 - 11, 50)).toBe(true);
    expect(log.covers(99, 50)).toBe(false);
  });

  it('fresh keys ticking evict only each other: a bonded node’s history stays', () => {
    const log = new LivenessLog({ keepTicks: 100, baseEvery: 1, maxNodes: 8 });
    log.record('honest', heardAt(100), 100, true);
    log.record('honest', heardAt(101), 101, true);
    log.record('unbonded', heardAt(101), 101);
    for (let i = 0; i < 500; i++) log.record(`fresh${i}`, heardAt(102), 102);
    expect(log.heardIn('honest', 0, 1_000).map((h) => h.svcond)).toEqual([100, 101]);
    expect(log.heardIn('unbonded', 0, 1_000)).toEqual([]);
    expect(log.nodes()).toHaveLength(1 + 8);
    // A node heard before its bond was known keeps its history when it moves to the bonded tier.
    log.record('fresh499', heardAt(103), 103, true);
    for (let i = 0; i < 500; i++) log.record(`later${i}`, heardAt(104), 104);
    expect(log.heardIn('fresh499', 0, 1_000).map((h) => h.svcond)).toEqual([102, 103]);
  });
});

// Live eligibility read in the sender's own tick interval (liveness.ts, committee.ts): a tick event keeps its sender
// live liveTicks, or LIVE_INTERVALS of the interval it declares when that is longer; the log keeps an event as long
// as it can make its sender live, and always a node's latest.
import { describe, expect, it } from 'vitest';
import { eligibleNodes, heardContributing, type Candidate } from '../../src/consensus/committee.js';
import { LIVE_INTERVALS, LivenessLog, liveSpan } from '../../src/consensus/liveness.js';

const heardAt = (svcond: number, every?: number) => ({ svcond, mode: 'contributing', bondId: 'b', ...(every === undefined ? {} : { every }) });
const candidate = (node: string, svcond: number, every?: number): Candidate => ({
  node,
  zid: `z_${node}`,
  bondId: 'b',
  bondSvcond: 0,
  heard: [heardAt(svcond, every)],
});

describe('live eligibility in the sender’s intervals', () => {
  // A challenge at tick 1 000 with liveTicks 8: the window [992, 1 000] for a node that ticks often.
  const live = { from: 992, to: 1_000, liveTicks: 8 };

  it('a node that declares every = 8, heard 20 ticks ago, is live; one that declares every = 2 is not', () => {
    expect(liveSpan(8, 8)).toBe(8 * LIVE_INTERVALS);
    expect(liveSpan(8, 2)).toBe(2 * LIVE_INTERVALS);
    expect(heardContributing(candidate('slow', 980, 8), live)).toBe(true);
    expect(heardContributing(candidate('fast', 980, 2), live)).toBe(false);
    // 16 ticks back is the fast node's span, inclusive; 17 is past it.
    expect(heardContributing(candidate('fast', 984, 2), live)).toBe(true);
    expect(heardContributing(candidate('fast', 983, 2), live)).toBe(false);
    // A tick event without `every` (an older node), or a window without liveTicks: liveTicks alone.
    expect(heardContributing(candidate('old', 980), live)).toBe(false);
    expect(heardContributing(candidate('slow', 980, 8), { from: 992, to: 1_000 })).toBe(false);
    // The window's far end does not move: an event after the challenge's tick is not counted.
    expect(heardContributing(candidate('slow', 1_001, 8), live)).toBe(false);
    const rule = { svcond: 1_000, settleTicks: 0, live, executor: 'x', challengerHome: 'y' };
    expect(eligibleNodes([candidate('slow', 980, 8), candidate('fast', 980, 2), candidate('old', 995)], rule)).toEqual(['old', 'slow']);
  });

  it('the log keeps an event while it can make its sender live, and always the latest', () => {
    const log = new LivenessLog({ keepTicks: 10 });
    log.record('slow', heardAt(100, 50), 100);
    log.record('fast', heardAt(100, 1), 100);
    log.record('fast', heardAt(200, 1), 200);
    log.record('slow', heardAt(150, 50), 200);
    // fast: 100 is more than keepTicks + 8 × 1 behind 200; slow: 100 is within 10 + 8 × 50.
    expect(log.heardIn('fast', 0, 1_000).map((h) => h.svcond)).toEqual([200]);
    expect(log.heardIn('slow', 0, 1_000).map((h) => [h.svcond, h.every])).toEqual([
      [100, 50],
      [150, 50],
    ]);
    // At 560 the slow node's event at 100 is past 10 + 8 × 50 ticks; the one at 150 is just within.
    log.record('slow', heardAt(500, 50), 560);
    expect(log.heardIn('slow', 0, 1_000).map((h) => h.svcond)).toEqual([150, 500]);
    // The record covers a slow sender's span further back than keepTicks, and nothing before it started.
    expect(log.covers(560 - 10)).toBe(true);
    expect(log.covers(560 - 11)).toBe(false);
    expect(log.covers(560 - 11, 50)).toBe(true);
    expect(log.covers(99, 50)).toBe(false);
  });
});

// The tick period that grows with the mesh (tick-interval.ts): the interval from the nodes heard, computed here from
// the rate it keeps (N / (e · 0.777 s) ≤ R), the hysteresis that keeps a mesh near a boundary on one interval, and
// the slot a node ticks in.
import { describe, expect, it } from 'vitest';
import { TICK_SECONDS_EXACT } from '../../src/kernel/clock.js';
import { MAX_TICK_INTERVAL, intervalFor, nextTickInterval, tickDue, tickPhase } from '../../src/mesh/tick-interval.js';

/** Events a second a node accepts when `n` nodes each tick every `every` ticks. */
const rateAt = (n: number, every: number) => n / (every * TICK_SECONDS_EXACT);

describe('the tick interval', () => {
  it('is the floor in a small mesh and grows so the events a node accepts stay at or under R', () => {
    expect(intervalFor(1, 4, 32)).toBe(4);
    expect(intervalFor(99, 4, 32)).toBe(4);
    for (const n of [100, 1_000, 10_000]) {
      const e = intervalFor(n, 4, 32);
      expect(rateAt(n, e)).toBeLessThanOrEqual(32);
      // The smallest such interval: one tick less would be over R.
      expect(rateAt(n, e - 1)).toBeGreaterThan(32);
    }
    expect(intervalFor(1_000, 4, 32)).toBe(41);
    expect(intervalFor(10_000, 4, 32)).toBe(403);
    // Four nodes asking for 2 events a second tick every 3 ticks.
    expect(intervalFor(4, 1, 2)).toBe(3);
    expect(intervalFor(1e9, 4, 32)).toBe(MAX_TICK_INTERVAL);
  });

  it('rises at once, and falls only once the mesh has shrunk past the margin: no flapping at a boundary', () => {
    let e = 4;
    const step = (heard: number) => (e = nextTickInterval({ heard, floor: 4, rate: 32, current: e }));
    expect(step(100)).toBe(5);
    // Around the boundary (≈ 99.4 nodes) the interval holds, whichever side the count falls on.
    for (const heard of [99, 100, 98, 101, 95, 90, 85, 80]) expect(step(heard)).toBe(5);
    // Only 80 × 1.25 = 100 no longer fits 4 ticks; 79 × 1.25 does.
    expect(step(79)).toBe(4);
    expect(step(99)).toBe(4);
    expect(step(100)).toBe(5);
    // Large drops fall to what the margin allows, not below the floor.
    e = 403;
    expect(step(5_000)).toBe(intervalFor(5_000 * 1.25, 4, 32));
    expect(step(1)).toBe(4);
  });

  it('a node ticks once per slot of its interval, at its own phase, whatever the interval did since', () => {
    expect(tickDue(100, null, 8, 3)).toBe(true);
    // Phase 3 of 8: slots begin at 3, 11, 19 … 99, 107, 115.
    expect(tickDue(107, 106, 8, 3)).toBe(true);
    expect(tickDue(114, 107, 8, 3)).toBe(false);
    expect(tickDue(115, 107, 8, 3)).toBe(true);
    // After a longer interval is declared, the next event comes in the next slot of the longer interval.
    expect(tickDue(111, 110, 40, 0)).toBe(false);
    expect(tickDue(120, 110, 40, 0)).toBe(true);
    expect(tickPhase('ffffffff', 8)).toBe(0xffffffff % 8);
    expect(tickPhase('0000000a', 4)).toBe(2);
  });
});

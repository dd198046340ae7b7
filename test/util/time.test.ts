import { describe, expect, it } from 'vitest';
import { ManualClock, TICK_NS } from '../../src/kernel/clock.js';
import { TICK_MS, timeOf } from '../../src/util/time.js';

describe('Time', () => {
  it('reads one clock in nanoseconds, ticks and milliseconds', () => {
    const clock = new ManualClock(TICK_NS * 1000n + 5_000_000n);
    const time = timeOf(clock);
    expect(time.nowNs()).toBe(777_005_777_000n);
    expect(time.nowSvcond()).toBe(1000);
    expect(time.nowMs()).toBe(777_005);
    clock.advanceTicks(3);
    expect(time.nowSvcond()).toBe(1003);
    expect(time.nowMs()).toBe(779_336);
  });

  it('floors the tick just below a boundary', () => {
    const time = timeOf(new ManualClock(TICK_NS * 7n - 1n));
    expect(time.nowSvcond()).toBe(6);
  });

  it('gives a tick in milliseconds for timers', () => {
    expect(TICK_MS).toBeCloseTo(777.000777, 9);
  });
});

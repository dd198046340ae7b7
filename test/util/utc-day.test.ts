// UTC day keys (quota counters, reset times): exact at the midnight boundaries, in any call order.
import { describe, expect, it } from 'vitest';
import { dayKey, nextMidnightUtc } from '../../src/util/utc-day.js';

describe('dayKey', () => {
  it('changes exactly at midnight UTC, forwards and backwards', () => {
    const midnight = Date.UTC(2026, 10, 22);
    expect(dayKey(midnight - 1)).toBe('2026-11-21');
    expect(dayKey(midnight)).toBe('2026-11-22');
    expect(dayKey(midnight - 1)).toBe('2026-11-21');
    expect(dayKey(midnight - 86_400_000)).toBe('2026-11-21');
    expect(dayKey(midnight - 86_400_001)).toBe('2026-11-20');
    expect(dayKey(midnight + 86_399_999)).toBe('2026-11-22');
  });

  it('handles year ends and leap days, and agrees with toISOString over a sweep', () => {
    expect(dayKey(Date.UTC(2028, 1, 29, 12))).toBe('2028-02-29');
    expect(dayKey(Date.UTC(2026, 11, 31, 23, 59, 59, 999))).toBe('2026-12-31');
    expect(dayKey(Date.UTC(2027, 0, 1))).toBe('2027-01-01');
    for (let t = Date.UTC(2026, 0, 1); t < Date.UTC(2027, 0, 3); t += 3_599_999) {
      expect(dayKey(t)).toBe(new Date(t).toISOString().slice(0, 10));
    }
    expect(nextMidnightUtc(Date.UTC(2026, 11, 31, 5))).toBe(Date.UTC(2027, 0, 1));
  });
});

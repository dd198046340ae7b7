// A lookup's miss (util/missed-lookups.ts) stands for its time and only while no peer is learnt: a late joiner that
// first hears a name's home asks again at once; a name found is forgotten; the oldest miss goes past the bound.
import { describe, expect, it } from 'vitest';
import { MissedLookups } from '../../src/util/missed-lookups.js';

function misses(max = 8) {
  let now = 1_000;
  let learnt = 0;
  const m = new MissedLookups({ max, nowMs: () => now, peersLearnt: () => learnt });
  return { m, at: (ms: number) => (now = ms), learn: () => learnt++ };
}

describe('missed lookups', () => {
  it('a miss stands until its time is up', () => {
    const { m, at } = misses();
    expect(m.stands('a')).toBe(false);
    m.missed('a', 30_000);
    at(30_999);
    expect(m.stands('a')).toBe(true);
    at(31_000);
    expect(m.stands('a')).toBe(false);
    // Gone once lapsed: it does not stand again when the clock is read earlier.
    at(2_000);
    expect(m.stands('a')).toBe(false);
  });

  it('a peer learnt after the miss reopens it at once; a miss after that stands again', () => {
    const { m, learn } = misses();
    m.missed('a', 30_000);
    m.missed('b', 30_000);
    learn();
    expect(m.stands('a')).toBe(false);
    expect(m.stands('b')).toBe(false);
    m.missed('a', 30_000);
    expect(m.stands('a')).toBe(true);
  });

  it('a name found is forgotten; past the bound the oldest miss goes first', () => {
    const { m } = misses(2);
    m.missed('a', 30_000);
    m.forget('a');
    expect(m.stands('a')).toBe(false);
    m.missed('x', 30_000);
    m.missed('y', 30_000);
    m.missed('z', 30_000);
    expect(['x', 'y', 'z'].map((n) => m.stands(n))).toEqual([false, true, true]);
  });

  it('without a count of peers learnt, a miss stands for its time', () => {
    let now = 0;
    const m = new MissedLookups({ max: 4, nowMs: () => now });
    m.missed('a', 2_000);
    now = 1_999;
    expect(m.stands('a')).toBe(true);
  });
});

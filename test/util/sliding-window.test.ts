// A count per name over a sliding window (src/util/sliding-window.ts): a window that slides, a clear that starts the
// count again, a bound on the names remembered, and the 429 it is told as.
import { describe, expect, it } from 'vitest';
import { SlidingWindow, windowFull } from '../../src/util/sliding-window.js';

describe('a sliding window', () => {
  it('holds a name after max events in the window, until the oldest has left it', () => {
    let now = 1_000_000;
    const w = new SlidingWindow(10, 900_000, () => now);
    for (let i = 0; i < 10; i++) {
      expect(w.heldUntil('ada')).toBeNull();
      w.add('ada');
      now += 1000;
    }
    expect(w.heldUntil('ada')).toBe(1_000_000 + 900_000);
    expect(w.heldUntil('bob')).toBeNull();
    now = 1_000_000 + 900_000 - 1;
    expect(w.heldUntil('ada')).not.toBeNull();
    now = 1_000_000 + 900_000;
    // One event left the window: one more, and it is held again, until the next oldest leaves.
    expect(w.heldUntil('ada')).toBeNull();
    w.add('ada');
    expect(w.heldUntil('ada')).toBe(1_001_000 + 900_000);
  });

  it('a clear starts the count again', () => {
    const w = new SlidingWindow(3, 60_000, () => 5);
    w.add('ada');
    w.add('ada');
    w.clear('ada');
    w.add('ada');
    w.add('ada');
    expect(w.heldUntil('ada')).toBeNull();
    w.add('ada');
    expect(w.heldUntil('ada')).toBe(60_005);
  });

  it('remembers a bounded number of names, the least recently counted out first', () => {
    const w = new SlidingWindow(2, 60_000, () => 0, 100);
    w.add('first');
    w.add('first');
    expect(w.heldUntil('first')).not.toBeNull();
    for (let k = 0; k < 100; k++) w.add(`other ${k}`);
    expect(w.heldUntil('first')).toBeNull();
  });

  it('is told as 429 SVC_RATE_LIMIT with the window, the time to wait and the scope', () => {
    const w = new SlidingWindow(10, 900_000, () => 0);
    const e = windowFull(w, 1_000_000 + 900_000, 1_000_000 + 100_500, 'too many', 'identity');
    expect(e.status).toBe(429);
    expect(e.code).toBe('SVC_RATE_LIMIT');
    expect(e.extra).toEqual({ limit: 10, window_seconds: 900, retry_after_seconds: 800, reset_at: new Date(1_900_000).toISOString(), scope: 'identity' });
  });
});

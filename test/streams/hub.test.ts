import { describe, expect, it } from 'vitest';
import { StreamHub, type Subscriber } from '../../src/streams/hub.js';

/** A subscriber that never writes anything out: every frame stays buffered. */
function stalled(): Subscriber & { dropped: string | null; maxBuffered: number } {
  let buffered = 0;
  const s = {
    dropped: null as string | null,
    maxBuffered: 0,
    send(d: Buffer) {
      buffered += d.length;
      s.maxBuffered = Math.max(s.maxBuffered, buffered);
    },
    get bufferedAmount() {
      return buffered;
    },
    drop(reason: string) {
      s.dropped = reason;
    },
  };
  return s;
}

describe('stream hub backpressure', () => {
  it('drops a stalled subscriber before its buffer passes the bound; others keep receiving', () => {
    const hub = new StreamHub({ maxBufferedBytes: 64 * 1024, maxPerChannel: 10 });
    const slow = stalled();
    const got: number[] = [];
    const fast: Subscriber = { send: (d) => got.push(d.length), bufferedAmount: 0, drop: () => undefined };
    hub.add('c', slow);
    hub.add('c', fast);
    for (let i = 0; i < 100; i++) hub.publish('c', Buffer.alloc(10_000));
    expect(slow.dropped).toBe('slow consumer');
    expect(slow.maxBuffered).toBeLessThanOrEqual(64 * 1024);
    expect(hub.count('c')).toBe(1);
    expect(got).toHaveLength(100);
    expect(hub.dropped).toBe(1);
  });

  it('a subscriber that throws is dropped; the others still get the frame', () => {
    const hub = new StreamHub({ maxBufferedBytes: 1024, maxPerChannel: 10 });
    let dropped = '';
    const got: number[] = [];
    hub.add('c', {
      send: () => {
        throw new Error('socket gone');
      },
      bufferedAmount: 0,
      drop: (r) => (dropped = r),
    });
    hub.add('c', { send: (d) => got.push(d.length), bufferedAmount: 0, drop: () => undefined });
    hub.publish('c', Buffer.alloc(10));
    expect(dropped).toBe('send failed');
    expect(got).toEqual([10]);
    expect(hub.count('c')).toBe(1);
  });

  it('bounds subscribers per channel', () => {
    const hub = new StreamHub({ maxBufferedBytes: 1024, maxPerChannel: 2 });
    expect(hub.add('c', stalled())).toBe(true);
    expect(hub.add('c', stalled())).toBe(true);
    expect(hub.add('c', stalled())).toBe(false);
  });
});

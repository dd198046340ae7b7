// The peer table without a network: a late older tick changes nothing, a peer that never sent a valid tick is
// forgotten when it leaves, the bound evicts the disconnected peer heard from longest ago (never a connected one),
// and the coherence score counts the recently heard peers that agree with this node's clock and kernel.
import { describe, expect, it } from 'vitest';
import { PeerTable, RECENT_WINDOW_TICKS, TICK_EVENT_TYPE, type TickBody } from '../../src/mesh/peer-table.js';
import type { MeshEvent } from '../../src/mesh/wire.js';

function tick(sender: string, svcond: number, body: TickBody = {}): [TickBody, MeshEvent] {
  return [body, { type: TICK_EVENT_TYPE, sender, svcond, body, signature: '' }];
}

function table(peersMax = 8, connected: string[] = []) {
  let now = 1_000;
  const t = new PeerTable({ peersMax, nowSvcond: () => now, isConnected: (p) => connected.includes(p) });
  return { t, at: (n: number) => (now = n) };
}

describe('the peer table', () => {
  it('keeps the latest tick of a peer: an older one arriving late changes nothing', () => {
    const { t } = table();
    t.applyTick(...tick('p1', 1_000, { url: 'http://a', kernelVersion: 'k1' }));
    t.applyTick(...tick('p1', 990, { url: 'http://old', kernelVersion: 'k0' }));
    expect(t.list()).toMatchObject([{ peerId: 'p1', lastTick: 1_000, kernelVersion: 'k1', url: 'http://a' }]);
    t.applyTick(...tick('p1', 1_004, {}));
    expect(t.url('p1')).toBe('http://a');
  });

  it('forgets a peer that leaves without a valid tick; keeps one that ticked, as disconnected', () => {
    const { t } = table();
    t.connectionChanged('forger', true);
    t.connectionChanged('ticker', true);
    t.applyTick(...tick('ticker', 1_000));
    t.connectionChanged('forger', false);
    t.connectionChanged('ticker', false);
    expect(t.list().map((p) => [p.peerId, p.connected])).toEqual([['ticker', false]]);
  });

  it('the bound evicts the disconnected peer heard from longest ago, never a connected one', () => {
    const { t, at } = table(2, ['c']);
    at(100);
    t.applyTick(...tick('c', 100));
    at(200);
    t.applyTick(...tick('d1', 200));
    at(300);
    t.applyTick(...tick('d2', 300));
    expect(t.list().map((p) => p.peerId)).toEqual(['c', 'd2']);
  });

  it('coherence: the fraction of recently heard peers in step with this clock and kernel; null when none is heard', () => {
    const { t, at } = table();
    expect(t.coherenceScore('k1', 4)).toBeNull();
    t.applyTick(...tick('same', 1_000, { kernelVersion: 'k1' }));
    t.applyTick(...tick('skewed', 990, { kernelVersion: 'k1' }));
    t.applyTick(...tick('other-kernel', 1_000, { kernelVersion: 'k2' }));
    expect(t.coherenceScore('k1', 4)).toBe(0.3333);
    at(1_000 + RECENT_WINDOW_TICKS + 1);
    expect(t.coherenceScore('k1', 4)).toBeNull();
  });
});

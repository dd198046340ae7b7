// The peer table without a network: a late older tick changes nothing, a peer that never sent a valid tick is
// forgotten when it leaves, the bound evicts the disconnected peer heard from longest ago (never a connected one),
// the coherence score counts the recently heard peers that agree with this node's clock and kernel, and every
// "recently heard" and "in step" is read in the peer's own declared interval; the silent peers are those heard recently
// but not within their silent window, not connected, the most recently heard first; the count of peers learnt grows
// with each peer first heard or connected, or telling a new URL; a kept (bonded) peer goes after every other.
import { describe, expect, it } from 'vitest';
import { PeerTable, RECENT_WINDOW_TICKS, SILENT_FLOOR_TICKS, TICK_EVENT_TYPE, recentWindow, silentAfter, type TickBody } from '../../src/mesh/peer-table.js';
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

  it('counts the peers learnt: first heard or connected, or telling a new URL; not a repeated tick', () => {
    const { t } = table();
    expect(t.learnt()).toBe(0);
    t.applyTick(...tick('p1', 1_000, { url: 'http://a' }));
    t.applyTick(...tick('p1', 1_001, { url: 'http://a' }));
    t.applyTick(...tick('p1', 1_002, {}));
    expect(t.learnt()).toBe(1);
    t.applyTick(...tick('p1', 1_003, { url: 'http://b' }));
    expect(t.learnt()).toBe(2);
    // Connected before its first tick (no URL yet), then its tick tells one: asked by URL from then on.
    t.connectionChanged('p2', true);
    expect(t.learnt()).toBe(3);
    t.connectionChanged('p2', true);
    t.applyTick(...tick('p2', 1_003, { url: 'http://c' }));
    expect(t.learnt()).toBe(4);
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

  it('a kept (bonded) peer outlasts a flood of fresh keys ticking after it', () => {
    const { t, at } = table(4);
    t.keep((p) => p === 'bonded');
    at(100);
    t.applyTick(...tick('bonded', 100));
    for (let i = 0; i < 200; i++) {
      at(101 + i);
      t.applyTick(...tick(`fresh${i}`, 101 + i));
    }
    const ids = t.list().map((p) => p.peerId);
    expect(ids).toHaveLength(4);
    expect(ids).toContain('bonded');
    expect(ids).toContain('fresh199');
    // Without the rule it would be the first to go.
    const plain = table(4);
    plain.at(100);
    plain.t.applyTick(...tick('bonded', 100));
    for (let i = 0; i < 4; i++) plain.t.applyTick(...tick(`fresh${i}`, 101 + i));
    expect(plain.t.list().map((p) => p.peerId)).not.toContain('bonded');
  });

  it('coherence: the fraction of recently heard peers in step with this clock and kernel; null when none is heard', () => {
    const { t, at } = table();
    expect(t.coherenceScore('k1')).toBeNull();
    t.applyTick(...tick('same', 1_000, { kernelVersion: 'k1' }));
    t.applyTick(...tick('skewed', 990, { kernelVersion: 'k1' }));
    t.applyTick(...tick('other-kernel', 1_000, { kernelVersion: 'k2' }));
    expect(t.coherenceScore('k1')).toBe(0.3333);
    at(1_000 + RECENT_WINDOW_TICKS + 1);
    expect(t.coherenceScore('k1')).toBeNull();
  });
});

describe("the peer table reads each peer's own tick interval", () => {
  it('a peer that declares every = 8 and was last heard 20 ticks ago is in step; one that declares every = 2 is behind', () => {
    const { t, at } = table();
    t.applyTick(...tick('slow', 1_000, { kernelVersion: 'k1', every: 8 }));
    t.applyTick(...tick('fast', 1_000, { kernelVersion: 'k1', every: 2 }));
    at(1_016);
    // 16 ticks: within 2·8 + 1 for the slow peer, past 2·2 + 1 for the fast one.
    expect(t.coherenceScore('k1')).toBe(0.5);
    at(1_017);
    expect(t.coherenceScore('k1')).toBe(0.5);
    at(1_018);
    expect(t.coherenceScore('k1')).toBe(0);
    expect(t.list().map((p) => [p.peerId, p.every])).toEqual([
      ['slow', 8],
      ['fast', 2],
    ]);
  });

  it('a body without `every` means this node’s mesh.tickEvery', () => {
    const t = new PeerTable({ peersMax: 8, nowSvcond: () => 1_000, isConnected: () => false, defaultEvery: 6 });
    t.applyTick(...tick('old', 1_000, {}));
    t.connectionChanged('silent', true);
    expect(t.list().map((p) => p.every)).toEqual([6, 6]);
  });

  it('heard recently: 120 ticks, or 4 of the peer’s intervals when longer (status peers, N_heard, coherence)', () => {
    const { t, at } = table();
    at(1_000);
    t.applyTick(...tick('p4', 1_000, { every: 4 }));
    t.applyTick(...tick('p100', 1_000, { every: 100 }));
    expect(recentWindow(4)).toBe(RECENT_WINDOW_TICKS);
    expect(recentWindow(100)).toBe(400);
    at(1_000 + RECENT_WINDOW_TICKS);
    expect(t.heardCount(1_000 + RECENT_WINDOW_TICKS)).toBe(2);
    at(1_000 + RECENT_WINDOW_TICKS + 1);
    expect(t.heardCount(1_000 + RECENT_WINDOW_TICKS + 1)).toBe(1);
    expect(t.statusPeers(new Set(), 1_000 + RECENT_WINDOW_TICKS + 1).map((p) => [p.peerId, p.every])).toEqual([['p100', 100]]);
    // In step until its last tick is more than 2·100 + 1 ticks old.
    expect(t.coherenceScore(null)).toBe(1);
    at(1_000 + 201);
    expect(t.coherenceScore(null)).toBe(1);
    at(1_000 + 202);
    expect(t.coherenceScore(null)).toBe(0);
    at(1_401);
    expect(t.heardCount(1_401)).toBe(0);
    expect(t.coherenceScore(null)).toBeNull();
  });
});

describe('N_heard', () => {
  it('counts every sender heard recently, beyond the peers the table keeps, up to its own bound', () => {
    let now = 1_000;
    const t = new PeerTable({ peersMax: 4, nowSvcond: () => now, isConnected: () => false, heardMax: 50 });
    for (let i = 0; i < 40; i++) t.applyTick(...tick(`p${i}`, 1_000, { every: 4 }));
    expect(t.list()).toHaveLength(4);
    expect(t.heardCount(now)).toBe(40);
    for (let i = 40; i < 60; i++) t.applyTick(...tick(`p${i}`, 1_000, { every: 4 }));
    expect(t.heardCount(now)).toBe(50);
    now = 1_000 + RECENT_WINDOW_TICKS + 1;
    expect(t.heardCount(now)).toBe(0);
  });

  it('silent peers: heard recently, not within silentAfter of their own interval, not connected; the latest heard first', () => {
    const { t, at } = table(8, ['linked']);
    expect(silentAfter(1)).toBe(SILENT_FLOOR_TICKS);
    expect(silentAfter(16)).toBe(33);
    at(1_000);
    t.applyTick(...tick('linked', 1_000, { every: 1 }));
    t.applyTick(...tick('first', 1_000, { every: 1, multiaddrs: ['/ip4/127.0.0.1/tcp/4001'] }));
    at(1_002);
    t.applyTick(...tick('second', 1_002, { every: 1, multiaddrs: ['/ip4/127.0.0.1/tcp/4002'] }));
    t.applyTick(...tick('slow', 1_002, { every: 16 }));
    at(1_000 + SILENT_FLOOR_TICKS);
    expect(t.silentPeers(1_000 + SILENT_FLOOR_TICKS)).toEqual([]);
    at(1_002 + SILENT_FLOOR_TICKS + 1);
    expect(t.silentPeers(1_002 + SILENT_FLOOR_TICKS + 1)).toEqual([
      { peerId: 'second', addrs: ['/ip4/127.0.0.1/tcp/4002'] },
      { peerId: 'first', addrs: ['/ip4/127.0.0.1/tcp/4001'] },
    ]);
    // Heard again: in step, no longer silent; a slow peer is silent only past its own interval's window.
    t.applyTick(...tick('first', 1_011, { every: 1 }));
    expect(t.silentPeers(1_011).map((p) => p.peerId)).toEqual(['second']);
    expect(t.silentPeers(1_002 + 32).map((p) => p.peerId)).toEqual(['first', 'second']);
    expect(t.silentPeers(1_002 + 34).map((p) => p.peerId)).toEqual(['first', 'second', 'slow']);
    // Past its recent window a peer is no longer silent (gone, not dialled); one heard later still is.
    expect(t.silentPeers(1_002 + RECENT_WINDOW_TICKS + 1).map((p) => p.peerId)).toEqual(['first']);
  });
});

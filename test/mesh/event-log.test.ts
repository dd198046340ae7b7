// The accepted-event log in arrival order (GET /api/mesh/events; ?order=tick gives the event's own tick order), its
// share for events of types without a row (a flood of them evicts only its own kind), and
// the peers mesh status lists: connected now or heard in the last 120 ticks, bounded; a peer that only forged is
// forgotten when it leaves.
import { afterAll, describe, expect, it } from 'vitest';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import type { PrivateKey } from '@libp2p/interface';
import { join } from 'node:path';
import { ManualClock, stampAt, systemClock, TICK_NS } from '../../src/kernel/clock.js';
import { padNum, Store } from '../../src/store/db.js';
import { bodyDigest, eventId, handshakeFor, HANDSHAKE_HEADER, signEvent, TOPICS } from '../../src/mesh/wire.js';
import { drawProver } from '../../src/mesh/draw-proof.js';
import { MeshEventLog, type StoredEvent } from '../../src/mesh/event-log.js';
import { silentLogger } from '../../src/mesh/host.js';
import { STATUS_PEERS_MAX, TICK_AHEAD_TICKS } from '../../src/mesh/peer-table.js';
import { call, startTestNode, type TestNode as HttpNode } from '../helpers/node.js';
import { makeDataDir, removeDir, SECRET, startNode, waitFor, waitForTopicMesh, type TestNode } from './helpers.js';

const cleanup: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f().catch(() => undefined);
});

async function newKey(): Promise<{ key: PrivateKey; sender: string }> {
  const key = (await generateKeyPair('Ed25519')) as unknown as PrivateKey;
  return { key, sender: peerIdFromPrivateKey(key as never).toString() };
}

async function signed(k: { key: PrivateKey; sender: string }, type: string, svcond: number, body: unknown, secret = SECRET) {
  const event = await signEvent(k.key, k.sender, type, svcond, body);
  return { event, handshake: handshakeFor(secret, k.sender, svcond, bodyDigest(body)) };
}

describe('GET /api/mesh/events: arrival order', () => {
  it('a late-stamped accepted event is the newest by arrival (and stays in ?limit=50); ?order=tick sorts it by its tick', async () => {
    const secret = SECRET;
    let node: HttpNode = await startTestNode({ mesh: { secret, p2pPort: 0, bootstrap: [] } }, { mesh: { autoPulse: false } });
    cleanup.push(() => node.destroy());
    const k = await newKey();
    const post = async (svcond: number, n: number) => {
      const { event, handshake } = await signed(k, 'test.note', svcond, { n }, secret);
      const r = await call(node.url, 'POST', '/api/mesh/gossip', event, { [HANDSHAKE_HEADER]: handshake });
      expect(r.status, r.text).toBe(200);
      expect(r.body).toEqual({ accepted: true, duplicate: false, id: eventId(k.sender, svcond, bodyDigest({ n })) });
      return r.body.id as string;
    };
    const t = stampAt(systemClock.nowNs()).svcond;
    for (let i = 0; i < 50; i++) await post(t, i);
    // Stamped 100 ticks ago (inside the 120-tick window, so accepted), arriving last.
    const late = await post(t - 100, 50);

    const byArrival = await call(node.url, 'GET', '/api/mesh/events?limit=50');
    expect(byArrival.status).toBe(200);
    expect(byArrival.body.order).toBe('arrival');
    expect(byArrival.body.count).toBe(50);
    expect(byArrival.body.events[0].id).toBe(late);
    expect(byArrival.body.events[0].event.svcond).toBe(t - 100);
    const arrivals = byArrival.body.events.map((e: StoredEvent) => e.arrival);
    expect(arrivals).toEqual([...arrivals].sort((a: number, b: number) => b - a));
    expect(new Set(arrivals).size).toBe(50);

    const byTick = await call(node.url, 'GET', '/api/mesh/events?limit=50&order=tick');
    expect(byTick.body.order).toBe('tick');
    expect(byTick.body.events.map((e: StoredEvent) => e.id)).not.toContain(late);
    expect((await call(node.url, 'GET', '/api/mesh/events?limit=51&order=tick')).body.events[50].id).toBe(late);
    expect((await call(node.url, 'GET', '/api/mesh/events?order=newest')).status).toBe(400);

    // Arrival numbers go on after a restart: a new event is newer than everything before it.
    node = await node.restart();
    const after = await post(stampAt(systemClock.nowNs()).svcond, 51);
    const again = await call(node.url, 'GET', '/api/mesh/events?limit=2');
    expect(again.body.events.map((e: StoredEvent) => e.id)).toEqual([after, late]);
    expect(again.body.events[0].arrival).toBeGreaterThan(again.body.events[1].arrival);
  }, 60_000);

  it('a log written before the arrival index is indexed at start by arrival tick; pruning drops the oldest arrivals', async () => {
    const dataDir = await makeDataDir();
    cleanup.push(() => removeDir(dataDir));
    const T = 2_000_000_000;
    // Three events as an older node stored them (no arrival number): event ticks 30, 10, 20, arrived 5, 6, 7 ticks later.
    const store = await Store.open(join(dataDir, 'db'), { sync: false });
    const sub = store.sub('mesh-events');
    const legacy = [
      { svcond: T + 30, received: T + 35, id: 'a'.repeat(64) },
      { svcond: T + 10, received: T + 36, id: 'b'.repeat(64) },
      { svcond: T + 20, received: T + 37, id: 'c'.repeat(64) },
    ];
    await store.commit(
      legacy.map((l) => ({
        type: 'put' as const,
        sub,
        key: `${padNum(l.svcond, 16)}!${l.id}`,
        value: {
          id: l.id,
          topic: TOPICS.events,
          via: 'gossip',
          from: '',
          receivedSvcond: l.received,
          event: { type: 'test.note', sender: 'x', svcond: l.svcond, body: {}, signature: 's' },
        },
      })),
    );
    await store.close();

    const clock = new ManualClock(BigInt(T + 40) * TICK_NS);
    const node: TestNode = await startNode({ clock, secret: null, dataDir, extra: { limits: { eventsMax: 5 } } });
    cleanup.push(() => node.stop());
    expect((await node.mesh.recentEvents(10)).map((e) => e.id)).toEqual(['c'.repeat(64), 'b'.repeat(64), 'a'.repeat(64)]);
    expect((await node.mesh.recentEvents(10, 'tick')).map((e) => e.id)).toEqual(['a'.repeat(64), 'c'.repeat(64), 'b'.repeat(64)]);

    // Two events now, one stamped at T + 5 (the clock set back), one now: five in all.
    clock.set(BigInt(T + 5) * TICK_NS);
    const early = await node.mesh.publish('test.note', { n: 1 });
    clock.set(BigInt(T + 41) * TICK_NS);
    const now = await node.mesh.publish('test.note', { n: 2 });
    expect((await node.mesh.recentEvents(1))[0]!.id).toBe(now.id);
    // A sixth arrival: the oldest arrival ('a', event tick T + 30) goes, not the oldest tick (early, T + 5).
    const sixth = await node.mesh.publish('test.note', { n: 3 });
    await waitFor(async () => (await node.mesh.recentEvents(500)).length === 5, 20_000, 'pruning to 5');
    expect((await node.mesh.recentEvents(500)).map((e) => e.id)).toEqual([sixth.id, now.id, early.id, 'c'.repeat(64), 'b'.repeat(64)]);
    expect((await node.mesh.status()).storedEvents).toBe(5);
  });
});

describe('the share of events of types without a row', () => {
  const T = 2_000_000_000;
  const ev = (type: string, n: number) => ({ type, sender: 'x', svcond: T, body: { n }, signature: 's' });
  const id = (kind: string, n: number) => `${kind}-${n}-`.padEnd(64, '0');

  async function openLog(dataDir: string) {
    const store = await Store.open(join(dataDir, 'db'), { sync: false });
    const log = new MeshEventLog({ store, eventsMax: 20, unknownMax: 5, nowSvcond: () => T, log: silentLogger });
    await log.load();
    return { store, log };
  }
  const settle = (log: MeshEventLog) => waitFor(async () => (await log.recent(500)).length === log.stored, 20_000, 'pruning');

  it('a flood of unknown-type events keeps only its newest unknownMax and leaves every known event; all arrivals past eventsMax go oldest first', async () => {
    const dataDir = await makeDataDir();
    cleanup.push(() => removeDir(dataDir));
    let { store, log } = await openLog(dataDir);
    for (let n = 0; n < 10; n++) await log.append(ev('known.note', n), id('known', n), TOPICS.events, 'gossip', 'p');
    for (let n = 0; n < 100; n++) await log.append(ev(`invented.t${n}`, n), id('flood', n), TOPICS.events, 'gossip', 'p', true);
    await waitFor(() => log.stored === 15, 20_000, 'the flood pruned to its share');
    await log.settled();
    const kept = (await log.recent(500)).map((e) => e.id);
    expect(kept).toHaveLength(15);
    for (let n = 0; n < 10; n++) expect(kept).toContain(id('known', n));
    expect(kept.filter((k) => k.startsWith('flood'))).toEqual([99, 98, 97, 96, 95].map((n) => id('flood', n)));

    // Past eventsMax the oldest arrivals go whatever their kind: here the first known events.
    for (let n = 10; n < 25; n++) await log.append(ev('known.note', n), id('known', n), TOPICS.events, 'gossip', 'p');
    await waitFor(() => log.stored === 20, 20_000, 'pruned to eventsMax');
    await settle(log);
    const after = (await log.recent(500)).map((e) => e.id);
    expect(after.filter((k) => k.startsWith('known'))).toHaveLength(15);
    expect(after).not.toContain(id('known', 9));
    expect(after.filter((k) => k.startsWith('flood'))).toHaveLength(5);

    // The share is counted again at start: one more unknown event after a restart evicts the oldest unknown one.
    await log.settled();
    await store.close();
    ({ store, log } = await openLog(dataDir));
    cleanup.push(() => store.close());
    await log.append(ev('invented.more', 0), id('flood', 100), TOPICS.events, 'gossip', 'p', true);
    await waitFor(async () => !(await log.recent(500)).some((e) => e.id === id('flood', 95)), 20_000, 'the oldest unknown pruned');
    await log.settled();
    const restarted = (await log.recent(500)).map((e) => e.id);
    expect(restarted).toHaveLength(20);
    expect(restarted.filter((k) => k.startsWith('known'))).toHaveLength(15);
    expect(restarted).toContain(id('flood', 100));
  });
});

describe('a tick event dated ahead of the clock', () => {
  it("is ignored beyond TICK_AHEAD_TICKS: it neither enters the peer table nor becomes the node's latest tick event", async () => {
    const node: HttpNode = await startTestNode({ mesh: { secret: SECRET, p2pPort: 0, bootstrap: [] } }, { mesh: { autoPulse: false } });
    cleanup.push(() => node.destroy());
    const k = await newKey();
    const post = async (svcond: number) => {
      const { event, handshake } = await signed(k, 'tick', svcond, { svcond, every: 4096, kernelVersion: '1.287.6' });
      return call(node.url, 'POST', '/api/mesh/gossip', event, { [HANDSHAKE_HEADER]: handshake });
    };
    const t = stampAt(systemClock.nowNs()).svcond;
    // Inside the replay window (±120), but signed for a tick 110 ahead: a draw event decided in advance.
    const ahead = await post(t + 110);
    expect(ahead.status, ahead.text).toBe(400);
    expect(ahead.body.error.code).toBe('INVALID_EVENT');
    expect(ahead.body.error.message).toContain(`more than ${TICK_AHEAD_TICKS} ticks ahead`);
    expect(node.node.mesh.peers().find((p) => p.peerId === k.sender)).toBeUndefined();
    expect(node.node.mesh.latestTickEvents().some((e) => e.sender === k.sender)).toBe(false);
    // Within the slack of clocks (and one from the past): taken, the latest being the later.
    expect((await post(t - 3)).status).toBe(200);
    expect((await post(t + TICK_AHEAD_TICKS - 1)).status).toBe(200);
    expect(node.node.mesh.peers().find((p) => p.peerId === k.sender)?.lastTick).toBe(t + TICK_AHEAD_TICKS - 1);
    expect(node.node.mesh.latestTickEvents().find((e) => e.sender === k.sender)?.svcond).toBe(t + TICK_AHEAD_TICKS - 1);
  }, 60_000);
});

describe("a tick event's draw proof", () => {
  it("a proof that is not the sender's over the event's own tick is refused; a bond advertised without one does not count as contributing", async () => {
    const node: HttpNode = await startTestNode({ mesh: { secret: SECRET, p2pPort: 0, bootstrap: [] } }, { mesh: { autoPulse: false } });
    cleanup.push(() => node.destroy());
    const k = await newKey();
    const other = await newKey();
    const prove = drawProver(k.key);
    const post = async (svcond: number, extra: Record<string, unknown>) => {
      const body = { svcond, every: 4, mode: 'contributing', bondId: 'bond_draw', freeSlots: 1, ...extra };
      const { event, handshake } = await signed(k, 'tick', svcond, body);
      return call(node.url, 'POST', '/api/mesh/gossip', event, { [HANDSHAKE_HEADER]: handshake });
    };
    const peer = () => node.node.mesh.peers().find((p) => p.peerId === k.sender);
    const t = stampAt(systemClock.nowNs()).svcond;
    // Another tick's proof, another key's proof over this tick, bytes that are no proof: refused, and nothing learnt.
    for (const drawProof of [prove(t - 1), drawProver(other.key)(t - 2), 'ab'.repeat(80)]) {
      const refused = await post(t - 2, { drawProof });
      expect(refused.status, refused.text).toBe(400);
      expect(refused.body.error.code).toBe('INVALID_EVENT');
      expect(refused.body.error.message).toContain('drawProof');
    }
    expect(peer()).toBeUndefined();
    // A bond advertised without a proof: the event is taken (its URL, its tick), its contribution is not.
    expect((await post(t - 1, {})).status).toBe(200);
    expect(peer()).toMatchObject({ lastTick: t - 1, mode: null, bondId: null });
    // Its own proof over its own tick: taken as advertised.
    expect((await post(t, { drawProof: prove(t) })).status).toBe(200);
    expect(peer()).toMatchObject({ lastTick: t, mode: 'contributing', bondId: 'bond_draw' });
    expect(node.node.mesh.latestTickEvents().find((e) => e.sender === k.sender)?.body).toMatchObject({ drawProof: prove(t) });
    // An older tick re-signed with any proof: not verified (it changes nothing), and the latest stands as it was.
    expect((await post(t - 1, { drawProof: 'cd'.repeat(80), freeSlots: 2 })).status).toBe(200);
    expect(peer()).toMatchObject({ lastTick: t, mode: 'contributing', bondId: 'bond_draw' });
    expect(node.node.mesh.latestTickEvents().find((e) => e.sender === k.sender)?.svcond).toBe(t);
  }, 60_000);
});

describe('mesh status: peers', () => {
  it('lists connected and recently heard peers; a peer that only forged is forgotten when it leaves; a quiet one after 120 ticks', async () => {
    const clock = new ManualClock(BigInt(1_900_000_000) * TICK_NS);
    const a = await startNode({ clock, tickEvery: 1 });
    cleanup.push(async () => {
      await a.stop();
      await removeDir(a.dataDir);
    });
    const b = await startNode({ clock, tickEvery: 1, bootstrap: a.mesh.multiaddrs() });
    // The forger connects but does not know the mesh secret: its tick events are refused.
    const forger = await startNode({ clock, tickEvery: 1, secret: 'not-the-mesh-secret-0123456789', bootstrap: a.mesh.multiaddrs() });
    cleanup.push(async () => {
      await b.stop().catch(() => undefined);
      await forger.stop().catch(() => undefined);
      await removeDir(b.dataDir);
      await removeDir(forger.dataDir);
    });
    await waitForTopicMesh([a, b], TOPICS.ticks, 20_000);
    await waitFor(() => (a.mesh.p2p?.topicPeers(TOPICS.ticks).length ?? 0) >= 2, 20_000, 'forger subscribed at a');
    await b.mesh.pulse();
    await forger.mesh.pulse();
    await waitFor(() => a.mesh.peers().some((p) => p.peerId === b.mesh.nodeId && p.lastTick !== null), 20_000, 'b ticks at a');
    await waitFor(async () => ((await a.mesh.status()).rejected.gossip.INVALID_HANDSHAKE ?? 0) >= 1, 20_000, 'forged tick refused');

    const ids = async () => (await a.mesh.status()).peers.map((p) => p.peerId);
    expect((await ids()).sort()).toEqual([b.mesh.nodeId, forger.mesh.nodeId].sort());

    await forger.stop();
    await waitFor(async () => !(await ids()).includes(forger.mesh.nodeId), 20_000, 'forger gone from status');
    expect(a.mesh.peers().map((p) => p.peerId)).not.toContain(forger.mesh.nodeId);

    await b.stop();
    await waitFor(async () => (await a.mesh.status()).peers.every((p) => !p.connected), 20_000, 'b disconnected');
    // Heard within 120 ticks: still listed, as not connected.
    expect((await a.mesh.status()).peers).toEqual([
      { peerId: b.mesh.nodeId, url: expect.any(String), lastTick: expect.any(Number), connected: false, mode: null, bondId: null, freeSlots: null, every: 1 },
    ]);
    clock.advanceTicks(121);
    expect((await a.mesh.status()).peers).toEqual([]);
    // The peer table keeps what it learnt (its URL serves key lookups and forwarding).
    expect(a.mesh.peers().map((p) => p.peerId)).toContain(b.mesh.nodeId);

    // Bounded: of 70 peers heard, the 64 heard last are listed.
    const keys = await Promise.all(Array.from({ length: 70 }, () => newKey()));
    const heardOrder: string[] = [];
    for (const k of keys) {
      const svcond = stampAt(clock.nowNs()).svcond;
      const body = { svcond, sealedCount: 0, chainHeadsDigest: 'ab'.repeat(32), kernelVersion: '1.287.6', url: 'http://127.0.0.1:9' };
      const { event, handshake } = await signed(k, 'tick', svcond, body);
      await a.mesh.acceptHttpEvent(event, handshake);
      heardOrder.push(k.sender);
      clock.advanceTicks(1);
    }
    const listed = await ids();
    expect(listed).toHaveLength(STATUS_PEERS_MAX);
    expect([...listed].sort()).toEqual(heardOrder.slice(70 - STATUS_PEERS_MAX).sort());
  }, 120_000);
});

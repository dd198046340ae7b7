// Peer exchange on first contact (/svc/peers/1): a mass join through a seed that can take almost nobody fans out, and
// the exchange answers only mesh members. The seed's maximum is 2 (libp2p refuses inbound connections past 4) and its
// grace is longer than the test, so it never prunes by itself: a node it cannot keep gets in only for the exchange,
// learns addresses from it and leaves. Without the exchange the turned-away nodes know nobody but the seed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/kernel/clock.js';
import { readFrame, writeFrame } from '../../src/mesh/frame.js';
import { PEER_EXCHANGE_PROTOCOL, checkExchange, exchangeAnswerSchema, exchangeRefusalSchema, exchangeRequest } from '../../src/mesh/peer-exchange.js';
import { TOPICS } from '../../src/mesh/wire.js';
import { SECRET, removeDir, startNode, waitFor, type TestNode } from './helpers.js';

// Every node listens on 127.0.0.1: libp2p's per-IP inbound threshold would count them all as one joiner.
const FAST = { redialMinMs: 100, redialMaxMs: 1_000, inboundPerIpPerSec: 100 };
const SEED_PEERS = { target: 1, max: 2 };
const PEERS = { target: 3, max: 6 };

describe('peer exchange: eight nodes join through a seed that keeps two', () => {
  const nodes: TestNode[] = [];
  /** receiver → sender → arrival (ms) of its latest tick event. */
  const heard = new Map<string, Map<string, number>>();

  const start = async (bootstrap: string[], peers: typeof PEERS, graceMs: number): Promise<TestNode> => {
    const n = await startNode({
      clock: systemClock,
      tickEvery: 2,
      autoPulse: true,
      bootstrap,
      config: { peers },
      extra: { ...FAST, peerSetTiming: { maintainMs: 200, graceMs } },
    });
    const mine = new Map<string, number>();
    heard.set(n.mesh.nodeId, mine);
    n.mesh.onEvent(TOPICS.ticks, (event) => void mine.set(event.sender, Date.now()));
    nodes.push(n);
    return n;
  };

  beforeAll(async () => {
    const seed = await start([], SEED_PEERS, 60_000);
    await Promise.all(Array.from({ length: 8 }, () => start(seed.mesh.multiaddrs(), PEERS, 10_000)));
  }, 20_000);

  afterAll(async () => {
    for (const n of nodes) if (n.mesh.p2p !== null) await n.stop();
    for (const n of nodes) await removeDir(n.dataDir);
  });

  it('every node connects to a node it was never told of, and the seed holds no more than libp2p lets in', async () => {
    const seedId = nodes[0]!.mesh.nodeId;
    const others = (n: TestNode) => n.mesh.p2p!.connectedPeers().filter((p) => p !== seedId);
    await waitFor(() => nodes.slice(1).every((n) => others(n).length >= 1), 15_000, 'every node connected beyond the seed');
    for (const n of nodes.slice(1)) expect(others(n).length).toBeGreaterThanOrEqual(1);
    expect(nodes[0]!.mesh.p2p!.connections().open).toBeLessThanOrEqual(SEED_PEERS.max + 2);
    // What the nodes learnt of each other is in their peer stores.
    for (const n of nodes.slice(1)) expect(n.mesh.knownPeers().length).toBeGreaterThanOrEqual(2);
  }, 20_000);

  it('with the seed stopped, every pair of live nodes hears each other', async () => {
    await nodes[0]!.stop();
    const stoppedAt = Date.now();
    const rest = nodes.slice(1);
    const deaf = () =>
      rest.flatMap((r) =>
        rest.filter((s) => s !== r && (heard.get(r.mesh.nodeId)?.get(s.mesh.nodeId) ?? 0) <= stoppedAt).map((s) => `${r.mesh.nodeId}<-${s.mesh.nodeId}`),
      );
    await waitFor(() => deaf().length === 0, 25_000, 'every pair of live nodes hearing each other');
    expect(deaf()).toEqual([]);
  }, 30_000);
});

describe('peer exchange: a node at its maximum with nothing old enough to prune answers one more newcomer', () => {
  // The seed keeps 4 and prunes nothing for a minute. A and B join first; five holders join without asking the
  // exchange, so they keep their connections past the seed's maximum (7 in all). libp2p takes up to twice the maximum
  // (8): the joiner gets in, is answered `full` with the others, and connects to one of them. Under a cap of
  // max + max/2 (6) the seed would refuse it at every try, and it would learn nothing.
  const nodes: TestNode[] = [];
  const join = (bootstrap: string[], peers: { target: number; max: number }, graceMs: number, peerExchange = true) =>
    startNode({
      clock: systemClock,
      tickEvery: 2,
      autoPulse: true,
      bootstrap,
      config: { peers },
      extra: { ...FAST, peerExchange, peerSetTiming: { maintainMs: 200, graceMs } },
    }).then((n) => (nodes.push(n), n));

  afterAll(async () => {
    for (const n of nodes) await n.stop();
    for (const n of nodes) await removeDir(n.dataDir);
  });

  it('the joiner is answered full with other peers instead of refused, and connects to one of them', async () => {
    const seed = await join([], { target: 1, max: 4 }, 60_000);
    const boot = seed.mesh.multiaddrs();
    const first = [await join(boot, { target: 1, max: 4 }, 10_000), await join(boot, { target: 1, max: 4 }, 10_000)];
    for (let i = 0; i < 5; i++) await join(boot, { target: 1, max: 4 }, 10_000, false);
    await waitFor(() => seed.mesh.p2p!.connectedPeers().length === 7, 10_000, 'seven connections at the seed');
    const joiner = await join(boot, { target: 1, max: 4 }, 10_000);
    const others = () => joiner.mesh.p2p!.connectedPeers().filter((p) => p !== seed.mesh.nodeId);
    await waitFor(() => others().length >= 1, 8_000, 'the joiner connected beyond the seed');
    // It learnt the others from the seed's answer (it was told of the seed only).
    const known = joiner.mesh.knownPeers().map((p) => p.peerId);
    for (const n of first) expect(known).toContain(n.mesh.nodeId);
    expect(seed.mesh.p2p!.connections().open).toBeLessThanOrEqual(8);
  }, 30_000);
});

describe('peer exchange: only mesh members are answered, and answers are authenticated', () => {
  let member: TestNode;
  let friend: TestNode;
  let outsider: TestNode;

  beforeAll(async () => {
    member = await startNode({ clock: systemClock, extra: FAST });
    friend = await startNode({ clock: systemClock, bootstrap: member.mesh.multiaddrs(), extra: FAST });
    outsider = await startNode({ clock: systemClock, secret: 'another-mesh-secret-0123456789abcd', bootstrap: member.mesh.multiaddrs(), extra: FAST });
  }, 15_000);

  afterAll(async () => {
    for (const n of [member, friend, outsider]) {
      await n.stop();
      await removeDir(n.dataDir);
    }
  });

  const exchange = async (from: TestNode, request: unknown): Promise<unknown> => {
    const stream = await from.mesh.openStream(member.mesh.nodeId, PEER_EXCHANGE_PROTOCOL, AbortSignal.timeout(5_000));
    await writeFrame(stream, request);
    return readFrame(stream.source, 64 * 1024);
  };

  it('answers a member with the peers it knows, under its own handshake', async () => {
    await waitFor(() => member.mesh.knownPeers().some((p) => p.peerId === friend.mesh.nodeId && p.connection !== null), 8_000, 'member knows friend');
    const answer = exchangeAnswerSchema.parse(await exchange(outsider, exchangeRequest(SECRET, outsider.mesh.nodeId, member.mesh.nowSvcond())));
    expect(() => checkExchange(SECRET, member.mesh.nodeId, member.mesh.nowSvcond(), answer)).not.toThrow();
    expect(() => checkExchange(SECRET, friend.mesh.nodeId, member.mesh.nowSvcond(), answer)).toThrow(/handshake/);
    expect(answer.full).toBe(false);
    // The asker is never offered itself; the friend is, at its loopback address.
    expect(answer.peers.map((p) => p.peerId)).toContain(friend.mesh.nodeId);
    expect(answer.peers.map((p) => p.peerId)).not.toContain(outsider.mesh.nodeId);
    expect(answer.peers.find((p) => p.peerId === friend.mesh.nodeId)!.addrs.every((a) => a.startsWith('/ip4/127.0.0.1/tcp/'))).toBe(true);
  });

  it('refuses a request under another secret, a stale one and a malformed one, with their codes', async () => {
    const now = member.mesh.nowSvcond();
    const codeOf = (raw: unknown) => exchangeRefusalSchema.parse(raw).refused.code;
    expect(codeOf(await exchange(outsider, exchangeRequest('another-mesh-secret-0123456789abcd', outsider.mesh.nodeId, now)))).toBe('INVALID_HANDSHAKE');
    // A member's handshake made for another sender does not pass for the stream's peer either.
    expect(codeOf(await exchange(outsider, exchangeRequest(SECRET, friend.mesh.nodeId, now)))).toBe('INVALID_HANDSHAKE');
    expect(codeOf(await exchange(outsider, exchangeRequest(SECRET, outsider.mesh.nodeId, now - 200)))).toBe('STALE_HANDSHAKE');
    expect(codeOf(await exchange(outsider, { v: 1, svcond: now }))).toBe('SVC_BAD_REQUEST');
  });

  it('an outsider learns nothing from the exchange on its own connection', async () => {
    // The outsider asked when it connected (under its own secret): refused, so it knows the member only (identify).
    await waitFor(() => outsider.mesh.knownPeers().some((p) => p.peerId === member.mesh.nodeId), 5_000, 'outsider identified the member');
    expect(outsider.mesh.knownPeers().map((p) => p.peerId)).toEqual([member.mesh.nodeId]);
  });
});

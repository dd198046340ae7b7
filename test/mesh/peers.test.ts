// A network, not a star: twelve nodes each told the address of one seed. The peers a node meets (tick events,
// identify) go to its persisted peer store and its peer set dials them while under its target, so the mesh outlives
// the seed; a node joins through any one live node; a node restarted without a bootstrap list reconnects from its
// peer store. Small tick period and short dial periods keep it quick; the peer set is sparse (target 3, maximum 6).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/kernel/clock.js';
import { TOPICS } from '../../src/mesh/wire.js';
import { removeDir, startNode, waitFor, type TestNode } from './helpers.js';

const PEERS = { target: 3, max: 6 };
const FAST = { redialMinMs: 100, redialMaxMs: 1_000, peerSetTiming: { maintainMs: 200, graceMs: 10_000 } };

/** Tick events heard: receiver → sender → arrival (ms) of the latest. */
type Heard = Map<string, Map<string, number>>;

describe('mesh: twelve nodes bootstrapped to one seed', () => {
  const nodes: TestNode[] = [];
  const dirs: string[] = [];
  const heard: Heard = new Map();

  const start = async (bootstrap: string[], dataDir?: string): Promise<TestNode> => {
    const n = await startNode({ clock: systemClock, tickEvery: 2, autoPulse: true, bootstrap, dataDir, config: { peers: PEERS }, extra: FAST });
    const mine = new Map<string, number>();
    heard.set(n.mesh.nodeId, mine);
    n.mesh.onEvent(TOPICS.ticks, (event) => void mine.set(event.sender, Date.now()));
    if (!dirs.includes(n.dataDir)) dirs.push(n.dataDir);
    return n;
  };
  const live = (): TestNode[] => nodes.filter((n) => n.mesh.p2p !== null);
  /** Pairs (receiver, sender) of live nodes where the receiver has not heard the sender since `since`. */
  const deafPairs = (among: TestNode[], since: number): string[] => {
    const out: string[] = [];
    for (const r of among)
      for (const s of among) if (r !== s && (heard.get(r.mesh.nodeId)?.get(s.mesh.nodeId) ?? 0) <= since) out.push(`${r.mesh.nodeId}<-${s.mesh.nodeId}`);
    return out;
  };

  beforeAll(async () => {
    const seed = await start([]);
    nodes.push(seed);
    nodes.push(...(await Promise.all(Array.from({ length: 11 }, () => start(seed.mesh.multiaddrs())))));
    // Every node has heard every other once: each has learnt where the others listen.
    await waitFor(() => deafPairs(nodes, 0).length === 0, 80_000, 'the first tick of every node at every node');
  }, 120_000);

  afterAll(async () => {
    for (const n of live()) await n.stop();
    for (const d of dirs) await removeDir(d);
  });

  it('is no star: nodes connect to peers they were never told of, and are pruned to the maximum after the grace', async () => {
    const seedId = nodes[0]!.mesh.nodeId;
    const others = (n: TestNode) => n.mesh.p2p!.connectedPeers().filter((p) => p !== seedId);
    await waitFor(() => nodes.slice(1).every((n) => others(n).length > 0), 10_000, 'every node connected beyond the seed');
    await waitFor(() => nodes.every((n) => n.mesh.p2p!.connections().open <= PEERS.max), 20_000, 'every node at most at its maximum');
  }, 25_000);

  it('outlives its seed: every pair of live nodes hears each other within 40 s of the kill', async () => {
    const seed = nodes[0]!;
    await seed.stop();
    const killedAt = Date.now();
    const rest = live();
    expect(rest).toHaveLength(11);
    await waitFor(() => deafPairs(rest, killedAt).length === 0, 40_000, 'every pair of live nodes hearing each other');
    expect(deafPairs(rest, killedAt)).toEqual([]);
  }, 45_000);

  it('a node joining through one live node hears every live node within 30 s', async () => {
    const via = live()[4]!;
    const joiner = await start(via.mesh.multiaddrs());
    const joinedAt = Date.now();
    nodes.push(joiner);
    const others = live().filter((n) => n !== joiner);
    await waitFor(() => others.every((s) => (heard.get(joiner.mesh.nodeId)?.get(s.mesh.nodeId) ?? 0) > joinedAt), 30_000, 'the joiner hearing every node');
    // And every node hears it.
    await waitFor(() => others.every((r) => (heard.get(r.mesh.nodeId)?.get(joiner.mesh.nodeId) ?? 0) > joinedAt), 30_000, 'every node hearing the joiner');
    await waitFor(() => joiner.mesh.p2p!.connections().open >= PEERS.target, 10_000, 'the joiner at its target');
  }, 65_000);

  it('a node restarted with no bootstrap list reconnects from its persisted peer store', async () => {
    const old = live()[2]!;
    const { dataDir } = old;
    const id = old.mesh.nodeId;
    await old.stop();
    nodes.splice(nodes.indexOf(old), 1);
    const again = await start([], dataDir);
    nodes.push(again);
    expect(again.mesh.nodeId).toBe(id);
    const restartedAt = Date.now();
    await waitFor(() => again.mesh.p2p!.connectedPeers().length >= PEERS.target, 15_000, 'connections from the peer store');
    const others = live().filter((n) => n !== again);
    await waitFor(() => others.every((s) => (heard.get(id)?.get(s.mesh.nodeId) ?? 0) > restartedAt), 40_000, 'the restarted node hearing every node');
    const status = await again.mesh.status();
    expect(status.connections.known).toBeGreaterThanOrEqual(others.length);
  }, 75_000);
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, systemClock, TICK_NS } from '../../src/kernel/clock.js';
import { sha256Hex } from '../../src/kernel/bytes.js';
import { tickPhase } from '../../src/mesh/tick-interval.js';
import { TOPICS } from '../../src/mesh/wire.js';
import { removeDir, startNode, waitFor, waitForTopicMesh, type TestNode } from './helpers.js';
import { firstN } from '../helpers/tuple.js';

describe('mesh: tick events among three real nodes', () => {
  const nodes: TestNode[] = [];

  beforeAll(async () => {
    const a = await startNode({ clock: systemClock, tickEvery: 1, autoPulse: true });
    nodes.push(a);
    const b = await startNode({ clock: systemClock, tickEvery: 1, autoPulse: true, bootstrap: a.mesh.multiaddrs() });
    nodes.push(b);
    const c = await startNode({ clock: systemClock, tickEvery: 1, autoPulse: true, bootstrap: [...a.mesh.multiaddrs(), ...b.mesh.multiaddrs()] });
    nodes.push(c);
    await waitForTopicMesh(nodes, TOPICS.ticks);
  });

  afterAll(async () => {
    for (const n of nodes) {
      await n.stop();
      await removeDir(n.dataDir);
    }
  });

  it('every node hears tick events from both others, with their head state and URL', async () => {
    await waitFor(
      async () => {
        for (const n of nodes) {
          const s = await n.mesh.status();
          if (s.peers.filter((p) => p.lastTick !== null).length < 2) return false;
          // A peer's tick may also come in by the HTTP entrance: the gossip deliveries are waited for as such.
          if ((await n.mesh.recentEvents(50)).filter((e) => e.event.type === 'tick' && e.via === 'gossip').length < 2) return false;
        }
        return true;
      },
      10_000,
      'tick events from both peers, two of them by gossip',
    );
    for (const n of nodes) {
      const s = await n.mesh.status();
      expect(s.meshSize).toBe(3);
      expect(s.coherenceScore).toBe(1);
      expect(s.recentGossipCount).toBeGreaterThanOrEqual(2);
      expect(s.lastGossipZeqond).not.toBeNull();
      expect(s.multiaddrs.length).toBeGreaterThan(0);
      expect(s.multiaddrs[0]).toContain(`/p2p/${s.nodeId}`);
      const others = nodes
        .filter((o) => o !== n)
        .map((o) => o.mesh.nodeId)
        .sort();
      expect(s.peers.map((p) => p.peerId).sort()).toEqual(others);
      for (const p of s.peers) {
        expect(p.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
        expect(p.connected).toBe(true);
      }
      const ticks = (await n.mesh.recentEvents(50)).filter((e) => e.event.type === 'tick' && e.via === 'gossip');
      expect(ticks.length).toBeGreaterThanOrEqual(2);
      const [tick] = firstN(ticks, 1);
      const body = tick.event.body as Record<string, unknown>;
      expect(Object.keys(body).sort()).toEqual(['chainHeadsDigest', 'every', 'kernelVersion', 'multiaddrs', 'sealedCount', 'svcond', 'url']);
      // Three nodes are far under the default rate: each ticks at its floor, and says so.
      expect(body.every).toBe(1);
    }
  });

  it('subscribers of svc/ticks/1 receive the events of other nodes only', async () => {
    const seen: string[] = [];
    const [a] = firstN(nodes, 1);
    const off = a.mesh.onEvent(TOPICS.ticks, (e) => {
      seen.push(e.sender);
    });
    await waitFor(() => new Set(seen).size >= 2, 6_000, 'two tick senders');
    off();
    expect(seen).not.toContain(a.mesh.nodeId);
  });
});

describe('mesh: a tick event that reached no peer', () => {
  const started: TestNode[] = [];
  afterAll(async () => {
    for (const n of started) {
      await n.stop();
      await removeDir(n.dataDir);
    }
  });

  it('is sent again once a peer is on the tick topic, not at every pulse before that, and not again after', async () => {
    const clock = new ManualClock(BigInt(1_900_000_000) * TICK_NS);
    const a = await startNode({ clock, tickEvery: 64 });
    started.push(a);
    // The clock set to the first tick of one of a's slots (its phase in its 64-tick interval) and moved one tick at a
    // time, at most five: a's next slot does not come, so any tick event after its first is the owed one.
    const phase = tickPhase(sha256Hex(a.mesh.nodeId), 64);
    clock.set(BigInt(1_900_000_000 + ((((phase - 1_900_000_000) % 64) + 64) % 64)) * TICK_NS);
    const pulseNext = async () => {
      clock.advanceTicks(1);
      await a.mesh.pulse();
    };
    const ownTicks = async () => (await a.mesh.recentEvents(50)).filter((e) => e.event.type === 'tick' && e.via === 'self').length;
    // Alone: its first tick event reaches nobody, and pulses without a peer send no other.
    await a.mesh.pulse();
    await pulseNext();
    expect(await ownTicks()).toBe(1);

    const b = await startNode({ clock, tickEvery: 64, bootstrap: a.mesh.multiaddrs() });
    started.push(b);
    await waitForTopicMesh([a, b], TOPICS.ticks, 20_000);
    await pulseNext();
    expect(await ownTicks()).toBe(2);
    await waitFor(() => b.mesh.peers().some((p) => p.peerId === a.mesh.nodeId && p.lastTick !== null), 10_000, "a's tick event at b");
    // Delivered: the next one waits for a's next slot.
    await pulseNext();
    await pulseNext();
    expect(await ownTicks()).toBe(2);
  });
});

// A node behind NAT: it listens on no TCP address, only on /p2p-circuit, reserves a slot on a relay node and is
// reachable only through it. Its tick events reach the others (they carry its /p2p-circuit address) and its status says
// it is relayed via that relay.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/kernel/clock.js';
import { TOPICS } from '../../src/mesh/wire.js';
import { removeDir, startNode, startRelayedNode, waitFor, type TestNode } from './helpers.js';

describe('mesh: a node reachable only through a relay', () => {
  const nodes: TestNode[] = [];
  let relay: TestNode;
  let hidden: TestNode;
  let other: TestNode;
  const ticksAtOther = new Map<string, string[]>();

  beforeAll(async () => {
    relay = await startNode({ clock: systemClock, tickEvery: 1, autoPulse: true });
    other = await startNode({ clock: systemClock, tickEvery: 1, autoPulse: true, bootstrap: relay.mesh.multiaddrs() });
    other.mesh.onEvent(TOPICS.ticks, (event) => {
      ticksAtOther.set(event.sender, (event.body as { multiaddrs?: string[] }).multiaddrs ?? []);
    });
    hidden = await startRelayedNode({ clock: systemClock, tickEvery: 1, autoPulse: true, relay });
    nodes.push(relay, other, hidden);
  }, 30_000);

  afterAll(async () => {
    for (const n of nodes) {
      await n.stop();
      await removeDir(n.dataDir);
    }
  });

  it('listens on no TCP address and says it is relayed via the relay', async () => {
    expect(hidden.mesh.multiaddrs().every((m) => m.includes('/p2p-circuit'))).toBe(true);
    const status = await hidden.mesh.status();
    expect(status.reachability.reachability).toBe('relayed');
    expect(status.reachability.relays).toEqual([relay.mesh.nodeId]);
    // The relay itself, on loopback only, is private.
    expect((await relay.mesh.status()).reachability.reachability).toBe('private');
  });

  it('its tick events are heard by the others and carry its /p2p-circuit address', async () => {
    const addrs = await waitFor(() => ticksAtOther.get(hidden.mesh.nodeId), 10_000, 'a tick of the relayed node at the other node');
    expect(addrs.length).toBeGreaterThan(0);
    expect(addrs.every((a) => a.endsWith(`/p2p/${relay.mesh.nodeId}/p2p-circuit`))).toBe(true);
    await waitFor(
      () => relay.mesh.peers().find((p) => p.peerId === hidden.mesh.nodeId && p.lastTick !== null),
      10_000,
      'a tick of the relayed node at the relay',
    );
  });
});

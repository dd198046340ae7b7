import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/kernel/clock.js';
import { removeDir, startNode, waitFor, type TestNode } from './helpers.js';

// A line a — b — c: a and c each know only b. Tick events cross the line through b, and they carry where their
// sender can be dialled, so a opens a stream to c although neither was ever told the other's address. The ends keep
// one connection (peer set target 1), so the line stays a line: they would otherwise dial each other.
describe('mesh: a line of three nodes', () => {
  const nodes: TestNode[] = [];
  const PROTOCOL = '/svc/test-line/1';

  beforeAll(async () => {
    const end = { peers: { target: 1, max: 4 } };
    const b = await startNode({ clock: systemClock, tickEvery: 1, autoPulse: true });
    const a = await startNode({ clock: systemClock, tickEvery: 1, autoPulse: true, bootstrap: b.mesh.multiaddrs(), config: end });
    const c = await startNode({ clock: systemClock, tickEvery: 1, autoPulse: true, bootstrap: b.mesh.multiaddrs(), config: end });
    nodes.push(a, b, c);
  });

  afterAll(async () => {
    for (const n of nodes) {
      await n.stop();
      await removeDir(n.dataDir);
    }
  });

  it('the ends hear each other through the middle and learn where to dial each other', async () => {
    const [a, , c] = nodes as [TestNode, TestNode, TestNode];
    const heard = await waitFor(() => a.mesh.peers().find((p) => p.peerId === c.mesh.nodeId && p.lastTick !== null), 10_000, 'c heard at a');
    expect(heard.multiaddrs.length).toBeGreaterThan(0);
    expect(c.mesh.multiaddrs().map((m) => m.replace(`/p2p/${c.mesh.nodeId}`, ''))).toContain(heard.multiaddrs[0]);
  });

  it('a opens a stream to c, which it has no connection to', async () => {
    const [a, , c] = nodes as [TestNode, TestNode, TestNode];
    const remotes: string[] = [];
    await c.mesh.handleStream(PROTOCOL, (stream, remotePeer) => {
      remotes.push(remotePeer);
      void stream.close();
    });
    await waitFor(() => a.mesh.peers().find((p) => p.peerId === c.mesh.nodeId && p.multiaddrs.length > 0), 10_000, 'c addresses at a');
    expect(a.mesh.p2p?.connectedPeers()).not.toContain(c.mesh.nodeId);
    const stream = await a.mesh.openStream(c.mesh.nodeId, PROTOCOL, AbortSignal.timeout(5_000));
    // The protocol is negotiated with the first bytes written.
    await stream.sink([new Uint8Array([1])]);
    await waitFor(() => remotes.length === 1, 5_000, 'stream at c');
    expect(remotes).toEqual([a.mesh.nodeId]);
    expect(a.mesh.p2p?.connectedPeers()).toContain(c.mesh.nodeId);
  });
});

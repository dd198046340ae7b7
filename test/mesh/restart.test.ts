// A node stopped and restarted on the same data dir keeps its peer id and rejoins: peers that had it as a
// bootstrap address redial it, and a restarted node that bootstraps to the others reconnects to them.
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/kernel/clock.js';
import { TOPICS } from '../../src/mesh/wire.js';
import { removeDir, startNode, waitFor, waitForTopicMesh, type TestNode } from './helpers.js';
import { firstN } from '../helpers/tuple.js';

function portOf(addrs: string[]): number {
  const m = /\/tcp\/(\d+)/.exec(addrs[0] ?? '');
  if (!m) throw new Error('no tcp port');
  return Number(m[1]);
}

describe('mesh: stop and restart', () => {
  const nodes: TestNode[] = [];
  const dirs: string[] = [];

  beforeAll(async () => {
    const a = await startNode({ clock: systemClock, tickEvery: 1, autoPulse: true });
    const b = await startNode({ clock: systemClock, tickEvery: 1, autoPulse: true, bootstrap: a.mesh.multiaddrs() });
    const c = await startNode({ clock: systemClock, tickEvery: 1, autoPulse: true, bootstrap: [...a.mesh.multiaddrs(), ...b.mesh.multiaddrs()] });
    nodes.push(a, b, c);
    dirs.push(a.dataDir, b.dataDir, c.dataDir);
    await waitForTopicMesh(nodes, TOPICS.ticks);
  });

  afterAll(async () => {
    for (const n of nodes) await n.stop();
    for (const d of dirs) await removeDir(d);
  });

  const ticksFrom = async (n: TestNode, sender: string, after: number) =>
    (await n.mesh.recentEvents(500)).some((e) => e.event.sender === sender && e.event.type === 'tick' && e.receivedSvcond > after);

  it('keeps the node key in <dataDir>/node-key with mode 0600', async () => {
    for (const n of nodes) {
      const st = await stat(join(n.dataDir, 'node-key'));
      expect(st.mode & 0o777).toBe(0o600);
    }
  });

  it('a bootstrap target that goes away and comes back (same port, same dir) is redialled and rejoins', async () => {
    const [a, b, c] = firstN(nodes, 3);
    const id = a.mesh.nodeId;
    const port = portOf(a.mesh.multiaddrs());
    await a.stop();
    await waitFor(() => nodes.slice(1).every((n) => !n.mesh.p2p!.connectedPeers().includes(id)), 8_000, 'a gone');
    const a2 = await startNode({ clock: systemClock, tickEvery: 1, autoPulse: true, dataDir: a.dataDir, port });
    nodes[0] = a2;
    expect(a2.mesh.nodeId).toBe(id);
    // a2 has no bootstrap list of its own: only the redial of B and C can bring it back.
    await waitFor(() => a2.mesh.p2p!.connectedPeers().length === 2, 10_000, 'b and c redial a');
    const mark = a2.mesh.nowSvcond();
    await waitFor(async () => (await ticksFrom(b, id, mark)) && (await ticksFrom(c, id, mark)), 10_000, 'ticks from restarted a');
    await waitFor(async () => (await ticksFrom(a2, b.mesh.nodeId, mark)) && (await ticksFrom(a2, c.mesh.nodeId, mark)), 10_000, 'ticks at restarted a');
    // Its earlier accepted events survived the restart.
    expect((await a2.mesh.status()).storedEvents).toBeGreaterThan(0);
  });

  it('a node restarted on a new port dials its bootstrap peers and rejoins with the same peer id', async () => {
    const [a, b, c] = firstN(nodes, 3);
    const id = c.mesh.nodeId;
    await c.stop();
    const c2 = await startNode({
      clock: systemClock,
      tickEvery: 1,
      autoPulse: true,
      dataDir: c.dataDir,
      bootstrap: [...a.mesh.multiaddrs(), ...b.mesh.multiaddrs()],
    });
    nodes[2] = c2;
    expect(c2.mesh.nodeId).toBe(id);
    await waitForTopicMesh(nodes, TOPICS.ticks, 10_000);
    const mark = c2.mesh.nowSvcond();
    await waitFor(async () => (await ticksFrom(a, id, mark)) && (await ticksFrom(b, id, mark)), 10_000, 'ticks from restarted c');
    const s = await c2.mesh.status();
    expect(s.meshSize).toBe(3);
  });
});

import { it } from 'vitest';
import { systemClock } from '../../src/kernel/clock.js';
import { TOPICS } from '../../src/mesh/wire.js';
import { startNode, type TestNode } from './helpers.js';
it('debug', async () => {
  const t0 = Date.now();
  const FAST = { redialMinMs: 100, redialMaxMs: 1_000, peerSetTiming: { maintainMs: 200, graceMs: 10_000 } };
  const heard = new Map<string, Set<string>>();
  const start = async (bootstrap: string[]) => { const n = await startNode({ clock: systemClock, tickEvery: 2, autoPulse: true, bootstrap, config: { peers: { target: 3, max: 6 } }, extra: FAST }); const s = new Set<string>(); heard.set(n.mesh.nodeId, s); n.mesh.onEvent(TOPICS.ticks, (e) => void s.add(e.sender)); return n; };
  const seed = await start([]);
  const nodes: TestNode[] = [seed, ...(await Promise.all(Array.from({ length: 11 }, () => start(seed.mesh.multiaddrs()))))];
  const name = new Map(nodes.map((n, i) => [n.mesh.nodeId, String(i)]));
  for (let k = 0; k < 12; k++) {
    await new Promise((r) => setTimeout(r, 5000));
    console.log(`t=${Date.now()-t0}`, nodes.map((n, i) => `${i}:[${n.mesh.p2p!.connectedPeers().map((p) => name.get(p)).join(',')}] k=${n.mesh.knownPeers().length} h=${heard.get(n.mesh.nodeId)!.size}`).join(' '));
  }
  for (const n of nodes) await n.stop();
}, 90000);

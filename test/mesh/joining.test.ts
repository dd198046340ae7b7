// A node that joins a mesh ticks as its peers do until it has listened for a full window (tick-interval.ts
// joiningInterval): a and b tick every 6 ticks (their floor); c, whose own floor is 1 and whose first few peers heard
// would alone give it an interval of 1, declares 6 in its tick events as soon as it has heard them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/kernel/clock.js';
import { intervalFor } from '../../src/mesh/tick-interval.js';
import { removeDir, startNode, waitFor, type TestNode } from './helpers.js';

describe('mesh: a joining node ticks at the interval its peers declare', () => {
  const nodes: TestNode[] = [];

  beforeAll(async () => {
    const a = await startNode({ clock: systemClock, tickEvery: 6, autoPulse: true });
    nodes.push(a);
    nodes.push(await startNode({ clock: systemClock, tickEvery: 6, autoPulse: true, bootstrap: a.mesh.multiaddrs() }));
  });

  afterAll(async () => {
    for (const n of nodes) {
      await n.stop();
      await removeDir(n.dataDir);
    }
  });

  it('declares the median of its peers’ intervals, not the 1 its own count gives, while it is new', async () => {
    const [a, b] = nodes as [TestNode, TestNode];
    const c = await startNode({ clock: systemClock, tickEvery: 1, autoPulse: true, bootstrap: a.mesh.multiaddrs() });
    nodes.push(c);
    // Alone, three nodes heard at 8 events a second would give c the floor.
    expect(intervalFor(3, 1, 8)).toBe(1);
    await waitFor(
      () => {
        const heard = c.mesh.peers().filter((p) => p.lastTick !== null);
        return [a, b].every((n) => heard.some((p) => p.peerId === n.mesh.nodeId && p.every === 6));
      },
      30_000,
      'c hears a and b at their interval of 6',
    );
    // c's own tick events after that declare 6; before it heard anyone (its first event, at start) it declared 1.
    const own = await waitFor(
      async () => {
        const mine = (await c.mesh.recentEvents(200)).filter((e) => e.event.type === 'tick' && e.via === 'self').map((e) => e.event.body as { every: number });
        return mine.some((b) => b.every === 6) ? mine : null;
      },
      20_000,
      'a tick event of c declaring 6',
    );
    expect(own.map((b) => b.every).every((e) => e === 1 || e === 6)).toBe(true);
    expect((await c.mesh.status()).every).toBe(6);
    // a keeps its own floor: the lower median of its peers' intervals (b's 6, c's 1 or 6) is no longer than it.
    expect((await a.mesh.status()).every).toBe(6);
  });
});

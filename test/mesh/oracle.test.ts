// Transparency oracle with an injected clock: one signed snapshot per 4-tick slot, never rewritten.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, TICK_NS } from '../../src/kernel/clock.js';
import { verifySnapshot } from '../../src/mesh/oracle.js';
import { TOPICS } from '../../src/mesh/wire.js';
import { removeDir, startNode, waitFor, waitForTopicMesh, type TestNode } from './helpers.js';

describe('transparency oracle', () => {
  // Start on a tick that is a multiple of 4, near real time.
  const nowNs = BigInt(Date.now()) * 1_000_000n;
  const start = (nowNs / TICK_NS / 4n) * 4n;
  const clock = new ManualClock(start * TICK_NS + 1000n);
  const S = Number(start);
  let a: TestNode;
  let b: TestNode;

  beforeAll(async () => {
    a = await startNode({ clock, extra: { revenue: () => ({ burned: 800, foundation: 200 }) } });
    b = await startNode({ clock, bootstrap: a.mesh.multiaddrs() });
    await waitForTopicMesh([a, b], TOPICS.ticks);
  });

  afterAll(async () => {
    for (const n of [a, b]) {
      await n.stop();
      await removeDir(n.dataDir);
    }
  });

  it('writes exactly one signed snapshot per 4 ticks', async () => {
    expect(a.mesh.oracle.now()).toBeNull();
    await a.mesh.pulse();
    expect((await a.mesh.oracle.history(10)).map((s) => s.svcond)).toEqual([S]);
    for (let i = 0; i < 3; i++) {
      clock.advanceTicks(1);
      await a.mesh.pulse();
    }
    expect((await a.mesh.oracle.history(10)).map((s) => s.svcond)).toEqual([S]);
    a.sealedCount = 7;
    for (let i = 0; i < 13; i++) {
      clock.advanceTicks(1);
      await a.mesh.pulse();
    }
    // ticks S+4, S+8, S+12, S+16 each open a new slot
    const hist = await a.mesh.oracle.history(10);
    expect(hist.map((s) => s.svcond)).toEqual([S + 16, S + 12, S + 8, S + 4, S]);
    for (const s of hist) {
      expect(s.node).toBe(a.mesh.nodeId);
      expect(await verifySnapshot(s)).toBe(true);
      expect(Object.keys(s).sort()).toEqual(['chainHeadsDigest', 'kernelVersion', 'node', 'peers', 'sealedCount', 'signature', 'svcond']);
    }
    expect(hist[hist.length - 1].sealedCount).toBe(0);
    expect(hist[0].sealedCount).toBe(7);
    expect(await verifySnapshot({ ...hist[0], sealedCount: 8 })).toBe(false);
    expect(a.mesh.oracle.now()).toEqual(hist[0]);
    expect(await a.mesh.oracle.history(2)).toEqual(hist.slice(0, 2));
    expect((await a.mesh.oracle.history(100_000)).length).toBe(5);
  });

  it('never rewrites a snapshot, and carries the peers heard from', async () => {
    const before = await a.mesh.oracle.history(100);
    a.sealedCount = 99;
    expect(await a.mesh.oracle.maybeSnapshot(S + 16)).toBeNull();
    expect(await a.mesh.oracle.maybeSnapshot(S + 4)).toBeNull();
    expect(await a.mesh.oracle.history(100)).toEqual(before);

    // B publishes its tick on the next slot; A's following snapshot lists B.
    clock.advanceTicks(4);
    await b.mesh.pulse();
    await waitFor(() => a.mesh.peers().some((p) => p.peerId === b.mesh.nodeId && p.lastTick !== null), 8_000, 'tick from b');
    await a.mesh.pulse();
    const latest = a.mesh.oracle.now()!;
    expect(latest.svcond).toBe(S + 20);
    expect(latest.peers.map((p) => p.peerId)).toEqual([b.mesh.nodeId]);
    expect(latest.peers[0].lastTick).toBe(S + 20);
    const br = a.mesh.oracle.breakdown();
    expect(br.svcond).toBe(S + 20);
    expect(br.nodes.map((n) => n.nodeId)).toEqual([a.mesh.nodeId, b.mesh.nodeId]);
    expect(br.totalSealed).toBe(99 + 0);
    expect(br.reportingNodes).toBe(2);
    expect(await a.mesh.oracle.revenue()).toEqual({
      svcond: S + 20, burned: 800, foundation: 200, total: 1000, burnedShare: 0.8, foundationShare: 0.2,
    });
    const s = await a.mesh.status();
    expect(s.coherenceScore).toBe(1);
  });

  it('coherence falls when a peer stops ticking, and is null once no peer is heard', async () => {
    clock.advanceTicks(2 * 4 + 2);
    expect((await a.mesh.status()).coherenceScore).toBe(0);
    clock.advanceTicks(121);
    expect((await a.mesh.status()).coherenceScore).toBeNull();
  });
});

// Transparency oracle with an injected clock: one signed snapshot per 4-tick slot, never rewritten.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, TICK_NS } from '../../src/kernel/clock.js';
import { TransparencyOracle, verifySnapshot, type NetworkSnapshot } from '../../src/mesh/oracle.js';
import { TOPICS } from '../../src/mesh/wire.js';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import type { Store } from '../../src/store/db.js';
import { startTestNode } from '../helpers/node.js';
import { makeDataDir, removeDir, startNode, waitFor, waitForTopicMesh, type TestNode } from './helpers.js';
import { firstN } from '../helpers/tuple.js';

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
    const [newest, , , , oldest] = firstN(hist, 5);
    expect(oldest.sealedCount).toBe(0);
    expect(newest.sealedCount).toBe(7);
    expect(await verifySnapshot({ ...newest, sealedCount: 8 })).toBe(false);
    expect(a.mesh.oracle.now()).toEqual(newest);
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
    expect(latest.peers[0]?.lastTick).toBe(S + 20);
    const br = a.mesh.oracle.breakdown();
    expect(br.svcond).toBe(S + 20);
    expect(br.nodes.map((n) => n.nodeId)).toEqual([a.mesh.nodeId, b.mesh.nodeId]);
    expect(br.totalSealed).toBe(99 + 0);
    expect(br.reportingNodes).toBe(2);
    expect(await a.mesh.oracle.revenue()).toEqual({
      svcond: S + 20,
      burned: 800,
      foundation: 200,
      total: 1000,
      burnedShare: 0.8,
      foundationShare: 0.2,
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

/** The snapshot keys in LevelDB, read straight from the 'mesh-snapshots' sublevel, as svconds in key order. */
async function storedSnapshots(store: Store): Promise<{ svcond: number; value: NetworkSnapshot }[]> {
  const out: { svcond: number; value: NetworkSnapshot }[] = [];
  for await (const [key, value] of store.sub('mesh-snapshots').iterator()) out.push({ svcond: Number(key), value: value as NetworkSnapshot });
  return out;
}

describe('the 4-tick grid after a start', () => {
  const nowNs = BigInt(Date.now()) * 1_000_000n;
  const start = (nowNs / TICK_NS / 4n) * 4n;
  const S = Number(start);

  it('a node started mid-slot writes its first snapshot at the next multiple of 4, and again after a restart', async () => {
    const clock = new ManualClock((start + 1n) * TICK_NS + 1000n);
    const dataDir = await makeDataDir();
    let n = await startNode({ clock, secret: null, dataDir });
    try {
      const svconds = async () => (await n.mesh.oracle.history(100)).map((s) => s.svcond);
      for (let t = 1; t < 4; t++) {
        await n.mesh.pulse();
        expect(n.mesh.oracle.now()).toBeNull();
        clock.advanceTicks(1);
      }
      await n.mesh.pulse(); // S + 4
      expect(await svconds()).toEqual([S + 4]);
      for (let t = 5; t <= 9; t++) {
        clock.advanceTicks(1);
        await n.mesh.pulse();
      }
      expect(await svconds()).toEqual([S + 8, S + 4]);
      // Restart at S + 9 (mid-slot): nothing until S + 12.
      await n.stop();
      n = await startNode({ clock, secret: null, dataDir });
      await n.mesh.pulse();
      clock.advanceTicks(1);
      await n.mesh.pulse();
      clock.advanceTicks(1);
      await n.mesh.pulse();
      expect(await svconds()).toEqual([S + 8, S + 4]);
      clock.advanceTicks(1);
      await n.mesh.pulse();
      expect(await svconds()).toEqual([S + 12, S + 8, S + 4]);
      for (const s of await n.mesh.oracle.history(100)) expect(s.svcond % 4).toBe(0);
    } finally {
      await n.stop();
      await removeDir(dataDir);
    }
  });
});

describe('snapshot retention', () => {
  const nowNs = BigInt(Date.now()) * 1_000_000n;
  const start = (nowNs / TICK_NS / 4n) * 4n;

  it('keeps exactly the newest N snapshots, pruning in the write batch and across restarts', async () => {
    const clock = new ManualClock(start * TICK_NS + 1000n);
    const dataDir = await makeDataDir();
    const open = (max: number) => startNode({ clock, secret: null, dataDir, extra: { limits: { snapshotsMax: max } } });
    let n = await open(5);
    try {
      const written: number[] = [];
      const write = async (count: number) => {
        for (let i = 0; i < count; i++) {
          await n.mesh.pulse();
          written.push(n.mesh.oracle.now()!.svcond);
          clock.advanceTicks(4);
        }
      };
      await write(3);
      // Below the retention nothing is deleted.
      expect((await storedSnapshots(n.store)).map((e) => e.svcond)).toEqual(written);
      await write(9);
      expect(new Set(written).size).toBe(12);
      let stored = await storedSnapshots(n.store);
      expect(stored.map((e) => e.svcond)).toEqual(written.slice(-5));
      for (const e of stored) {
        expect(e.value.svcond).toBe(e.svcond);
        expect(await verifySnapshot(e.value)).toBe(true);
      }
      // History reads what is kept, newest first, still bounded by n.
      expect((await n.mesh.oracle.history(100)).map((s) => s.svcond)).toEqual(written.slice(-5).reverse());
      expect((await n.mesh.oracle.history(2)).map((s) => s.svcond)).toEqual(written.slice(-2).reverse());
      expect(n.mesh.oracle.stored).toBe(5);

      // A restart counts what is there and keeps pruning.
      await n.stop();
      n = await open(5);
      expect(n.mesh.oracle.now()!.svcond).toBe(written.at(-1));
      await write(4);
      stored = await storedSnapshots(n.store);
      expect(stored.map((e) => e.svcond)).toEqual(written.slice(-5));

      // A smaller retention trims the store at start, before any new write.
      await n.stop();
      n = await open(3);
      expect((await storedSnapshots(n.store)).map((e) => e.svcond)).toEqual(written.slice(-3));
      expect((await n.mesh.oracle.history(100)).map((s) => s.svcond)).toEqual(written.slice(-3).reverse());
      expect(n.mesh.oracle.now()!.svcond).toBe(written.at(-1));
      await write(2);
      expect((await storedSnapshots(n.store)).map((e) => e.svcond)).toEqual(written.slice(-3));

      // A larger one deletes nothing until it is reached.
      await n.stop();
      n = await open(6);
      await write(2);
      expect((await storedSnapshots(n.store)).map((e) => e.svcond)).toEqual(written.slice(-5));
      await write(2);
      expect((await storedSnapshots(n.store)).map((e) => e.svcond)).toEqual(written.slice(-6));
    } finally {
      await n.stop();
      await removeDir(dataDir);
    }
  });

  it('a store holding far more than N (written before retention existed) is trimmed at start', async () => {
    const clock = new ManualClock(start * TICK_NS + 1000n);
    const dataDir = await makeDataDir();
    let n = await startNode({ clock, secret: null, dataDir, extra: { limits: { snapshotsMax: 1_000_000 } } });
    try {
      // 2 500 snapshots (more than one trim batch of 1 000), written directly as an unbounded node would have.
      const sub = n.store.sub('mesh-snapshots');
      const svconds = Array.from({ length: 2_500 }, (_, i) => Number(start) - 4 * (2_500 - i));
      await n.store.commit(svconds.map((t) => ({ type: 'put' as const, sub, key: TransparencyOracle.key(t), value: { svcond: t } })));
      await n.stop();
      n = await startNode({ clock, secret: null, dataDir, extra: { limits: { snapshotsMax: 7 } } });
      expect((await storedSnapshots(n.store)).map((e) => e.svcond)).toEqual(svconds.slice(-7));
      await n.mesh.pulse();
      const newest = n.mesh.oracle.now()!.svcond;
      expect(newest).toBe(Number(start));
      expect((await storedSnapshots(n.store)).map((e) => e.svcond)).toEqual([...svconds.slice(-6), newest]);
    } finally {
      await n.stop();
      await removeDir(dataDir);
    }
  });

  it('is the config key mesh.snapshotRetention (env SVC_MESH_SNAPSHOT_RETENTION), wired through the node', async () => {
    expect(loadConfig({ env: {} }).mesh.snapshotRetention).toBe(10_000);
    expect(loadConfig({ env: { SVC_MESH_SNAPSHOT_RETENTION: '42' } }).mesh.snapshotRetention).toBe(42);
    expect(() => loadConfig({ env: { SVC_MESH_SNAPSHOT_RETENTION: '0' } })).toThrow(ConfigError);
    expect(() => loadConfig({ env: { SVC_MESH_SNAPSHOT_RETENTION: 'many' } })).toThrow(ConfigError);
    expect(
      () =>
        new TransparencyOracle({
          store: {} as Store,
          nodeId: () => 'x',
          sign: async () => '',
          headState: () => ({ sealedCount: 0, chainHeadsDigest: '', kernelVersion: '' }),
          peers: () => [],
          retention: 0,
        }),
    ).toThrow(RangeError);

    const clock = new ManualClock(start * TICK_NS + 1000n);
    const t = await startTestNode({ solverThreads: 0, mesh: { snapshotRetention: 2 } }, { clock, mesh: { autoPulse: false } });
    try {
      for (let i = 0; i < 4; i++) {
        await t.node.mesh.pulse();
        clock.advanceTicks(4);
      }
      expect((await storedSnapshots(t.node.store)).map((e) => e.svcond)).toEqual([Number(start) + 8, Number(start) + 12]);
    } finally {
      await t.destroy();
    }
  });
});

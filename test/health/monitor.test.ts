// The health checks on sources the test sets: each warning starts once (one warn line), counts while its condition
// lasts and clears (one info line) when it ends. The TCP probe of an announced address is real (127.0.0.1).
import { createServer, type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { HealthMonitor, type HealthSettings, type HealthSources } from '../../src/health/monitor.js';
import { WARNING_CODES, WarningBook, type WarningCode } from '../../src/health/warnings.js';

const SETTINGS: HealthSettings = {
  handshakeWindowSeconds: 10,
  noPeersGraceSeconds: 30,
  clockSkewTicks: 2,
  diskFreeMinPercent: 5,
  diskFreeMinBytes: 100 * 2 ** 20,
  backlogMax: 100,
  backlogGrowthChecks: 3,
  announceProbeSeconds: 60,
};

function rig(over: Partial<HealthSources> = {}) {
  const log: { level: 'warn' | 'info'; obj: Record<string, any>; msg: string }[] = [];
  const state = {
    ms: 1_000_000,
    tick: 5_000,
    handshake: {} as Record<string, number>,
    stale: 0,
    connections: 1 as number | null,
    peers: [] as { peerId: string; lastTick: number | null; receivedSvcond: number | null }[],
    disk: { freeBytes: 50 * 2 ** 30, totalBytes: 100 * 2 ** 30 },
    backlogs: {} as Record<string, number>,
    workers: {} as Record<string, string>,
    remoteKeys: { held: 0, max: 10 } as { held: number; max: number } | null,
  };
  const book = new WarningBook(() => state.ms, {
    warn: (obj, msg) => log.push({ level: 'warn', obj: obj as Record<string, any>, msg }),
    info: (obj, msg) => log.push({ level: 'info', obj: obj as Record<string, any>, msg }),
  });
  const sources: HealthSources = {
    dataDir: '/nowhere',
    refusals: () => ({ handshake: { ...state.handshake }, stale: state.stale }),
    connections: () => state.connections,
    bootstrap: ['/ip4/127.0.0.1/tcp/1/p2p/12D3KooWBootstrap'],
    announce: [],
    peerTicks: () => state.peers,
    nowSvcond: () => state.tick,
    nowMs: () => state.ms,
    backlogs: async () => ({ ...state.backlogs }),
    workerStartFailures: () => ({ ...state.workers }),
    remoteKeys: () => state.remoteKeys,
    disk: async () => state.disk,
    ...over,
  };
  const monitor = new HealthMonitor(book, sources, SETTINGS);
  const codes = () => book.list().map((w) => w.code);
  const of = (code: WarningCode) => book.list().find((w) => w.code === code);
  const linesOf = (code: WarningCode, level: 'warn' | 'info') => log.filter((l) => l.obj.warning === code && l.level === level);
  return { state, book, monitor, log, codes, of, linesOf };
}

describe('health checks', () => {
  it('a healthy node has no warning', async () => {
    const r = rig();
    await r.monitor.check();
    expect(r.book.list()).toEqual([]);
    expect(r.log).toEqual([]);
  });

  it('refused handshakes: one episode per burst, counted by refusal, cleared after the window without any', async () => {
    const r = rig();
    r.state.handshake = { peerX: 3 };
    await r.monitor.check();
    expect(r.of('MESH_HANDSHAKE_REJECTED')).toMatchObject({ count: 3, since: new Date(r.state.ms).toISOString() });
    expect(r.of('MESH_HANDSHAKE_REJECTED')!.message).toContain('peerX');
    r.state.ms += 3_000;
    r.state.handshake = { peerX: 5, peerY: 1 };
    await r.monitor.check();
    expect(r.of('MESH_HANDSHAKE_REJECTED')).toMatchObject({ count: 6, since: new Date(1_000_000).toISOString() });
    expect(r.of('MESH_HANDSHAKE_REJECTED')!.message).toMatch(/peerX, peerY/);
    r.state.ms += 9_000;
    await r.monitor.check();
    expect(r.codes()).toEqual(['MESH_HANDSHAKE_REJECTED']);
    r.state.ms += 2_000;
    await r.monitor.check();
    expect(r.codes()).toEqual([]);
    expect(r.linesOf('MESH_HANDSHAKE_REJECTED', 'warn')).toHaveLength(1);
    expect(r.linesOf('MESH_HANDSHAKE_REJECTED', 'info')).toEqual([
      {
        level: 'info',
        obj: { warning: 'MESH_HANDSHAKE_REJECTED', count: 6, since: new Date(1_000_000).toISOString() },
        msg: 'warning MESH_HANDSHAKE_REJECTED cleared',
      },
    ]);
  });

  it('no peers with a bootstrap configured: only after the grace, and not without a mesh', async () => {
    const r = rig();
    r.state.connections = 0;
    await r.monitor.check();
    r.state.ms += 29_000;
    await r.monitor.check();
    expect(r.codes()).toEqual([]);
    r.state.ms += 1_000;
    await r.monitor.check();
    expect(r.of('MESH_NO_PEERS')!.message).toMatch(/no mesh connection for 30 s although 1 bootstrap peer/);
    r.state.connections = 2;
    await r.monitor.check();
    expect(r.codes()).toEqual([]);
    const alone = rig({ bootstrap: [] });
    alone.state.connections = 0;
    alone.state.ms += 60_000;
    await alone.monitor.check();
    const meshless = rig();
    meshless.state.connections = null;
    await meshless.monitor.check();
    expect([...alone.codes(), ...meshless.codes()]).toEqual([]);
  });

  it('clock skew: a recent peer tick stamped beyond the bound, or stale refusals', async () => {
    const r = rig();
    r.state.peers = [
      { peerId: 'inStep', lastTick: 4_999, receivedSvcond: 5_000 },
      { peerId: 'longAgo', lastTick: 4_000, receivedSvcond: 4_700 },
      { peerId: 'silent', lastTick: null, receivedSvcond: null },
    ];
    await r.monitor.check();
    expect(r.codes()).toEqual([]);
    r.state.peers.push({ peerId: 'ahead', lastTick: 5_004, receivedSvcond: 5_000 });
    await r.monitor.check();
    expect(r.of('CLOCK_SKEW')!.message).toMatch(/ahead \(\+4 ticks\)/);
    r.state.peers.pop();
    await r.monitor.check();
    expect(r.codes()).toEqual([]);
    r.state.stale = 2;
    await r.monitor.check();
    expect(r.of('CLOCK_SKEW')!.message).toMatch(/refused as stale/);
    expect(r.linesOf('CLOCK_SKEW', 'warn')).toHaveLength(2);
    expect(r.linesOf('CLOCK_SKEW', 'info')).toHaveLength(1);
  });

  it('disk nearly full: below the share or the bytes', async () => {
    const r = rig();
    r.state.disk = { freeBytes: 4 * 2 ** 30, totalBytes: 100 * 2 ** 30 };
    await r.monitor.check();
    expect(r.of('DISK_LOW')!.message).toMatch(/4096 MiB free of 102400 MiB \(4\.0 %\)/);
    r.state.disk = { freeBytes: 90 * 2 ** 20, totalBytes: 1 * 2 ** 30 };
    await r.monitor.check();
    expect(r.of('DISK_LOW')).toMatchObject({ count: 2 });
    r.state.disk = { freeBytes: 900 * 2 ** 20, totalBytes: 1 * 2 ** 30 };
    await r.monitor.check();
    expect(r.codes()).toEqual([]);
  });

  it('backlogs: growing at consecutive checks, or at the bound; a shrink ends it', async () => {
    const r = rig();
    for (const n of [1, 2, 2, 5]) {
      r.state.backlogs = { transfers: n, 'webhook deliveries': 0 };
      await r.monitor.check();
    }
    expect(r.codes()).toEqual(['BACKLOG_GROWING']);
    expect(r.of('BACKLOG_GROWING')!.message).toMatch(/transfers 5 items/);
    r.state.backlogs = { transfers: 4, 'webhook deliveries': 0 };
    await r.monitor.check();
    expect(r.codes()).toEqual([]);
    r.state.backlogs = { transfers: 4, 'webhook deliveries': 100 };
    await r.monitor.check();
    expect(r.of('BACKLOG_GROWING')!.message).toMatch(/webhook deliveries 100/);
  });

  it('workers that die as they start: one episode naming each kind and its cause, cleared once they start', async () => {
    const r = rig();
    r.state.workers = { 'solver workers': 'Error: ENOENT: no such file or directory, uv_cwd' };
    await r.monitor.check();
    r.state.workers = { 'solver workers': 'Error: ENOENT: no such file or directory, uv_cwd', 'seal workers': 'Error: seal worker exited with code 1' };
    await r.monitor.check();
    expect(r.codes()).toEqual(['WORKERS_NOT_STARTING']);
    const w = r.of('WORKERS_NOT_STARTING')!;
    expect(w.count).toBe(2);
    expect(w.message).toContain('solver workers die as they start (Error: ENOENT: no such file or directory, uv_cwd)');
    expect(w.message).toContain('seal workers die as they start (Error: seal worker exited with code 1)');
    expect(r.linesOf('WORKERS_NOT_STARTING', 'warn')).toHaveLength(1);
    r.state.workers = {};
    await r.monitor.check();
    expect(r.codes()).toEqual([]);
    expect(r.linesOf('WORKERS_NOT_STARTING', 'info')).toHaveLength(1);
  });

  it('keys minted elsewhere at the bound gossip may fill: one episode with the figures, cleared below it or without a mesh', async () => {
    const r = rig();
    r.state.remoteKeys = { held: 9, max: 10 };
    await r.monitor.check();
    expect(r.codes()).toEqual([]);
    r.state.remoteKeys = { held: 10, max: 10 };
    await r.monitor.check();
    await r.monitor.check();
    expect(r.codes()).toEqual(['MESH_KEYS_FULL']);
    expect(r.of('MESH_KEYS_FULL')).toMatchObject({ count: 2 });
    expect(r.of('MESH_KEYS_FULL')!.message).toContain('holds 10 keys minted elsewhere, its maximum from gossip (limits.remoteKeysMax 10)');
    expect(r.linesOf('MESH_KEYS_FULL', 'warn')).toHaveLength(1);
    // The node forgot the keys of other homes (a day away from the mesh): below the bound again.
    r.state.remoteKeys = { held: 3, max: 10 };
    await r.monitor.check();
    expect(r.codes()).toEqual([]);
    expect(r.linesOf('MESH_KEYS_FULL', 'info')).toHaveLength(1);
    r.state.remoteKeys = null;
    await r.monitor.check();
    expect(r.codes()).toEqual([]);
  });

  it('an announced address that accepts no TCP connection, probed for real', async () => {
    const server = createServer();
    await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
    const open = (server.address() as AddressInfo).port;
    const closed = createServer();
    await new Promise<void>((res) => closed.listen(0, '127.0.0.1', res));
    const shut = (closed.address() as AddressInfo).port;
    await new Promise<void>((res) => closed.close(() => res()));
    try {
      const good = rig({ announce: [`/ip4/127.0.0.1/tcp/${open}`] });
      await good.monitor.check();
      expect(good.codes()).toEqual([]);
      const bad = rig({ announce: [`/ip4/127.0.0.1/tcp/${open}`, `/ip4/127.0.0.1/tcp/${shut}`] });
      await bad.monitor.check();
      expect(bad.of('MESH_ANNOUNCE_UNREACHABLE')!.message).toContain(`/ip4/127.0.0.1/tcp/${shut} (ECONNREFUSED)`);
      expect(bad.of('MESH_ANNOUNCE_UNREACHABLE')!.message).not.toContain(`tcp/${open} `);
    } finally {
      await new Promise<void>((res) => server.close(() => res()));
    }
  });

  it('lists warnings in the order of the closed list of codes', async () => {
    const r = rig();
    r.state.disk = { freeBytes: 1, totalBytes: 100 * 2 ** 30 };
    r.state.handshake = { peerX: 1 };
    await r.monitor.check();
    expect(r.codes()).toEqual(WARNING_CODES.filter((c) => c === 'MESH_HANDSHAKE_REJECTED' || c === 'DISK_LOW'));
  });
});

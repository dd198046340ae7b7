// svc-node status (in-process: the command's own functions and its commander action) and the terminal progress.
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Command } from 'commander';
import { startTestNode, type TestNode } from '../helpers/node.js';
import { formatStatus, readStatus, statusCommand } from '../../src/cli/status.js';
import { formatPeers, readPeers } from '../../src/cli/peers.js';
import { progress } from '../../src/cli/progress.js';
import { runCli } from '../helpers/cli.js';
import { freePort } from '../helpers/free-port.js';

let t: TestNode;
beforeAll(async () => {
  t = await startTestNode();
}, 30_000);
afterAll(() => t?.destroy());

describe('svc-node status', () => {
  it('reads health, tick and mesh, and prints them on one screen', async () => {
    const s = await readStatus(t.url);
    expect(s).toMatchObject({ reachable: true, health: { node: t.node.nodeId }, mesh: { enabled: false, peers: [] } });
    expect(s.pulse!.svcond).toBeGreaterThan(0);
    const text = formatStatus(s);
    expect(text).toContain(`svc-node ${t.node.nodeId}`);
    expect(text).toMatch(/tick {6}\d+ · phase 0\.\d{4} · R_t \d\.\d{6}/);
    expect(text).toContain('off (no mesh secret)');
    expect(text.split('\n').length).toBeLessThan(25);
    const peers = formatStatus({
      ...s,
      mesh: {
        ...s.mesh!,
        enabled: true,
        meshSize: 2,
        coherenceScore: 1,
        peers: [{ peerId: 'peerB', url: null, lastTick: s.pulse!.svcond - 3, connected: true, mode: 'idle' }],
        multiaddrs: ['/ip4/127.0.0.1/tcp/4001/p2p/peerA'],
      },
    });
    expect(peers).toMatch(/peerB\s+\d+\s+3\s+connected\s+idle/);
    expect(peers).toContain('  dial      /ip4/127.0.0.1/tcp/4001/p2p/peerA\n');
    expect(s.health!.warnings).toEqual([]);
    expect(text).not.toContain('warning');
    const warned = formatStatus({
      ...s,
      health: { ...s.health!, warnings: [{ code: 'DISK_LOW', message: 'the data dir is nearly full', since: '2026-01-01T00:00:00.000Z', count: 3 }] },
    });
    expect(warned).toContain('  warning   DISK_LOW (×3 since 2026-01-01T00:00:00.000Z): the data dir is nearly full\n');
  });

  it('--json prints one JSON object; an unreachable node exits 1 with the reason', async () => {
    const out: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => (out.push(String(chunk)), true));
    try {
      const program = new Command().exitOverride();
      statusCommand(program);
      await program.parseAsync(['node', 'svc-node', 'status', '--url', t.url, '--json']);
      expect(process.exitCode).toBe(0);
      const down = new Command().exitOverride();
      statusCommand(down);
      await down.parseAsync(['node', 'svc-node', 'status', '--url', 'http://127.0.0.1:1', '--json', '--timeout', '2000']);
      expect(process.exitCode).toBe(1);
    } finally {
      spy.mockRestore();
      process.exitCode = 0;
    }
    expect(out).toHaveLength(2);
    expect(JSON.parse(out[0]!)).toMatchObject({ reachable: true, url: t.url, health: { node: t.node.nodeId } });
    expect(JSON.parse(out[1]!)).toMatchObject({ reachable: false });
  });
});

describe('svc-node peers', () => {
  it('says a node without a mesh runs alone, rather than a target of 0 connections', async () => {
    const r = await readPeers(t.url);
    expect(r).toMatchObject({ nodeId: t.node.nodeId, enabled: false, peers: [] });
    expect(formatPeers(r)).toBe(`svc-node ${t.node.nodeId}\n  mesh        off (no mesh secret): the node runs alone\n`);
  });
});

describe('a node that does not answer', () => {
  it('status and peers say why (nothing listens there, the name does not resolve), not only "fetch failed"', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const refused = await readStatus(closed, 2000);
    expect(refused).toMatchObject({ reachable: false });
    expect(refused.error).toContain('connection refused: no node listens there');
    expect(formatStatus(refused)).toContain(`svc-node at ${closed}: unreachable (connection refused`);
    const unresolved = await readStatus('http://no-such-host.invalid:8787', 2000);
    expect(unresolved.error).toMatch(/^the host name does not resolve \((ENOTFOUND|EAI_AGAIN)\)$/);
    const peers = runCli(['peers', '--url', closed, '--timeout', '2000']);
    expect(peers.status).toBe(1);
    expect(peers.stderr.trim().split('\n').pop()).toBe(
      `svc-node peers: ${closed}: connection refused: no node listens there (is it running, and is this the URL of its "listening" log line?)`,
    );
  }, 60_000);
});

describe('progress', () => {
  it('draws a spinner on a terminal, and nothing when the stream is not one or the output is JSON', async () => {
    const fake = Object.assign(new PassThrough(), {
      isTTY: true,
      columns: 80,
      cursorTo: () => true,
      clearLine: () => true,
      moveCursor: () => true,
    }) as unknown as NodeJS.WriteStream;
    let drawn = '';
    (fake as unknown as PassThrough).on('data', (c: Buffer) => (drawn += c.toString()));
    const env = process.env.CI;
    delete process.env.CI;
    try {
      const p = await progress('starting node1', { stream: fake });
      p.text('starting node2 (2 of 3)');
      p.succeed('3 nodes running');
      const quiet = await progress('x', { stream: fake, json: true });
      quiet.succeed('never shown');
    } finally {
      if (env !== undefined) process.env.CI = env;
    }
    await new Promise((r) => setImmediate(r));
    expect(drawn).toContain('starting node2 (2 of 3)');
    expect(drawn).toContain('3 nodes running');
    expect(drawn).not.toContain('never shown');
    const plain = Object.assign(new PassThrough(), { isTTY: false }) as unknown as NodeJS.WriteStream;
    let none = '';
    (plain as unknown as PassThrough).on('data', (c: Buffer) => (none += c.toString()));
    (await progress('x', { stream: plain })).succeed('y');
    await new Promise((r) => setImmediate(r));
    expect(none).toBe('');
  });
});

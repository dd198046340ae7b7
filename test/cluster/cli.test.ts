// The svc-node command as a user runs it: start (config errors, signals), verify, keys, cluster.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { call, zkIdentity } from '../helpers/node.js';

const ROOT = join(import.meta.dirname, '..', '..');
const CLI = ['--import', 'tsx', join(ROOT, 'src/cli/index.ts')];
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});
async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'svc-cli-'));
  dirs.push(d);
  return d;
}

function run(args: string[], env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [...CLI, ...args], { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Start a long-running command and collect JSON lines from its stdout. */
function startLines(args: string[], env: Record<string, string>, done: (lines: Record<string, any>[]) => boolean): Promise<{ child: ChildProcess; lines: Record<string, any>[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...CLI, ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const lines: Record<string, any>[] = [];
    let buf = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL'); // never leave a node behind
      reject(new Error(`timed out; got ${lines.length} lines`));
    }, 45_000);
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          lines.push(JSON.parse(line));
        } catch {
          /* ignore */
        }
        if (done(lines)) {
          clearTimeout(timer);
          resolve({ child, lines });
        }
      }
    });
    child.once('exit', (code) => reject(new Error(`exited early with ${code}`)));
  });
}

function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((r) => {
    child.removeAllListeners('exit');
    if (child.exitCode !== null) return r(child.exitCode);
    child.once('exit', (code) => r(code));
  });
}

describe('svc-node start', () => {
  it('a bad configuration exits with code 2 and a one-line reason', async () => {
    const bad = run(['start'], { SVC_PORT: 'eighty' });
    expect(bad.status).toBe(2);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    expect(bad.stderr).toMatch(/SVC_PORT must be an integer/);
    const badPeer = run(['start'], { SVC_BOOTSTRAP: 'not-a-multiaddr', SVC_PORT: '0' });
    expect(badPeer.status).toBe(2);
    expect(badPeer.stderr).toMatch(/mesh\.bootstrap\.0: each bootstrap peer must be a multiaddr/);
    const dir = await tempDir();
    await writeFile(join(dir, 'c.json'), '{"port": 99999}');
    const range = run(['start', '--config', join(dir, 'c.json')]);
    expect(range.status).toBe(2);
    expect(range.stderr).toMatch(/port/);
  });

  it('logs {"msg":"listening","url"} when ready, serves, and exits 0 on SIGTERM; verify and keys work offline', async () => {
    const dir = await tempDir();
    const { child, lines } = await startLines(['start', '--port', '0', '--data-dir', dir], { SVC_LOG_LEVEL: 'info' }, (ls) => ls.some((l) => l.msg === 'listening'));
    let r: Awaited<ReturnType<typeof call>>;
    try {
      const listening = lines.find((l) => l.msg === 'listening')!;
      expect(listening.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const id = await zkIdentity(listening.url, 'cli');
      r = await call(listening.url, 'POST', '/api/svc/heat', {}, { authorization: `Bearer ${id.key}` });
      expect(r.status).toBe(200);
      // A second node on the same data dir is refused with one line and exit 2 (LevelDB's lock).
      const second = run(['start', '--port', '0', '--data-dir', dir]);
      expect(second.status).toBe(2);
      expect(second.stderr.trim()).toBe(`svc-node: data dir ${dir} is in use by another node`);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exitOf(child)).toBe(0);

    const file = join(dir, 'result.json');
    await writeFile(file, r.text);
    const ok = run(['verify', file, '--data-dir', dir]);
    expect(ok.status).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ valid: true, result_id: r.body.result_id, value: r.body.value, unit: 'K' });
    await writeFile(file, JSON.stringify({ ...r.body, value: r.body.value + 1 }));
    const tampered = run(['verify', file, '--data-dir', dir]);
    expect(tampered.status).toBe(1);
    expect(JSON.parse(tampered.stdout).valid).toBe(false);

    const keys = run(['keys', '--data-dir', dir]);
    expect(keys.status).toBe(0);
    expect(JSON.parse(keys.stdout)).toMatchObject({ nodeId: r.body.node, keyType: 'Ed25519', receiptKeyFingerprint: expect.stringMatching(/^[0-9a-f]{16}$/) });
  }, 60_000);
});

describe('svc-node cluster', () => {
  it('starts N nodes that find each other, prints one JSON line each, and stops them all on SIGINT', async () => {
    const root = await tempDir();
    const { child, lines } = await startLines(['cluster', '--nodes', '2', '--base-port', '0', '--data-root', root, '--mesh-secret', 'cluster-cli-secret-123456'], {}, (ls) => ls.length >= 2);
    try {
      expect(lines.map((l) => l.name)).toEqual(['node1', 'node2']);
      for (const l of lines) {
        expect(Object.keys(l).sort()).toEqual(['dataDir', 'multiaddr', 'name', 'peerId', 'url']);
        expect(l.multiaddr).toContain(`/p2p/${l.peerId}`);
        expect((await call(l.url, 'GET', '/api/health')).status).toBe(200);
      }
      const end = Date.now() + 15_000;
      let size = 0;
      while (Date.now() < end && size < 2) {
        size = (await call(lines[0]!.url, 'GET', '/api/mesh/status')).body.meshSize;
        if (size < 2) await new Promise((r) => setTimeout(r, 200));
      }
      expect(size).toBe(2);
    } finally {
      child.kill('SIGINT');
      expect(await exitOf(child)).toBe(0);
    }
    for (const l of lines) await expect(fetch(`${l.url}/api/health`)).rejects.toThrow();
  }, 90_000);
});

// The svc-node command as a user runs it: start (config errors, signals), verify, keys, cluster.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { call, zkIdentity, type Reply } from '../helpers/node.js';
import { CLI, ROOT, exitOf, runCli, runCliAsync, tempDirs } from '../helpers/cli.js';
import { busyPort } from '../helpers/free-port.js';

const tempDir = tempDirs('svc-cli-');
const run = (args: string[], env: Record<string, string> = {}) => runCli(args, env);

/** Nodes of a cluster start one after the other: slow on a loaded machine. */
const START_TIMEOUT_MS = 90_000;

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    /* already gone */
  }
}

/** Start a long-running command and collect JSON lines from its stdout (and its stderr as text, in `stderr`). */
function startLines(
  args: string[],
  env: Record<string, string>,
  done: (lines: Record<string, any>[]) => boolean,
): Promise<{ child: ChildProcess; lines: Record<string, any>[]; stderr: string[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...CLI, ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const lines: Record<string, any>[] = [];
    const stderr: string[] = [];
    child.stderr!.on('data', (d: Buffer) => stderr.push(d.toString()));
    let buf = '';
    const timer = setTimeout(() => {
      // SIGTERM: a cluster stops its nodes on it, each cleanly; then make sure of it.
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
      for (const l of lines) if (typeof l.pid === 'number') killQuietly(l.pid);
      reject(new Error(`timed out; got ${lines.length} lines`));
    }, START_TIMEOUT_MS);
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
          resolve({ child, lines, stderr });
        }
      }
    });
    child.once('exit', (code) => reject(new Error(`exited early with ${code}`)));
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Processes running with a data dir under `root` (a node the cluster started there), from /proc. */
function nodesOf(root: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const env = readFileSync(`/proc/${entry}/environ`, 'latin1').split('\0');
      if (env.some((v) => v.startsWith(`SVC_DATA_DIR=${root}/`))) pids.push(Number(entry));
    } catch {
      /* gone, or not ours to read */
    }
  }
  return pids;
}

/** Stop a cluster with `signal` and end any node it left behind: its exit code and the nodes that were still alive. */
async function stopCluster(child: ChildProcess, lines: Record<string, any>[], signal: NodeJS.Signals): Promise<{ code: number | null; leftover: string[] }> {
  child.kill(signal);
  const code = await exitOf(child);
  // Nodes the cluster left behind would fail the test; they are ended here either way.
  await new Promise((r) => setTimeout(r, 200));
  const leftover = lines.filter((l) => alive(l.pid)).map((l) => l.name);
  for (const l of lines) if (alive(l.pid)) killQuietly(l.pid);
  return { code, leftover };
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
  }, 90_000);

  it('logs {"msg":"listening","url"} when ready, serves, and exits 0 on SIGTERM; verify and keys work offline', async () => {
    const dir = await tempDir();
    const { child, lines } = await startLines(['start', '--port', '0', '--data-dir', dir], { SVC_LOG_LEVEL: 'info' }, (ls) =>
      ls.some((l) => l.msg === 'listening'),
    );
    let r: Reply;
    try {
      const listening = lines.find((l) => l.msg === 'listening')!;
      expect(listening.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const id = await zkIdentity(listening.url, 'cli');
      r = await call(listening.url, 'POST', '/api/svc/heat', {}, { authorization: `Bearer ${id.key}` });
      expect(r.status).toBe(200);
      // A second node on the same data dir is refused with one line and exit 2 (LevelDB's lock).
      const second = run(['start', '--port', '0', '--data-dir', dir]);
      expect(second.status).toBe(2);
      expect(second.stderr.trim()).toBe(
        `svc-node: data dir ${dir} is in use by another node: stop that node, or give this one another data dir (--data-dir or SVC_DATA_DIR)`,
      );
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
  }, 150_000);
});

// The two clusters start side by side (each on free ports and its own data root): starting nodes is what they wait on.
describe.concurrent('svc-node cluster', () => {
  /** Wait until fn() is truthy (polling), or fail naming what. */
  async function until<T>(fn: () => Promise<T | null | false | undefined> | T | null | false | undefined, what: string, timeoutMs = 30_000): Promise<T> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const v = await fn();
      if (v) return v as T;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const health = async (url: string): Promise<number> => {
    try {
      return (await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(5000) })).status;
    } catch {
      return 0;
    }
  };

  it('a node that cannot start: the cluster repeats its reason and names --base-port; its data dir is made private, with no warning about it', async ({
    expect,
  }) => {
    const root = await tempDir();
    const { port, release } = await busyPort();
    let r: { status: number | null; stderr: string };
    try {
      r = await runCliAsync(['cluster', '--nodes', '1', '--base-port', String(port), '--data-root', root]);
    } finally {
      await release();
    }
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toContain(`node1 exited with code 2 before it was ready: cannot listen on 127.0.0.1:${port}: EADDRINUSE`);
    expect(r.stderr).toContain('--base-port starts the cluster on other ports (0 = any free ports)');
    expect(statSync(join(root, 'node1')).mode & 0o777).toBe(0o700);
    expect(readFileSync(join(root, 'node1', 'node.log'), 'utf8')).not.toContain('readable by other users');
  }, 60_000);

  it('a node that exits leaves the others running (said on stderr); the cluster stops on SIGTERM only', async ({ expect }) => {
    const root = await tempDir();
    let stopped: { code: number | null; leftover: string[] };
    const { child, lines, stderr } = await startLines(
      ['cluster', '--nodes', '3', '--base-port', '0', '--data-root', root, '--mesh-secret', 'cluster-cli-secret-123456'],
      {},
      (ls) => ls.length >= 3,
    );
    try {
      const [n1, n2, n3] = lines as [Record<string, any>, Record<string, any>, Record<string, any>];
      process.kill(n2.pid, 'SIGKILL');
      await until(() => stderr.join('').includes('node2 exited'), 'the exit on stderr');
      expect(stderr.join('')).toMatch(/node2 exited .*signal SIGKILL.*the other nodes keep running/);
      expect(await health(n2.url)).toBe(0);
      for (const n of [n1, n3]) expect(await health(n.url)).toBe(200);
      // Still running a while later, and the survivors still serve (and still form a mesh of two).
      await new Promise((r) => setTimeout(r, 1500));
      expect(child.exitCode).toBeNull();
      expect(await health(n1.url)).toBe(200);
      const size = await until(async () => {
        const st = await call(n3.url, 'GET', '/api/mesh/status');
        return st.body.peers?.some((p: { peerId: string }) => p.peerId === n1.peerId) ? st : null;
      }, 'node3 sees node1');
      expect(size.status).toBe(200);
      // Without --restart, node2 stays down.
      expect(lines.filter((l) => l.name === 'node2')).toHaveLength(1);
    } finally {
      stopped = await stopCluster(child, lines, 'SIGTERM');
    }
    expect(stopped.code).toBe(0);
    expect(stopped.leftover).toEqual([]);
    for (const l of lines) expect(await health(l.url)).toBe(0);
  }, 200_000);

  it('Ctrl-C while a node is still starting stops every node it spawned, none started after it', async ({ expect }) => {
    const root = await tempDir();
    const child = spawn(process.execPath, [...CLI, 'cluster', '--nodes', '3', '--base-port', '0', '--data-root', root], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'ignore'],
    });
    // The moment the cluster has read node2's listening line (it copies the node's output into node.log): the cluster
    // then checks node2's health and would go on to node3.
    await until(
      async () => (await readFile(join(root, 'node2', 'node.log'), 'utf8').catch(() => '')).includes('"msg":"listening"'),
      'node2 listening',
      START_TIMEOUT_MS,
    );
    child.kill('SIGINT');
    expect(await exitOf(child)).toBe(0);
    await new Promise((r) => setTimeout(r, 500));
    const left = nodesOf(root);
    for (const pid of left) killQuietly(pid);
    expect(left).toEqual([]);
  }, 200_000);

  it('a cluster that ends without stopping its nodes (SIGKILL) leaves none running: each stops as its IPC channel closes', async ({ expect }) => {
    const root = await tempDir();
    const { child, lines } = await startLines(['cluster', '--nodes', '2', '--base-port', '0', '--data-root', root], {}, (ls) => ls.length >= 2);
    expect(nodesOf(root).sort()).toEqual(lines.map((l) => l.pid).sort());
    child.kill('SIGKILL');
    await exitOf(child);
    const gone = await until(() => nodesOf(root).length === 0, 'every node of the killed cluster to stop', 30_000).catch(() => false);
    const left = nodesOf(root);
    for (const pid of left) killQuietly(pid);
    expect(gone).toBe(true);
  }, 200_000);

  // One cluster for both: starting nodes is what these tests spend their time on.
  it('starts N nodes that find each other, one JSON line each; --restart brings an exited node back on the same data dir, ports and peer id; SIGINT stops them all', async ({
    expect,
  }) => {
    const root = await tempDir();
    let stopped: { code: number | null; leftover: string[] };
    const { child, lines, stderr } = await startLines(
      ['cluster', '--nodes', '2', '--base-port', '0', '--data-root', root, '--mesh-secret', 'cluster-cli-secret-123456', '--restart'],
      {},
      (ls) => ls.length >= 2,
    );
    try {
      const [n1, n2] = lines as [Record<string, any>, Record<string, any>];
      expect(lines.map((l) => l.name)).toEqual(['node1', 'node2']);
      for (const l of lines) {
        expect(Object.keys(l).sort()).toEqual(['dataDir', 'multiaddr', 'name', 'peerId', 'pid', 'url']);
        expect(Number.isInteger(l.pid)).toBe(true);
        expect(l.multiaddr).toContain(`/p2p/${l.peerId}`);
        expect(await health(l.url)).toBe(200);
      }
      const meshed = await until(async () => ((await call(n1.url, 'GET', '/api/mesh/status')).body.meshSize === 2 ? true : null), 'a mesh of two', 15_000);
      expect(meshed).toBe(true);
      const id = await zkIdentity(n1.url, 'cluster-restart');
      process.kill(n1.pid, 'SIGKILL');
      const back = await until(() => lines.find((l, i) => i >= 2 && l.name === 'node1'), 'node1 restarted', 60_000);
      expect(back).toMatchObject({ name: 'node1', url: n1.url, peerId: n1.peerId, multiaddr: n1.multiaddr, dataDir: n1.dataDir, restarted: true });
      expect(back.pid).not.toBe(n1.pid);
      expect(stderr.join('')).toMatch(/node1 exited .*signal SIGKILL.*restarting/);
      expect(await health(n1.url)).toBe(200);
      expect(await health(n2.url)).toBe(200);
      // It is the same node: an identity registered before is still there.
      expect((await call(n1.url, 'GET', '/api/tally/balance', undefined, { authorization: `Bearer ${id.key}` })).body.zid).toBe(id.zid);
      // A clean exit is brought back too (SIGTERM to the node, not to the cluster).
      process.kill(n2.pid, 'SIGTERM');
      const back2 = await until(() => lines.find((l, i) => i >= 3 && l.name === 'node2'), 'node2 restarted', 60_000);
      expect(back2).toMatchObject({ url: n2.url, peerId: n2.peerId });
      expect(child.exitCode).toBeNull();
    } finally {
      stopped = await stopCluster(child, lines, 'SIGINT');
    }
    expect(stopped.code).toBe(0);
    expect(stopped.leftover).toEqual([]);
    for (const l of lines) expect(await health(l.url)).toBe(0);
  }, 200_000);
});

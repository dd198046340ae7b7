// `svc-node cluster`: N real node processes on 127.0.0.1 with their own data dirs, one shared mesh secret and
// receipt secret, each bootstrapping to the nodes started before it. Prints one JSON line per node once it is
// healthy. A node that exits leaves the others running (said on stderr): killing one to watch the others carry on
// is the first thing one does with a test cluster. With --restart an exited node is started again on the same data
// dir and ports (so the same peer id and URL). Only SIGINT/SIGTERM stop the cluster; a cluster killed otherwise takes
// its nodes with it (each stops when its IPC channel to the cluster closes). Ctrl-C reaches the cluster and
// every node at once (one process group), and a node may die of it before the cluster hears it: so a node that exits
// on SIGINT is taken as that stop too, never as a node to report, restart or fail the start for.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { loadOrCreateReceiptSecret } from '../config/receipt-secret.js';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { progress } from './progress.js';
import { NODE_HEAP_FLAGS } from '../config/heap-flags.js';
import { makeDirs } from '../util/make-dirs.js';

export interface ClusterOptions {
  nodes: number;
  basePort: number;
  meshSecret?: string;
  dataRoot: string;
  logLevel: string;
  /** Start a node that exited again, on the same data dir and ports. */
  restart?: boolean;
}

interface Started {
  name: string;
  child: ChildProcess;
  url: string;
  peerId: string;
  multiaddr: string;
  dataDir: string;
}

// Run the children the way this process runs: from dist (index.js) or from source under tsx (index.ts).
const SELF = fileURLToPath(import.meta.url);
const FROM_SOURCE = SELF.endsWith('.ts');
const CLI = join(dirname(SELF), FROM_SOURCE ? 'index.ts' : 'index.js');
const NODE_ARGS = FROM_SOURCE ? ['--import', 'tsx', CLI, 'start'] : [CLI, 'start'];
/** Each node gets the node heap flags, then any heap-size flags the cluster command itself was started with (the later wins). */
const HEAP_FLAGS = [...NODE_HEAP_FLAGS, ...process.execArgv.filter((a) => /^--(max|min)-(semi|old)-space-size=/.test(a))];
const START_TIMEOUT_MS = 30_000;
/** A node that keeps exiting soon after its start is restarted later and later: from 1 s, doubling, to 30 s. */
const RESTART_DELAY_MS = { first: 1000, max: 30_000 };
/** A node that ran this long before it exited starts again at the first delay. */
const RESTART_STABLE_MS = 60_000;

/**
 * The receipt secret shared by the cluster, kept in the data root's receipt-secret file as a data dir keeps its own
 * (hex, config/receipt-secret.ts) and handed to the nodes as the same hex in SVC_RECEIPT_SECRET: so receipts stay
 * verifiable across restarts, and `svc-node verify --data-dir <data root>` uses the key the nodes use.
 */
async function sharedReceiptSecret(dataRoot: string): Promise<string> {
  return (await loadOrCreateReceiptSecret(dataRoot)).toString('hex');
}

function startOne(name: string, dataDir: string, env: Record<string, string>, onSpawn: (child: ChildProcess) => void): Promise<Started> {
  return new Promise((resolvePromise, reject) => {
    // The IPC channel is the node's tie to the cluster: the node stops when it closes (src/cli/index.ts, start).
    const child = spawn(process.execPath, [...HEAP_FLAGS, ...NODE_ARGS], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    onSpawn(child);
    const log = createWriteStream(join(dataDir, 'node.log'), { flags: 'a' });
    child.stderr!.pipe(log);
    // A node that refuses to start says why in one line on stderr (src/cli/start-failure.ts): the cluster repeats it.
    let reason = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      const last = chunk.toString().trim().split('\n').pop()?.trim();
      if (last) reason = last.replace(/^svc-node: /, '');
    });
    let buffer = '';
    let done = false;
    const timer = setTimeout(() => {
      if (!done) reject(new Error(`${name} did not start within ${START_TIMEOUT_MS / 1000} s (see ${join(dataDir, 'node.log')})`));
    }, START_TIMEOUT_MS);
    child.stdout!.on('data', (chunk: Buffer) => {
      log.write(chunk);
      if (done) return;
      buffer += chunk.toString();
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        try {
          const rec = JSON.parse(line) as { msg?: string; url?: string; node?: string; multiaddrs?: string[] };
          if (rec.msg === 'listening' && rec.url && rec.node) {
            done = true;
            clearTimeout(timer);
            resolvePromise({ name, child, url: rec.url, peerId: rec.node, multiaddr: rec.multiaddrs?.[0] ?? '', dataDir });
            return;
          }
        } catch {
          /* not a JSON log line */
        }
      }
    });
    // 'close', not 'exit': its stderr has been read to the end, the reason with it.
    child.once('close', (code, signal) => {
      if (!done) {
        clearTimeout(timer);
        const why =
          reason === '' ? '' : `: ${reason}${/EADDRINUSE/.test(reason) ? '; --base-port starts the cluster on other ports (0 = any free ports)' : ''}`;
        reject(
          Object.assign(new Error(`${name} exited ${describeExit(code, signal)} before it was ready${why} (see ${join(dataDir, 'node.log')})`), { signal }),
        );
      }
    });
  });
}

async function healthy(url: string): Promise<void> {
  const end = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < end) {
    try {
      const res = await fetch(`${url}/api/health`);
      if (res.ok) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} is not healthy`);
}

/** The port of a URL or of a multiaddr's /tcp/ part (what a restarted node listens on again). */
function portOf(url: string): string {
  return new URL(url).port;
}
function p2pPortOf(multiaddr: string): string | null {
  return /\/tcp\/(\d+)/.exec(multiaddr)?.[1] ?? null;
}

function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  return signal ? `on signal ${signal}` : `with code ${code}`;
}

/** Whether a node's exit (or its failed start) was Ctrl-C, which the whole process group gets. */
function interrupted(signal: NodeJS.Signals | null | undefined): boolean {
  return signal === 'SIGINT';
}

interface Member {
  name: string;
  dataDir: string;
  env: Record<string, string>;
  /** The running process (null while it is down or being started again). */
  current: Started | null;
  startedAt: number;
  restartDelayMs: number;
}

export async function runCluster(o: ClusterOptions): Promise<void> {
  const root = resolve(o.dataRoot);
  await makeDirs(root);
  const meshSecret = o.meshSecret ?? randomBytes(32).toString('hex');
  const receiptSecret = await sharedReceiptSecret(root);
  const members: Member[] = [];
  /** Every node process spawned and not yet exited (including one still starting). */
  const children = new Set<ChildProcess>();
  const timers = new Set<NodeJS.Timeout>();
  let stopping = false;
  const onSpawn = (child: ChildProcess): void => {
    children.add(child);
    child.once('exit', () => children.delete(child));
  };
  const stopAll = async (code: number): Promise<never> => {
    stopping = true;
    for (const t of timers) clearTimeout(t);
    await Promise.all(
      [...children].map(
        (child) =>
          new Promise<void>((r) => {
            if (child.exitCode !== null || child.signalCode !== null) return r();
            child.once('exit', () => r());
            child.kill('SIGTERM');
          }),
      ),
    );
    process.exit(code);
  };
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));

  const announce = (m: Member, node: Started, restarted: boolean): void => {
    const line: Record<string, unknown> = {
      name: m.name,
      url: node.url,
      peerId: node.peerId,
      multiaddr: node.multiaddr,
      dataDir: m.dataDir,
      pid: node.child.pid,
    };
    if (restarted) line.restarted = true;
    process.stdout.write(`${JSON.stringify(line)}\n`);
  };

  /** Watch a running node: when it exits, say so, and start it again (--restart) or leave the others running. */
  const watch = (m: Member, node: Started): void => {
    node.child.once('exit', (code, signal) => {
      if (stopping) return;
      if (interrupted(signal)) return void stopAll(0);
      m.current = null;
      const how = describeExit(code, signal);
      if (!o.restart) {
        const left = members.filter((x) => x.current !== null).length;
        process.stderr.write(
          `svc-node cluster: ${m.name} exited ${how}; the other nodes keep running (${left} of ${members.length}; --restart brings an exited node back)\n`,
        );
        if (left === 0) {
          process.stderr.write('svc-node cluster: no node is left running; stopping\n');
          void stopAll(1);
        }
        return;
      }
      if (Date.now() - m.startedAt >= RESTART_STABLE_MS) m.restartDelayMs = RESTART_DELAY_MS.first;
      process.stderr.write(`svc-node cluster: ${m.name} exited ${how}; restarting it in ${m.restartDelayMs / 1000} s on ${m.dataDir}\n`);
      scheduleRestart(m);
    });
  };

  const scheduleRestart = (m: Member): void => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      void restartOne(m);
    }, m.restartDelayMs);
    timers.add(timer);
    m.restartDelayMs = Math.min(RESTART_DELAY_MS.max, m.restartDelayMs * 2);
  };

  const restartOne = async (m: Member): Promise<void> => {
    if (stopping) return;
    // Bootstrap to the nodes running now (the node's own address book is in its data dir too).
    const env = {
      ...m.env,
      SVC_BOOTSTRAP: members
        .filter((x) => x !== m && x.current)
        .map((x) => x.current!.multiaddr)
        .filter(Boolean)
        .join(','),
    };
    m.startedAt = Date.now();
    try {
      const node = await startOne(m.name, m.dataDir, env, onSpawn);
      await healthy(node.url);
      if (stopping) return;
      m.current = node;
      announce(m, node, true);
      watch(m, node);
    } catch (err) {
      if (stopping) return;
      if (interrupted((err as { signal?: NodeJS.Signals }).signal)) return void stopAll(0);
      process.stderr.write(`svc-node cluster: ${m.name} did not come back: ${(err as Error).message}; trying again in ${m.restartDelayMs / 1000} s\n`);
      scheduleRestart(m);
    }
  };

  const spin = await progress(`starting ${o.nodes} node${o.nodes === 1 ? '' : 's'}`);
  try {
    for (let i = 0; i < o.nodes; i++) {
      const name = `node${i + 1}`;
      spin.text(`starting ${name} (${i + 1} of ${o.nodes})`);
      const dataDir = join(root, name);
      // Private, as the node keeps its data dir (it would make it so, and warn, at its first start).
      await makeDirs(dataDir, 0o700);
      const env: Record<string, string> = {
        SVC_HOST: '127.0.0.1',
        SVC_PORT: String(o.basePort === 0 ? 0 : o.basePort + i),
        SVC_P2P_PORT: String(o.basePort === 0 ? 0 : o.basePort + 100 + i),
        SVC_DATA_DIR: dataDir,
        SVC_MESH_SECRET: meshSecret,
        SVC_RECEIPT_SECRET: receiptSecret,
        SVC_BOOTSTRAP: members
          .map((m) => m.current?.multiaddr ?? '')
          .filter(Boolean)
          .join(','),
        SVC_LOG_LEVEL: o.logLevel,
      };
      const member: Member = { name, dataDir, env, current: null, startedAt: Date.now(), restartDelayMs: RESTART_DELAY_MS.first };
      // Ctrl-C while an earlier node started: the stop waits for the nodes spawned until then and exits, so a node
      // spawned after it would outlive the cluster.
      if (stopping) return;
      const node = await startOne(name, dataDir, env, onSpawn);
      member.current = node;
      members.push(member);
      await healthy(node.url);
      if (stopping) return;
      // A restart listens where the node listened (any-free-port nodes keep the ports they were given).
      env.SVC_PORT = portOf(node.url);
      env.SVC_P2P_PORT = p2pPortOf(node.multiaddr) ?? env.SVC_P2P_PORT!;
      announce(member, node, false);
      watch(member, node);
    }
    spin.succeed(`${o.nodes} node${o.nodes === 1 ? '' : 's'} running: ${members.map((m) => m.current?.url).join(' ')} (Ctrl-C stops them)`);
  } catch (err) {
    // Ctrl-C while the nodes start stops the ones being started: that is the stop asked for (exit 0), not a failure.
    if (stopping) return;
    if (interrupted((err as { signal?: NodeJS.Signals }).signal)) return void (await stopAll(0));
    spin.fail(`cluster start failed`);
    process.stderr.write(`svc-node cluster: ${(err as Error).message}\n`);
    await stopAll(1);
  }
}

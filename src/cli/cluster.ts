// `svc-node cluster`: N real node processes on 127.0.0.1 with their own data dirs, one shared mesh secret and
// receipt secret, each bootstrapping to the nodes started before it. Prints one JSON line per node once it is
// healthy; SIGINT/SIGTERM stops them all.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NODE_HEAP_FLAGS } from '../config/heap-flags.js';

export interface ClusterOptions {
  nodes: number;
  basePort: number;
  meshSecret?: string;
  dataRoot: string;
  logLevel: string;
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

/** The receipt secret shared by the cluster, kept in the data root so receipts stay verifiable across restarts. */
async function sharedSecret(dataRoot: string, file: string): Promise<string> {
  const path = join(dataRoot, file);
  try {
    return (await readFile(path, 'utf8')).trim();
  } catch {
    const secret = randomBytes(32).toString('hex');
    await writeFile(path, secret, { mode: 0o600 });
    return secret;
  }
}

function startOne(name: string, dataDir: string, env: Record<string, string>): Promise<Started> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [...HEAP_FLAGS, ...NODE_ARGS], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const log = createWriteStream(join(dataDir, 'node.log'), { flags: 'a' });
    child.stderr!.pipe(log);
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
    child.once('exit', (code) => {
      if (!done) {
        clearTimeout(timer);
        reject(new Error(`${name} exited with code ${code} before it was ready (see ${join(dataDir, 'node.log')})`));
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

export async function runCluster(o: ClusterOptions): Promise<void> {
  const root = resolve(o.dataRoot);
  await mkdir(root, { recursive: true });
  const meshSecret = o.meshSecret ?? randomBytes(32).toString('hex');
  const receiptSecret = await sharedSecret(root, 'receipt-secret');
  const started: Started[] = [];
  let stopping = false;
  const stopAll = async (code: number): Promise<never> => {
    stopping = true;
    await Promise.all(
      started.map(
        (s) =>
          new Promise<void>((r) => {
            if (s.child.exitCode !== null) return r();
            s.child.once('exit', () => r());
            s.child.kill('SIGTERM');
          }),
      ),
    );
    process.exit(code);
  };
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));

  try {
    for (let i = 0; i < o.nodes; i++) {
      const name = `node${i + 1}`;
      const dataDir = join(root, name);
      await mkdir(dataDir, { recursive: true });
      const env: Record<string, string> = {
        SVC_HOST: '127.0.0.1',
        SVC_PORT: String(o.basePort === 0 ? 0 : o.basePort + i),
        SVC_P2P_PORT: String(o.basePort === 0 ? 0 : o.basePort + 100 + i),
        SVC_DATA_DIR: dataDir,
        SVC_MESH_SECRET: meshSecret,
        SVC_RECEIPT_SECRET: receiptSecret,
        SVC_BOOTSTRAP: started.map((s) => s.multiaddr).filter(Boolean).join(','),
        SVC_LOG_LEVEL: o.logLevel,
      };
      const node = await startOne(name, dataDir, env);
      started.push(node);
      await healthy(node.url);
      process.stdout.write(`${JSON.stringify({ name, url: node.url, peerId: node.peerId, multiaddr: node.multiaddr, dataDir })}\n`);
      node.child.once('exit', (code) => {
        if (!stopping) {
          process.stderr.write(`svc-node cluster: ${name} exited with code ${code}; stopping the cluster\n`);
          void stopAll(1);
        }
      });
    }
  } catch (err) {
    process.stderr.write(`svc-node cluster: ${(err as Error).message}\n`);
    await stopAll(1);
  }
}

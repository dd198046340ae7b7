// What the bench scripts share: numeric --name value arguments, a pool of requests in flight, percentiles, child
// servers that report their url,
// bench nodes (a mesh node as its own process, a durable node in this process), registered identities and their keys
// as clients get them, and the operator's bond header.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/config/load.js';
import { resolveCaller } from '../../src/http/auth.js';
import { SvcNode } from '../../src/node/node.js';

export const root = join(import.meta.dirname, '..', '..');

/** The number after --name on the command line, or def. */
export function numberArg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
}

/** `task(0)` … `task(count - 1)`, with `concurrency` of them in flight at a time (the next starts as one ends). */
export async function inFlight(count: number, concurrency: number, task: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < count; i = next++) await task(i);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
}

/** The p-th percentile (nearest rank) of some figures, in any order; NaN for none. */
export function percentile(figures: readonly number[], p: number): number {
  if (figures.length === 0) return NaN;
  const sorted = [...figures].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/**
 * Spawn a server (cwd: the project root, or `cwd`) and wait for the `"url":…` of its listening line (`startMs`, 30 s by
 * default; a server that has not said it by then is killed). Its output after that line is read and dropped. `ipc` opens an IPC channel
 * to it (process.send in the child).
 */
export function startProcess(
  cmd: string,
  argv: string[],
  env: Record<string, string>,
  cwd = root,
  ipc = false,
  startMs = 30_000,
): Promise<{ child: ChildProcess; url: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { cwd, env: { ...process.env, ...env }, stdio: ipc ? ['ignore', 'pipe', 'inherit', 'ipc'] : ['ignore', 'pipe', 'inherit'] });
    let buf = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`process did not report its url in ${startMs / 1000} s`));
    }, startMs);
    const onData = (d: Buffer): void => {
      buf += d.toString();
      const m = /"url":"([^"]+)"/.exec(buf);
      if (m) {
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        resolve({ child, url: m[1]! });
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`process exited early with ${code ?? signal}`));
    });
  });
}

/** SIGTERM a server and wait for it to exit. */
export function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.removeAllListeners('exit');
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/**
 * CPU time (user + system, ms) a process and its descendants have used so far (Linux /proc; null elsewhere or once
 * it has exited). Descendants count because tsx runs its script in a child process.
 */
export function processCpuMs(pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    let ms = (Number(fields[11]) + Number(fields[12])) * 10;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      for (const child of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean)) ms += processCpuMs(Number(child)) ?? 0;
    }
    return ms;
  } catch {
    return null;
  }
}

/** A node of a bench cluster: its data dir holds the operator token; stop() ends it and removes that dir. */
export interface BenchNode {
  url: string;
  dir: string;
  nodeId: string;
  /** Its first libp2p address (what the next node bootstraps from). */
  multiaddr: string;
  /** Its process id (processCpuMs); this process's for a node started in it. */
  pid: number;
  stop(): Promise<void>;
}

export interface NodeProcessOptions {
  /** The mesh secret the cluster shares. */
  secret: string;
  /** Addresses of the nodes already started. */
  bootstrap: string[];
  /** The bench's own settings (SVC_…), over the common ones. */
  env: Record<string, string>;
  /** Node flags before the CLI (an --import of a composition). */
  preload?: string[];
  /** How long it may take to report its url (startProcess). */
  startMs?: number;
}

/**
 * A mesh node as its own process: the built CLI as npm start runs it (the bench builds first), in a fresh data dir,
 * on 127.0.0.1 with free ports, 1,000,000 initial credits, ticking every second.
 */
export async function startNodeProcess(o: NodeProcessOptions): Promise<BenchNode> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-node-'));
  const { child, url } = await startProcess(
    process.execPath,
    [...(o.preload ?? []), 'dist/cli/index.js', 'start'],
    {
      SVC_PORT: '0',
      SVC_HOST: '127.0.0.1',
      SVC_DATA_DIR: dir,
      SVC_LOG_LEVEL: 'info',
      SVC_INITIAL_CREDITS: '1000000',
      SVC_RECEIPT_SECRET: 'ef'.repeat(32),
      SVC_MESH_SECRET: o.secret,
      SVC_P2P_PORT: '0',
      SVC_BOOTSTRAP: o.bootstrap.join(','),
      SVC_MESH_TICK_EVERY: '1',
      ...o.env,
    },
    root,
    false,
    o.startMs,
  );
  const status = (await (await fetch(`${url}/api/mesh/status`)).json()) as { nodeId: string; multiaddrs: string[] };
  return {
    url,
    dir,
    nodeId: status.nodeId,
    multiaddr: status.multiaddrs[0]!,
    pid: child.pid!,
    stop: async () => {
      await stop(child);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A durable node in this process (fresh data dir, 127.0.0.1, silent), with credits enough for any bench. */
export async function startInProcessNode(overrides: Record<string, unknown> = {}): Promise<{ node: SvcNode; stop(): Promise<void> }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-node-'));
  const config = loadConfig({ env: {}, overrides: { port: 0, host: '127.0.0.1', dataDir, logLevel: 'silent', syncWrites: true, ...overrides } });
  const node = await new SvcNode(config, { logger: pino({ level: 'silent' }), initialCredits: 100_000_000 }).start();
  return {
    node,
    stop: async () => {
      await node.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** The caller a request with this bearer key resolves to at `node`, as its HTTP layer resolves it (compute without HTTP). */
export function callerOf(node: SvcNode, key: string): () => ReturnType<typeof resolveCaller> {
  const ctx = { get: (h: string) => (h === 'authorization' ? `Bearer ${key}` : ''), query: {}, ip: '127.0.0.1' } as unknown as Parameters<
    typeof resolveCaller
  >[0];
  const deps = { identity: node.identity, nodeId: () => node.nodeId };
  return () => resolveCaller(ctx, deps, true);
}

/**
 * A v3 identity registered at `url` under a fresh equation digest (from `seed` and the time): its zid, that digest,
 * and the machine key (zsm_) the registration answers.
 */
export async function registerV3(url: string, seed: string): Promise<{ zid: string; digest: string; adminKey: string }> {
  const digest = createHash('sha256').update(`bench:${seed}:${Date.now()}`).digest('hex');
  const res = await fetch(`${url}/api/svc-auth/register-v3`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ equation_sha256: digest }),
  });
  if (res.status !== 201) throw new Error(`register-v3 answered ${res.status}`);
  const body = (await res.json()) as { zid: string; admin_key: string };
  return { zid: body.zid, digest, adminKey: body.admin_key };
}

/** A v3 identity registered at `url`, with an identity key (sk_) for the identity-wide routes. */
export async function registerIdentity(url: string, seed: string): Promise<{ zid: string; key: string }> {
  const { zid, digest } = await registerV3(url, seed);
  return { zid, key: await identityKey(url, digest) };
}

/** POST a JSON body with a bearer key (and `extra` headers): the answer's JSON; an error for any status from 300 on. */
export async function postJson(url: string, path: string, key: string, body: unknown, extra: Record<string, string> = {}): Promise<unknown> {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { ...extra, authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as unknown;
  if (res.status >= 300) throw new Error(`${path} answered ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

/**
 * An identity key (sk_) of a v3 identity, as a client gets one: login-v3 opens a session, the session mints the key.
 * Identity-wide routes (envelopes, transfers, bonds, modes, webhooks, challenges) refuse a machine's zsm_ key.
 */
export async function identityKey(url: string, equationSha256: string): Promise<string> {
  const login = await fetch(`${url}/api/svc-auth/login-v3`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ equation_sha256: equationSha256 }),
  });
  if (login.status !== 200) throw new Error(`login-v3 answered ${login.status}`);
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
  const minted = await fetch(`${url}/api/auth/api-key`, { method: 'POST', headers: { 'content-type': 'application/json', cookie }, body: '{"kind":"sk"}' });
  if (minted.status !== 201) throw new Error(`api-key answered ${minted.status}`);
  return ((await minted.json()) as { key: string }).key;
}

/** The header that makes a bond the operator's (consensus/bond-slot.ts): the operator token in a node's data dir. */
export function operatorBond(dataDir: string): Record<string, string> {
  return { 'x-svc-operator-token': readFileSync(join(dataDir, 'operator-token'), 'utf8').trim() };
}

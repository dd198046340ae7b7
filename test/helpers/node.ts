// Start a real node on 127.0.0.1:0 with a temp data dir, and speak HTTP to it.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/config/load.js';
import { SvcNode, type NodeOptions } from '../../src/node/node.js';

export interface TestNode {
  node: SvcNode;
  url: string;
  dataDir: string;
  /** Stop and start again on the same data dir (and same config). */
  restart(): Promise<TestNode>;
  stop(): Promise<void>;
  /** Stop and remove the data dir. */
  destroy(): Promise<void>;
}

/**
 * A test node: silent, unsynced writes, identities' secrets hashed at the test run's scrypt cost
 * (SVC_IDENTITY_SCRYPT_COST, vitest.config.ts), and solver runs and sealed bodies on the calling thread
 * (`solverThreads: 0`, `sealWorker: false`, the one-core setting; the same solvers and bodies, bit for bit): starting
 * a node's two workers costs about half a second of CPU, and the suite starts hundreds of nodes. A test of the
 * workers themselves (time limits, the pool, the seal worker) asks for them in `overrides`.
 */
/** The node's own workers (solver pool and seal worker), as a node runs by default: for a test of the worker path. */
export const WITH_WORKERS = { solverThreads: 'auto', sealWorker: true } as const;

export async function startTestNode(overrides: Record<string, unknown> = {}, options: NodeOptions = {}, dataDir?: string): Promise<TestNode> {
  const dir = dataDir ?? (await mkdtemp(join(tmpdir(), 'svc-test-')));
  const config = loadConfig({
    env: {},
    overrides: {
      port: 0,
      host: '127.0.0.1',
      dataDir: dir,
      logLevel: 'silent',
      syncWrites: false,
      identity: { scryptCost: Number(process.env.SVC_IDENTITY_SCRYPT_COST ?? 14) },
      solverThreads: 0,
      sealWorker: false,
      ...overrides,
      // The suite's registrations and logins come from 127.0.0.1 (vitest.config.ts), unless a test sets its own limit.
      limits: { authPerMinute: Number(process.env.SVC_AUTH_PER_MINUTE ?? 30), ...(overrides.limits as Record<string, unknown> | undefined) },
    },
  });
  const node = await new SvcNode(config, { logger: pino({ level: 'silent' }), ...options }).start();
  const t: TestNode = {
    node,
    url: node.url,
    dataDir: dir,
    restart: async () => {
      await node.stop();
      return startTestNode(overrides, options, dir);
    },
    stop: () => node.stop(),
    destroy: async () => {
      await node.stop().catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
  return t;
}

export interface Reply<T = any> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

export async function call<T = any>(url: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply<T>> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] = 'application/json';
  }
  const res = await fetch(url + path, init);
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON: keep text */
  }
  return { status: res.status, body: parsed as T, headers: res.headers, text };
}

export const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/** The header that makes a bond the operator's (consensus/bond-slot.ts): the node's operator token, from its data dir. */
export const operatorBond = (t: { dataDir: string }) => ({ 'x-svc-operator-token': readFileSync(join(t.dataDir, 'operator-token'), 'utf8').trim() });

/** An identity key (sk_) of a v3 identity: login-v3 opens a session, the session mints the key (part 5 item 4). */
export async function identityKeyOf(url: string, equationSha256: string): Promise<string> {
  const login = await call(url, 'POST', '/api/svc-auth/login-v3', { equation_sha256: equationSha256 });
  if (login.status !== 200) throw new Error(`login-v3 failed: ${login.status} ${login.text}`);
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
  const minted = await call(url, 'POST', '/api/auth/api-key', { kind: 'sk' }, { cookie });
  if (minted.status !== 201) throw new Error(`api-key failed: ${minted.status} ${minted.text}`);
  return minted.body.key as string;
}

/**
 * Register a ZK identity: its zid, an identity key (`key`, sk_: identity-wide actions and every machine its identity
 * holds a role on) and the admin key of its default machine (`adminKey`, zsm_: that machine and compute only).
 */
export async function zkIdentity(url: string, seed: string): Promise<{ zid: string; key: string; adminKey: string; slug: string }> {
  const { createHash } = await import('node:crypto');
  const digest = createHash('sha256').update(`equation:${seed}`).digest('hex');
  const r = await call(url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: digest });
  if (r.status !== 201) throw new Error(`register-v3 failed: ${r.status} ${r.text}`);
  return { zid: r.body.zid, key: await identityKeyOf(url, digest), adminKey: r.body.admin_key, slug: r.body.state_machine.slug };
}

/** The part-7 error shape, asserted field by field. */
export function expectError(r: Reply, status: number, code: string): Record<string, any> {
  if (r.status !== status) throw new Error(`expected ${status} ${code}, got ${r.status}: ${r.text}`);
  const e = r.body?.error;
  if (!e || e.code !== code) throw new Error(`expected code ${code}, got ${r.text}`);
  for (const f of ['message', 'trace_id', 'timestamp', 'documentation_url']) {
    if (typeof e[f] !== 'string' || e[f].length === 0) throw new Error(`error body lacks ${f}: ${r.text}`);
  }
  if (r.headers.get('x-trace-id') !== e.trace_id) throw new Error('X-Trace-Id header does not match trace_id');
  return e;
}

/**
 * Two meshed nodes: A alone, B bootstrapped from A, resolved once each has heard the other's URL (a tick event).
 * `config(bootstrap)` is the config override of a node given its bootstrap list.
 */
export async function startNodePair(config: (bootstrap: string[]) => Record<string, unknown>, options: NodeOptions = {}): Promise<[TestNode, TestNode]> {
  const a = await startTestNode(config([]), options);
  const b = await startTestNode(config([a.node.mesh.multiaddrs()[0]!]), options);
  const end = Date.now() + 60_000;
  while (![a, b].every((n) => n.node.mesh.peers().some((p) => p.url))) {
    if (Date.now() > end) throw new Error('the nodes did not hear each other');
    await new Promise((r) => setTimeout(r, 100));
  }
  return [a, b];
}

/**
 * How test nodes are bootstrapped. full: each node to every node started before it; line: each to the one before it
 * (the ends only reach each other through the middle); ring: a line whose last node also dials the first.
 */
export type Topology = 'full' | 'line' | 'ring';

export const TOPOLOGIES: readonly Topology[] = ['full', 'line', 'ring'];

/** The bootstrap list of a node of `topology`, given the first multiaddr of each node started before it, in order. */
/** The peer-set bounds of a line or a ring: a node at its one or two neighbours is at its target, never over its maximum. */
export const SPARSE_PEERS = { target: 1, max: 2 };

/** A node's config on a sparse mesh, given its bootstrap list: it dials no one beyond its neighbours. */
export const sparseMeshConfig =
  (secret: string, extra: Record<string, unknown> = {}) =>
  (bootstrap: string[]): Record<string, unknown> => ({ ...extra, mesh: { secret, p2pPort: 0, bootstrap, tickEvery: 1, peers: SPARSE_PEERS } });

export function bootstrapOf(topology: Topology, earlier: readonly string[]): string[] {
  if (topology === 'full') return [...earlier];
  return earlier.length > 0 ? [earlier[earlier.length - 1]!] : [];
}

/** Wait until every node has heard a tick event (with its URL) from every other one. */
export async function waitMeshHeard(nodes: readonly TestNode[], timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  const heard = (n: TestNode) => nodes.every((o) => o === n || n.node.mesh.peers().some((p) => p.peerId === o.node.nodeId && p.url));
  while (!nodes.every(heard)) {
    if (Date.now() > end) throw new Error('the nodes did not hear each other');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * `n` meshed nodes started one after another on `topology`, resolved once each has heard every other's tick event.
 * `config(bootstrap, i)` is the config override of the i-th node; `options` its node options.
 */
export async function startMesh(
  n: number,
  config: (bootstrap: string[], i: number) => Record<string, unknown>,
  options: NodeOptions | ((i: number) => NodeOptions) = {},
  topology: Topology = 'full',
): Promise<TestNode[]> {
  const nodes: TestNode[] = [];
  for (let i = 0; i < n; i++) {
    const earlier = nodes.map((t) => t.node.mesh.multiaddrs()[0]!);
    const c = config(bootstrapOf(topology, earlier), i);
    // A sparse mesh stays sparse: the peer set dials no peer beyond the ones the topology connects.
    const shaped = topology === 'full' ? c : { ...c, mesh: { ...(c.mesh as Record<string, unknown>), peers: SPARSE_PEERS } };
    nodes.push(await startTestNode(shaped, typeof options === 'function' ? options(i) : options));
  }
  if (topology === 'ring' && n > 2) await nodes[n - 1]!.node.mesh.p2p!.dial(nodes[0]!.node.mesh.multiaddrs()[0]!);
  await waitMeshHeard(nodes);
  return nodes;
}

/** The peers a node holds a libp2p connection to, among `nodes` (by index). */
export function connectedIndexes(node: TestNode, nodes: readonly TestNode[]): number[] {
  const connected = new Set(node.node.mesh.p2p?.connectedPeers() ?? []);
  return nodes.flatMap((o, i) => (connected.has(o.node.nodeId) ? [i] : []));
}

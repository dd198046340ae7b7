// Helpers for mesh tests: real MeshService nodes on 127.0.0.1 (port 0) with temp data dirs.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Store } from '../../src/store/db.js';
import type { Clock } from '../../src/kernel/clock.js';
import { MeshService, type MeshConfig, type MeshServiceOptions } from '../../src/mesh/service.js';
import { waitUntil } from '../helpers/wait.js';

export const SECRET = 'test-mesh-secret-0123456789abcdef';

export interface TestNode {
  mesh: MeshService;
  store: Store;
  dataDir: string;
  sealedCount: number;
  stop(): Promise<void>;
}

export async function makeDataDir(prefix = 'svc-mesh-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

export async function startNode(opts: {
  clock: Clock;
  bootstrap?: string[];
  secret?: string | null;
  dataDir?: string;
  port?: number;
  tickEvery?: number;
  autoPulse?: boolean;
  /** Mesh config beyond the secret, port, bootstrap and tick period (listen, announce, peers, relay). */
  config?: Partial<MeshConfig>;
  extra?: Partial<MeshServiceOptions>;
}): Promise<TestNode> {
  const dataDir = opts.dataDir ?? (await makeDataDir());
  const store = await Store.open(join(dataDir, 'db'), { sync: false });
  const node: TestNode = {
    mesh: undefined as unknown as MeshService,
    store,
    dataDir,
    sealedCount: 0,
    async stop() {
      await node.mesh.stop();
      await store.close();
    },
  };
  node.mesh = new MeshService({
    store,
    clock: opts.clock,
    config: {
      secret: opts.secret === undefined ? SECRET : opts.secret,
      p2pPort: opts.port ?? 0,
      bootstrap: opts.bootstrap ?? [],
      tickEvery: opts.tickEvery ?? 4,
      host: '127.0.0.1',
      ...opts.config,
    },
    dataDir,
    httpUrl: `http://127.0.0.1:${10_000 + Math.floor(Math.random() * 1000)}`,
    headState: () => ({ sealedCount: node.sealedCount, chainHeadsDigest: 'ab'.repeat(32), kernelVersion: '1.287.6' }),
    autoPulse: opts.autoPulse ?? false,
    redialMinMs: 100,
    redialMaxMs: 1_000,
    ...opts.extra,
  });
  await node.mesh.start();
  return node;
}

/**
 * A node that listens on no TCP address, only on /p2p-circuit: it dials `relay` (a started node, which serves as a
 * circuit relay by default), reserves a slot on it and is reachable only through it. Resolves once its own addresses
 * carry the relayed /p2p-circuit address.
 */
export async function startRelayedNode(opts: Parameters<typeof startNode>[0] & { relay: TestNode }): Promise<TestNode> {
  const node = await startNode({
    ...opts,
    bootstrap: [...(opts.bootstrap ?? []), ...opts.relay.mesh.multiaddrs()],
    config: { ...opts.config, listen: ['/p2p-circuit'] },
  });
  await waitFor(() => node.mesh.multiaddrs().some((m) => m.includes(`/p2p/${opts.relay.mesh.nodeId}/p2p-circuit`)), 10_000, 'relay reservation');
  return node;
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

/** Poll until fn() is truthy or the time runs out; resolves to that (so never null or undefined) value. */
export async function waitFor<T>(fn: () => T | Promise<T>, timeoutMs = 8_000, what = 'condition'): Promise<NonNullable<T>> {
  return waitUntil(fn as () => Promise<NonNullable<T> | null | undefined>, what, timeoutMs, 25);
}

/** Wait until every node sees every other node subscribed to a topic. */
export async function waitForTopicMesh(nodes: TestNode[], topic: string, timeoutMs = 8_000): Promise<void> {
  await waitFor(() => nodes.every((n) => (n.mesh.p2p?.topicPeers(topic).length ?? 0) >= nodes.length - 1), timeoutMs, `topic ${topic} subscriptions`);
}

// Mesh benchmark: N real nodes (default 10) on loopback, full-mesh bootstrap, signed events published round-robin
// through MeshService.publish and received through onEvent on every other node (both validators: gossipsub
// StrictSign and the mesh validator: HMAC handshake, staleness, Ed25519 signature, duplicates; each accepted event
// is stored). Phase 1: 1,000 events → delivery ratio, latency percentiles, throughput. Phase 2: heap growth over
// 10,000 further events (after GC, before and after). Prints ONE JSON line:
//   {nodes, delivered, p50Ms, p99Ms, eventsPerSec, heapGrowthPct}
// Usage: npx tsx scripts/bench/mesh.ts [--nodes 10] [--events 1000] [--heap-events 10000] [--window 1] [--heap-window 16]
// All nodes run in this one process (one JS thread), so every figure includes the other nine nodes' work.
import '../../src/polyfill.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { z } from 'zod';
import { systemClock } from '../../src/kernel/clock.js';
import { MeshService } from '../../src/mesh/service.js';
import { TOPICS } from '../../src/mesh/wire.js';
import { Store } from '../../src/store/db.js';
import { numberArg, percentile } from './lib.js';
import { helpFromHeader } from '../help.js';

helpFromHeader(import.meta.url);

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const NODES = numberArg('nodes', 10);
const EVENTS = numberArg('events', 1_000);
const HEAP_EVENTS = numberArg('heap-events', 10_000);
// Events in flight at once: 1 for the latency phase (one event at a time, as ticks and announcements travel),
// more for the heap phase, which only needs volume.
const WINDOW = numberArg('window', 1);
const HEAP_WINDOW = numberArg('heap-window', 16);
// Heap phase: the caches that remember messages are bounded by size and age; growth is measured once they are
// full (after WARMUP events), with the gossipsub seen-cache TTL and the mesh seen-cache size given here.
// 9,000 warm-up events outlast gossipsub's fixed 120 s peer-score delivery records at this bench's rate.
const WARMUP = numberArg('warmup-events', 9_000);
const GOSSIP_SEEN_TTL_MS = numberArg('gossip-seen-ttl-ms', 10_000);
const SEEN_MAX = numberArg('seen-max', 2_000);
const SECRET = 'bench-mesh-secret-0123456789abcdef';
const benchEventBody = z.object({ seq: z.number(), payload: z.string() });

interface BenchNode {
  mesh: MeshService;
  store: Store;
  dir: string;
}

async function startNodes(): Promise<BenchNode[]> {
  const nodes: BenchNode[] = [];
  for (let i = 0; i < NODES; i++) {
    const dir = await mkdtemp(join(tmpdir(), 'svc-mesh-bench-'));
    const store = await Store.open(join(dir, 'db'), { sync: false });
    const mesh = new MeshService({
      store,
      clock: systemClock,
      config: { secret: SECRET, p2pPort: 0, bootstrap: nodes.flatMap((n) => n.mesh.multiaddrs()), tickEvery: 4, host: '127.0.0.1' },
      dataDir: dir,
      httpUrl: `http://127.0.0.1:${9000 + i}`,
      headState: () => ({ sealedCount: 0, chainHeadsDigest: '00'.repeat(32), kernelVersion: '1.287.6' }),
      autoPulse: false,
      gossipSeenTtlMs: GOSSIP_SEEN_TTL_MS,
      limits: { seenMax: SEEN_MAX },
    });
    // A row for the bench's type: events of types without one are held to a node-wide budget (gossip-handlers.ts).
    mesh.gossip.register({ type: 'bench.event', body: benchEventBody, handle: () => {} });
    await mesh.start();
    nodes.push({ mesh, store, dir });
  }
  const deadline = Date.now() + 30_000;
  while (!nodes.every((n) => (n.mesh.p2p?.topicPeers(TOPICS.events).length ?? 0) >= NODES - 1)) {
    if (Date.now() > deadline) throw new Error('mesh did not form');
    await new Promise((r) => setTimeout(r, 50));
  }
  // Let gossipsub build its topic meshes (a few heartbeats).
  await new Promise((r) => setTimeout(r, 3_000));
  return nodes;
}

interface Run {
  latencies: number[];
  deliveries: number;
  elapsedMs: number;
}

async function run(nodes: BenchNode[], count: number, keepLatencies: boolean, window: number): Promise<Run> {
  const sentAt = new Map<number, number>();
  const pending = new Map<number, number>(); // seq → deliveries still expected
  const latencies: number[] = [];
  let deliveries = 0;
  let wake: (() => void) | null = null;
  const offs = nodes.map((n) =>
    n.mesh.onEvent(TOPICS.events, (e) => {
      const seq = (e.body as { seq?: unknown }).seq;
      if (typeof seq !== 'number') return;
      const t0 = sentAt.get(seq);
      if (t0 === undefined) return;
      deliveries++;
      if (keepLatencies) latencies.push(performance.now() - t0);
      const left = (pending.get(seq) ?? 0) - 1;
      if (left <= 0) {
        pending.delete(seq);
        sentAt.delete(seq);
      } else pending.set(seq, left);
      if (wake && pending.size < window) {
        const w = wake;
        wake = null;
        w();
      }
    }),
  );
  const base = Math.floor(Math.random() * 1e9);
  const start = performance.now();
  for (let i = 0; i < count; i++) {
    while (pending.size >= window) {
      await new Promise<void>((r) => {
        wake = r;
        setTimeout(r, 1_000);
      });
    }
    const seq = base + i;
    sentAt.set(seq, performance.now());
    pending.set(seq, NODES - 1);
    await nodes[i % NODES]!.mesh.publish('bench.event', { seq, payload: 'x'.repeat(64) }, TOPICS.events);
  }
  const deadline = Date.now() + 15_000;
  while (pending.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  const elapsedMs = performance.now() - start;
  for (const off of offs) off();
  return { latencies, deliveries, elapsedMs };
}

async function main(): Promise<void> {
  const t0 = Date.now();
  const nodes = await startNodes();
  process.stderr.write(`mesh of ${NODES} formed in ${Date.now() - t0} ms\n`);
  try {
    const r = await run(nodes, EVENTS, true, WINDOW);
    process.stderr.write(`phase 1: ${r.deliveries} deliveries in ${Math.round(r.elapsedMs)} ms\n`);
    const [p50, p90, p99, max] = [50, 90, 99, 100].map((p) => percentile(r.latencies, p).toFixed(2));
    process.stderr.write(`latency p50 ${p50} p90 ${p90} p99 ${p99} max ${max}\n`);
    if (process.argv.includes('--no-heap')) return;
    await run(nodes, WARMUP, false, HEAP_WINDOW);
    // Let the age-bounded caches reach their steady state (gossipsub prunes its seen cache on heartbeats).
    await new Promise((res) => setTimeout(res, GOSSIP_SEEN_TTL_MS + 2_000));
    gc();
    await new Promise((res) => setTimeout(res, 200));
    gc();
    const heap0 = process.memoryUsage().heapUsed;
    const tHeap = performance.now();
    await run(nodes, HEAP_EVENTS, false, HEAP_WINDOW);
    await new Promise((res) => setTimeout(res, 200));
    gc();
    await new Promise((res) => setTimeout(res, 200));
    gc();
    const heap1 = process.memoryUsage().heapUsed;
    process.stderr.write(
      `heap ${(heap0 / 2 ** 20).toFixed(1)} MB → ${(heap1 / 2 ** 20).toFixed(1)} MB over ${HEAP_EVENTS} events in ${Math.round((performance.now() - tHeap) / 1000)} s (warm-up ${WARMUP}, gossip seen TTL ${GOSSIP_SEEN_TTL_MS} ms, seen cache ${SEEN_MAX})\n`,
    );
    const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
    console.log(
      JSON.stringify({
        nodes: NODES,
        delivered: round((r.deliveries / (EVENTS * (NODES - 1))) * 100, 3),
        p50Ms: round(percentile(r.latencies, 50)),
        p99Ms: round(percentile(r.latencies, 99)),
        eventsPerSec: Math.round(EVENTS / (r.elapsedMs / 1000)),
        heapGrowthPct: round(((heap1 - heap0) / heap0) * 100),
      }),
    );
  } finally {
    for (const n of nodes) {
      await n.mesh.stop();
      await n.store.close();
      await rm(n.dir, { recursive: true, force: true });
    }
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);

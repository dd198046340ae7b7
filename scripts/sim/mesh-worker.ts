// One process of the mesh simulation (scripts/sim/mesh.ts): it hosts some of the simulated nodes — each the real
// MeshService (libp2p host, gossipsub, the mesh validator, the gossip handler table, the event log in its own LevelDB),
// without kernel, HTTP or any other capability — and does what the coordinator asks over IPC: start a node that knows
// one address, stop a node, report its figures. What it measures for the coordinator:
//   - sends: every tick event one of its nodes publishes (sender, tick, wall time);
//   - receipts: every tick event one of its nodes accepts, by event (sender, tick) → receiving nodes;
//   - latency: a log-bucket histogram (1 % wide buckets) of receive time − publish time over all receipts (the
//     publish time rides in the tick body as an extra field, which the node's tick schema ignores);
//   - the process's CPU time and memory, which the coordinator divides by the nodes it hosts, and its event-loop delay.
import '../../src/polyfill.js';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { ComponentLogger, Logger } from '@libp2p/interface';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { systemClock } from '../../src/kernel/clock.js';
import { MeshService } from '../../src/mesh/service.js';
import { TOPICS, type MeshEvent } from '../../src/mesh/wire.js';
import { Store } from '../../src/store/db.js';
import type { ToWorker, FromWorker, Receipt, Send } from './mesh-messages.js';

const SECRET = 'sim-mesh-secret-0123456789abcdef';
const tickEvery = Number(process.env.SIM_TICK_EVERY ?? 2);
const tickRate = Number(process.env.SIM_TICK_RATE ?? 8);
/** Discovery under measurement: the peer exchange on first contact (/svc/peers/1) and gossipsub's PX on prune. */
const peerExchange = process.env.SIM_EXCHANGE !== '0';
const px = process.env.SIM_PX !== '0';

interface SimNode {
  index: number;
  mesh: MeshService;
  store: Store;
  dir: string;
  /** What the node logged, by message; a failed dial of its bootstrap by its error too (digits as N). The closing census. */
  logged: Map<string, number>;
  trace: string[];
}

/**
 * SIM_TRACE_DIR: each node keeps the last lines of libp2p's own log for its dials and inbound connections (TCP, the
 * upgrader, noise, the dial queue), and the closing census writes those of the seed and of every node with no
 * connection there, one file each: how far a dial that fails got, on both sides.
 */
const traceDir = process.env.SIM_TRACE_DIR ?? null;
const TRACED = /^libp2p:(tcp|upgrader|noise|connection-manager|mss|multistream)/;

function traceLogger(lines: string[], keep: number): ComponentLogger {
  const make = (name: string): Logger => {
    const on = TRACED.test(name);
    const write =
      (level: string) =>
      (fmt: unknown, ...args: unknown[]) => {
        if (!on) return;
        let i = 0;
        const text = String(fmt).replace(/%[a-zA-Z]/g, () => {
          const a = args[i++];
          return a instanceof Error ? `${a.name}: ${a.message}` : String(a);
        });
        lines.push(`${(wallMs() / 1000).toFixed(3)} ${level}${name} ${text}`);
        // Trimmed in halves: the last `keep` lines at least, without a copy per line.
        if (lines.length > 2 * keep) lines.splice(0, lines.length - keep);
      };
    const log = Object.assign(write(''), { error: write('ERR '), trace: () => undefined, enabled: on, newScope: (n: string) => make(`${name}:${n}`) });
    return log as Logger;
  };
  return { forComponent: make };
}

const nodes = new Map<number, SimNode>();
/** Peer id → simulated node index, for every node the coordinator has announced (any process). */
const indexOf = new Map<string, number>();
let sends: Send[] = [];
let receipts = new Map<string, Receipt>();
/** Latency histogram: bucket b holds latencies in [1.01^b, 1.01^(b+1)) µs. */
let histogram = new Map<number, number>();
const LOG_STEP = Math.log(1.01);

function wallMs(): number {
  return performance.timeOrigin + performance.now();
}

function send(msg: FromWorker): void {
  // The parent may be gone (the run ended, or it was stopped): a message it cannot take is dropped, not an error.
  if (process.connected) process.send!(msg, undefined, {}, () => undefined);
}

async function startNode(index: number, bootstrap: string[]): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-sim-'));
  const store = await Store.open(join(dir, 'db'), { sync: false });
  const logged = new Map<string, number>();
  const trace: string[] = [];
  const tally = (obj: object, msg?: string): void => {
    let key = msg ?? '';
    if (key === 'mesh bootstrap dial failed')
      key += `: ${String((obj as { err?: unknown }).err ?? '')
        .replace(/\d+/g, 'N')
        .slice(0, 90)}`;
    logged.set(key, (logged.get(key) ?? 0) + 1);
  };
  const mesh = new MeshService({
    logger: { info: tally, warn: tally, debug: tally },
    store,
    clock: systemClock,
    config: { secret: SECRET, p2pPort: 0, bootstrap, tickEvery, tickRate, host: '127.0.0.1' },
    dataDir: dir,
    httpUrl: `http://127.0.0.1:${20_000 + index}`,
    headState: () => ({ sealedCount: 0, chainHeadsDigest: '00'.repeat(32), kernelVersion: '1.287.6' }),
    // The publish time travels as an extra tick field (a node's tick schema drops fields it does not know).
    advert: () => ({ mode: 'idle', bondId: null, freeSlots: 0, simSentMs: wallMs() }) as never,
    autoPulse: true,
    peerExchange,
    px,
    // Every simulated node dials from 127.0.0.1; real joiners arrive from their own addresses, so libp2p's per-IP
    // inbound threshold (which would count the whole simulation as one joiner) is lifted.
    inboundPerIpPerSec: 10_000,
    ...(traceDir === null ? {} : { libp2pLogger: traceLogger(trace, index === 0 ? 200_000 : 2_000) }),
  });
  // Sends are read off the instance's publish (this script's measurement, not the node's behaviour).
  const publish = mesh.publish.bind(mesh);
  mesh.publish = async (type, body, topic) => {
    const out = await publish(type, body, topic);
    if (type === 'tick') sends.push([index, out.event.svcond, (body as { simSentMs: number }).simSentMs, out.recipients]);
    return out;
  };
  mesh.onEvent(TOPICS.ticks, (e: MeshEvent) => {
    const sender = indexOf.get(e.sender);
    const sentMs = (e.body as { simSentMs?: unknown }).simSentMs;
    if (sender === undefined || typeof sentMs !== 'number') return;
    const key = `${sender}:${e.svcond}`;
    let r = receipts.get(key);
    if (!r) {
      r = [sender, e.svcond, []];
      receipts.set(key, r);
    }
    r[2].push(index);
    const us = Math.max(1, (wallMs() - sentMs) * 1000);
    const b = Math.floor(Math.log(us) / LOG_STEP);
    histogram.set(b, (histogram.get(b) ?? 0) + 1);
  });
  await mesh.start();
  nodes.set(index, { index, mesh, store, dir, logged, trace });
  send({ op: 'started', index, nodeId: mesh.nodeId, addrs: mesh.multiaddrs() });
}

async function stopNode(index: number): Promise<void> {
  const n = nodes.get(index);
  if (!n) return;
  nodes.delete(index);
  // The seed leaves before the closing census: its side of the joins is written as it goes.
  if (traceDir !== null && index === 0) await writeFile(join(traceDir, 'node-0.log'), n.trace.join('\n') + '\n');
  await n.mesh.stop();
  await n.store.close();
  await rm(n.dir, { recursive: true, force: true });
  send({ op: 'stopped', index });
}

/** The process's event-loop delay since the last flush: what every node it hosts waits before it handles any I/O. */
const loopDelay = monitorEventLoopDelay({ resolution: 10 });
loopDelay.enable();

const baseline = { cpu: process.cpuUsage(), rss: process.memoryUsage().rss, heap: process.memoryUsage().heapUsed };

async function writeTraces(): Promise<void> {
  if (traceDir === null) return;
  for (const n of nodes.values())
    if (n.index === 0 || (n.mesh.p2p?.connectedPeers().length ?? 0) === 0) await writeFile(join(traceDir, `node-${n.index}.log`), n.trace.join('\n') + '\n');
}

function flush(census = false): void {
  if (census) void writeTraces();
  const cpu = process.cpuUsage(baseline.cpu);
  const mem = process.memoryUsage();
  send({
    op: 'figures',
    sends,
    receipts: [...receipts.values()],
    histogram: [...histogram.entries()],
    cpuMs: (cpu.user + cpu.system) / 1000,
    rssBytes: mem.rss - baseline.rss,
    heapBytes: mem.heapUsed - baseline.heap,
    loopDelayMs: [loopDelay.percentile(50) / 1e6, loopDelay.percentile(99) / 1e6, loopDelay.max / 1e6],
    nodes: [...nodes.values()].map((n) => ({
      index: n.index,
      peers: n.mesh.p2p?.connectedPeers() ?? [],
      meshPeers: n.mesh.p2p?.meshPeers(TOPICS.ticks).length ?? 0,
      ...(census ? { known: n.mesh.knownPeers().length, logged: Object.fromEntries(n.logged) } : {}),
    })),
  });
  loopDelay.reset();
  sends = [];
  receipts = new Map();
  histogram = new Map();
}

process.on('message', (msg: ToWorker) => {
  const run = async (): Promise<void> => {
    if (msg.op === 'known') for (const [id, index] of msg.peers) indexOf.set(id, index);
    else if (msg.op === 'start') await startNode(msg.index, msg.bootstrap);
    else if (msg.op === 'stop') await stopNode(msg.index);
    else if (msg.op === 'flush') flush(msg.census);
    else if (msg.op === 'exit') {
      for (const i of [...nodes.keys()]) await stopNode(i);
      process.exit(0);
    }
  };
  run().catch((err: unknown) => {
    send({ op: 'error', message: String(err) });
  });
});
send({ op: 'ready' });

// One process of the mesh simulation (scripts/sim/mesh.ts): it hosts some of the simulated nodes — each the real
// MeshService (libp2p host, gossipsub, the mesh validator, the gossip handler table, the event log in its own LevelDB),
// without kernel, HTTP or any other capability — and does what the coordinator asks over IPC: start a node that knows
// one address, stop a node, report its figures. What it measures for the coordinator:
//   - sends: every tick event one of its nodes publishes (sender, tick, wall time);
//   - receipts: every tick event one of its nodes accepts, by event (sender, tick) → receiving nodes;
//   - latency: a log-bucket histogram (1 % wide buckets) of receive time − publish time over all receipts (the
//     publish time rides in the tick body as an extra field, which the node's tick schema ignores);
//   - the process's CPU time and memory, which the coordinator divides by the nodes it hosts, and its event-loop delay;
//   - verdicts: every tick event that reached one of its nodes' validator, with the verdict (and a refusal's code): an
//     event that arrived and was refused, or accepted and not kept, unlike one that never arrived;
//   - for each receipt the peer that delivered it (gossipsub's propagation source) and when: the hops of an event;
//   - each node's gossipsub mesh for tick events, and how many of those mesh peers gossipsub holds no open outbound
//     stream to (what it forwards to such a peer goes nowhere);
//   - a tally of what gossipsub logged, by message (peer ids and numbers taken out).
import '../../src/polyfill.js';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { ComponentLogger, Logger } from '@libp2p/interface';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { systemClock } from '../../src/kernel/clock.js';
import { MeshService } from '../../src/mesh/service.js';
import { TOPICS, decodeEnvelope, type MeshEvent } from '../../src/mesh/wire.js';
import { Store } from '../../src/store/db.js';
import type { ToWorker, FromWorker, Receipt, Verdict, Send } from './mesh-messages.js';

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
  gossipLog: Map<string, number>;
}

/** What the worker reads of gossipsub's state beyond its public API (@chainsafe/libp2p-gossipsub 14). */
interface GossipsubInternals {
  getMeshPeers(topic: string): string[];
  topicValidators: Map<string, (peer: { toString(): string }, msg: { topic: string; data: Uint8Array }) => Promise<string>>;
  streamsOutbound: Map<string, { rawStream: { status: string; writeStatus?: string } }>;
  addEventListener(
    type: 'gossipsub:message',
    fn: (evt: CustomEvent<{ propagationSource: { toString(): string }; msg: { topic: string; data: Uint8Array } }>) => void,
  ): void;
}

function gossipsubOf(mesh: MeshService): GossipsubInternals | null {
  const host = mesh.p2p as unknown as { node: { services: { pubsub: GossipsubInternals } } | null } | null;
  return host?.node?.services.pubsub ?? null;
}

/** Mesh peers for tick events gossipsub has no open outbound stream to. */
function unwritableMeshPeers(g: GossipsubInternals | null): number {
  if (g === null) return 0;
  let n = 0;
  for (const p of g.getMeshPeers(TOPICS.ticks)) {
    const out = g.streamsOutbound.get(p)?.rawStream;
    if (out === undefined || out.status !== 'open' || out.writeStatus === 'closing' || out.writeStatus === 'closed') n++;
  }
  return n;
}

/**
 * SIM_TRACE_DIR: each node keeps the last lines of libp2p's own log for its dials and inbound connections (TCP, the
 * upgrader, noise, the dial queue), and the closing census writes those of the seed and of every node with no
 * connection there, one file each: how far a dial that fails got, on both sides.
 */
const traceDir = process.env.SIM_TRACE_DIR ?? null;
const TRACED = /^libp2p:(tcp|upgrader|noise|connection-manager|mss|multistream)/;

/**
 * libp2p's component logger for one node: the lines of the TRACED components into `lines` (when tracing), and each
 * gossipsub message counted into `gossipLog` by its text with peer ids and numbers taken out.
 */
function simLogger(lines: string[] | null, keep: number, gossipLog: Map<string, number>): ComponentLogger {
  const make = (name: string): Logger => {
    const on = lines !== null && TRACED.test(name);
    const gossip = name.startsWith('libp2p:gossipsub');
    const write =
      (level: string) =>
      (fmt: unknown, ...args: unknown[]) => {
        if (gossip) {
          const key = `${level}${String(fmt instanceof Error ? `${fmt.name}: ${fmt.message}` : fmt)}${args[0] instanceof Error ? ` ${args[0].message}` : ''}`
            .replace(/12D3KooW[A-Za-z0-9]+/g, 'P')
            .replace(/\d+/g, 'N')
            .slice(0, 120);
          gossipLog.set(key, (gossipLog.get(key) ?? 0) + 1);
        }
        if (!on || lines === null) return;
        let i = 0;
        const text = String(fmt).replace(/%[a-zA-Z]/g, () => {
          const a = args[i++];
          return a instanceof Error ? `${a.name}: ${a.message}` : String(a);
        });
        lines.push(`${(wallMs() / 1000).toFixed(3)} ${level}${name} ${text}`);
        // Trimmed in halves: the last `keep` lines at least, without a copy per line.
        if (lines.length > 2 * keep) lines.splice(0, lines.length - keep);
      };
    const log = Object.assign(write(''), {
      error: write('ERR '),
      trace: () => undefined,
      enabled: on || gossip,
      newScope: (n: string) => make(`${name}:${n}`),
    });
    return log as Logger;
  };
  return { forComponent: make };
}

const nodes = new Map<number, SimNode>();
/** Peer id → simulated node index, for every node the coordinator has announced (any process). */
const indexOf = new Map<string, number>();
let sends: Send[] = [];
/**
 * Receipts and verdicts by the sender's peer id, turned into indexes at a flush. A new node's first tick event can
 * reach a node here before the coordinator's announcement of its index does (the event crosses the mesh in tenths of
 * a second, the announcement waits on two processes' loops): such an entry waits for a later flush, up to a minute.
 */
let pendingReceipts: { sender: string; tick: number; receiver: number; from: string | undefined; atMs: number }[] = [];
let pendingVerdicts: { sender: string; tick: number; receiver: number; verdict: string; atMs: number }[] = [];
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
  const gossipLog = new Map<string, number>();
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
    libp2pLogger: simLogger(traceDir === null ? null : trace, index === 0 ? 200_000 : 2_000, gossipLog),
  });
  // Sends are read off the instance's publish (this script's measurement, not the node's behaviour).
  const publish = mesh.publish.bind(mesh);
  mesh.publish = async (type, body, topic) => {
    const out = await publish(type, body, topic);
    if (type === 'tick') sends.push([index, out.event.svcond, (body as { simSentMs: number }).simSentMs, out.recipients]);
    return out;
  };
  /** The propagation source of each tick event this node accepted, by `${sender id}:${tick}`, until its receipt. */
  const sources = new Map<string, string>();
  mesh.onEvent(TOPICS.ticks, (e: MeshEvent) => {
    const sentMs = (e.body as { simSentMs?: unknown }).simSentMs;
    const from = sources.get(`${e.sender}:${e.svcond}`);
    sources.delete(`${e.sender}:${e.svcond}`);
    if (typeof sentMs !== 'number') return;
    pendingReceipts.push({ sender: e.sender, tick: e.svcond, receiver: index, from, atMs: Math.round(wallMs()) });
    const us = Math.max(1, (wallMs() - sentMs) * 1000);
    const b = Math.floor(Math.log(us) / LOG_STEP);
    histogram.set(b, (histogram.get(b) ?? 0) + 1);
  });
  await mesh.start();
  watchVerdicts(mesh, index);
  // gossipsub tells the propagation source of an accepted message before the node's own handlers see it.
  gossipsubOf(mesh)?.addEventListener('gossipsub:message', (evt) => {
    if (evt.detail.msg.topic !== TOPICS.ticks) return;
    const env = decodeEnvelope(evt.detail.msg.data);
    const ev = env?.event as { sender?: unknown; svcond?: unknown } | undefined;
    if (typeof ev?.sender === 'string' && typeof ev.svcond === 'number') {
      sources.set(`${ev.sender}:${ev.svcond}`, evt.detail.propagationSource.toString());
      // Bounded: an accepted event whose receipt the node did not record (not a simulated sender) is dropped later.
      if (sources.size > 1_000) sources.delete(sources.keys().next().value!);
    }
  });
  nodes.set(index, { index, mesh, store, dir, logged, trace, gossipLog });
  send({ op: 'started', index, nodeId: mesh.nodeId, addrs: mesh.multiaddrs() });
}

/** The node's counts of refused and duplicate gossip (MeshService's own tallies, read to name a refusal's code). */
interface GossipTallies {
  stats: { rejected: { gossip: Record<string, number> }; duplicates: { gossip: number } };
}

/** Record the verdict on each tick event from a simulated sender that reaches the node's validator. */
function watchVerdicts(mesh: MeshService, index: number): void {
  const g = gossipsubOf(mesh);
  const validate = g?.topicValidators.get(TOPICS.ticks);
  if (!g || !validate) return;
  const { stats } = mesh as unknown as GossipTallies;
  g.topicValidators.set(TOPICS.ticks, async (peer, msg) => {
    const before = { ...stats.rejected.gossip };
    const duplicatesBefore = stats.duplicates.gossip;
    const verdict = await validate(peer, msg);
    const ev = decodeEnvelope(msg.data)?.event as { sender?: unknown; svcond?: unknown } | undefined;
    if (typeof ev?.sender !== 'string' || typeof ev.svcond !== 'number') return verdict;
    // Validations of other messages may interleave: the code is the tally that moved, which is right when one did.
    const code =
      Object.keys(stats.rejected.gossip).find((k) => stats.rejected.gossip[k] !== before[k]) ??
      (stats.duplicates.gossip !== duplicatesBefore ? 'DUPLICATE' : 'UNKNOWN');
    const judged = verdict === 'accept' ? verdict : `${verdict} ${code}`;
    pendingVerdicts.push({ sender: ev.sender, tick: ev.svcond, receiver: index, verdict: judged, atMs: wallMs() });
    return verdict;
  });
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

/** The receipts and verdicts whose sender's index is known, by event; the others stay pending (up to a minute). */
function resolvePending(): { receipts: Receipt[]; verdicts: Verdict[] } {
  const oldest = wallMs() - 60_000;
  const receipts = new Map<string, Receipt>();
  pendingReceipts = pendingReceipts.filter((p) => {
    const sender = indexOf.get(p.sender);
    if (sender === undefined) return p.atMs > oldest;
    const key = `${sender}:${p.tick}`;
    let r = receipts.get(key);
    if (!r) receipts.set(key, (r = [sender, p.tick, [], [], []]));
    r[2].push(p.receiver);
    r[3].push(p.from === undefined ? -1 : (indexOf.get(p.from) ?? -1));
    r[4].push(p.atMs);
    return false;
  });
  const verdicts: Verdict[] = [];
  pendingVerdicts = pendingVerdicts.filter((p) => {
    const sender = indexOf.get(p.sender);
    if (sender === undefined) return p.atMs > oldest;
    verdicts.push([sender, p.tick, p.receiver, p.verdict]);
    return false;
  });
  return { receipts: [...receipts.values()], verdicts };
}

function flush(census = false): void {
  if (census) void writeTraces();
  const { receipts, verdicts } = resolvePending();
  const cpu = process.cpuUsage(baseline.cpu);
  const mem = process.memoryUsage();
  send({
    op: 'figures',
    sends,
    receipts,
    verdicts,
    histogram: [...histogram.entries()],
    cpuMs: (cpu.user + cpu.system) / 1000,
    rssBytes: mem.rss - baseline.rss,
    heapBytes: mem.heapUsed - baseline.heap,
    loopDelayMs: [loopDelay.percentile(50) / 1e6, loopDelay.percentile(99) / 1e6, loopDelay.max / 1e6],
    nodes: [...nodes.values()].map((n) => ({
      index: n.index,
      peers: n.mesh.p2p?.connectedPeers() ?? [],
      meshPeers: n.mesh.p2p?.meshPeers(TOPICS.ticks) ?? [],
      unwritable: unwritableMeshPeers(gossipsubOf(n.mesh)),
      ...(census ? { known: n.mesh.knownPeers().length, logged: Object.fromEntries(n.logged), gossipLog: Object.fromEntries(n.gossipLog) } : {}),
    })),
  });
  loopDelay.reset();
  sends = [];
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

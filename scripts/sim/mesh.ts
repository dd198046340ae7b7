// Mesh simulation: N nodes — each the real MeshService (libp2p host, gossipsub, the mesh validator, the gossip
// handlers, its event log in LevelDB), no kernel — spread over a few worker processes (mesh-worker.ts), joined the
// way independent operators join: node 0 is the seed and every other node is told the seed's address only. The seed
// runs in a process of its own (beside the `--procs` that host the others), as a seed does: a process accepts one
// connection per listener per event-loop turn (libuv), and a turn of a process hosting a hundred nodes lasts up to a
// second, which would cap every joiner's first contact at about one a second. Nodes then churn: every minute `--churn`
// nodes leave and as many new ones join, each told one address of a random live node; the seed itself leaves
// `--kill-seed-after` seconds into the measurement.
// Prints ONE JSON line:
//   {nodes, procs, tickEvery, tickRate, exchange, px, seconds, churnPerMin, events, eventsPerSec, expectedPairs,
//    deliveredPairs, delivery, p50Ms, p99Ms, connections: {min, median, max, unmeshed, shares}, cpuMsPerNodePerSec,
//    rssMbPerNode, heapMbPerNode, loopDelayMs: {join, warmup, measured}, components: {max, maxAtS, minLargestShare,
//    atEnd, alone}, loadAverage, publishedToNoPeer: {events, senderAgeS}, misses: {reach, atS, when, receivers,
//    receiversMissingAll, byJoiners, eventsReachingNone, senderAgeS, missingAll: [[connections, known, s joined before
//    the measurement]…], missingAllLogged, partial}, gossipsub: {unwritableShare, unwritableMax, log, verdicts}}
// loopDelayMs gives, for each phase and worker process (the seed's last), [the median of its 2-s p99 event-loop
// delays, the longest delay] in ms; components the live nodes' connection graph sampled every 2 s (the most components
// and when, in s into the measurement; the smallest share of live nodes in the largest; the sizes at the end); reach
// the counted events by the share of their expected receivers they reached, in tenths (the last: all), atS when each
// event that missed a receiver was sent, and when the missed pairs by the receiver's state in its last sample before
// the event: no connection, connections but no gossipsub mesh peer for tick events, mesh peers; partial traces the
// first events that missed a receiver hop by hop (traceEvent). gossipsub says how often a node's gossipsub mesh held a
// peer it had no open outbound stream to, what gossipsub logged most, and the validators' first verdicts on the tick
// events of the whole run, by verdict (and a refusal's code).
// eventsPerSec is the mesh-wide rate of counted tick events (what --tick-rate bounds); loadAverage the [min, max] of the
// machine's 1-minute load average over the measurement: above its cores, the figures are the machine's, not the mesh's.
// delivery counts (tick event, receiving node) pairs in the measured window whose sender stayed up 2 s after sending
// and whose receiver had been up `--settle` s before it and stayed up `--grace` s after it. Latency is publish →
// accept (signature, handshake and duplicate checks included), over every receipt in the window.
// Usage: npx tsx scripts/sim/mesh.ts [--nodes 100] [--procs 4] [--seconds 120] [--warmup 30] [--churn 5]
//        [--tick-every 2] [--tick-rate 8] [--settle 20] [--grace 10] [--kill-seed-after 10] [--seed 1] [--join-batch 25]
//        [--exchange 1] [--px 1] [--profile-dir DIR]
// --exchange 0 turns the peer exchange on first contact (/svc/peers/1) off, --px 0 gossipsub's PX on prune: the
// discovery comparison of docs/decisions.md. SIM_TRACE_DIR=DIR: the workers keep libp2p's own log of each node's
// connections (TCP, upgrader, noise, dial queue) and write the seed's and each unconnected node's there at the end.
// Everything listens on 127.0.0.1 only, and the run stops by itself.
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { NODE_HEAP_FLAGS } from '../../src/config/heap-flags.js';
import { numberArg } from '../bench/lib.js';
import type { FromWorker, Receipt, Send, ToWorker } from './mesh-messages.js';
import { helpFromHeader } from '../help.js';

helpFromHeader(import.meta.url);

const NODES = numberArg('nodes', 100);
const PROCS = numberArg('procs', 4);
const SECONDS = numberArg('seconds', 120);
const WARMUP = numberArg('warmup', 30);
const CHURN = numberArg('churn', 5);
const TICK_EVERY = numberArg('tick-every', 2);
/** mesh.tickRate: tick events a second each node accepts mesh-wide; `events / seconds` of the output shows the rate kept. */
const TICK_RATE = numberArg('tick-rate', 8);
const SETTLE = numberArg('settle', 20);
const GRACE = numberArg('grace', 10);
const KILL_SEED_AFTER = numberArg('kill-seed-after', 10);
let rng = numberArg('seed', 1) >>> 0 || 1;
const JOIN_BATCH = numberArg('join-batch', 25);
const EXCHANGE = numberArg('exchange', 1);
const PX = numberArg('px', 1);
/** --profile-dir DIR: each worker process writes a V8 CPU profile there when it exits (node --cpu-prof). */
const PROFILE_DIR = process.argv.includes('--profile-dir') ? process.argv[process.argv.indexOf('--profile-dir') + 1]! : null;

/** xorshift32: the run is the same for the same --seed. */
function random(): number {
  rng ^= rng << 13;
  rng >>>= 0;
  rng ^= rng >>> 17;
  rng ^= rng << 5;
  rng >>>= 0;
  return rng / 2 ** 32;
}

function wallMs(): number {
  return performance.timeOrigin + performance.now();
}

interface Worker {
  child: ChildProcess;
  cpuMs: number;
  rssBytes: number;
  heapBytes: number;
}

interface NodeLife {
  index: number;
  worker: number;
  nodeId: string | null;
  addrs: string[];
  joinedMs: number;
  leftMs: number | null;
}

const workers: Worker[] = [];
/**
 * The run's directory: the workers make their nodes' data dirs in it (their TMPDIR), and it is removed when the run
 * ends, so a node whose worker is killed (the seed's, a worker that does not stop in time) leaves nothing behind.
 */
const runDir = mkdtempSync(join(tmpdir(), 'svc-sim-'));
const lives = new Map<number, NodeLife>();
const lifeOfId = new Map<string, NodeLife>();
/** While measured, each time a settled node is seen with no connection after a sample with some: [s into the
 * measurement, its connections in the sample before, how many of those peers had left by then]. */
const aloneEpisodes: [number, number, number][] = [];
let measureStartMs = 0;
const waiters = new Map<string, () => void>();
const sends: Send[] = [];
/** Each tick event's receipts: receiving node → [the node it got it from (-1 unknown), wall ms]. */
const receivedBy = new Map<string, Map<number, [number, number]>>();
/** Each tick event's verdicts: receiving node → its validator's first verdict (and a refusal's code) on it. */
const judgedBy = new Map<string, Map<number, string>>();
const histogram = new Map<number, number>();
const connectionSamples: number[] = [];
/** Each node's last figures: its connections, and its known peers after the closing census. */
const lastSeen = new Map<
  number,
  { peers: string[]; meshPeers: string[]; known?: number; logged?: Record<string, number>; gossipLog?: Record<string, number> }
>();
/**
 * While measured, each node's samples: [wall ms, connections, gossipsub mesh peers for tick events, of them those with
 * no open outbound stream, the connected peers' indexes, the mesh peers' indexes].
 */
const samplesOf = new Map<number, [number, number, number, number, number[], number[]][]>();
/** After each flush while measured: the live nodes' connection graph, [components, largest, live nodes, wall ms]. */
const componentSamples: [number, number, number, number][] = [];
let measuring = false;
/** Where the run is: the joins of the first nodes, the warmup, the measurement. */
let phase: 'join' | 'warmup' | 'measured' = 'join';
/** Each flush's event-loop delay of one worker: [phase, worker, p99 ms, max ms]. */
const loopSamples: [string, number, number, number][] = [];
let nextIndex = 0;

function tell(w: number, msg: ToWorker): void {
  // A node's start can be answered after another worker was told to exit (the run's end): nothing is sent to it then.
  if (workers[w]!.child.connected) workers[w]!.child.send(msg);
}

function awaitReply(key: string, timeoutMs = 120_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${key} within ${timeoutMs} ms`)), timeoutMs);
    waiters.set(key, () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

function onMessage(w: number, msg: FromWorker): void {
  if (msg.op === 'ready') waiters.get(`ready:${w}`)?.();
  else if (msg.op === 'started') {
    const life = lives.get(msg.index)!;
    life.nodeId = msg.nodeId;
    life.addrs = msg.addrs;
    life.joinedMs = wallMs();
    lifeOfId.set(msg.nodeId, life);
    for (let i = 0; i < workers.length; i++) tell(i, { op: 'known', peers: [[msg.nodeId, msg.index]] });
    waiters.get(`started:${msg.index}`)?.();
  } else if (msg.op === 'stopped') waiters.get(`stopped:${msg.index}`)?.();
  else if (msg.op === 'figures') {
    const wk = workers[w]!;
    wk.cpuMs = msg.cpuMs;
    loopSamples.push([phase, w, msg.loopDelayMs[1], msg.loopDelayMs[2]]);
    wk.rssBytes = msg.rssBytes;
    wk.heapBytes = msg.heapBytes;
    for (const c of msg.nodes) {
      const before = lastSeen.get(c.index)?.peers ?? [];
      const life = lives.get(c.index)!;
      if (measuring && c.peers.length === 0 && before.length > 0 && wallMs() - life.joinedMs >= SETTLE * 1000)
        aloneEpisodes.push([Math.round((wallMs() - measureStartMs) / 1000), before.length, before.filter((id) => lifeOfId.get(id)?.leftMs !== null).length]);
      lastSeen.set(c.index, c);
      if (measuring) {
        let xs = samplesOf.get(c.index);
        if (!xs) samplesOf.set(c.index, (xs = []));
        const indexes = (ids: string[]): number[] => ids.map((id) => lifeOfId.get(id)?.index ?? -1);
        xs.push([wallMs(), c.peers.length, c.meshPeers.length, c.unwritable, indexes(c.peers), indexes(c.meshPeers)]);
      }
    }
    if (measuring) {
      for (const c of msg.nodes) connectionSamples.push(c.peers.length);
      for (const [b, n] of msg.histogram) histogram.set(b, (histogram.get(b) ?? 0) + n);
    }
    sends.push(...msg.sends);
    for (const [sender, tick, receivers, froms, atMs] of msg.receipts as Receipt[]) {
      const key = `${sender}:${tick}`;
      let got = receivedBy.get(key);
      if (!got) receivedBy.set(key, (got = new Map()));
      receivers.forEach((r, i) => got.set(r, [froms[i]!, atMs[i]!]));
    }
    for (const [sender, tick, receiver, verdict] of msg.verdicts) {
      const key = `${sender}:${tick}`;
      let judged = judgedBy.get(key);
      if (!judged) judgedBy.set(key, (judged = new Map()));
      if (!judged.has(receiver)) judged.set(receiver, verdict);
    }
    waiters.get(`figures:${w}`)?.();
  } else if (msg.op === 'error') process.stderr.write(`worker ${w}: ${msg.message}\n`);
}

/** The seed runs in a process of its own (worker PROCS), the other nodes round-robin over workers 0 … PROCS − 1. */
async function startNode(bootstrap: string[], worker?: number): Promise<number> {
  const index = nextIndex++;
  worker ??= index % PROCS;
  lives.set(index, { index, worker, nodeId: null, addrs: [], joinedMs: wallMs(), leftMs: null });
  const started = awaitReply(`started:${index}`);
  tell(worker, { op: 'start', index, bootstrap });
  await started;
  return index;
}

async function stopNode(index: number): Promise<void> {
  const life = lives.get(index)!;
  life.leftMs = wallMs();
  const stopped = awaitReply(`stopped:${index}`);
  tell(life.worker, { op: 'stop', index });
  await stopped;
}

/** One flush at a time: a worker answers flushes in order, and each answer is awaited under its own key. */
let flushing: Promise<void> = Promise.resolve();

function flushAll(census = false): Promise<void> {
  const next = flushing.then(() => flushOnce(census));
  flushing = next.catch(() => {});
  return next;
}

async function flushOnce(census = false): Promise<void> {
  await Promise.all(
    workers.map((_, w) => {
      const got = awaitReply(`figures:${w}`);
      tell(w, { op: 'flush', census });
      return got;
    }),
  );
  if (measuring) {
    const sizes = components();
    componentSamples.push([sizes.length, sizes[0] ?? 0, alive().length, wallMs()]);
  }
}

/** Sizes of the connected components of the live nodes' connection graph (largest first). */
function components(): number[] {
  const live = alive();
  const indexOfId = new Map(live.map((l) => [l.nodeId!, l.index]));
  const parent = new Map(live.map((l) => [l.index, l.index]));
  const root = (i: number): number => {
    while (parent.get(i) !== i) i = parent.get(i)!;
    return i;
  };
  for (const l of live)
    for (const id of lastSeen.get(l.index)?.peers ?? []) {
      const j = indexOfId.get(id);
      if (j !== undefined) parent.set(root(l.index), root(j));
    }
  const sizes = new Map<number, number>();
  for (const l of live) sizes.set(root(l.index), (sizes.get(root(l.index)) ?? 0) + 1);
  return [...sizes.values()].sort((a, b) => b - a);
}

function alive(): NodeLife[] {
  return [...lives.values()].filter((l) => l.leftMs === null && l.nodeId !== null);
}

function percentileMs(p: number): number {
  const total = [...histogram.values()].reduce((a, b) => a + b, 0);
  let seen = 0;
  for (const b of [...histogram.keys()].sort((x, y) => x - y)) {
    seen += histogram.get(b)!;
    if (seen >= (p / 100) * total) return Math.round(1.01 ** (b + 0.5) / 10) / 100;
  }
  return NaN;
}

/** A node's last sample taken at or before `ms` (while measured). */
function sampleBefore(index: number, ms: number): [number, number, number, number, number[], number[]] | undefined {
  let last: [number, number, number, number, number[], number[]] | undefined;
  for (const x of samplesOf.get(index) ?? []) {
    if (x[0] > ms) break;
    last = x;
  }
  return last;
}

/**
 * How an event that missed receivers spread: [s into the measurement it was sent, sender, the peers gossipsub sent it
 * to, expected receivers, reached, missed]; `senderAgeS`, how long the sender had been up; `hops`, receipts by their
 * hop count from the sender (following each receipt's propagation source); `lastS`, its last receipt after the send;
 * `forwarders`, receivers that delivered it to some other node / those with mesh peers (sample before the send) that
 * delivered it to none; `judged`, the receivers that missed it although it reached their validator, by its verdict
 * (and a refusal's code), the others having never had it arrive; and for the receivers that missed it, by what their
 * last sample before the send held: `meshPeerGotIt` a mesh peer that received it
 * (with how late it received it, s: median, max; `meshOf`: how many had the sender itself as a mesh peer, and how many
 * had a receiving mesh peer that held them in its own mesh, owing them a forward, or only peers that did not),
 * `peerGotIt` only a connected non-mesh peer that did, `noneGotIt`.
 */
function traceEvent(
  sender: number,
  sentMs: number,
  recipients: number,
  got: Map<number, [number, number]>,
  judged: Map<number, string>,
  missed: number[],
  expected: number,
): object {
  const hop = (r: number): number => {
    let n = 0;
    for (let at: number | undefined = r; at !== undefined && at !== sender && n < 64; n++) at = got.get(at)?.[0];
    return n;
  };
  const hops: Record<number, number> = {};
  for (const r of got.keys()) hops[hop(r)] = (hops[hop(r)] ?? 0) + 1;
  const sources = new Set([...got.values()].map(([from]) => from));
  const meshedReceivers = [...got.keys()].filter((r) => (sampleBefore(r, sentMs)?.[2] ?? 0) > 0);
  let meshPeerGotIt = 0;
  let peerGotIt = 0;
  let noneGotIt = 0;
  const meshOf = { sender: 0, twoSided: 0, oneSided: 0 };
  const lateS: number[] = [];
  const judgedMissed: Record<string, number> = {};
  for (const r of missed) {
    const verdict = judged.get(r);
    if (verdict !== undefined) judgedMissed[verdict] = (judgedMissed[verdict] ?? 0) + 1;
    const before = sampleBefore(r, sentMs);
    const meshHad = (before?.[5] ?? []).filter((p) => got.has(p) || p === sender);
    if (meshHad.length > 0) {
      meshPeerGotIt++;
      lateS.push(Math.min(...meshHad.map((p) => (p === sender ? 0 : got.get(p)![1] - sentMs))) / 1000);
      if (meshHad.includes(sender)) meshOf.sender++;
      // A mesh peer that had it and, by its own sample, held r in its mesh owed r a forward; one that did not, only gossip.
      if (meshHad.some((p) => p !== sender && (sampleBefore(p, sentMs)?.[5] ?? []).includes(r))) meshOf.twoSided++;
      else meshOf.oneSided++;
    } else if ((before?.[4] ?? []).some((p) => got.has(p) || p === sender)) peerGotIt++;
    else noneGotIt++;
  }
  lateS.sort((a, b) => a - b);
  return {
    at: [Math.round((sentMs - measureStartMs) / 1000), sender, recipients, expected, got.size, missed.length],
    senderAgeS: Math.round((sentMs - lives.get(sender)!.joinedMs) / 100) / 10,
    hops,
    lastS: Math.round((Math.max(sentMs, ...[...got.values()].map(([, at]) => at)) - sentMs) / 100) / 10,
    forwarders: [sources.size, meshedReceivers.filter((r) => !sources.has(r)).length],
    judged: judgedMissed,
    meshPeerGotIt,
    meshOf,
    meshPeerGotItS: lateS.length === 0 ? null : [Math.round(lateS[Math.floor(lateS.length / 2)]! * 10) / 10, Math.round(lateS[lateS.length - 1]! * 10) / 10],
    peerGotIt,
    noneGotIt,
  };
}

async function main(): Promise<void> {
  for (let w = 0; w <= PROCS; w++) {
    // With the heap flags a node process runs with (npm start): the nodes' garbage collection is then what a node's is.
    const child = fork(join(import.meta.dirname, 'mesh-worker.ts'), [], {
      execArgv: ['--import', 'tsx', ...NODE_HEAP_FLAGS, ...(PROFILE_DIR === null ? [] : ['--cpu-prof', '--cpu-prof-dir', PROFILE_DIR])],
      env: {
        ...process.env,
        TMPDIR: runDir,
        SIM_TICK_EVERY: String(TICK_EVERY),
        SIM_TICK_RATE: String(TICK_RATE),
        SIM_EXCHANGE: String(EXCHANGE),
        SIM_PX: String(PX),
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    workers.push({ child, cpuMs: 0, rssBytes: 0, heapBytes: 0 });
    const ready = awaitReply(`ready:${w}`);
    child.on('message', (m) => onMessage(w, m as FromWorker));
    await ready;
  }
  const t0 = wallMs();
  const flusher = setInterval(() => void flushAll().catch(() => {}), 2_000);
  const seed = await startNode([], PROCS);
  const seedAddr = lives.get(seed)!.addrs;
  // Everyone else is told the seed's address only; a batch of JOIN_BATCH joins at a time.
  for (let i = 1; i < NODES; i += JOIN_BATCH) {
    await Promise.all(Array.from({ length: Math.min(JOIN_BATCH, NODES - i) }, () => startNode(seedAddr)));
  }
  process.stderr.write(`${NODES} nodes started in ${Math.round(wallMs() - t0)} ms; warming up ${WARMUP} s\n`);
  phase = 'warmup';
  await new Promise((r) => setTimeout(r, WARMUP * 1000));
  await flushAll();
  const cpuStart = workers.map((w) => w.cpuMs);
  const measureStart = wallMs();
  measureStartMs = measureStart;
  measuring = true;
  phase = 'measured';
  const churnEveryMs = CHURN > 0 ? 60_000 / CHURN : Infinity;
  let nextChurn = measureStart + churnEveryMs;
  let seedKilled = false;
  const liveCounts: number[] = [];
  const loads: number[] = [];
  const loadSampler = setInterval(() => loads.push(loadavg()[0]!), 5_000);
  while (wallMs() < measureStart + SECONDS * 1000) {
    await new Promise((r) => setTimeout(r, 250));
    liveCounts.push(alive().length);
    // Stops are not waited for: a node's stop can take seconds on a loaded machine, and the churn keeps its pace.
    if (!seedKilled && wallMs() >= measureStart + KILL_SEED_AFTER * 1000) {
      seedKilled = true;
      void stopNode(seed).then(
        () => process.stderr.write(`seed node stopped at ${Math.round((wallMs() - measureStart) / 1000)} s\n`),
        (err: unknown) => process.stderr.write(`seed node stop: ${String(err)}\n`),
      );
    }
    if (wallMs() >= nextChurn) {
      nextChurn += churnEveryMs;
      const live = alive().filter((l) => l.index !== seed);
      const leaving = live[Math.floor(random() * live.length)]!;
      void stopNode(leaving.index).catch((err: unknown) => process.stderr.write(`node ${leaving.index} stop: ${String(err)}\n`));
      const settled = alive().filter((l) => wallMs() - l.joinedMs >= SETTLE * 1000);
      const contact = settled[Math.floor(random() * settled.length)] ?? alive()[0]!;
      void startNode(contact.addrs);
    }
  }
  const measureEnd = wallMs();
  clearInterval(loadSampler);
  await flushAll();
  const cpuMs = workers.reduce((a, w, i) => a + w.cpuMs - cpuStart[i]!, 0);
  const rss = workers.reduce((a, w) => a + w.rssBytes, 0);
  const heap = workers.reduce((a, w) => a + w.heapBytes, 0);
  const liveNow = alive().length;
  measuring = false;
  // Late receipts of the last counted events.
  await new Promise((r) => setTimeout(r, 3_000));
  await flushAll(true);
  clearInterval(flusher);

  let events = 0;
  let expected = 0;
  let delivered = 0;
  /** Where the misses are: by receiver (counted and missed pairs), and those of nodes that joined while measured. */
  const missedBy = new Map<number, number>();
  const countedBy = new Map<number, number>();
  let missedByJoiners = 0;
  /** Missed pairs by the receiver's state in its last sample before the event was sent: no connection, connections
   * but no gossipsub mesh peer for tick events, mesh peers, no sample yet. */
  const missedWhen = { alone: 0, unmeshed: 0, meshed: 0, unsampled: 0 };
  /** Events gossipsub sent to no peer: each one's sender's age (s since it started) when it sent it. */
  const publishedToNoPeer: number[] = [];
  /** Counted events by the share of their expected receivers they reached: [0, 10 %), … [90 %, 100 %), all. */
  const reach = new Array<number>(11).fill(0);
  /** Counted events no node received: each one's sender's age (s since it started) when it sent it. */
  const reachedNone: number[] = [];
  /** Counted events that missed a receiver: when each was sent (s into the measurement). */
  const missedAtS: number[] = [];
  /** The first counted events that missed a receiver, traced (see `partial` below). */
  const partial: object[] = [];
  for (const [sender, tick, sentMs, recipients] of sends) {
    if (sentMs < measureStart || sentMs > measureEnd - GRACE * 1000) continue;
    const s = lives.get(sender)!;
    if (s.leftMs !== null && s.leftMs < sentMs + 2_000) continue;
    // Gossipsub sent it to no peer (a node just started, before any peer said it subscribes): it never entered the
    // mesh, and the node sends another as soon as a peer is there (MeshService tickOwed). Counted apart.
    if (recipients === 0) {
      publishedToNoPeer.push(Math.round((sentMs - s.joinedMs) / 1000));
      continue;
    }
    events++;
    const got = receivedBy.get(`${sender}:${tick}`);
    if (got === undefined || got.size === 0) reachedNone.push(Math.round((sentMs - s.joinedMs) / 1000));
    const [expectedBefore, deliveredBefore] = [expected, delivered];
    const missedNow: number[] = [];
    for (const r of lives.values()) {
      if (r.index === sender || r.nodeId === null) continue;
      if (r.joinedMs + SETTLE * 1000 > sentMs) continue;
      if (r.leftMs !== null && r.leftMs < sentMs + GRACE * 1000) continue;
      expected++;
      if (got?.has(r.index)) delivered++;
      else {
        missedBy.set(r.index, (missedBy.get(r.index) ?? 0) + 1);
        if (r.joinedMs > measureStart) missedByJoiners++;
        const before = sampleBefore(r.index, sentMs);
        missedWhen[before === undefined ? 'unsampled' : before[1] === 0 ? 'alone' : before[2] === 0 ? 'unmeshed' : 'meshed']++;
        missedNow.push(r.index);
      }
      countedBy.set(r.index, (countedBy.get(r.index) ?? 0) + 1);
    }
    // An event no receiver was counted for (all joined too recently) has no share.
    if (expected > expectedBefore) {
      const share = (delivered - deliveredBefore) / (expected - expectedBefore);
      reach[share === 1 ? 10 : Math.floor(share * 10)]!++;
      if (share < 1) missedAtS.push(Math.round((sentMs - measureStart) / 1000));
      if (share < 1 && partial.length < 8)
        partial.push(
          traceEvent(sender, sentMs, recipients, got ?? new Map(), judgedBy.get(`${sender}:${tick}`) ?? new Map(), missedNow, expected - expectedBefore),
        );
    }
  }
  // gossipsub's state and log over the run: how many samples of meshed nodes had a mesh peer with no open outbound
  // stream, and what gossipsub logged most, summed over the nodes alive at the end.
  const meshedSamples = [...samplesOf.values()].flat().filter((x) => x[2] > 0);
  const gossipLog = new Map<string, number>();
  const verdictTally = new Map<string, number>();
  for (const judged of judgedBy.values()) for (const v of judged.values()) verdictTally.set(v, (verdictTally.get(v) ?? 0) + 1);
  for (const seen of lastSeen.values()) for (const [k, n] of Object.entries(seen.gossipLog ?? {})) gossipLog.set(k, (gossipLog.get(k) ?? 0) + n);
  const missingAll = [...missedBy].filter(([r, n]) => n === countedBy.get(r)).map(([r]) => r);
  const conns = [...connectionSamples].sort((a, b) => a - b);
  const meshSamples = [...samplesOf.values()].flat().map(([, c, m]) => [c, m] as const);
  const mostComponents = componentSamples.reduce((most, c) => (c[0] > most[0] ? c : most), [0, 0, 0, measureStart]);
  const meanLive = liveCounts.reduce((a, b) => a + b, 0) / Math.max(1, liveCounts.length);
  const seconds = (measureEnd - measureStart) / 1000;
  const out = {
    nodes: NODES,
    procs: PROCS,
    tickEvery: TICK_EVERY,
    tickRate: TICK_RATE,
    exchange: EXCHANGE === 1,
    px: PX === 1,
    seconds: Math.round(seconds),
    churnPerMin: CHURN,
    events,
    eventsPerSec: Math.round((events / Math.max(1, seconds - GRACE)) * 100) / 100,
    expectedPairs: expected,
    deliveredPairs: delivered,
    delivery: expected === 0 ? null : Math.round((delivered / expected) * 1e6) / 1e6,
    p50Ms: percentileMs(50),
    p99Ms: percentileMs(99),
    connections: {
      min: conns[0] ?? 0,
      median: conns[Math.floor(conns.length / 2)] ?? 0,
      max: conns[conns.length - 1] ?? 0,
      // The share of the samples (a node every 2 s) holding 0, 1, 2, 3, 4–7 and 8 or more connections, and of those
      // with connections the share with no gossipsub mesh peer for tick events.
      unmeshed: Math.round((meshSamples.filter(([c, m]) => c > 0 && m === 0).length / Math.max(1, meshSamples.filter(([c]) => c > 0).length)) * 1e4) / 1e4,
      shares: [0, 1, 2, 3, 4, 8].map((from, i, bounds) => {
        const to = bounds[i + 1] ?? Infinity;
        return Math.round((conns.filter((c) => c >= from && c < to).length / Math.max(1, conns.length)) * 1e4) / 1e4;
      }),
    },
    cpuMsPerNodePerSec: Math.round((cpuMs / meanLive / seconds) * 100) / 100,
    rssMbPerNode: Math.round((rss / liveNow / 2 ** 20) * 10) / 10,
    heapMbPerNode: Math.round((heap / liveNow / 2 ** 20) * 10) / 10,
    // Per phase and worker process: the median of its 2-s p99 event-loop delays, and the longest delay (ms). A delay
    // near the dial timeout (5 s) means the process, not the mesh, decided which dials completed.
    loopDelayMs: Object.fromEntries(
      ['join', 'warmup', 'measured'].map((ph) => [
        ph,
        workers.map((_, w) => {
          const xs = loopSamples.filter(([p, ww]) => p === ph && ww === w);
          const p99s = xs.map((x) => x[2]).sort((a, b) => a - b);
          return [Math.round(p99s[Math.floor(p99s.length / 2)] ?? 0), Math.round(Math.max(0, ...xs.map((x) => x[3])))];
        }),
      ]),
    ),
    // The live nodes' connection graph, sampled every 2 s while measured: the most components it fell into, the
    // smallest share of the live nodes its largest component held, and the component sizes at the end.
    components: {
      max: mostComponents[0],
      maxAtS: Math.round((mostComponents[3] - measureStart) / 1000),
      minLargestShare: Math.round(Math.min(1, ...componentSamples.map((c) => c[1] / Math.max(1, c[2]))) * 1000) / 1000,
      atEnd: components().slice(0, 8),
      // Settled nodes seen alone after a sample with connections: [s, connections before, of them left by then].
      alone: aloneEpisodes.slice(0, 40),
    },
    loadAverage: [Math.min(...loads), Math.max(...loads)].map((l) => Math.round(l * 100) / 100),
    publishedToNoPeer: { events: publishedToNoPeer.length, senderAgeS: publishedToNoPeer },
    // Receivers that missed any counted event, those that missed every one, and the misses of the nodes that joined
    // while measured: whether the misses are a few nodes cut off or spread over the mesh.
    misses: {
      reach,
      atS: missedAtS,
      when: missedWhen,
      receivers: missedBy.size,
      receiversMissingAll: missingAll.length,
      byJoiners: missedByJoiners,
      eventsReachingNone: reachedNone.length,
      senderAgeS: reachedNone,
      // The receivers that missed every event: their connections and known peers (peer store) at the end, and how long
      // before the measurement started they joined.
      missingAll: missingAll.map((r) => [
        lastSeen.get(r)?.peers.length ?? null,
        lastSeen.get(r)?.known ?? null,
        Math.round((measureStart - lives.get(r)!.joinedMs) / 1000),
      ]),
      // What the first few of them logged, by message (a failed dial of their bootstrap by its error).
      missingAllLogged: missingAll.slice(0, 3).map((r) => lastSeen.get(r)?.logged ?? null),
      partial,
    },
    gossipsub: {
      // The share of the samples of meshed nodes with a mesh peer gossipsub holds no open outbound stream to, and the
      // most such peers one node had.
      unwritableShare: Math.round((meshedSamples.filter((x) => x[3] > 0).length / Math.max(1, meshedSamples.length)) * 1e4) / 1e4,
      unwritableMax: Math.max(0, ...meshedSamples.map((x) => x[3])),
      log: Object.fromEntries([...gossipLog].sort((a, b) => b[1] - a[1]).slice(0, 40)),
      verdicts: Object.fromEntries([...verdictTally].sort((a, b) => b[1] - a[1])),
    },
  };
  await new Promise((r) => process.stdout.write(JSON.stringify(out) + '\n', r));
  for (let w = 0; w < workers.length; w++) tell(w, { op: 'exit' });
  const exited = Promise.all(workers.map((w) => new Promise((r) => (gone(w) ? r(null) : w.child.once('exit', r)))));
  await Promise.race([exited, new Promise((r) => setTimeout(r, 30_000).unref())]);
  // The run ends here whatever is left: a worker that did not stop within 30 s, or a handle the figures no longer need.
  endRun(0);
}

const gone = (w: Worker): boolean => w.child.exitCode !== null || w.child.signalCode !== null;

/** End the run: every worker still running is killed, and the run's directory removed with the nodes' data. */
function endRun(code: number): never {
  for (const w of workers) if (!gone(w)) w.child.kill('SIGKILL');
  rmSync(runDir, { recursive: true, force: true });
  process.exit(code);
}

// Stopped by hand (Ctrl-C, or npx passing on a stop).
process.once('SIGINT', () => endRun(130));
process.once('SIGTERM', () => endRun(143));

main().catch((err: unknown) => {
  process.stderr.write(`${String(err)}\n`);
  endRun(1);
});

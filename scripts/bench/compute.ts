// HTTP throughput of sealed computes vs a bare Koa JSON route, in the same run (autocannon, 50 connections, 10 s
// per target). Line 1: fresh requests (every request a chain the node has not seen: a new mass each time), buffered
// writes: the figure that counts, since a real load varies its inputs. Line 2: the same request repeated (the node's
// kept evaluation of a request helps here only), buffered writes. Line 3: durable (fsync) writes, repeated request.
// Line 4: the repeated sealed compute in process (no HTTP, durable writes, 50 at a time), which separates the cost of
// sealing from the cost of HTTP. Each line is one JSON object.
// The targets (bare Koa, bare Koa with the node's body middleware, the node buffered with fresh requests, the same
// node with the repeated request, the node durable, and the bare durable pipeline of ceiling.ts) all run from the
// start, and their 10 s are taken in turns of duration/rounds seconds (round robin), so that a ratio compares figures
// taken under the same machine conditions: on a shared machine the speed drifts by ±20 % from one minute to the next,
// which separate 10 s runs put straight into the ratio. Each turn starts once the other servers are quiet (a node
// compacts LevelDB for a while after its writes; settle). cpuUsPerRequest is the node process's CPU time (all its
// threads) over its turns per request answered: what the micro-benchmarks (scripts/bench/micro) measure savings against.
// With --compare DIR (another checkout of the project, built), DIR's node runs beside this one, buffered (fresh and
// repeated) and durable, each figure taken in the same round right beside this node's; a line after the durable one gives its figures
// and this node's ratio to them (scripts/bench/guard.ts reads that line).
import { execFileSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { NODE_HEAP_FLAGS } from '../../src/config/heap-flags.js';
import { callerOf, numberArg, processCpuMs, registerV3, root, startInProcessNode, startProcess, stop } from './lib.js';
import { progress } from '../../src/cli/progress.js';

const usage = `Usage: npx tsx scripts/bench/compute.ts [--duration 10] [--connections 50] [--rounds 5] [--compare DIR]
  --duration S     seconds of load per target, taken in --rounds turns (round robin)
  --connections N  autocannon connections per target
  --rounds N       turns each target's seconds are split into
  --compare DIR    a built checkout whose node runs beside this one (fresh, repeated, durable), paired turn by turn
Prints one JSON line per figure: fresh, repeated, durable, [compare], in-process.`;
if (process.argv.includes('--help') || process.argv.includes('-h')) {
  console.log(usage);
  process.exit(0);
}

const duration = numberArg('duration', 10);
const connections = numberArg('connections', 50);
const rounds = Math.max(1, Math.floor(numberArg('rounds', 5)));
const tsx = join(root, 'node_modules', '.bin', 'tsx');

const computeBody = JSON.stringify({ domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } });

interface Target {
  name: string;
  url: string;
  body: string;
  /** A new body for every request (each a chain the node has not seen), instead of the same body. */
  fresh?: () => string;
  headers: Record<string, string>;
  /** The process serving the target. */
  server: ChildProcess;
  /** Per round: requests answered 2xx, all requests, non-2xx, seconds, p50 and p99 latency. */
  turns: { ok: number; total: number; non2xx: number; seconds: number; p50: number; p99: number; backgroundCpuMs: number | null; serverCpuMs: number | null }[];
}

async function load(t: Target, seconds: number): Promise<autocannon.Result> {
  const fresh = t.fresh;
  const requests = fresh ? [{ setupRequest: (req: { body?: string }) => ({ ...req, body: fresh() }) }] : undefined;
  return autocannon({
    url: t.url,
    method: 'POST',
    body: t.body,
    headers: { 'content-type': 'application/json', ...t.headers },
    connections,
    duration: seconds,
    ...(requests ? { requests } : {}),
  } as autocannon.Options);
}

/** Kinetic energy with a mass and velocity no earlier request had: every request a new chain (no kept evaluation). */
let freshCount = 0;
const freshBody = (): string =>
  JSON.stringify({
    domain: 'mechanics',
    operators: ['KO42', 'MECH_KINETIC_ENERGY'],
    inputs: { mass_kg: 1 + ++freshCount / 1e6, velocity_m_s: 3 + (freshCount % 1000) / 1000 },
  });

/**
 * Every server this bench started: sent SIGTERM when it exits, so a start that fails (a 30 s timeout) leaves none
 * behind. SIGTERM, not SIGKILL: tsx passes it on to the script it runs in a child process.
 */
const started: ChildProcess[] = [];
process.once('exit', () => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
});
const tracked = <T extends { child: ChildProcess }>(server: T): T => {
  started.push(server.child);
  return server;
};

/** The heap flags npm start gives node. */
const START_HEAP_FLAGS: string[] = [...NODE_HEAP_FLAGS];

/** The built node, as npm start runs it (the bench builds first), with a registered key. */
async function startNode(sync: boolean, from = root): Promise<{ child: ChildProcess; url: string; key: string; dataDir: string }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-'));
  // With the heap flags npm start gives node (V8 refuses --min-semi-space-size in NODE_OPTIONS).
  const { child, url } = tracked(
    await startProcess(
      process.execPath,
      [...START_HEAP_FLAGS, 'dist/cli/index.js', 'start'],
      {
        SVC_PORT: '0',
        SVC_DATA_DIR: dataDir,
        SVC_LOG_LEVEL: 'info',
        SVC_SYNC_WRITES: String(sync),
        SVC_INITIAL_CREDITS: '100000000',
      },
      from,
    ),
  );
  const { adminKey: key } = await registerV3(url, `${sync}`);
  return { child, url, key, dataDir };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const rate = (t: Target): number => t.turns.reduce((n, r) => n + r.ok, 0) / t.turns.reduce((n, r) => n + r.seconds, 0);
const round3 = (x: number): number => Math.round(x * 1000) / 1000;

execFileSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit' });
const koa = tracked(await startProcess(tsx, ['scripts/bench/bare-koa.ts'], {}));
const lean = tracked(await startProcess(tsx, ['scripts/bench/bare-koa.ts'], { BARE_BODY: 'node' }));
const buffered = await startNode(false);
const durable = await startNode(true);
// The bare durable pipeline of ceiling.ts (raw node:http, one seal-shaped LevelDB batch per group, fsync): what the
// machine allows a durable answer at the time, so the node's durable rate can be read against it.
const bareDurable = tracked(
  await startProcess(process.execPath, [...process.execArgv, join(root, 'scripts', 'bench', 'ceiling.ts')], { CEILING_SERVER: 'durable' }),
);
const compareIndex = process.argv.indexOf('--compare');
const compareRoot = compareIndex >= 0 ? process.argv[compareIndex + 1]! : null;
const other = compareRoot !== null ? await startNode(false, compareRoot) : null;
const otherDurable = compareRoot !== null ? await startNode(true, compareRoot) : null;
const ping = JSON.stringify({ ping: 1 });
const targets: Target[] = [
  { name: 'baseline', server: koa.child, url: `${koa.url}/ping`, body: ping, headers: {}, turns: [] },
  { name: 'lean', server: lean.child, url: `${lean.url}/ping`, body: ping, headers: {}, turns: [] },
  {
    name: 'fresh',
    server: buffered.child,
    url: `${buffered.url}/api/svc/compute`,
    body: computeBody,
    fresh: freshBody,
    headers: { authorization: `Bearer ${buffered.key}` },
    turns: [],
  },
  {
    name: 'buffered',
    server: buffered.child,
    url: `${buffered.url}/api/svc/compute`,
    body: computeBody,
    headers: { authorization: `Bearer ${buffered.key}` },
    turns: [],
  },
  {
    name: 'durable',
    server: durable.child,
    url: `${durable.url}/api/svc/compute`,
    body: computeBody,
    headers: { authorization: `Bearer ${durable.key}` },
    turns: [],
  },
  { name: 'bareDurable', server: bareDurable.child, url: `${bareDurable.url}/`, body: computeBody, headers: {}, turns: [] },
];
if (other !== null && otherDurable !== null) {
  targets.push({
    name: 'otherFresh',
    server: other.child,
    url: `${other.url}/api/svc/compute`,
    body: computeBody,
    fresh: freshBody,
    headers: { authorization: `Bearer ${other.key}` },
    turns: [],
  });
  targets.push({
    name: 'otherRepeated',
    server: other.child,
    url: `${other.url}/api/svc/compute`,
    body: computeBody,
    headers: { authorization: `Bearer ${other.key}` },
    turns: [],
  });
  targets.push({
    name: 'otherDurable',
    server: otherDurable.child,
    url: `${otherDurable.url}/api/svc/compute`,
    body: computeBody,
    headers: { authorization: `Bearer ${otherDurable.key}` },
    turns: [],
  });
}
/**
 * The targets in round `r`'s order. With --compare, each figure of this node is taken right beside the same figure of
 * the other node, the pair's order alternating from round to round: taken in the targets' order, the node measured
 * first came out 5–8 % behind whichever build it was (docs/performance.md, "The compute path").
 */
function roundOrder(r: number): Target[] {
  if (other === null) return targets;
  const byName = (name: string) => targets.find((t) => t.name === name)!;
  const pairs = [
    [byName('fresh'), byName('otherFresh')],
    [byName('buffered'), byName('otherRepeated')],
    [byName('durable'), byName('otherDurable')],
  ];
  const paired = new Set(pairs.flat());
  return [...targets.filter((t) => !paired.has(t)), ...pairs.flatMap(([mine, theirs]) => (r % 2 === 0 ? [mine!, theirs!] : [theirs!, mine!]))];
}

/**
 * A fixed piece of CPU work (JSON, SHA-256, string building), timed: the same code on the same machine, so its time
 * says how fast the machine ran then. This VM's speed moves by ±30 % from minute to minute, which moves every figure
 * here with it; the probe lets runs be compared.
 */
function machineProbeMs(): number {
  const t0 = performance.now();
  let text = computeBody;
  for (let i = 0; i < 20_000; i++) {
    const o = JSON.parse(text) as { inputs: { mass_kg: number } };
    o.inputs.mass_kg = i;
    text = JSON.stringify(o);
    createHash('sha256').update(text).digest('hex');
  }
  return Math.round((performance.now() - t0) * 10) / 10;
}
const probes: number[] = [];

/** Summed CPU ms of these processes so far (null off Linux). */
const cpuOf = (servers: ChildProcess[]): number | null => {
  let ms = 0;
  for (const server of servers) {
    const m = processCpuMs(server.pid!);
    if (m === null) return null;
    ms += m;
  }
  return ms;
};
const settleWaitsMs: number[] = [];
/**
 * Wait (3 s at most) until the other servers are quiet: at most 10 ms of CPU in 200 ms. A node keeps compacting
 * LevelDB for a while after its turn's writes (seen: 600 ms of CPU in the next 2-s turn), which would otherwise be
 * charged to whichever target comes next. Every target's turn starts this way. Returns the wait in ms.
 */
async function settle(others: ChildProcess[]): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < 15; i++) {
    const before = cpuOf(others);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const after = cpuOf(others);
    if (before === null || after === null || after - before <= 10) break;
  }
  return Math.round(performance.now() - t0);
}

try {
  // Warm-up (the probe's too), then the measured turns.
  const spin = await progress('bench: warm-up');
  machineProbeMs();
  for (const t of targets) await load(t, 2);
  const seconds = duration / rounds;
  for (let r = 0; r < rounds; r++) {
    probes.push(machineProbeMs());
    for (const t of roundOrder(r)) {
      spin.text(`bench: round ${r + 1} of ${rounds}, ${t.name} (${seconds} s)`);
      const background = targets.map((o) => o.server).filter((server, i, all) => server !== t.server && all.indexOf(server) === i);
      settleWaitsMs.push(await settle(background));
      const before = cpuOf(background);
      const serverBefore = cpuOf([t.server]);
      const res = await load(t, seconds);
      const after = cpuOf(background);
      const serverAfter = cpuOf([t.server]);
      const backgroundCpuMs = before === null || after === null ? null : after - before;
      const serverCpuMs = serverBefore === null || serverAfter === null ? null : serverAfter - serverBefore;
      t.turns.push({
        ok: res['2xx'],
        total: res.requests.total,
        non2xx: res.non2xx,
        seconds,
        p50: res.latency.p50,
        p99: res.latency.p99,
        backgroundCpuMs,
        serverCpuMs,
      });
    }
  }
  spin.succeed(`bench: ${rounds} rounds of ${targets.length} targets done`);
} finally {
  await Promise.all([
    stop(koa.child),
    stop(lean.child),
    stop(buffered.child),
    stop(durable.child),
    stop(bareDurable.child),
    ...(other ? [stop(other.child)] : []),
    ...(otherDurable ? [stop(otherDurable.child)] : []),
  ]);
  await Promise.all([
    rm(buffered.dataDir, { recursive: true, force: true }),
    rm(durable.dataDir, { recursive: true, force: true }),
    ...(other ? [rm(other.dataDir, { recursive: true, force: true })] : []),
    ...(otherDurable ? [rm(otherDurable.dataDir, { recursive: true, force: true })] : []),
  ]);
}
const [baseline, leanBaseline, freshT, bufferedT, durableT, bareDurableT] = targets as [Target, Target, Target, Target, Target, Target];
const baselineRps = rate(baseline);
const leanBaselineRps = rate(leanBaseline);
const sum = (t: Target, k: 'non2xx'): number => t.turns.reduce((n, r) => n + r[k], 0);
/** The server's CPU µs per request answered over a target's turns (null off Linux). */
const cpuUsPerRequest = (t: Target): number | null =>
  t.turns.some((r) => r.serverCpuMs === null)
    ? null
    : Math.round((t.turns.reduce((n, r) => n + r.serverCpuMs!, 0) * 1000) / t.turns.reduce((n, r) => n + r.total, 0));
console.log(
  JSON.stringify({
    // Every request a chain the node has not seen (buffered writes).
    freshComputeRps: Math.round(rate(freshT)),
    baselineRps: Math.round(baselineRps),
    freshRatio: round3(rate(freshT) / baselineRps),
    // The same bare route with the node's own JSON body middleware instead of @koa/bodyparser.
    leanBaselineRps: Math.round(leanBaselineRps),
    freshLeanRatio: round3(rate(freshT) / leanBaselineRps),
    cpuUsPerRequest: cpuUsPerRequest(freshT),
    // Median p50 and worst p99 of the turns.
    p50Ms: median(freshT.turns.map((r) => r.p50)),
    p99Ms: Math.max(...freshT.turns.map((r) => r.p99)),
    // The ratio of each turn (fresh turn / the baseline turn of the same round).
    turnRatios: freshT.turns.map((r, i) => round3(r.ok / r.seconds / (baseline.turns[i]!.ok / baseline.turns[i]!.seconds))),
    non2xx: sum(freshT, 'non2xx'),
    syncWrites: false,
    connections,
    durationS: duration,
    rounds,
  }),
);
console.log(
  JSON.stringify({
    // The bench's one request, repeated (buffered writes).
    computeRps: Math.round(rate(bufferedT)),
    ratio: round3(rate(bufferedT) / baselineRps),
    leanRatio: round3(rate(bufferedT) / leanBaselineRps),
    cpuUsPerRequest: cpuUsPerRequest(bufferedT),
    p50Ms: median(bufferedT.turns.map((r) => r.p50)),
    p99Ms: Math.max(...bufferedT.turns.map((r) => r.p99)),
    turnRatios: bufferedT.turns.map((r, i) => round3(r.ok / r.seconds / (baseline.turns[i]!.ok / baseline.turns[i]!.seconds))),
    non2xx: sum(bufferedT, 'non2xx'),
    syncWrites: false,
  }),
);
console.log(
  JSON.stringify({
    durableComputeRps: Math.round(rate(durableT)),
    sealedPerSec: Math.round(rate(durableT)),
    ratio: round3(rate(durableT) / baselineRps),
    p50Ms: median(durableT.turns.map((r) => r.p50)),
    p99Ms: Math.max(...durableT.turns.map((r) => r.p99)),
    non2xx: sum(durableT, 'non2xx'),
    // The bare durable pipeline (ceiling.ts) in the same turns, and the node's share of it.
    bareDurableRps: Math.round(rate(bareDurableT)),
    ofBareDurable: round3(rate(durableT) / rate(bareDurableT)),
    // Median time of the fixed CPU probe taken before each round (lower: a faster machine at the time).
    machineProbeMs: median(probes),
    // Each round's durable rate beside that round's probe: how far the figure moves with the machine's speed.
    turnRps: durableT.turns.map((r) => Math.round(r.ok / r.seconds)),
    turnProbeMs: probes,
    // CPU the other servers used during each durable turn (their own background work, e.g. LevelDB compaction),
    // and the longest wait for them to be quiet before a turn (settle).
    turnBackgroundCpuMs: durableT.turns.map((r) => r.backgroundCpuMs),
    maxSettleMs: Math.max(...settleWaitsMs),
    syncWrites: true,
    connections,
    durationS: duration,
    rounds,
  }),
);

if (compareRoot !== null) {
  const [otherFresh, otherRepeated, otherDurableT] = targets.slice(6) as [Target, Target, Target];
  const turnRatios = (mine: Target, theirs: Target): number[] =>
    mine.turns.map((r, i) => round3(r.ok / r.seconds / (theirs.turns[i]!.ok / theirs.turns[i]!.seconds)));
  console.log(
    JSON.stringify({
      compare: compareRoot,
      freshComputeRps: Math.round(rate(otherFresh)),
      freshRatio: round3(rate(otherFresh) / baselineRps),
      cpuUsPerRequest: cpuUsPerRequest(otherFresh),
      computeRps: Math.round(rate(otherRepeated)),
      ratio: round3(rate(otherRepeated) / baselineRps),
      repeatedCpuUsPerRequest: cpuUsPerRequest(otherRepeated),
      durableComputeRps: Math.round(rate(otherDurableT)),
      durableCpuUsPerRequest: cpuUsPerRequest(otherDurableT),
      // This node's figure over the other's: fresh, repeated, durable.
      freshThisOverOther: round3(rate(freshT) / rate(otherFresh)),
      repeatedThisOverOther: round3(rate(bufferedT) / rate(otherRepeated)),
      durableThisOverOther: round3(rate(durableT) / rate(otherDurableT)),
      // Each side's durable rate over the bare durable pipeline (ceiling.ts) of the same rounds.
      thisOfBareDurable: round3(rate(durableT) / rate(bareDurableT)),
      otherOfBareDurable: round3(rate(otherDurableT) / rate(bareDurableT)),
      // Per round: this node's rate over the other's in the same round.
      freshTurnRatios: turnRatios(freshT, otherFresh),
      durableTurnRatios: turnRatios(durableT, otherDurableT),
      non2xx: sum(otherFresh, 'non2xx') + sum(otherRepeated, 'non2xx') + sum(otherDurableT, 'non2xx'),
    }),
  );
}

/** Sealed computes through ComputeService.compute in this process, `connections` at a time, durable writes. */
async function runInProcess(): Promise<Record<string, unknown>> {
  const { node, stop: stopNode } = await startInProcessNode();
  try {
    const caller = callerOf(node, (await registerV3(node.url, 'in-process')).adminKey);
    const run = async (ms: number): Promise<number> => {
      const end = performance.now() + ms;
      let done = 0;
      const worker = async () => {
        while (performance.now() < end) {
          await node.compute.compute(await caller(), JSON.parse(computeBody));
          done++;
        }
      };
      await Promise.all(Array.from({ length: connections }, worker));
      return done;
    };
    await run(2000);
    const before = { ...node.store.stats };
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const n = await run(duration * 1000);
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const batches = node.store.stats.batches - before.batches;
    return {
      inProcessSealedPerSec: Math.round(n / seconds),
      cpuUsPerSeal: Math.round((cpu.user + cpu.system) / n),
      storeOpsPerSeal: Math.round(((node.store.stats.ops - before.ops) / n) * 10) / 10,
      sealsPerBatch: Math.round((n / batches) * 10) / 10,
      syncWrites: true,
      concurrency: connections,
      durationS: duration,
    };
  } finally {
    await stopNode();
  }
}

console.log(JSON.stringify(await runInProcess()));

// Offload benchmark: solver runs placed on a contributing peer over /svc/exec/1.0.0 against the same runs executed
// by the node itself. One cheap solver (zeta, one zero) with fresh inputs on every request (a new n each time, so no
// cache is measured), `concurrency` requests in flight, the same number of runs in each phase, phases one after the
// other on the same cluster. Offloaded runs are counted only when the sealed result names the peer in executed_by.
// Prints ONE JSON line:
//   {nodes, solver, runs, concurrency, offloadedRunsPerSec, localRunsPerSec, ratio, offloadedShare, contention}
// Usage: npx tsx scripts/bench/offload.ts [--runs 600] [--concurrency 4] [--threads 1] [--in-process] [--compare-streams]
// The main builds and starts three node processes (A offloads always, B contributes, D runs everything itself;
// --in-process: all three in this process, sharing its one JS thread);
// measureOffload() takes any cluster (scripts/bench/consensus.ts uses it on its own).
import '../../src/polyfill.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { loadConfig } from '../../src/config/load.js';
import { SvcNode } from '../../src/node/node.js';
import { execFileSync } from 'node:child_process';
import { type BenchNode, inFlight, numberArg, operatorBond, postJson, registerIdentity, root, startNodeProcess } from './lib.js';
import { helpFromHeader } from '../help.js';

helpFromHeader(import.meta.url);

export interface OffloadBenchTarget {
  /** A node with contribution.offload 'always' (or 'when-busy' under load) and a key of an identity homed there. */
  offloading: { url: string; key: string; nodeId: string };
  /** A node that runs the same solver itself (offload never), and a key of an identity homed there. */
  local: { url: string; key: string };
  runs?: number;
  concurrency?: number;
  /** Blocks the runs are split into, alternating offloaded and local (default 6). */
  rounds?: number;
  /** First zeta index used; each run takes the next (n ≤ 10 000: at most 10 000 − firstN runs per phase). */
  firstN?: number;
  /** A second offloading node measured in the same rounds (--compare-streams: one stream per run against sessions). */
  alternative?: { url: string; key: string; nodeId: string };
}

export interface OffloadFigures {
  runs: number;
  concurrency: number;
  offloadedRunsPerSec: number;
  localRunsPerSec: number;
  /** offloaded / local throughput (target ≥ 0.8). */
  ratio: number;
  /** Share of the offloading phase's results whose executed_by names another node. */
  offloadedShare: number;
  /** The alternative offloading node's figures, when measured. */
  alternative?: { offloadedRunsPerSec: number; ratio: number; offloadedShare: number };
}

/** `runs` zeta runs with fresh n at `concurrency` in flight; runs/s and how many were executed elsewhere. */
async function phase(
  url: string,
  key: string,
  runs: number,
  concurrency: number,
  firstN: number,
  home: string | null,
): Promise<{ perSec: number; elsewhere: number }> {
  let elsewhere = 0;
  const run = async (i: number): Promise<void> => {
    const res = await fetch(`${url}/api/svc/zeta`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ n: firstN + i, count: 1 }),
    });
    const body = (await res.json()) as { executed_by?: { node?: string } | null };
    if (res.status !== 200) throw new Error(`run ${i} answered ${res.status}: ${JSON.stringify(body)}`);
    if (home !== null && body.executed_by?.node !== undefined && body.executed_by.node !== home) elsewhere++;
  };
  const t0 = performance.now();
  await inFlight(runs, concurrency, run);
  return { perSec: runs / ((performance.now() - t0) / 1000), elsewhere };
}

export async function measureOffload(t: OffloadBenchTarget): Promise<OffloadFigures> {
  const runs = t.runs ?? 600;
  const concurrency = t.concurrency ?? 4;
  const rounds = Math.max(1, t.rounds ?? 6);
  const firstN = t.firstN ?? 1;
  const phases = t.alternative ? 3 : 2;
  if (firstN + phases * runs + 60 > 10_000) throw new Error('zeta takes n ≤ 10 000: fewer runs, or a smaller firstN');
  // Warm both paths (workers loaded, streams open, wallets in memory).
  await phase(t.offloading.url, t.offloading.key, 20, 4, firstN, null);
  await phase(t.local.url, t.local.key, 20, 4, firstN + 20, null);
  if (t.alternative) await phase(t.alternative.url, t.alternative.key, 20, 4, firstN + 40, null);
  // The phases alternate in blocks, so a change of load on a shared machine falls on all alike.
  let n = firstN + 60;
  const block = Math.ceil(runs / rounds);
  const time = { offloaded: 0, local: 0, alternative: 0 };
  let done = 0;
  let elsewhere = 0;
  let altElsewhere = 0;
  while (done < runs) {
    const size = Math.min(block, runs - done);
    const off = await phase(t.offloading.url, t.offloading.key, size, concurrency, n, t.offloading.nodeId);
    n += size;
    if (t.alternative) {
      const alt = await phase(t.alternative.url, t.alternative.key, size, concurrency, n, t.alternative.nodeId);
      n += size;
      time.alternative += size / alt.perSec;
      altElsewhere += alt.elsewhere;
    }
    const loc = await phase(t.local.url, t.local.key, size, concurrency, n, null);
    n += size;
    time.offloaded += size / off.perSec;
    time.local += size / loc.perSec;
    elsewhere += off.elsewhere;
    done += size;
  }
  const offloadedPerSec = runs / time.offloaded;
  const localPerSec = runs / time.local;
  return {
    runs,
    concurrency,
    offloadedRunsPerSec: round(offloadedPerSec),
    localRunsPerSec: round(localPerSec),
    ratio: Math.round((offloadedPerSec / localPerSec) * 1000) / 1000,
    offloadedShare: Math.round((elsewhere / runs) * 1000) / 1000,
    ...(t.alternative
      ? {
          alternative: {
            offloadedRunsPerSec: round(runs / time.alternative),
            ratio: Math.round((runs / time.alternative / localPerSec) * 1000) / 1000,
            offloadedShare: Math.round((altElsewhere / runs) * 1000) / 1000,
          },
        }
      : {}),
  };
}

const round = (x: number): number => Math.round(x * 10) / 10;

const SECRET = 'bench-offload-secret-0123456789abcdef';
const CONTRIBUTION = { bondEnvelopes: 3, committeeSize: 3, settleTicks: 4, deadlineTicks: 12, challengeStake: 20, bondTermDays: 30 };

/** One node in this process. */
async function inProcessNode(offload: string, bootstrap: string[], threads: number, streamPerRun = false): Promise<BenchNode> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-offload-bench-'));
  const config = loadConfig({
    env: {},
    overrides: {
      port: 0,
      host: '127.0.0.1',
      dataDir: dir,
      logLevel: 'silent',
      syncWrites: false,
      solverThreads: threads,
      receiptSecret: 'ef'.repeat(32),
      contribution: { ...CONTRIBUTION, offload },
      mesh: { secret: SECRET, p2pPort: 0, bootstrap, tickEvery: 1 },
    },
  });
  const node = await new SvcNode(config, { logger: pino({ level: 'silent' }), initialCredits: 1_000_000, execStreamPerRun: streamPerRun }).start();
  return {
    url: node.url,
    dir,
    nodeId: node.nodeId,
    multiaddr: node.mesh.multiaddrs()[0]!,
    pid: process.pid,
    stop: async () => {
      await node.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** One node as its own process (the built CLI, as npm start runs it). */
async function processNode(offload: string, bootstrap: string[], threads: number, streamPerRun = false): Promise<BenchNode> {
  // A2 of --compare-streams: NodeOptions.execStreamPerRun, which the CLI does not expose (a benchmark composition).
  const perRun = `import { SvcNode } from ${JSON.stringify(pathToFileURL(join(root, 'dist/node.js')).href)};
const start = SvcNode.prototype.start;
SvcNode.prototype.start = function (...a) { this.options = { ...this.options, execStreamPerRun: true }; return start.apply(this, a); };`;
  return startNodeProcess({
    secret: SECRET,
    bootstrap,
    env: {
      SVC_SYNC_WRITES: 'false',
      SVC_SOLVER_THREADS: String(threads),
      SVC_CONTRIBUTION_BOND_ENVELOPES: String(CONTRIBUTION.bondEnvelopes),
      SVC_CONTRIBUTION_OFFLOAD: offload,
    },
    preload: streamPerRun ? ['--import', `data:text/javascript,${encodeURIComponent(perRun)}`] : [],
  });
}

async function peersOf(url: string): Promise<{ peerId: string; mode: string | null; connected: boolean }[]> {
  return ((await (await fetch(`${url}/api/mesh/status`)).json()) as { peers: { peerId: string; mode: string | null; connected: boolean }[] }).peers;
}

async function main(): Promise<void> {
  const runs = numberArg('runs', 600);
  const concurrency = numberArg('concurrency', 4);
  const threads = numberArg('threads', 1);
  // --compare-streams: a second offloading node A2 places its runs one stream per run (/svc/exec/1.0.0) while A keeps
  // one session per peer (1.1.0); both are measured in the same alternating rounds.
  const compare = process.argv.includes('--compare-streams');
  const inProcess = process.argv.includes('--in-process');
  if (!inProcess) execFileSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit' });
  const start = inProcess ? inProcessNode : processNode;
  const nodes: BenchNode[] = [];
  try {
    const a = await start('always', [], threads);
    nodes.push(a);
    const b = await start('never', [a.multiaddr], threads);
    nodes.push(b);
    const d = await start('never', [a.multiaddr, b.multiaddr], threads);
    nodes.push(d);
    const a2 = compare ? await start('always', [a.multiaddr, b.multiaddr], threads, true) : null;
    if (a2) nodes.push(a2);
    // B's operator bonds and contributes.
    const operator = (await registerIdentity(b.url, 'operator')).key;
    for (let i = 0; i < CONTRIBUTION.bondEnvelopes; i++)
      await postJson(b.url, '/api/svc/compute', operator, { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: {} });
    await postJson(b.url, '/api/contribute/bond', operator, {}, operatorBond(b.dir));
    await postJson(b.url, '/api/contribute/mode', operator, { mode: 'contributing' });
    const deadline = Date.now() + 60_000;
    const sees = async (x: BenchNode) => (await peersOf(x.url)).some((p) => p.peerId === b.nodeId && p.mode === 'contributing' && p.connected);
    while (!(await sees(a)) || (a2 !== null && !(await sees(a2)))) {
      if (Date.now() > deadline) throw new Error('A never saw B contributing');
      await new Promise((r) => setTimeout(r, 100));
    }
    // The bond's gossip and the tick that advertises it may arrive in either order: one more tick.
    await new Promise((r) => setTimeout(r, 1_600));
    const figures = await measureOffload({
      offloading: { url: a.url, key: (await registerIdentity(a.url, 'caller-a')).key, nodeId: a.nodeId },
      local: { url: d.url, key: (await registerIdentity(d.url, 'caller-d')).key },
      ...(a2 ? { alternative: { url: a2.url, key: (await registerIdentity(a2.url, 'caller-a2')).key, nodeId: a2.nodeId } } : {}),
      runs,
      concurrency,
    });
    console.log(
      JSON.stringify({
        nodes: nodes.length,
        processes: inProcess ? 1 : nodes.length,
        solver: 'zeta (count 1, fresh n)',
        solverThreads: threads,
        ...figures,
        contention: 'shared 2-core machine; other sessions were running (see the load average in the report)',
      }),
    );
  } finally {
    for (const n of nodes) await n.stop().catch(() => undefined);
  }
}

// Run as a script (not when imported by another bench).
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}

// Offload benchmark: solver runs placed on a contributing peer over /svc/exec/1.0.0 against the same runs executed
// by the node itself. One cheap solver (zeta, one zero) with fresh inputs on every request (a new n each time, so no
// cache is measured), `concurrency` requests in flight, the same number of runs in each phase, phases one after the
// other on the same cluster. Offloaded runs are counted only when the sealed result names the peer in executed_by.
// Prints ONE JSON line:
//   {nodes, solver, runs, concurrency, offloadedRunsPerSec, localRunsPerSec, ratio, offloadedShare, contention}
// Usage: npx tsx scripts/bench/offload.ts [--runs 600] [--concurrency 4] [--threads 1]
// The main starts three nodes in this one process (A offloads always, B contributes, D runs everything itself);
// measureOffload() takes any cluster (scripts/bench/consensus.ts uses it on its own).
import '../../src/polyfill.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { loadConfig } from '../../src/config/load.js';
import { SvcNode } from '../../src/node.js';
import { numberArg } from './lib.js';

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
  let next = 0;
  let elsewhere = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= runs) return;
      const res = await fetch(`${url}/api/svc/zeta`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ n: firstN + i, count: 1 }),
      });
      const body = (await res.json()) as { executed_by?: { node?: string } | null };
      if (res.status !== 200) throw new Error(`run ${i} answered ${res.status}: ${JSON.stringify(body)}`);
      if (home !== null && body.executed_by?.node !== undefined && body.executed_by.node !== home) elsewhere++;
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { perSec: runs / ((performance.now() - t0) / 1000), elsewhere };
}

export async function measureOffload(t: OffloadBenchTarget): Promise<OffloadFigures> {
  const runs = t.runs ?? 600;
  const concurrency = t.concurrency ?? 4;
  const rounds = Math.max(1, t.rounds ?? 6);
  const firstN = t.firstN ?? 1;
  if (firstN + 2 * runs + 40 > 10_000) throw new Error('zeta takes n ≤ 10 000: fewer runs, or a smaller firstN');
  // Warm both paths (workers loaded, streams open, wallets in memory).
  await phase(t.offloading.url, t.offloading.key, 20, 4, firstN, null);
  await phase(t.local.url, t.local.key, 20, 4, firstN + 20, null);
  // The two phases alternate in blocks, so a change of load on a shared machine falls on both alike.
  let n = firstN + 40;
  const block = Math.ceil(runs / rounds);
  const time = { offloaded: 0, local: 0 };
  let done = 0;
  let elsewhere = 0;
  while (done < runs) {
    const size = Math.min(block, runs - done);
    const off = await phase(t.offloading.url, t.offloading.key, size, concurrency, n, t.offloading.nodeId);
    n += size;
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
  };
}

const round = (x: number): number => Math.round(x * 10) / 10;

async function register(url: string, seed: string): Promise<string> {
  const { createHash } = await import('node:crypto');
  const res = await fetch(`${url}/api/svc-auth/register-v3`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ equation_sha256: createHash('sha256').update(`bench:${seed}:${Date.now()}`).digest('hex') }),
  });
  const body = (await res.json()) as { admin_key: string };
  return body.admin_key;
}

async function post(url: string, path: string, key: string, body: unknown): Promise<unknown> {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as unknown;
  if (res.status >= 300) throw new Error(`${path} answered ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

async function main(): Promise<void> {
  const runs = numberArg('runs', 600);
  const concurrency = numberArg('concurrency', 4);
  const threads = numberArg('threads', 1);
  const secret = 'bench-offload-secret-0123456789abcdef';
  const dirs: string[] = [];
  const nodes: SvcNode[] = [];
  const start = async (offload: string): Promise<SvcNode> => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-offload-bench-'));
    dirs.push(dir);
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
        contribution: { bondEnvelopes: 3, committeeSize: 3, settleTicks: 4, deadlineTicks: 12, challengeStake: 20, bondTermDays: 30, offload },
        mesh: { secret, p2pPort: 0, bootstrap: nodes.flatMap((n) => n.mesh.multiaddrs().slice(0, 1)), tickEvery: 1 },
      },
    });
    const node = await new SvcNode(config, { logger: pino({ level: 'silent' }), initialCredits: 1_000_000 }).start();
    nodes.push(node);
    return node;
  };
  try {
    const a = await start('always');
    const b = await start('never');
    const d = await start('never');
    // B's operator bonds and contributes.
    const operator = await register(b.url, 'operator');
    for (let i = 0; i < 3; i++)
      await post(b.url, '/api/svc/compute', operator, { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: {} });
    await post(b.url, '/api/contribute/bond', operator, {});
    await post(b.url, '/api/contribute/mode', operator, { mode: 'contributing' });
    const deadline = Date.now() + 60_000;
    while (!a.mesh.peers().some((p) => p.peerId === b.nodeId && p.mode === 'contributing' && p.connected && a.bonds.ofNode(b.nodeId) !== null)) {
      if (Date.now() > deadline) throw new Error('A never saw B contributing');
      await new Promise((r) => setTimeout(r, 50));
    }
    const figures = await measureOffload({
      offloading: { url: a.url, key: await register(a.url, 'caller-a'), nodeId: a.nodeId },
      local: { url: d.url, key: await register(d.url, 'caller-d') },
      runs,
      concurrency,
    });
    console.log(
      JSON.stringify({
        nodes: nodes.length,
        solver: 'zeta (count 1, fresh n)',
        solverThreads: threads,
        ...figures,
        contention: 'three nodes in one process on a shared 2-core machine; other sessions were running',
      }),
    );
  } finally {
    for (const n of nodes) await n.stop().catch(() => undefined);
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  }
}

// Run as a script (not when imported by another bench).
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}

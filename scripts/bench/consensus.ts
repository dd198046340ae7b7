// Consensus benchmark (architecture.md §6): a 5-node cluster on 127.0.0.1 (real HTTP and libp2p, all in
// this process), every operator bonded and contributing. A's operator seals closed-form results (a kinetic-energy
// chain, fresh inputs each time), publishes them, and a challenger homed on B challenges each with a false digest;
// the committee {C, D, E} re-executes and votes, and every node folds the votes to `rejected`. Ticks to verdict =
// the verdict's tick at B minus the challenge's tick (what GET /api/tally/consensus/:id shows as ticks_taken).
// Challenges run one at a time. Then the same cluster's throughput of fresh zeta runs placed from B (offload
// 'always') on contributing peers, against the same runs executed by A itself (exec's measureOffload, offload.ts).
// Prints ONE JSON line:
//   {nodes, challenges, p50TicksToVerdict, p99TicksToVerdict, p50MsToVerdict, p99MsToVerdict, verdicts,
//    offloadedRunsPerSec, localRunsPerSec, offloadRatio, offloadedShare}
// Usage: npx tsx scripts/bench/consensus.ts [--challenges 40] [--offload-runs 300]
// All five nodes share this process (one JS thread): every figure includes the other nodes' work.
import '../../src/polyfill.js';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { loadConfig } from '../../src/config/load.js';
import { SvcNode } from '../../src/node/node.js';
import { identityKey, numberArg, operatorBond, percentile } from './lib.js';
import { measureOffload } from './offload.js';
import { helpFromHeader } from '../help.js';

helpFromHeader(import.meta.url);

const CHALLENGES = numberArg('challenges', 40);
const OFFLOAD_RUNS = numberArg('offload-runs', 300);
const NODES = 5;
const SECRET = 'bench-consensus-secret-0123456789';
const BOND = 2;

async function http(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  key?: string,
  extra: Record<string, string> = {},
): Promise<{ status: number; body: any }> {
  const res = await fetch(url + path, {
    method,
    headers: { ...extra, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

async function identity(url: string, seed: string): Promise<{ zid: string; key: string }> {
  const digest = createHash('sha256').update(`bench:${seed}`).digest('hex');
  const r = await http(url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: digest });
  if (r.status !== 201) throw new Error(`register: ${r.status}`);
  return { zid: r.body.zid, key: await identityKey(url, digest) };
}

async function until<T>(fn: () => Promise<T | null | undefined | false>, ms: number, what: string): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function main(): Promise<void> {
  const dirs: string[] = [];
  const nodes: SvcNode[] = [];
  const start = async (bootstrap: string[], offload: 'never' | 'always' = 'never') => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-bench-consensus-'));
    dirs.push(dir);
    const config = loadConfig({
      env: {},
      overrides: {
        host: '127.0.0.1',
        port: 0,
        dataDir: dir,
        logLevel: 'silent',
        syncWrites: false,
        solverThreads: 0,
        sealWorker: false,
        receiptSecret: 'ef'.repeat(32),
        contribution: { bondEnvelopes: BOND, committeeSize: 3, settleTicks: 1, deadlineTicks: 32, challengeStake: 20, bondTermDays: 30, offload },
        mesh: { secret: SECRET, p2pPort: 0, bootstrap, tickEvery: 1 },
      },
    });
    const n = await new SvcNode(config, { logger: pino({ level: 'silent' }), initialCredits: 10_000, reannounceTicks: 2 }).start();
    nodes.push(n);
    return n;
  };
  try {
    const a = await start([]);
    const boot = [a.mesh.multiaddrs()[0]!];
    // B places its solver runs on contributing peers; the others run their own.
    for (let i = 1; i < NODES; i++) await start(boot, i === 1 ? 'always' : 'never');
    const b = nodes[1]!;
    await until(async () => nodes.every((n) => n.mesh.peers().filter((p) => p.url).length >= NODES - 1), 60_000, 'mesh');
    const operators = await Promise.all(
      nodes.map(async (n, i) => {
        const id = await identity(n.url, `op-${i}`);
        for (let k = 0; k < BOND; k++)
          await http(n.url, 'POST', '/api/svc/compute', { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: {} }, id.key);
        if ((await http(n.url, 'POST', '/api/contribute/bond', {}, id.key, operatorBond(dirs[i]!))).status !== 201) throw new Error('bond');
        await http(n.url, 'POST', '/api/contribute/mode', { mode: 'contributing' }, id.key);
        await http(n.url, 'POST', '/api/tally/settings/publish-default', { publish_default: true }, id.key);
        return id;
      }),
    );
    await until(async () => nodes.every((n) => n.bonds.active().length === NODES), 60_000, 'bonds');
    await until(async () => b.mesh.peers().filter((p) => p.mode === 'contributing').length === NODES - 1, 60_000, 'contributing adverts');
    const challenger = await identity(b.url, 'challenger');
    const ticks: number[] = [];
    const ms: number[] = [];
    const verdicts: Record<string, number> = {};
    for (let i = 0; i < CHALLENGES; i++) {
      const sealed = await http(
        a.url,
        'POST',
        '/api/svc/compute',
        { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 1 + i, velocity_m_s: 3 } },
        operators[0]!.key,
      );
      if (sealed.status !== 200 || !sealed.body.executed_by) throw new Error(`seal: ${sealed.status}`);
      const t0 = performance.now();
      const opened = await http(
        b.url,
        'POST',
        '/api/tally/consensus/challenges',
        { result_id: sealed.body.result_id, claimed_digest: 'ab'.repeat(32) },
        challenger.key,
      );
      if (opened.status !== 201) throw new Error(`challenge: ${opened.status} ${JSON.stringify(opened.body)}`);
      const entry = await until(async () => b.challenges.get(opened.body.challenge_id)?.verdict ?? null, 60_000, 'verdict');
      ms.push(performance.now() - t0);
      ticks.push(entry.ticks_taken);
      verdicts[entry.outcome] = (verdicts[entry.outcome] ?? 0) + 1;
    }
    const runner = { a: await identity(a.url, 'runner-a'), b: await identity(b.url, 'runner-b') };
    const off = await measureOffload({
      offloading: { url: b.url, key: runner.b.key, nodeId: b.nodeId },
      local: { url: a.url, key: runner.a.key },
      runs: OFFLOAD_RUNS,
    });
    process.stdout.write(
      `${JSON.stringify({
        nodes: NODES,
        challenges: CHALLENGES,
        p50TicksToVerdict: percentile(ticks, 50),
        p99TicksToVerdict: percentile(ticks, 99),
        p50MsToVerdict: Math.round(percentile(ms, 50) * 10) / 10,
        p99MsToVerdict: Math.round(percentile(ms, 99) * 10) / 10,
        verdicts,
        offloadedRunsPerSec: off.offloadedRunsPerSec,
        localRunsPerSec: off.localRunsPerSec,
        offloadRatio: off.ratio,
        offloadedShare: off.offloadedShare,
      })}\n`,
    );
  } finally {
    for (const n of nodes) await n.stop().catch(() => undefined);
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  }
}

await main();

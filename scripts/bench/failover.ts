// Failover benchmark (docs/protocol.md §19, docs/decisions.md "Custody"): how long an identity's ledger is out of reach
// when its home dies. Five durable node processes on 127.0.0.1 (the fault harness's: fixed ports, SIGKILL and restart
// on the same data dir), ticking every second, each with a bonded operator, so every identity is held by three nodes.
// Each round homes a fresh identity on the next node, spends there `--spends` times (each acknowledged) and reads its
// balance; then it SIGKILLs the home and sends a spend to another live node every 100 ms (a node forwards an
// identity's requests to its current home) until one is acknowledged. The failover time is the kill → that answer.
// The balance read there after it must be the balance before the kill less that spend's cost (every acknowledged
// write kept), else the round is counted `lost`. The killed node starts again before the next round. Prints ONE line:
//   {nodes, rounds, failoverTicks, tickRate, failoverMs: {p50, p99, max}, roundsMs, lost, unanswered, load}
// --tick-rate R sets mesh.tickRate (default: the node's): a low one makes five nodes tick as a large mesh's do (every
// ⌈5 / (R · 0.777 s)⌉ ticks), where a dead home is found by probing it rather than by counting its silent intervals.
// Usage: npx tsx scripts/bench/failover.ts [--rounds 8] [--spends 3] [--failover-ticks 8] [--tick-rate R] [--give-up-s 60]
// (builds dist/ first: the nodes run the build).
import '../../src/polyfill.js';
import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { FaultCluster } from '../../test/helpers/fault/cluster.js';
import { numberArg, operatorBond, percentile, registerIdentity, root } from './lib.js';
import { helpFromHeader } from '../help.js';

helpFromHeader(import.meta.url);

const NODES = 5;
const BOND = 2;

let fresh = 0;
const computeBody = () => ({
  domain: 'mechanics',
  operators: ['KO42', 'MECH_KINETIC_ENERGY'],
  inputs: { mass_kg: 1 + (fresh++ % 100_000) / 1000, velocity_m_s: 3 },
});

async function request(url: string, method: string, path: string, key: string, body?: unknown, extra: Record<string, string> = {}) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { ...extra, authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, body: (await res.json().catch(() => null)) as Record<string, any> | null };
}

async function until<T>(what: string, ms: number, fn: () => Promise<T | null | undefined | false>): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => null);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function main(): Promise<void> {
  const rounds = Math.max(1, numberArg('rounds', 8));
  const spends = Math.max(1, numberArg('spends', 3));
  const failoverTicks = numberArg('failover-ticks', 8);
  const giveUpMs = numberArg('give-up-s', 60) * 1000;
  const tickRate = process.argv.includes('--tick-rate') ? numberArg('tick-rate', 8) : null;
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit' });
  const cluster = await FaultCluster.start({
    nodes: NODES,
    env: {
      SVC_INITIAL_CREDITS: '100000',
      SVC_CONTRIBUTION_BOND_ENVELOPES: String(BOND),
      SVC_CUSTODY_REPLICAS: '3',
      SVC_CUSTODY_FAILOVER_TICKS: String(failoverTicks),
      ...(tickRate === null ? {} : { SVC_MESH_TICK_RATE: String(tickRate) }),
      SVC_LOG_LEVEL: 'error',
    },
  });
  const times: number[] = [];
  let lost = 0;
  let unanswered = 0;
  try {
    // Every node's operator bonds, so every node is a member and every identity's set is three.
    for (let i = 0; i < NODES; i++) {
      const url = cluster.url(i);
      const op = await registerIdentity(url, `failover-operator-${i}`);
      for (let k = 0; k < BOND; k++)
        if ((await request(url, 'POST', '/api/svc/compute', op.key, computeBody())).status !== 200) throw new Error('operator seal');
      const bonded = await request(url, 'POST', '/api/contribute/bond', op.key, {}, operatorBond(cluster.specs[i]!.dataDir));
      if (bonded.status !== 201) throw new Error(`bond at node ${i}: ${JSON.stringify(bonded.body)}`);
    }
    for (let r = 0; r < rounds; r++) {
      const home = r % NODES;
      const id = await registerIdentity(cluster.url(home), `failover-caller-${r}`);
      await until('a custody set of three', 60_000, async () => {
        const s = await request(cluster.url(home), 'GET', `/api/mesh/custody/${id.zid}`, id.key);
        return s.status === 200 && s.body!.custodians.length === 3;
      });
      // The other nodes must know the identity (its assertion) before the home dies, or none can forward for it.
      const others = cluster.up().filter((i) => i !== home);
      await until('the identity known everywhere', 30_000, async () =>
        (await Promise.all(others.map((i) => request(cluster.url(i), 'GET', '/api/tally/balance', id.key)))).every((b) => b.status === 200),
      );
      for (let k = 0; k < spends; k++) {
        const s = await request(cluster.url(home), 'POST', '/api/svc/compute', id.key, computeBody());
        if (s.status !== 200) throw new Error(`spend at the home answered ${s.status}: ${JSON.stringify(s.body)}`);
      }
      const before = (await request(cluster.url(home), 'GET', '/api/tally/balance', id.key)).body!.total as number;
      await cluster.kill(home);
      const t0 = performance.now();
      let served: { node: number; cost: number } | null = null;
      for (let k = 0; served === null && performance.now() - t0 < giveUpMs; k++) {
        const via = others[k % others.length]!;
        const s = await request(cluster.url(via), 'POST', '/api/svc/compute', id.key, computeBody()).catch(() => null);
        if (s?.status === 200) served = { node: via, cost: s.body!.tally_charge.cost as number };
        else await new Promise((res) => setTimeout(res, 100));
      }
      if (served === null) unanswered++;
      else {
        times.push(performance.now() - t0);
        const after = (await request(cluster.url(served.node), 'GET', '/api/tally/balance', id.key)).body!.total as number;
        if (after !== before - served.cost) lost++;
      }
      await cluster.startNode(home);
    }
    const round = (x: number) => Math.round(x);
    console.log(
      JSON.stringify({
        nodes: NODES,
        rounds,
        failoverTicks,
        tickRate,
        failoverMs: { p50: round(percentile(times, 50)), p99: round(percentile(times, 99)), max: round(Math.max(...times)) },
        roundsMs: times.map(round),
        lost,
        unanswered,
        load: loadavg().map((x) => Math.round(x * 100) / 100),
      }),
    );
  } finally {
    await cluster.destroy();
  }
}

await main();

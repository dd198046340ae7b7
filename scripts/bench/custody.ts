// Custody benchmark: durable (fsync) sealed computes of an identity whose custody set is three nodes (R = 3: every
// write waits for one of two custodians to sign it, protocol.md §19) against the same computes at a node whose
// identities are held by their home alone (R = 1), in one run on one cluster of four node processes: A (R = 3), D
// (R = 1), and B and C, whose bonded operators make them A's custodians. Fresh inputs on every request (a new mass
// each time), `concurrency` requests in flight, the runs split into rounds alternating A and D, so both figures are
// taken under the same machine conditions. Prints ONE JSON line:
//   {nodes, replicas, runs, concurrency, r3PerSec, r1PerSec, ratio, custodyBatches, load}
// Usage: npx tsx scripts/bench/custody.ts [--runs 1200] [--concurrency 32] [--rounds 6]
import '../../src/polyfill.js';
import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { type BenchNode, inFlight, numberArg, operatorBond, postJson, registerIdentity, root, startNodeProcess } from './lib.js';
import { helpFromHeader } from '../help.js';

helpFromHeader(import.meta.url);

const SECRET = 'bench-custody-secret-0123456789abcdef';
const BOND = 3;

/** A node of the cluster: `replicas` custodians per identity homed there, durable writes, bonds of BOND envelopes. */
function processNode(replicas: number, bootstrap: string[]): Promise<BenchNode> {
  return startNodeProcess({
    secret: SECRET,
    bootstrap,
    env: {
      SVC_SYNC_WRITES: 'true',
      SVC_SOLVER_THREADS: '0',
      SVC_CONTRIBUTION_BOND_ENVELOPES: String(BOND),
      SVC_CUSTODY_REPLICAS: String(replicas),
      // Throughput, not the availability bound: a loaded machine may hold a batch past the default 2 s.
      SVC_CUSTODY_CERTIFY_TIMEOUT_MS: '15000',
    },
    // Four processes start on a machine that may be shared: a start is slow, not failed.
    startMs: 180_000,
  });
}

let fresh = 0;
const computeBody = () => ({
  domain: 'mechanics',
  operators: ['KO42', 'MECH_KINETIC_ENERGY'],
  inputs: { mass_kg: 1 + (fresh++ % 100_000) / 1000, velocity_m_s: 3 },
});

/** `runs` sealed computes at `concurrency` in flight; computes per second. */
async function phase(url: string, key: string, runs: number, concurrency: number): Promise<number> {
  const t0 = performance.now();
  await inFlight(runs, concurrency, () => postJson(url, '/api/svc/compute', key, computeBody()));
  return runs / ((performance.now() - t0) / 1000);
}

async function main(): Promise<void> {
  const runs = numberArg('runs', 1200);
  const concurrency = numberArg('concurrency', 32);
  const rounds = Math.max(1, numberArg('rounds', 6));
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit' });
  const nodes: BenchNode[] = [];
  try {
    const a = await processNode(3, []);
    nodes.push(a);
    const b = await processNode(3, [a.multiaddr]);
    nodes.push(b);
    const c = await processNode(3, [a.multiaddr, b.multiaddr]);
    nodes.push(c);
    const d = await processNode(1, [a.multiaddr, b.multiaddr, c.multiaddr]);
    nodes.push(d);
    for (const [n, seed] of [
      [b, 'operator-b'],
      [c, 'operator-c'],
    ] as const) {
      const op = await registerIdentity(n.url, seed);
      for (let i = 0; i < BOND; i++) await postJson(n.url, '/api/svc/compute', op.key, computeBody());
      await postJson(n.url, '/api/contribute/bond', op.key, {}, operatorBond(n.dir));
    }
    const r3 = await registerIdentity(a.url, 'caller-a');
    const r1 = await registerIdentity(d.url, 'caller-d');
    const deadline = Date.now() + 60_000;
    const setOf = async (n: BenchNode, zid: string) =>
      ((await (await fetch(`${n.url}/api/mesh/custody/${zid}`)).json()) as { custodians: string[] }).custodians;
    while ((await setOf(a, r3.zid)).length !== 3) {
      if (Date.now() > deadline) throw new Error("A's identity never had three custodians");
      await new Promise((r) => setTimeout(r, 200));
    }
    if ((await setOf(d, r1.zid)).length !== 1) throw new Error("D's identity is not held by D alone");
    // Warm both (connections, caches), then alternate.
    await phase(a.url, r3.key, 50, concurrency);
    await phase(d.url, r1.key, 50, concurrency);
    const per = Math.floor(runs / rounds);
    let tA = 0;
    let tD = 0;
    for (let i = 0; i < rounds; i++) {
      tA += per / (await phase(a.url, r3.key, per, concurrency));
      tD += per / (await phase(d.url, r1.key, per, concurrency));
    }
    const r3PerSec = (per * rounds) / tA;
    const r1PerSec = (per * rounds) / tD;
    const certified = (await (await fetch(`${a.url}/api/mesh/custody/${r3.zid}`)).json()) as { certified_seq: number };
    console.log(
      JSON.stringify({
        nodes: nodes.length,
        replicas: { a: 3, d: 1 },
        durable: true,
        runs: per * rounds,
        concurrency,
        r3PerSec: Math.round(r3PerSec * 10) / 10,
        r1PerSec: Math.round(r1PerSec * 10) / 10,
        ratio: Math.round((r3PerSec / r1PerSec) * 1000) / 1000,
        certifiedSeq: certified.certified_seq,
        load: loadavg().map((x) => Math.round(x * 100) / 100),
      }),
    );
  } finally {
    await Promise.all(nodes.map((n) => n.stop()));
  }
}

await main();

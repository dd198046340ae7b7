// Failover benchmark: five node processes on 127.0.0.1 (the fault harness's: the build, durable writes), every
// operator bonded so every custody set is three. Each round registers an identity on node r, funds it and spends,
// SIGKILLs node r, then a client spends through another node (forwarded to the identity's home) every 100 ms until one
// is answered 200: the time from the kill to that first certified write at the new home is the round's figure. The
// killed node is started again before the next round. Needs `npm run build`.
// Prints ONE JSON line: {rounds, failoverTicks, tickMs, failoverMs: {p50, p99, each}}.
// Usage: npx tsx scripts/bench/failover.ts [--rounds 3] [--failover-ticks 4]
import { createHash } from 'node:crypto';
import { TICK_MS } from '../../src/util/time.js';
import { FaultCluster } from '../../test/helpers/fault/cluster.js';
import { SPEND_BODY, request } from '../../test/helpers/fault/workload.js';
import { bond, grant } from '../../test/helpers/custody.js';
import { identityKey, numberArg, percentile } from './lib.js';

const ROUNDS = numberArg('rounds', 3);
const FAILOVER_TICKS = numberArg('failover-ticks', 4);
const NODES = 5;
/** How long a round may take before the bench gives up on it. */
const ROUND_WITHIN_MS = 60_000;

async function waitUntil(what: string, fn: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + ROUND_WITHIN_MS;
  while (!(await fn().catch(() => false))) {
    if (Date.now() > end) throw new Error(`not within ${ROUND_WITHIN_MS} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const custodiansAt = async (url: string, zid: string): Promise<number> => {
  const r = await request(url, 'GET', `/api/mesh/custody/${zid}`);
  return r.status === 200 ? (r.body as { custodians: string[] }).custodians.length : 0;
};

const cluster = await FaultCluster.start({
  nodes: NODES,
  env: { SVC_CONTRIBUTION_BOND_ENVELOPES: '3', SVC_CUSTODY_FAILOVER_TICKS: String(FAILOVER_TICKS), SVC_CUSTODY_CERTIFY_TIMEOUT_MS: '3000' },
});
const figures: number[] = [];
try {
  const nodes = cluster.specs.map((s) => ({ url: cluster.url(s.index), dataDir: s.dataDir }));
  await Promise.all(nodes.map((n, i) => bond(n, `bench-failover-operator-${i}`, 0)));
  for (let round = 0; round < ROUNDS; round++) {
    const home = round % NODES;
    const url = cluster.url(home);
    const equation = createHash('sha256').update(`bench failover ${round}`).digest('hex');
    const reg = await request(url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: equation });
    if (reg.status !== 201) throw new Error(`register: ${reg.status}`);
    const zid = (reg.body as { zid: string }).zid;
    await waitUntil('custody sets of three', async () => (await custodiansAt(url, zid)) === 3);
    const key = await identityKey(url, equation);
    await grant(nodes[home]!, zid, 20);
    for (let i = 0; i < 2; i++) {
      const r = await request(url, 'POST', '/api/svc/compute', SPEND_BODY, key);
      if (r.status !== 200) throw new Error(`spend at the home: ${r.status}`);
    }
    const via = (home + 1) % NODES;
    await waitUntil('the identity known at the forwarding node', async () => (await custodiansAt(cluster.url(via), zid)) === 3);
    await cluster.kill(home);
    const killedAt = Date.now();
    await waitUntil(
      'a spend certified at the new home',
      async () => (await request(cluster.url(via), 'POST', '/api/svc/compute', SPEND_BODY, key)).status === 200,
    );
    figures.push(Date.now() - killedAt);
    await cluster.startNode(home);
  }
} finally {
  await cluster.destroy();
}
console.log(
  JSON.stringify({
    rounds: ROUNDS,
    failoverTicks: FAILOVER_TICKS,
    tickMs: Math.round(TICK_MS),
    failoverMs: { p50: percentile(figures, 50), p99: percentile(figures, 99), each: figures },
  }),
);

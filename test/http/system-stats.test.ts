// The machine's health (GET /api/system/stats, and the same sample in /metrics): one standalone node, sampled by
// hand (machineSampleMs 0), so the figures between two samples are exactly the traffic the test sends. Its own
// seals are counted and listed (no mesh to hear them from), its own bond shows with its size and state. A peer
// started with another mesh secret shows as misconfigured, by its refused handshakes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, operatorBond, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { parsePrometheus, value, type Sample } from '../helpers/prometheus.js';
import { peerHealth, quantileMs } from '../../src/http/machine-stats.js';
import { waitUntil } from '../helpers/wait.js';

const BOND = 2;
const COMPUTE = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } };

let n: TestNode;
let id: { zid: string; key: string };

const stats = async () => {
  const r = await call(n.url, 'GET', '/api/system/stats');
  expect(r.status, r.text).toBe(200);
  return r.body;
};
const scrape = async (): Promise<Sample[]> => {
  const res = await fetch(n.node.metricsUrl!);
  expect(res.status).toBe(200);
  return parsePrometheus(await res.text()).samples;
};

beforeAll(async () => {
  n = await startTestNode(
    { solverThreads: 0, sealWorker: false, metrics: { port: 0 }, contribution: { bondEnvelopes: BOND, offload: 'never' } },
    { machineSampleMs: 0 },
  );
  id = await zkIdentity(n.url, 'system-stats');
  // Own seals are listed only when their owner publishes them.
  expect((await call(n.url, 'POST', '/api/tally/settings/publish-default', { publish_default: true }, bearer(id.key))).status).toBe(200);
}, 30_000);
afterAll(async () => {
  await n?.destroy();
});

describe('GET /api/system/stats', () => {
  it('counts a seal whose owner does not publish it without listing it: its value is not shown', async () => {
    const quiet = await zkIdentity(n.url, 'system-stats-private');
    await n.node.machine.sample();
    const before = await stats();
    const r = await call(n.url, 'POST', '/api/svc/compute', COMPUTE, bearer(quiet.key));
    expect(r.status, r.text).toBe(200);
    await n.node.machine.sample();
    const after = await stats();
    expect(after.seals.sealed_here - before.seals.sealed_here).toBe(1);
    expect(after.seals.recent.map((s: { result_id: string }) => s.result_id)).not.toContain(r.body.result_id);
    expect(after.seals.recent).toEqual(before.seals.recent);
  });

  it('moves with traffic: requests by group and class, the latency histogram, seals — the same figures in /metrics', async () => {
    await n.node.machine.sample();
    const before = await stats();
    const scrapedBefore = await scrape();
    const okCount = 7;
    const badCount = 3;
    const ids: string[] = [];
    for (let i = 0; i < okCount; i++) {
      const r = await call(n.url, 'POST', '/api/svc/compute', COMPUTE, bearer(id.key));
      expect(r.status, r.text).toBe(200);
      ids.push(r.body.result_id);
    }
    for (let i = 0; i < badCount; i++) {
      const r = await call(n.url, 'POST', '/api/svc/compute', { ...COMPUTE, domain: 'astrology' }, bearer(id.key));
      expect(r.status).toBe(400);
    }
    await n.node.machine.sample();
    const after = await stats();
    const m0 = before.machine;
    const m1 = after.machine;
    // Between the two samples: the traffic above and the first GET of the stats (the dashboard group).
    expect(m1.requests.total - m0.requests.total).toBe(okCount + badCount + 1);
    const compute0 = m0.requests.by_group.compute ?? { total: 0, by_class: { '2xx': 0, '4xx': 0 } };
    const compute1 = m1.requests.by_group.compute;
    expect(compute1.total - compute0.total).toBe(okCount + badCount);
    expect(compute1.by_class['2xx'] - compute0.by_class['2xx']).toBe(okCount);
    expect(compute1.by_class['4xx'] - compute0.by_class['4xx']).toBe(badCount);
    expect(m1.requests.by_group.dashboard.total - (m0.requests.by_group.dashboard?.total ?? 0)).toBe(1);
    // The window (under a minute old, so since the start): its counts are the totals, its rates per minute follow.
    expect(compute1.window).toMatchObject({ requests: compute1.total, errors: compute1.by_class['4xx'] });
    expect(compute1.window.by_class['4xx']).toBe(compute1.by_class['4xx']);
    // (window_s is shown rounded, so the rate is compared within 1 %.)
    const perMinute = (compute1.total / m1.window_s) * 60;
    expect(Math.abs(compute1.window.per_minute - perMinute) / perMinute).toBeLessThan(0.01);
    expect(m1.requests.window.errors_per_minute).toBeGreaterThan(0);
    // The histogram holds every request once; the percentiles come from it.
    const counted = (m: typeof m1) => m.requests.histogram.counts.reduce((a: number, b: number) => a + b, 0);
    expect(counted(m1) - counted(m0)).toBe(okCount + badCount + 1);
    expect(counted(m1)).toBe(m1.requests.total);
    expect(m1.requests.histogram.le_s.at(-1)).toBe('+Inf');
    expect(m1.requests.latency_ms.p50).toBeGreaterThan(0);
    expect(m1.requests.latency_ms.p99).toBeGreaterThanOrEqual(m1.requests.latency_ms.p50);
    // The machine itself.
    expect(m1.memory.rss_bytes).toBeGreaterThan(m1.memory.heap_used_bytes);
    expect(m1.disk.data_dir_bytes).toBeGreaterThan(0);
    expect(m1.disk.free_bytes).toBeGreaterThan(0);
    expect(m1.disk.total_bytes).toBeGreaterThanOrEqual(m1.disk.free_bytes);
    expect(m1.cpu.percent).toBeGreaterThanOrEqual(0);
    expect(m1.cpu.user_s).toBeGreaterThan(0);
    expect(Object.keys(m1.queues).sort()).toEqual([
      'consensus_deliveries',
      'sealing',
      'settlements',
      'solver_waiting',
      'store_commits',
      'transfers',
      'webhooks',
    ]);
    expect(m1.peers).toEqual([]);
    expect(after.history.length).toBe(before.history.length + 1);
    expect(after.history.at(-1).requests_per_minute).toBeGreaterThan(0);
    // Own seals: counted and listed, newest first.
    expect(m1.sealed_here - m0.sealed_here).toBe(okCount);
    expect(after.seals.sealed_here).toBe(m1.sealed_here);
    expect(after.seals.recent.slice(0, okCount).map((s: { result_id: string }) => s.result_id)).toEqual([...ids].reverse());
    expect(after.seals.recent[0]).toMatchObject({ kind: 'compute', value: 9, unit: 'J' });
    expect(after.warnings).toEqual([]);
    expect(after.mesh).toBe(false);

    // /metrics: the request counters and histogram moved by the same amounts; the svc_machine_* gauges are the sample.
    const scraped = await scrape();
    const delta = (name: string, labels: Record<string, string>) => value(scraped, name, labels) - value(scrapedBefore, name, labels);
    expect(delta('svc_http_requests_total', { route: '/api/svc/compute', status: '200' })).toBe(okCount);
    expect(delta('svc_http_requests_total', { route: '/api/svc/compute', status: '400' })).toBe(badCount);
    expect(delta('svc_http_request_duration_seconds_count', { route: '/api/svc/compute' })).toBe(okCount + badCount);
    expect(value(scraped, 'svc_machine_requests_window', { class: '4xx' })).toBe(m1.requests.window.by_class['4xx']);
    expect(value(scraped, 'svc_machine_requests_window', { class: '2xx' })).toBe(m1.requests.window.by_class['2xx']);
    expect(value(scraped, 'svc_machine_requests_per_minute', { group: 'compute', class: '4xx' })).toBeCloseTo(
      (compute1.window.by_class['4xx'] / m1.window_s) * 60,
      1,
    );
    expect(value(scraped, 'svc_machine_latency_seconds', { quantile: '0.99' })).toBeCloseTo(m1.requests.latency_ms.p99 / 1000, 9);
    expect(value(scraped, 'svc_machine_memory_bytes', { kind: 'rss' })).toBe(m1.memory.rss_bytes);
    expect(value(scraped, 'svc_machine_data_dir_bytes')).toBe(m1.disk.data_dir_bytes);
    expect(value(scraped, 'svc_machine_disk_free_bytes')).toBe(m1.disk.free_bytes);
    expect(value(scraped, 'svc_machine_sealed_here')).toBe(m1.sealed_here);
    expect(value(scraped, 'svc_machine_cpu_percent')).toBe(m1.cpu.percent);
    expect(value(scraped, 'svc_machine_queue_depth', { queue: 'webhooks' })).toBe(m1.queues.webhooks);
    expect(scraped.some((s) => s.name === 'svc_machine_event_loop_delay_seconds' && s.labels.quantile === '0.99')).toBe(true);
  });

  it('shows the node’s own bond and mode: none, then its envelopes, active', async () => {
    expect((await stats()).bond).toBeNull();
    expect((await stats()).mode).toBe('idle');
    const bond = await call(n.url, 'POST', '/api/contribute/bond', {}, { ...bearer(id.key), ...operatorBond(n) });
    expect(bond.status, bond.text).toBe(201);
    expect((await stats()).bond).toEqual({
      bond_id: bond.body.bond_id,
      zid: id.zid,
      envelopes: BOND,
      svcond: expect.any(Number),
      state: 'active',
      slashed: false,
      slash_state: null,
      challenge_id: null,
    });
  });
});

describe('peers by health', () => {
  it('a peer with another mesh secret: its gossip refused on the handshake, shown as misconfigured', async () => {
    const mesh = (secret: string, bootstrap: string[]) => ({
      solverThreads: 0,
      sealWorker: false,
      metrics: { port: 0 },
      mesh: { secret, p2pPort: 0, bootstrap, tickEvery: 1 },
    });
    const a = await startTestNode(mesh('stats-mesh-secret-0123456789abcdef', []), { machineSampleMs: 0 });
    const b = await startTestNode(mesh('another-mesh-secret-0123456789abcdef', [a.node.mesh.multiaddrs()[0]!]), { machineSampleMs: 0 });
    try {
      const seen = await waitUntil(
        async () => (await a.node.machine.sample()).peers.find((p) => p.peer_id === b.node.nodeId && p.health === 'misconfigured'),
        'the other-secret peer shown as misconfigured',
        30_000,
        200,
      );
      expect(seen.handshake_failures).toBeGreaterThan(0);
      expect(seen.last_tick).toBeNull();
      const r = await call(a.url, 'GET', '/api/system/stats');
      expect(r.body.machine.peers.find((p: { peer_id: string }) => p.peer_id === b.node.nodeId)).toMatchObject({ health: 'misconfigured' });
      const res = await fetch(a.node.metricsUrl!);
      expect(value(parsePrometheus(await res.text()).samples, 'svc_machine_peers', { health: 'misconfigured' })).toBe(1);
    } finally {
      await b.destroy();
      await a.destroy();
    }
  }, 60_000);
});

describe('machine figures', () => {
  it('a peer’s health from its last tick against its interval, and its refused handshakes', () => {
    const p = (connected: boolean, ticksSinceHeard: number | null, handshakeFailures = 0) =>
      peerHealth({ connected, ticksSinceHeard, intervalTicks: 4, handshakeFailures });
    expect(p(true, 3)).toBe('live');
    expect(p(true, 9)).toBe('live');
    expect(p(true, 10)).toBe('late');
    expect(p(false, 30)).toBe('late');
    expect(p(false, 33)).toBe('dead');
    expect(p(true, null)).toBe('silent');
    expect(p(false, null)).toBe('dead');
    expect(p(true, null, 5)).toBe('misconfigured');
    expect(p(true, 40, 5)).toBe('misconfigured');
    expect(p(true, 2, 5)).toBe('live');
  });

  it('latency quantiles from the bounded histogram, interpolated within a bucket', () => {
    // Buckets: ≤0.5 ms, ≤1 ms, ≤2.5 ms, …
    expect(quantileMs([0, 0, 0], 0.5)).toBeNull();
    expect(quantileMs([0, 10, 0], 0.5)).toBeCloseTo(0.75, 6);
    expect(quantileMs([0, 10, 0], 0.99)).toBeCloseTo(0.995, 6);
    expect(quantileMs([99, 0, 1], 0.99)).toBeCloseTo(0.5, 6);
    expect(quantileMs([99, 0, 1], 1)).toBeCloseTo(2.5, 6);
  });
});

// GET /metrics on the metrics listener (never the API port): Prometheus text that parses, node metrics that move
// with traffic, libp2p's own metrics beside them. Two in-process nodes in one mesh.
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestNode, zkIdentity, bearer, type TestNode } from '../helpers/node.js';
import { waitUntil } from '../helpers/wait.js';
import { parsePrometheus, value, type Sample } from '../helpers/prometheus.js';

const MESH_SECRET = 'metrics-test-secret-0123456789abcdef';

async function scrape(n: TestNode): Promise<{ types: Map<string, string>; samples: Sample[] }> {
  const res = await fetch(n.node.metricsUrl!);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheus(await res.text());
}

const waitFor = <T>(fn: () => Promise<T | null | false | undefined> | T | null | false | undefined, what: string, timeoutMs = 15_000) =>
  waitUntil(fn, what, timeoutMs, 100);

let a: TestNode;
let b: TestNode;
const config = (bootstrap: string[]) => ({ metrics: { port: 0 }, mesh: { secret: MESH_SECRET, p2pPort: 0, bootstrap, tickEvery: 1 } });

beforeAll(async () => {
  a = await startTestNode(config([]), { mesh: { redialMinMs: 100, redialMaxMs: 1000 } });
  b = await startTestNode(config([a.node.mesh.multiaddrs()[0]!]), { mesh: { redialMinMs: 100, redialMaxMs: 1000 } });
}, 60_000);
afterAll(async () => {
  await Promise.all([a, b].map((n) => n?.destroy()));
});

describe('GET /metrics', () => {
  it('is served on the metrics listener only, not on the API port', async () => {
    expect(a.node.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect(new URL(a.node.metricsUrl!).port).not.toBe(new URL(a.url).port);
    expect((await call(a.url, 'GET', '/metrics')).status).toBe(404);
    const other = await fetch(a.node.metricsUrl!.replace('/metrics', '/api/health'));
    expect(other.status).toBe(404);
    // Its errors are in the part-7 shape too.
    const e = ((await other.json()) as { error: Record<string, unknown> }).error;
    expect(e).toMatchObject({ code: 'SVC_NOT_FOUND', status: 404 });
    expect(e.trace_id).toBe(other.headers.get('x-trace-id'));
    const post = await fetch(a.node.metricsUrl!, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(((await post.json()) as { error: { code: string } }).error.code).toBe('SVC_METHOD_NOT_ALLOWED');
  });

  it('parses, and its counters move with traffic: requests by route and status, seals, solver runs, store batches, gossip, peers, libp2p', async () => {
    const before = (await scrape(a)).samples;
    const id = await zkIdentity(a.url, 'metrics');
    for (let i = 0; i < 3; i++) expect((await call(a.url, 'GET', '/api/health')).status).toBe(200);
    expect((await call(a.url, 'GET', `/api/tally/envelopes/${'zid_' + '0'.repeat(32)}`)).status).toBe(401);
    const sealed = await call(
      a.url,
      'POST',
      '/api/svc/compute',
      { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } },
      bearer(id.key),
    );
    expect(sealed.status, sealed.text).toBe(200);
    const heat = await call(a.url, 'POST', '/api/svc/heat', {}, bearer(id.key));
    expect(heat.status, heat.text).toBe(200);

    const { types, samples } = await waitFor(async () => {
      const s = await scrape(a);
      return value(s.samples, 'svc_mesh_peers', { state: 'connected' }) >= 1 && value(s.samples, 'svc_gossip_verdicts_total', { verdict: 'accept' }) > 0
        ? s
        : null;
    }, 'a peer and an accepted gossip message');
    const delta = (name: string, labels: Record<string, string> = {}) => value(samples, name, labels) - value(before, name, labels);
    expect(delta('svc_http_requests_total', { method: 'GET', route: '/api/health', status: '200' })).toBe(3);
    // A parameterised route is labelled by its template, not the raw path.
    expect(delta('svc_http_requests_total', { route: '/api/tally/envelopes/:zid', status: '401' })).toBe(1);
    expect(delta('svc_http_request_duration_seconds_count', { method: 'POST', route: '/api/svc/compute' })).toBe(1);
    expect(delta('svc_seals_total', { kind: 'compute' })).toBe(1);
    expect(delta('svc_seals_total', { kind: 'solver' })).toBe(1);
    expect(delta('svc_solver_runs_total', { solver: 'heat', outcome: 'ok' })).toBe(1);
    expect(delta('svc_solver_run_seconds_count', { solver: 'heat' })).toBe(1);
    expect(delta('svc_store_commit_seconds_count')).toBeGreaterThanOrEqual(3);
    expect(delta('svc_store_batch_ops_sum')).toBeGreaterThanOrEqual(delta('svc_store_batch_ops_count'));
    expect(value(samples, 'svc_tick')).toBeGreaterThan(0);
    expect(types.get('svc_http_request_duration_seconds')).toBe('histogram');
    expect(types.get('svc_gate_refusals_total')).toBe('counter');
    expect(types.get('svc_verdicts')).toBe('gauge');
    expect(samples.some((s) => s.name === 'svc_verdicts' && s.labels.outcome === 'upheld')).toBe(true);
    // Custody's parts, by event.
    expect(types.get('svc_custody_events_total')).toBe('counter');
    const custodyEvents = samples.filter((s) => s.name === 'svc_custody_events_total').map((s) => `${s.labels.part}.${s.labels.event}`);
    expect(custodyEvents).toEqual(
      expect.arrayContaining([
        'replicator.certified',
        'custodian.catch_ups',
        'failover.taken',
        'probes.failed',
        'set_changes.handed_over',
        'set_changes.passes',
        'set_changes.owed_handed_over',
      ]),
    );
    expect(types.get('process_cpu_user_seconds_total')).toBe('counter');
    // libp2p's own metrics (@libp2p/prometheus-metrics).
    expect([...types.keys()].some((k) => k.startsWith('libp2p_'))).toBe(true);
    expect(value(samples, 'libp2p_connection_manager_connections')).toBeGreaterThanOrEqual(1);
  }, 60_000);
});

describe('layering', () => {
  it('no domain service imports prom-client or the metrics module', () => {
    const src = resolve(__dirname, '../../src');
    const offenders: string[] = [];
    for (const dir of ['compute', 'identity', 'tally', 'chain', 'mesh', 'consensus', 'store', 'kernel', 'solvers', 'numerics']) {
      for (const f of readdirSync(join(src, dir), { recursive: true }) as string[]) {
        if (!f.endsWith('.ts')) continue;
        const text = readFileSync(join(src, dir, f), 'utf8');
        if (/from '(prom-client|@libp2p\/prometheus-metrics)'|http\/metrics/.test(text)) offenders.push(`${dir}/${f}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});

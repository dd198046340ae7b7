// Keyless system routes: health, discovery, clock, pulse (JSON and SSE), kernel, operators, library.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectError, startTestNode, type TestNode } from '../helpers/node.js';
import { TICK_NS } from '../../src/kernel/clock.js';
import { SPEC_ROUTES } from '../../src/http/spec-routes.js';

let t: TestNode;
beforeAll(async () => {
  t = await startTestNode();
});
afterAll(async () => t.destroy());

describe('system routes', () => {
  it('GET /api/health is live', async () => {
    const r = await call(t.url, 'GET', '/api/health');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ ok: true, status: 'live', node: t.node.nodeId, kernel_version: '1.287.6' });
    expect(Number.isInteger(r.body.svcond)).toBe(true);
  });

  it('GET /api is the keyless discovery object', async () => {
    const r = await call(t.url, 'GET', '/api');
    expect(Object.keys(r.body)).toEqual(expect.arrayContaining(['ok', 'counts', 'endpoints', 'not_here']));
    expect(r.body.counts.categories).toBe(8);
    expect(r.body.counts.keys).toBe(5);
    expect(r.body.counts.solvers).toBe(t.node.compute.registry.ids().length);
    expect(r.body.counts.libraries).toBeGreaterThan(60);
    expect(r.body.endpoints).toContainEqual({ method: 'POST', path: '/api/svc/compute' });
    expect(r.body.endpoints).toContainEqual({ method: 'QUERY', path: '/api/svc/lib-search' });
    expect(Array.isArray(r.body.not_here)).toBe(true);
  });

  it('GET /api/tally/clock gives the exact and display tick', async () => {
    const r = await call(t.url, 'GET', '/api/tally/clock');
    expect(r.body).toMatchObject({ zeqond_sec: 0.777, zeqond_sec_exact: 0.777000777, zeqond_ns: 777000777, pulse_hz: 1.287 });
    expect(BigInt(r.body.unix_ns) / TICK_NS).toBe(BigInt(r.body.svcond));
    // The tick number agrees with the wall clock: floor(now / T) (not now / 0.777).
    const expected = Math.floor((Date.now() * 1e6) / 777000777);
    expect(Math.abs(r.body.svcond - expected)).toBeLessThanOrEqual(2);
  });

  it('GET /api/svc/pulse: R_t within 1e-3 and consistent with the phase', async () => {
    const r = await call(t.url, 'GET', '/api/svc/pulse');
    expect(r.body.R_t).toBeCloseTo(1 + 1e-3 * Math.sin(2 * Math.PI * r.body.phase), 12);
    expect(r.body.next_tick_in_ms).toBeGreaterThan(0);
    expect(r.body.next_tick_in_ms).toBeLessThanOrEqual(777.000777);
  });

  it('GET /api/svc/pulse/stream sends one SSE event per tick', async () => {
    const res = await fetch(`${t.url}/api/svc/pulse/stream`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = res.body!.getReader();
    const events: { svcond: number }[] = [];
    let buffer = '';
    const started = Date.now();
    while (events.length < 3 && Date.now() - started < 5000) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += new TextDecoder().decode(value);
      let idx: number;
      while ((idx = buffer.indexOf('\n\n')) >= 0) {
        const chunk = buffer.slice(0, idx);
        buffer = buffer.slice(idx + 2);
        const lines = chunk.split('\n');
        const data = lines.find((l) => l.startsWith('data:'));
        if (lines.some((l) => /^event: ?tick$/.test(l)) && data) events.push(JSON.parse(data.slice(5)));
      }
    }
    await reader.cancel();
    expect(events.length).toBe(3);
    expect(events[2]!.svcond - events[1]!.svcond).toBe(1);
  });

  it('GET /api/operators and /categories list the §6 registry', async () => {
    const ops = await call(t.url, 'GET', '/api/operators');
    expect(ops.body.count).toBe(60);
    expect(ops.body.operators[0]).toMatchObject({ id: 'KO42', domain: 'all' });
    expect(ops.body.operators).toContainEqual({
      id: 'MECH_KINETIC_ENERGY',
      domain: 'mechanics',
      formula: expect.any(String),
      inputs: [
        { key: 'mass_kg', unit: 'kg', default: 1, domain: { text: 'mass ≥ 0', min: 0, min_inclusive: true } },
        {
          key: 'velocity_m_s',
          unit: 'm/s',
          default: 1,
          domain: { text: '|v| < c = 299792458 m/s', min: -299792458, min_inclusive: false, max: 299792458, max_inclusive: false },
        },
      ],
      unit: 'J',
      result_domain: { text: 'energy ≥ 0', min: 0, min_inclusive: true },
    });
    const cats = await call(t.url, 'GET', '/api/operators/categories');
    expect(cats.body.categories).toHaveLength(8);
    expect(cats.body.categories.find((c: { domain: string }) => c.domain === 'finance').operators).toContain('FIN_BLACK_SCHOLES_CALL');
  });

  it('POST /api/svc/operator-spec gives accepted keys for an operator, a domain or a solver; QUERY too', async () => {
    const op = await call(t.url, 'POST', '/api/svc/operator-spec', { operator: 'EM_OHM_CURRENT' });
    expect(op.body.accepted_keys).toEqual(['voltage_V', 'resistance_ohm']);
    const dom = await call(t.url, 'QUERY', '/api/svc/operator-spec', { domain: 'biology' });
    expect(dom.status).toBe(200);
    expect(dom.body.accepted_keys).toContain('allele_frequency');
    const sol = await call(t.url, 'POST', '/api/svc/operator-spec', { solver: 'heat' });
    expect(sol.body.accepted_keys).toEqual(expect.arrayContaining(['mode', 'length_m', 'nx', 'fourier_number']));
    expectError(await call(t.url, 'POST', '/api/svc/operator-spec', { operator: 'NOPE' }), 400, 'SVC_INVALID_OPERATOR');
    expectError(await call(t.url, 'POST', '/api/svc/operator-spec', { domain: 'astrology' }), 400, 'SVC_INVALID_DOMAIN');
  });

  it('POST /api/svc/lib-search ranks the shipped catalogue; QUERY works the same', async () => {
    const r = await call(t.url, 'POST', '/api/svc/lib-search', { query: 'heat diffusion rod', limit: 3 });
    expect(r.body.results[0].id).toBe('heat');
    expect(r.body.results.length).toBeLessThanOrEqual(3);
    const q = await call(t.url, 'QUERY', '/api/svc/lib-search', { query: 'black scholes call', kind: 'operator' });
    expect(q.body.results[0].id).toBe('FIN_BLACK_SCHOLES_CALL');
    expect(q.body.results.every((e: { kind: string }) => e.kind === 'operator')).toBe(true);
    expectError(await call(t.url, 'POST', '/api/svc/lib-search', { query: '' }), 400, 'SVC_INVALID_INPUT');
  });

  it('GET /api/kernel, /api/kernel/prompt (markdown) and /api/system/capabilities', async () => {
    const k = await call(t.url, 'GET', '/api/kernel');
    expect(k.body).toMatchObject({
      version: '1.287.6',
      clock: { zeqond_ns: 777000777 },
      gate: { tolerance: 1e-3, precision_bound: 1e-4 },
      parity: { variance_threshold: 0.0091 },
    });
    const p = await call(t.url, 'GET', '/api/kernel/prompt');
    expect(p.headers.get('content-type')).toContain('text/markdown');
    expect(p.text).toMatch(/^# svc kernel v1\.287\.6/);
    expect(p.text).toContain('KO42');
    const c = await call(t.url, 'GET', '/api/system/capabilities');
    expect(c.body.methods).toContain('QUERY');
    expect(c.body.key_kinds).toEqual(['sk_', 'sk_test_', 'svc_ak_', 'zsm_', 'zsm_pub_']);
    expect(c.body.limits).toMatchObject({ keyless_prove_per_minute: 10, demo_key_per_day: 10, anonymous_compute_per_day: 5, max_operators: 10 });
  });
});

describe('discovery against the router', () => {
  type Endpoint = { method: string; path: string };
  const discovery = async (): Promise<{ endpoints: Endpoint[]; not_here: string[] }> => (await call(t.url, 'GET', '/api')).body;
  const shape = (p: string) => p.replace(/:[A-Za-z_]+/g, ':');
  /** Status of a request without a body (nothing runs on a route that does not exist). */
  const statusOf = async (method: string, path: string) => {
    const ac = new AbortController();
    const res = await fetch(t.url + path.replace(/:[A-Za-z_]+/g, 'x').replace(/\*$/, 'x'), { method, signal: ac.signal });
    ac.abort();
    return res.status;
  };

  it('capabilities advertises exactly the methods some route answers', async () => {
    const { endpoints } = await discovery();
    const routed = [...new Set(endpoints.map((e) => e.method))].sort();
    const c = await call(t.url, 'GET', '/api/system/capabilities');
    expect([...c.body.methods].sort()).toEqual(routed);
    expect(c.body.methods).toEqual(expect.arrayContaining(['GET', 'POST', 'QUERY']));
    expect(c.body.methods).toEqual(expect.arrayContaining(['PATCH', 'DELETE']));
  });

  it('not_here lists every spec route the router does not serve, and only those', async () => {
    const { endpoints, not_here } = await discovery();
    const servedBy = (method: string | null, path: string) =>
      (method === 'WS' && path === '/ws/stream') ||
      endpoints.some(
        (e) =>
          (method === null || e.method === method) &&
          (path.endsWith('/*') ? shape(e.path).startsWith(shape(path.slice(0, -1))) : shape(e.path) === shape(path)),
      );
    for (const r of SPEC_ROUTES) {
      const entry = r.method ? `${r.method} ${r.path}` : r.path;
      expect(not_here.includes(entry), entry).toBe(!servedBy(r.method, r.path));
    }
    // Webhooks are served (/api/webhooks): no longer listed as planned.
    expect(not_here).not.toContain('webhooks (planned, part 6)');
    expect(not_here).toHaveLength(SPEC_ROUTES.filter((r) => !servedBy(r.method, r.path)).length);
    // Served spec routes are not listed.
    for (const e of [
      'POST /api/svc/compute',
      'GET /api/tally/envelopes/:zid',
      '/api/dns/resolve',
      '/api/tally/clock',
      'GET /api/system/capabilities',
      'POST /api/svc/multibody',
      'GET /api/tally/record',
      'POST /api/svc/stream/channels',
      'GET /api/mcp',
      'POST /api/mcp',
      'GET /api/svc/mmio/registers',
      'POST /api/svc/reactor',
      '/api/svc/reactor/trajectory',
      'POST /api/genesis/execute',
      'GET /api/chain/aggregate/list',
      'PATCH /api/chain/:slug/settings',
      '/api/chain/:slug/contracts/*',
    ]) {
      expect(not_here).not.toContain(e);
    }
  });

  it('every not_here route really answers 404 or 405 (no route for that method)', async () => {
    const { not_here } = await discovery();
    for (const entry of not_here) {
      const [method, path] = entry.includes(' /') ? entry.split(' ') : [null, entry];
      if (!path!.startsWith('/api/')) continue; // WS /ws/stream is outside HTTP routing; webhooks have no path
      for (const m of method ? [method] : ['GET', 'POST']) expect([404, 405], `${m} ${path}`).toContain(await statusOf(m, path!));
    }
  });
});

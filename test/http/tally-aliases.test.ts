// Part 4.8's /api/tally/health and /api/tally/transparency: the liveness answer and the oracle's latest network
// snapshot under the tally prefix, the same answers as /api/health and /api/transparency/now.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestNode, type TestNode } from '../helpers/node.js';
import { verifySnapshot, type NetworkSnapshot } from '../../src/mesh/oracle.js';

const MESH_SECRET = 'tally-aliases-mesh-secret-0123456789';

describe('/api/tally/health', () => {
  let t: TestNode;
  beforeAll(async () => {
    t = await startTestNode();
  });
  afterAll(async () => t.destroy());

  it('answers what /api/health answers, keyless', async () => {
    const [alias, health] = [await call(t.url, 'GET', '/api/tally/health'), await call(t.url, 'GET', '/api/health')];
    expect(alias.status).toBe(200);
    const { svcond, uptime_s, ...rest } = alias.body;
    const { svcond: svcond2, uptime_s: _uptime, ...healthRest } = health.body;
    expect(rest).toEqual(healthRest);
    expect(rest).toMatchObject({ ok: true, status: 'live', node: t.node.nodeId });
    expect(Math.abs(svcond - svcond2)).toBeLessThanOrEqual(1);
    expect(Number.isInteger(uptime_s)).toBe(true);
  });

  it('is served, so discovery no longer lists it as not here', async () => {
    const r = await call(t.url, 'GET', '/api');
    expect(r.body.not_here).not.toContain('/api/tally/health');
    expect(r.body.not_here).not.toContain('/api/tally/transparency');
    expect(r.body.endpoints).toContainEqual({ method: 'GET', path: '/api/tally/health' });
    expect(r.body.endpoints).toContainEqual({ method: 'GET', path: '/api/tally/transparency' });
  });
});

describe('/api/tally/transparency on a mesh node', () => {
  let t: TestNode;
  beforeAll(async () => {
    t = await startTestNode({ mesh: { secret: MESH_SECRET, p2pPort: 0, bootstrap: [], tickEvery: 1 } });
  });
  afterAll(async () => t.destroy());

  it('is the latest signed network snapshot, the one /api/transparency/now gives', async () => {
    // A snapshot is written every 4 ticks (~3.1 s); the two reads agree when no new one lands between them.
    let alias: NetworkSnapshot | null = null;
    let now: NetworkSnapshot | null = null;
    for (const end = Date.now() + 15_000; Date.now() < end; await new Promise((r) => setTimeout(r, 200))) {
      const a = await call(t.url, 'GET', '/api/tally/transparency');
      const n = await call(t.url, 'GET', '/api/transparency/now');
      if (a.status === 200 && n.status === 200 && a.body.svcond === n.body.svcond) {
        [alias, now] = [a.body, n.body];
        break;
      }
    }
    expect(alias).not.toBeNull();
    expect(alias).toEqual(now);
    expect(alias!.node).toBe(t.node.nodeId);
    expect(await verifySnapshot(alias!)).toBe(true);
  });
});

// Tiers on two meshed nodes: a caller homed on A who calls B is computed at A (forwarded, the home-node rule), so
// its real tier applies there. B keeps no record of A's identities' tiers: had B computed the request, the caller
// would be free.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startNodePair, WITH_WORKERS, zkIdentity, type TestNode } from '../helpers/node.js';

const MESH_SECRET = 'tiers-cluster-secret-0123456789abcdef';
const RECEIPT_SECRET = 'cd'.repeat(32);
// About 1.2 s of CPU here: ten times the free tier's 0.1 s limit.
const HEAVY = { L: 24, max_sweeps: 20_000, target_rel_error: 1e-5 };
const BIG_HEAT = { nx: 503, t_end_s: 0.01 };

let a: TestNode;
let b: TestNode;
// The tier time limit is the worker pool's to enforce (a run on the calling thread is not cut).
const meshConfig = (bootstrap: string[]) => ({
  ...WITH_WORKERS,
  receiptSecret: RECEIPT_SECRET,
  mesh: { secret: MESH_SECRET, p2pPort: 0, bootstrap, tickEvery: 1 },
  limits: { enforceDailyQuota: true },
});
const opts = {
  mesh: { redialMinMs: 100, redialMaxMs: 1000 },
  initialCredits: 1000,
  tierTimeLimitSeconds: { free: 0.1 },
  tierDailyAllowance: { free: 4 },
};

beforeAll(async () => {
  [a, b] = await startNodePair(meshConfig, opts);
}, 120_000);
afterAll(async () => {
  await Promise.all([a, b].map((n) => n?.destroy()));
});

describe('tiers through a node that is not the home', () => {
  it("B serves A's identity at A: locked, timed and counted at its free tier until A's operator grants it professional", async () => {
    const id = await zkIdentity(a.url, 'tiers-any-node');
    // B learns the identity from A's assertion (gossip) or by asking its peers; either way it answers for it.
    const locked = await call(b.url, 'POST', '/api/svc/heat', BIG_HEAT, bearer(id.key));
    expect(locked.headers.get('x-svc-served-by')).toBe(a.node.nodeId);
    expect(expectError(locked, 403, 'SVC_TIER_LOCKED')).toMatchObject({
      required_tier: 'standard',
      current_tier: 'free',
      upgrade_url: `${a.url}/api/tally/tiers`,
    });
    const slow = await call(b.url, 'POST', '/api/svc/gauge', HEAVY, bearer(id.key));
    expect(slow.headers.get('x-svc-served-by')).toBe(a.node.nodeId);
    expect(expectError(slow, 500, 'SVC_TIMEOUT')).toMatchObject({ time_limit_seconds: 0.1, tier: 'free' });

    const token = (await readFile(join(a.dataDir, 'operator-token'), 'utf8')).trim();
    const g = await call(a.url, 'POST', '/api/tally/grants', { zid: id.zid, credits: 0, tier: 'professional' }, bearer(token));
    expect(g.status, g.text).toBe(201);
    // B has no tier for this identity (it never computes for it): the home's record is the one that counts.
    expect(b.node.tiers.of(id.zid)).toBe('free');
    expect(a.node.tiers.of(id.zid)).toBe('professional');

    const heat = await call(b.url, 'POST', '/api/svc/heat', BIG_HEAT, bearer(id.key));
    expect(heat.status, heat.text).toBe(200);
    expect(heat.headers.get('x-svc-served-by')).toBe(a.node.nodeId);
    expect(heat.body.node).toBe(a.node.nodeId);
    const gauge = await call(b.url, 'POST', '/api/svc/gauge', HEAVY, bearer(id.key));
    expect(gauge.status, gauge.text).toBe(200);
    expect(gauge.body.node).toBe(a.node.nodeId);
    // The allowance too: professional's 7 500, past free's 4 here.
    for (let i = 0; i < 3; i++) {
      const r = await call(
        b.url,
        'POST',
        '/api/svc/compute',
        { domain: 'thermodynamics', operators: ['KO42', 'THERMO_CARNOT_EFFICIENCY'], inputs: {} },
        bearer(id.key),
      );
      expect(r.status, r.text).toBe(200);
    }
    const usage = await call(b.url, 'GET', '/api/compute/usage', undefined, bearer(id.key));
    expect(usage.body).toMatchObject({ used: 5, tier: 'professional', daily_allowance: 7500 });
  }, 180_000);
});

// Tiers on real nodes over HTTP: the compute time limit, the daily allowance and the tier gates
// follow the caller's tier, which the operator's grant sets and the next request sees; a caller homed on another
// node is served at its home, with its real tier.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, WITH_WORKERS, zkIdentity, type TestNode } from '../helpers/node.js';

// A gauge run of about 1.2 s of CPU here (no early stop at this target): ten times the 0.1 s limit, far under 600 s.
const HEAVY = { L: 24, max_sweeps: 20_000, target_rel_error: 1e-5 };
// Gated: a 1-D heat grid above 501 points needs the standard tier (tally/tier-gates.ts); 34 ms of CPU.
const BIG_HEAT = { nx: 503, t_end_s: 0.01 };
const cost1 = { domain: 'thermodynamics', operators: ['KO42', 'THERMO_CARNOT_EFFICIENCY'], inputs: {} };

const operatorToken = async (t: TestNode): Promise<string> => (await readFile(join(t.dataDir, 'operator-token'), 'utf8')).trim();

async function grantTier(t: TestNode, zid: string, tier: string): Promise<void> {
  const r = await call(t.url, 'POST', '/api/tally/grants', { zid, credits: 0, tier }, bearer(await operatorToken(t)));
  expect(r.status, r.text).toBe(201);
  expect(r.body.tier).toBe(tier);
}

describe('tiers on one node (small limits)', () => {
  let t: TestNode;
  beforeAll(async () => {
    t = await startTestNode(
      // The tier time limit is the worker pool's to enforce (a run on the calling thread is not cut).
      { ...WITH_WORKERS, limits: { enforceDailyQuota: true } },
      { initialCredits: 1000, tierTimeLimitSeconds: { free: 0.1, starter: 0.1 }, tierDailyAllowance: { free: 3, starter: 5 } },
    );
  });
  afterAll(async () => t.destroy());

  it("the time limit follows the caller's tier: free times out, professional does not, and a grant lifts it on the next request", async () => {
    const pro = await zkIdentity(t.url, 'tier-pro');
    const free = await zkIdentity(t.url, 'tier-free');
    await grantTier(t, pro.zid, 'professional');
    // The professional run first (it also brings the solver worker up, which the limit would count).
    const ok = await call(t.url, 'POST', '/api/svc/gauge', HEAVY, bearer(pro.key));
    expect(ok.status, ok.text).toBe(200);
    const e = expectError(await call(t.url, 'POST', '/api/svc/gauge', HEAVY, bearer(free.key)), 500, 'SVC_TIMEOUT');
    expect(e.time_limit_seconds).toBe(0.1);
    expect(e.tier).toBe('free');
    expect(e.elapsed_seconds).toBeGreaterThanOrEqual(0.09);
    expect(e.message).toContain('free tier');
    expect((await call(t.url, 'GET', `/api/tally/envelopes/${free.zid}`, undefined, bearer(free.key))).body.total).toBe(0);
    await grantTier(t, free.zid, 'professional');
    const after = await call(t.url, 'POST', '/api/svc/gauge', HEAVY, bearer(free.key));
    expect(after.status, after.text).toBe(200);
    expect(after.body.value).toBeCloseTo(ok.body.value, 12);
  }, 120_000);

  it('a gated size is 403 SVC_TIER_LOCKED with the part-7 fields, charges nothing, and the grant of the tier unlocks it', async () => {
    const id = await zkIdentity(t.url, 'tier-locked');
    const e = expectError(await call(t.url, 'POST', '/api/svc/heat', BIG_HEAT, bearer(id.key)), 403, 'SVC_TIER_LOCKED');
    expect(e).toMatchObject({
      required_tier: 'standard',
      current_tier: 'free',
      upgrade_url: `${t.url}/api/tally/tiers`,
      solver: 'heat',
      locked_inputs: [{ input: 'nx', value: 503, required_tier: 'standard' }],
    });
    // The same gate on every way to the solver; an invalid size is still the solver's 400, not a 403.
    expectError(await call(t.url, 'POST', '/api/svc/solve', { solver: 'heat', inputs: BIG_HEAT }, bearer(id.key)), 403, 'SVC_TIER_LOCKED');
    expectError(await call(t.url, 'POST', '/api/svc/heat', { nx: 1003 }, bearer(id.key)), 400, 'SVC_INVALID_INPUT');
    // A run continued from a state is gated by the state's size: 500 atoms with the default n_cells is still starter's.
    const side = 8;
    const positions_m = Array.from({ length: 500 }, (_, i) => [i % side, Math.floor(i / side) % side, Math.floor(i / side / side)].map((c) => c * 4e-10));
    const state = { positions_m, velocities_m_s: positions_m.map(() => [0, 0, 0]), box_m: side * 4e-10 };
    const byState = expectError(await call(t.url, 'POST', '/api/svc/evolve', { steps: 10, initialState: state }, bearer(id.key)), 403, 'SVC_TIER_LOCKED');
    expect(byState).toMatchObject({ required_tier: 'starter', locked_inputs: [{ input: 'initialState.positions_m', value: 500 }] });
    // Nothing reserved or charged.
    const usage = await call(t.url, 'GET', '/api/compute/usage', undefined, bearer(id.key));
    expect(usage.body).toMatchObject({ used: 0, tier: 'free', daily_allowance: 3 });
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(id.key))).body.total).toBe(1000);
    // The upgrade URL answers with the gate that locked it.
    const sheet = (await fetch(e.upgrade_url).then((r) => r.json())) as { gates: unknown[] };
    expect(sheet.gates).toContainEqual(expect.objectContaining({ solver: 'heat', input: 'nx', above: 501, tier: 'standard' }));

    // A starter is still below it; a standard identity runs it (the grant applies from the next request).
    await grantTier(t, id.zid, 'starter');
    const e2 = expectError(await call(t.url, 'POST', '/api/svc/heat', BIG_HEAT, bearer(id.key)), 403, 'SVC_TIER_LOCKED');
    expect(e2).toMatchObject({ required_tier: 'standard', current_tier: 'starter' });
    await grantTier(t, id.zid, 'standard');
    const ok = await call(t.url, 'POST', '/api/svc/heat', BIG_HEAT, bearer(id.key));
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.tally_charge.cost).toBe(10);
    // A mode gate: the 2-D device needs starter; anonymous callers are free.
    const anon = expectError(await call(t.url, 'POST', '/api/svc/device', { mode: 'pn2d' }), 403, 'SVC_TIER_LOCKED');
    expect(anon).toMatchObject({ required_tier: 'starter', current_tier: 'free', locked_inputs: [{ input: 'mode', value: 'pn2d' }] });
  }, 120_000);

  it("the daily allowance follows the identity's tier, and an upgrade raises it on the next request", async () => {
    const free = await zkIdentity(t.url, 'allow-free');
    const starter = await zkIdentity(t.url, 'allow-starter');
    await grantTier(t, starter.zid, 'starter');
    for (let i = 0; i < 3; i++) expect((await call(t.url, 'POST', '/api/svc/compute', cost1, bearer(free.key))).status).toBe(200);
    const e = expectError(await call(t.url, 'POST', '/api/svc/compute', cost1, bearer(free.key)), 429, 'SVC_DAILY_LIMIT');
    expect(e).toMatchObject({ daily_limit: 3, used_today: 3, tier: 'free' });
    for (let i = 0; i < 5; i++) expect((await call(t.url, 'POST', '/api/svc/compute', cost1, bearer(starter.key))).status).toBe(200);
    expect(expectError(await call(t.url, 'POST', '/api/svc/compute', cost1, bearer(starter.key)), 429, 'SVC_DAILY_LIMIT')).toMatchObject({
      daily_limit: 5,
      tier: 'starter',
    });
    const u = await call(t.url, 'GET', '/api/compute/usage', undefined, bearer(starter.key));
    expect(u.body).toMatchObject({ used: 5, tier: 'starter', daily_allowance: 5, allowance_remaining: 0, enforced: true });
    await grantTier(t, free.zid, 'starter');
    expect((await call(t.url, 'POST', '/api/svc/compute', cost1, bearer(free.key))).status).toBe(200);
  }, 120_000);
});

describe("part 8's figures", () => {
  let t: TestNode;
  beforeAll(async () => {
    t = await startTestNode({ limits: { enforceDailyQuota: true } }, { initialCredits: 1000 });
  });
  afterAll(async () => t.destroy());

  it('the tier sheet and discovery show 143 … 25 000 a day and 30 / 120 / 600 s', async () => {
    const sheet = await call(t.url, 'GET', '/api/tally/tiers');
    expect(sheet.status).toBe(200);
    expect(sheet.body.tiers).toEqual([
      { tier: 'free', daily_allowance: 143, time_limit_seconds: 30 },
      { tier: 'starter', daily_allowance: 500, time_limit_seconds: 30 },
      { tier: 'standard', daily_allowance: 2500, time_limit_seconds: 120 },
      { tier: 'professional', daily_allowance: 7500, time_limit_seconds: 600 },
      { tier: 'enterprise', daily_allowance: 25000, time_limit_seconds: 600 },
    ]);
    expect(sheet.body.daily_allowance_enforced).toBe(true);
    const discovery = await call(t.url, 'GET', '/api');
    expect(discovery.body.tiers).toEqual(sheet.body);
  });

  it('the 144th computation of a free identity in a day is refused; a starter identity passes it', async () => {
    const free = await zkIdentity(t.url, 'fig-free');
    const starter = await zkIdentity(t.url, 'fig-starter');
    await grantTier(t, starter.zid, 'starter');
    for (let i = 0; i < 143; i += 13) {
      const n = Math.min(13, 143 - i);
      const batch = await Promise.all(Array.from({ length: n }, () => call(t.url, 'POST', '/api/svc/compute', cost1, bearer(free.key))));
      for (const r of batch) expect(r.status, r.text).toBe(200);
    }
    const e = expectError(await call(t.url, 'POST', '/api/svc/compute', cost1, bearer(free.key)), 429, 'SVC_DAILY_LIMIT');
    expect(e).toMatchObject({ daily_limit: 143, used_today: 143, tier: 'free' });
    for (let i = 0; i < 144; i += 16) {
      const batch = await Promise.all(Array.from({ length: 16 }, () => call(t.url, 'POST', '/api/svc/compute', cost1, bearer(starter.key))));
      for (const r of batch) expect(r.status, r.text).toBe(200);
    }
    expect((await call(t.url, 'GET', '/api/compute/usage', undefined, bearer(starter.key))).body).toMatchObject({ used: 144, daily_allowance: 500 });
  }, 120_000);
});

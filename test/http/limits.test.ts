// Part 8 limits as architecture.md §4 reads them; day counters survive a restart.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

let t: TestNode;
beforeAll(async () => {
  t = await startTestNode();
});
afterAll(async () => t.destroy());

const compute = { domain: 'biology', operators: ['KO42', 'BIO_DOUBLING_TIME'], inputs: {} };

function expect429Fields(e: Record<string, any>, retryAfter: string | null): void {
  expect(retryAfter).not.toBeNull();
  expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
}

describe('anonymous computing: 5 per 24 h per IP', () => {
  it('allows 5, then 429 SVC_DAILY_LIMIT with its fields and Retry-After; the count survives a restart', async () => {
    for (let i = 0; i < 5; i++) {
      const r = await call(t.url, 'POST', '/api/svc/compute', compute);
      expect(r.status).toBe(200);
      expect(r.body.value).toBeCloseTo(Math.log(2) / 0.1, 12);
      expect(r.body.tally_charge.funded_by).toBe('anonymous');
    }
    const r = await call(t.url, 'POST', '/api/svc/heat', {});
    const e = expectError(r, 429, 'SVC_DAILY_LIMIT');
    expect(e).toMatchObject({ daily_limit: 5, used_today: 5 });
    expect(Date.parse(e.reset_at)).toBeGreaterThan(Date.now());
    expect(new Date(e.reset_at).toISOString().slice(11)).toBe('00:00:00.000Z'); // midnight UTC
    expect(e.hours_until_reset).toBeGreaterThan(0);
    expect(e.hours_until_reset).toBeLessThanOrEqual(24);
    expect429Fields(e, r.headers.get('retry-after'));
    // An authenticated caller is not affected.
    const id = await zkIdentity(t.url, 'limits-authed');
    expect((await call(t.url, 'POST', '/api/svc/compute', compute, bearer(id.key))).status).toBe(200);
    t = await t.restart();
    expectError(await call(t.url, 'POST', '/api/svc/compute', compute), 429, 'SVC_DAILY_LIMIT');
  });
});

describe('keyless prove: 10 per minute per IP', () => {
  it('allows 10 prove calls, then 429 SVC_RATE_LIMIT with limit, window, retry and Retry-After', async () => {
    for (let i = 0; i < 10; i++) expect((await call(t.url, 'POST', '/api/svc/prove')).status).toBe(200);
    const r = await call(t.url, 'POST', '/api/svc/prove');
    const e = expectError(r, 429, 'SVC_RATE_LIMIT');
    expect(e).toMatchObject({ limit: 10, window_seconds: 60 });
    expect(e.retry_after_seconds).toBeGreaterThanOrEqual(1);
    expect(e.retry_after_seconds).toBeLessThanOrEqual(60);
    expect(Date.parse(e.reset_at)).toBeGreaterThan(Date.now());
    expect429Fields(e, r.headers.get('retry-after'));
  });

  it('prove/verify has its own 10 per minute', async () => {
    for (let i = 0; i < 10; i++) expect((await call(t.url, 'POST', '/api/svc/prove/verify', {})).status).toBe(200);
    expectError(await call(t.url, 'POST', '/api/svc/prove/verify', {}), 429, 'SVC_RATE_LIMIT');
  });
});

describe('demo keys: 10 per day', () => {
  it('the shared demo key computes 10 times, then 429 SVC_DAILY_LIMIT', async () => {
    const key = (await call(t.url, 'GET', '/api/demo-key')).body.key;
    for (let i = 0; i < 10; i++) expect((await call(t.url, 'POST', '/api/svc/compute', compute, bearer(key))).status).toBe(200);
    const usage = await call(t.url, 'GET', '/api/compute/usage', undefined, bearer(key));
    expect(usage.body).toEqual({ used: 10, bundle: 10, remaining: 0, overage: 0, enforced: false, tier: 'free', daily_allowance: 10, allowance_remaining: 0 });
    const e = expectError(await call(t.url, 'POST', '/api/svc/compute', compute, bearer(key)), 429, 'SVC_DAILY_LIMIT');
    expect(e.daily_limit).toBe(10);
  });
});

describe('free ZID quota when enforcement is switched on', () => {
  it("the tier's allowance, then 429; the meter's bundle is the published 10, with overage past it; off by default", async () => {
    // The free tier's allowance is 143 (tiers.test.ts); 12 here, to tell it from the bundle of 10.
    const strict = await startTestNode({ limits: { enforceDailyQuota: true } }, { tierDailyAllowance: { free: 12 } });
    try {
      const id = await zkIdentity(strict.url, 'strict');
      for (let i = 0; i < 12; i++) expect((await call(strict.url, 'POST', '/api/svc/compute', compute, bearer(id.key))).status).toBe(200);
      const e = expectError(await call(strict.url, 'POST', '/api/svc/compute', compute, bearer(id.key)), 429, 'SVC_DAILY_LIMIT');
      expect(e).toMatchObject({ daily_limit: 12, used_today: 12, tier: 'free' });
      const u = await call(strict.url, 'GET', '/api/compute/usage', undefined, bearer(id.key));
      expect(u.body).toEqual({ used: 12, bundle: 10, remaining: 0, overage: 2, enforced: true, tier: 'free', daily_allowance: 12, allowance_remaining: 0 });
    } finally {
      await strict.destroy();
    }
  });

  it('without enforcement the meter reports overage instead', async () => {
    const id = await zkIdentity(t.url, 'over');
    for (let i = 0; i < 12; i++) expect((await call(t.url, 'POST', '/api/svc/compute', compute, bearer(id.key))).status).toBe(200);
    const u = await call(t.url, 'GET', '/api/compute/usage', undefined, bearer(id.key));
    expect(u.body).toEqual({ used: 12, bundle: 10, remaining: 0, overage: 2, enforced: false, tier: 'free', daily_allowance: 143, allowance_remaining: 131 });
  });
});

describe('day counters of past days', () => {
  it('are dropped when a new UTC day starts, in memory and on disk', async () => {
    const { ManualClock } = await import('../../src/kernel/clock.js');
    const day1 = Date.UTC(2026, 10, 21, 23, 59, 0);
    const clock = new ManualClock(BigInt(day1) * 1_000_000n);
    const node = await startTestNode({}, { clock });
    try {
      expect((await call(node.url, 'POST', '/api/svc/compute', compute)).status).toBe(200);
      expect(node.node.counters.withPrefix('anon:2026-11-21')).toHaveLength(1);
      clock.set(BigInt(day1 + 120_000) * 1_000_000n); // two minutes later: 2026-11-22
      expect((await call(node.url, 'POST', '/api/svc/compute', compute)).status).toBe(200);
      await new Promise((r) => setTimeout(r, 50));
      expect(node.node.counters.withPrefix('anon:2026-11-21')).toHaveLength(0);
      expect(node.node.counters.withPrefix('anon:2026-11-22')).toHaveLength(1);
      const again = await node.restart();
      expect(again.node.counters.withPrefix('anon:2026-11-21')).toHaveLength(0);
      expect(again.node.counters.withPrefix('anon:2026-11-22')[0]![1]).toBe(1);
      await again.destroy();
    } catch (err) {
      await node.destroy();
      throw err;
    }
  });
});

describe('registrations and logins: limits.authPerMinute per address, failed password logins per identity', () => {
  let n: TestNode;
  beforeAll(async () => {
    n = await startTestNode({ limits: { authPerMinute: 4 } });
  });
  afterAll(() => n.destroy());

  it('counts the four scrypt routes together per address: the fifth in a minute is 429 with Retry-After, nothing created', async () => {
    const digest = (s: string) => createHash('sha256').update(s).digest('hex');
    expect((await call(n.url, 'POST', '/api/auth/register', { email: 'rate@example.org', password: 'correct horse battery' })).status).toBe(201);
    expect((await call(n.url, 'POST', '/api/auth/login', { email: 'rate@example.org', password: 'correct horse battery' })).status).toBe(200);
    expect((await call(n.url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: digest('rate-1') })).status).toBe(201);
    expect((await call(n.url, 'POST', '/api/svc-auth/login-v3', { equation_sha256: digest('rate-1') })).status).toBe(200);
    const r = await call(n.url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: digest('rate-2') });
    const e = expectError(r, 429, 'SVC_RATE_LIMIT');
    expect(e).toMatchObject({ limit: 4, window_seconds: 60 });
    expect(e.message).toContain('registrations and logins');
    expect429Fields(e, r.headers.get('retry-after'));
    // Refused before any work: the identity does not exist.
    expect(await n.node.identity.getIdentity(`zid_${digest('rate-2').slice(0, 32)}`)).toBeUndefined();
    expectError(await call(n.url, 'POST', '/api/auth/login', { email: 'rate@example.org', password: 'correct horse battery' }), 429, 'SVC_RATE_LIMIT');
    // Other routes are not counted with them.
    expect((await call(n.url, 'GET', '/api/health')).status).toBe(200);
  });
});

describe('failed password logins of one identity', () => {
  let n: TestNode;
  beforeAll(async () => {
    n = await startTestNode();
  });
  afterAll(() => n.destroy());

  it('after 10 failures in 15 minutes refuse its logins, the right password too, before hashing; other identities log in', async () => {
    const ada = { email: 'ada-guess@example.org', password: 'correct horse battery' };
    const bob = { email: 'bob-guess@example.org', password: 'staple battery horse' };
    for (const who of [ada, bob]) expect((await call(n.url, 'POST', '/api/auth/register', who)).status).toBe(201);
    for (let i = 0; i < 10; i++)
      expectError(await call(n.url, 'POST', '/api/auth/login', { email: ada.email, password: `guess ${i}` }), 401, 'SVC_INVALID_CREDENTIALS');
    // The email's case and spaces do not make it another identity.
    const r = await call(n.url, 'POST', '/api/auth/login', { ...ada, email: ` ${ada.email.toUpperCase()} ` });
    const e = expectError(r, 429, 'SVC_RATE_LIMIT');
    expect(e).toMatchObject({ limit: 10, window_seconds: 900, scope: 'identity' });
    expect(e.retry_after_seconds).toBeGreaterThan(800);
    expect(e.retry_after_seconds).toBeLessThanOrEqual(900);
    expect(r.headers.get('retry-after')).toBe(String(e.retry_after_seconds));
    expect(r.headers.get('set-cookie')).toBeNull();
    // Another identity is not affected, and nine failures then a success start the count again.
    for (let i = 0; i < 9; i++)
      expectError(await call(n.url, 'POST', '/api/auth/login', { email: bob.email, password: `guess ${i}` }), 401, 'SVC_INVALID_CREDENTIALS');
    expect((await call(n.url, 'POST', '/api/auth/login', bob)).status).toBe(200);
    for (let i = 0; i < 9; i++)
      expectError(await call(n.url, 'POST', '/api/auth/login', { email: bob.email, password: `again ${i}` }), 401, 'SVC_INVALID_CREDENTIALS');
    expect((await call(n.url, 'POST', '/api/auth/login', bob)).status).toBe(200);
  });
});

describe('keys this node does not know', () => {
  let n: TestNode;
  beforeAll(async () => {
    n = await startTestNode({ mesh: { secret: 'limits-unknown-keys-mesh-secret', p2pPort: 0, bootstrap: [] } });
  });
  afterAll(() => n.destroy());

  it('are asked of the mesh for 30 a minute from one address: then 429 with Retry-After, on any keyed route', async () => {
    const asked: string[] = [];
    const ask = async (name: string) => {
      asked.push(name);
      return null;
    };
    n.node.identity.onRemoteLookup(ask, ask);
    const made = (i: number) => `sk_${createHash('sha256').update(`made up ${i}`).digest('hex').slice(0, 48)}`;
    for (let i = 0; i < 30; i++) expectError(await call(n.url, 'GET', '/api/tally/balance', undefined, bearer(made(i))), 401, 'SVC_INVALID_KEY');
    expect(asked).toHaveLength(30);
    const r = await call(n.url, 'POST', '/api/svc/compute', compute, bearer(made(30)));
    const e = expectError(r, 429, 'SVC_RATE_LIMIT');
    expect(e).toMatchObject({ limit: 30, window_seconds: 60, scope: 'address' });
    expect429Fields(e, r.headers.get('retry-after'));
    expect(asked).toHaveLength(30);
    // A key the node knows is not a question: it still works from that address.
    const id = await zkIdentity(n.url, 'limits-known-key');
    expect((await call(n.url, 'GET', '/api/tally/balance', undefined, bearer(id.key))).status).toBe(200);
  });
});

// Identity (spec 2.4, 4.4, part 5): v1 and v3 flows, key kinds, the zero-knowledge store contents.
import { createHash, scryptSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Level } from 'level';
import { join } from 'node:path';
import { bearer, call, expectError, startTestNode, type TestNode } from '../helpers/node.js';

let t: TestNode;
beforeAll(async () => {
  t = await startTestNode();
});
afterAll(async () => t.destroy());

const compute = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: {} };

function cookieOf(headers: Headers): { value: string; attrs: string } {
  const raw = headers.get('set-cookie') ?? '';
  const m = /session=([^;]*);(.*)/.exec(raw);
  if (!m) throw new Error(`no session cookie in ${raw}`);
  return { value: m[1]!, attrs: m[2]!.toLowerCase() };
}

describe('v1 browser flow: register → login → verify → session-key', () => {
  it('registers, logs in with an HttpOnly SameSite=Lax session cookie, and mints an sk_ key that computes', async () => {
    const reg = await call(t.url, 'POST', '/api/auth/register', { email: 'Ada@Example.org', password: 'correct horse battery' });
    expect(reg.status).toBe(201);
    expect(reg.body.zid).toMatch(/^zid_[0-9a-f]{32}$/);
    expect(typeof reg.body.message).toBe('string');
    const dup = await call(t.url, 'POST', '/api/auth/register', { email: 'ada@example.org', password: 'another password' });
    expect(dup.status).toBe(409);

    const bad = await call(t.url, 'POST', '/api/auth/login', { email: 'ada@example.org', password: 'wrong password' });
    expectError(bad, 401, 'SVC_INVALID_CREDENTIALS');

    const login = await call(t.url, 'POST', '/api/auth/login', { email: 'ada@example.org', password: 'correct horse battery' });
    expect(login.status).toBe(200);
    const cookie = cookieOf(login.headers);
    expect(cookie.attrs).toContain('httponly');
    expect(cookie.attrs).toContain('samesite=lax');
    const jar = { cookie: `session=${cookie.value}` };

    const verify = await call(t.url, 'POST', '/api/auth/verify', undefined, jar);
    expect(verify.body).toMatchObject({ valid: true, zid: reg.body.zid });
    const noSession = await call(t.url, 'POST', '/api/auth/verify');
    expect(noSession.body).toMatchObject({ valid: false, zid: null });

    const sk = await call(t.url, 'POST', '/api/auth/session-key', undefined, jar);
    expect(sk.body.sessionKey).toMatch(/^sk_[A-Za-z0-9_-]{32}$/);
    expect(Date.parse(sk.body.expiresAt)).toBeGreaterThan(Date.now());
    const r = await call(t.url, 'POST', '/api/svc/compute', compute, bearer(sk.body.sessionKey));
    expect(r.status).toBe(200);
    expect(r.body.tally_charge.charged).toBe(1);

    const who = await call(t.url, 'GET', '/api/auth/whoami', undefined, bearer(sk.body.sessionKey));
    expect(who.body).toMatchObject({ kind: 'identity', zid: reg.body.zid, key_kind: 'sk' });

    await call(t.url, 'POST', '/api/auth/logout', undefined, jar);
    expect((await call(t.url, 'POST', '/api/auth/verify', undefined, jar)).body.valid).toBe(false);
    expectError(await call(t.url, 'POST', '/api/auth/session-key', undefined, jar), 401, 'SVC_NO_SESSION');
  });

  it('salt is stable per email and does not reveal whether the email exists', async () => {
    await call(t.url, 'POST', '/api/auth/register', { email: 'salty@example.org', password: 'pepper pepper' });
    const a = await call(t.url, 'GET', '/api/auth/salt/salty@example.org');
    const b = await call(t.url, 'GET', '/api/auth/salt/nobody@example.org');
    const b2 = await call(t.url, 'GET', '/api/auth/salt/nobody@example.org');
    for (const r of [a, b]) {
      expect(r.status).toBe(200);
      expect(r.body.salt).toMatch(/^[0-9a-f]{32}$/);
      expect(r.body.algorithm).toBe('scrypt');
    }
    expect(b.body.salt).toBe(b2.body.salt);
    expect(a.body.salt).not.toBe(b.body.salt);
  });

  it('validates bodies: bad email, short password, unknown field', async () => {
    expectError(await call(t.url, 'POST', '/api/auth/register', { email: 'not-an-email', password: 'long enough pw' }), 400, 'SVC_INVALID_INPUT');
    const e = expectError(await call(t.url, 'POST', '/api/auth/register', { email: 'x@example.org', password: 'short' }), 400, 'SVC_INVALID_INPUT');
    expect(e.field).toBe('password');
    expectError(await call(t.url, 'POST', '/api/auth/register', { email: 'x@example.org', password: 'long enough pw', admin: true }), 400, 'SVC_INVALID_INPUT');
  });
});

describe('v3 zero-knowledge flow', () => {
  it('ZID is the first 32 hex of SHA-256(equation); the store keeps ZID, hash and salt only', async () => {
    const equation = 'E = m c^2 + my secret constant 0.7071';
    const digest = createHash('sha256').update(equation).digest('hex');
    const reg = await call(t.url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: digest });
    expect(reg.status).toBe(201);
    expect(reg.body.zid).toBe(`zid_${digest.slice(0, 32)}`);
    expect(reg.body.admin_key).toMatch(/^zsm_[A-Za-z0-9_-]{32}$/);
    expect(reg.body.state_machine).toMatchObject({
      owner: reg.body.zid,
      is_public: false,
      inject_agent_rail: false,
      inject_pulse_orb: false,
      roles: { [reg.body.zid]: 'owner' },
    });
    const again = await call(t.url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: digest });
    expect(again.status).toBe(409);

    const login = await call(t.url, 'POST', '/api/svc-auth/login-v3', { equation_sha256: digest });
    expect(login.status).toBe(200);
    expect(login.body.zid).toBe(reg.body.zid);
    const wrong = await call(t.url, 'POST', '/api/svc-auth/login-v3', { equation_sha256: digest.replace(/.$/, (c) => (c === '0' ? '1' : '0')) });
    expectError(wrong, 401, 'SVC_INVALID_CREDENTIALS');

    // The admin key computes (state-machine keys are accepted on compute routes).
    const r = await call(t.url, 'POST', '/api/svc/compute', compute, bearer(reg.body.admin_key));
    expect(r.status).toBe(200);
    expect(r.body.audit.slug).toBe(reg.body.state_machine.slug);

    // Read the store: the identity record holds exactly zid, hash, salt (+ bookkeeping), and neither the
    // equation, nor its digest, nor the admin key appears anywhere in the database.
    await t.stop();
    const db = new Level<string, string>(join(t.dataDir, 'db'));
    await db.open();
    let identityRecord: Record<string, unknown> | null = null;
    const everything: string[] = [];
    for await (const [k, v] of db.iterator()) {
      everything.push(k, v);
      if (k.endsWith(`identities!${reg.body.zid}`)) identityRecord = JSON.parse(v);
    }
    await db.close();
    expect(identityRecord).not.toBeNull();
    expect(Object.keys(identityRecord!).sort()).toEqual(['created_unix_ms', 'default_machine', 'hash', 'home', 'kind', 'salt', 'scrypt_cost', 'zid']);
    expect(identityRecord!.hash).toMatch(/^[0-9a-f]{64}$/);
    // The hash is scrypt of the digest with the record's salt, at the cost the record names (r 8, p 1).
    const cost = identityRecord!.scrypt_cost as number;
    expect(
      scryptSync(digest, Buffer.from(identityRecord!.salt as string, 'hex'), 32, { N: 2 ** cost, r: 8, p: 1, maxmem: 2 ** (cost + 11) }).toString('hex'),
    ).toBe(identityRecord!.hash);
    expect(identityRecord!.hash).not.toBe(digest);
    const dump = everything.join('\n');
    expect(dump).not.toContain(equation);
    expect(dump).not.toContain(digest);
    expect(dump).not.toContain(reg.body.admin_key);
    expect(dump).not.toContain(reg.body.admin_key.slice(4));
    t = await t.restart();
  });
});

describe('key kinds by prefix', () => {
  it('sk_test_ and svc_ak_ keys work below 1.287.7; revoked keys are rejected with revoked_at', async () => {
    await call(t.url, 'POST', '/api/auth/register', { email: 'keys@example.org', password: 'key holder pw' });
    const login = await call(t.url, 'POST', '/api/auth/login', { email: 'keys@example.org', password: 'key holder pw' });
    const jar = { cookie: `session=${cookieOf(login.headers).value}` };
    const test = await call(t.url, 'POST', '/api/auth/api-key', { kind: 'sk_test' }, jar);
    expect(test.body.key).toMatch(/^sk_test_/);
    const legacy = await call(t.url, 'POST', '/api/auth/api-key', { kind: 'svc_ak' }, jar);
    expect(legacy.body.key).toMatch(/^svc_ak_/);
    for (const k of [test.body.key, legacy.body.key]) {
      const r = await call(t.url, 'POST', '/api/svc/compute', compute, bearer(k));
      expect(r.status).toBe(200);
    }
    await t.node.identity.revokeKey(test.body.key);
    const e = expectError(await call(t.url, 'POST', '/api/svc/compute', compute, bearer(test.body.key)), 401, 'SVC_INVALID_KEY');
    expect(e.reason).toBe('revoked');
    expect(Date.parse(e.revoked_at)).not.toBeNaN();
  });

  it('from kernel 1.287.7 on, svc_ak_ keys are refused', async () => {
    const newer = await startTestNode({ kernel: { version: '1.287.7', phi0: 0 } });
    try {
      const e = expectError(await call(newer.url, 'POST', '/api/svc/compute', compute, bearer(`svc_ak_${'B'.repeat(32)}`)), 401, 'SVC_INVALID_KEY');
      expect(e.reason).toMatch(/1\.287\.7/);
    } finally {
      await newer.destroy();
    }
  });

  it('zsm_pub_ embed keys are read-only: refused on compute', async () => {
    const e = expectError(await call(t.url, 'POST', '/api/svc/compute', compute, bearer(`zsm_pub_${'C'.repeat(32)}`)), 401, 'SVC_INVALID_KEY');
    expect(e.reason).toBe('unknown');
  });
});

describe('demo keys', () => {
  it('concurrent first requests on a fresh node all get the one shared key', async () => {
    const fresh = await startTestNode();
    try {
      const keys = await Promise.all(Array.from({ length: 8 }, () => call(fresh.url, 'GET', '/api/demo-key')));
      expect(new Set(keys.map((k) => k.body.key)).size).toBe(1);
    } finally {
      await fresh.destroy();
    }
  });

  it('GET /api/demo-key returns the shared key, the same every time', async () => {
    const a = await call(t.url, 'GET', '/api/demo-key');
    const b = await call(t.url, 'GET', '/api/demo-key');
    expect(a.body).toEqual({ key: a.body.key, plan: 'demo', dailyLimit: 10 });
    expect(a.body.key).toMatch(/^sk_/);
    expect(b.body.key).toBe(a.body.key);
    const r = await call(t.url, 'POST', '/api/svc/compute', compute, bearer(a.body.key));
    expect(r.status).toBe(200);
    expect(r.body.tally_charge).toMatchObject({ charged: 0, funded_by: 'demo' });
    expect(r.body.envelope).toBeNull();
  });

  it('POST /api/demo-key/mint gives the caller an own demo key', async () => {
    const m = await call(t.url, 'POST', '/api/demo-key/mint', {});
    expect(m.status).toBe(201);
    expect(m.body.plan).toBe('demo');
    const shared = await call(t.url, 'GET', '/api/demo-key');
    expect(m.body.key).not.toBe(shared.body.key);
  });
});

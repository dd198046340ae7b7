// Scoped and revocable keys on one real node (spec 2.7, part 5 item 3): a zsm_ key acts on its own machine and on
// compute only; identity-wide routes need an identity key (403 otherwise); GET /api/auth/keys lists an identity's
// keys without a secret; DELETE /api/auth/keys/:key_id revokes at once and across a restart (401 with revoked_at).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyDigest, keyId } from '../../src/identity/keys.js';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

const COMPUTE = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: {} };

let t: TestNode;
let id: { zid: string; key: string; adminKey: string; slug: string };
/** A second machine of the same identity, with its own admin key. */
let other: { slug: string; adminKey: string };

beforeAll(async () => {
  t = await startTestNode({ solverThreads: 0, sealWorker: false }, { initialCredits: 1_000 });
  id = await zkIdentity(t.url, 'scoped-keys');
  const made = await call(t.url, 'POST', '/api/chain/state-machines', { slug: 'scoped-second' }, bearer(id.key));
  expect(made.status, made.text).toBe(201);
  other = { slug: made.body.slug, adminKey: made.body.admin_key };
}, 120_000);
afterAll(async () => {
  await t?.destroy();
});

describe('a zsm_ key is its machine’s', () => {
  it("machine B's admin key does not write machine A's audit chain (403), though its identity owns both", async () => {
    const append = (slug: string, key: string) => call(t.url, 'POST', `/api/chain/${slug}/events`, { payload: { n: 1 } }, bearer(key));
    const e = expectError(await append(id.slug, other.adminKey), 403, 'SVC_FORBIDDEN');
    expect(e).toMatchObject({ key_kind: 'zsm', key_scope: other.slug, slug: id.slug, key_id: keyId(other.adminKey) });
    expectError(await call(t.url, 'GET', `/api/chain/${id.slug}/tally/summary`, undefined, bearer(other.adminKey)), 403, 'SVC_FORBIDDEN');
    expectError(await call(t.url, 'PATCH', `/api/chain/${id.slug}/settings`, { is_public: true }, bearer(other.adminKey)), 403, 'SVC_FORBIDDEN');
    expect((await call(t.url, 'GET', `/api/chain/${id.slug}/settings`, undefined, bearer(id.adminKey))).body.is_public).toBe(false);
    // Nothing was appended to A by B's key; each key writes its own machine, the identity key writes both.
    expect((await call(t.url, 'GET', `/api/chain/${id.slug}/explore`, undefined, bearer(id.key))).body.head.seq).toBe(0);
    expect((await append(id.slug, id.adminKey)).status).toBe(201);
    expect((await append(other.slug, other.adminKey)).status).toBe(201);
    expect((await append(other.slug, id.key)).status).toBe(201);
  });

  it('identity-wide routes refuse a zsm_ key with 403 naming its scope; compute accepts it', async () => {
    const routes: [string, string, unknown][] = [
      ['POST', '/api/tally/envelopes/transfer-bulk', { to: `zid_${'1'.repeat(32)}`, count: 1 }],
      ['GET', `/api/tally/envelopes/${id.zid}`, undefined],
      ['POST', '/api/tally/envelopes/folder', { token_ids: ['env_x'], folder: 'x' }],
      ['POST', '/api/contribute/bond', {}],
      ['POST', '/api/contribute/mode', { mode: 'experimenting' }],
      ['POST', '/api/webhooks', { url: 'https://example.org/hook', events: ['computation.complete'] }],
      ['GET', '/api/webhooks', undefined],
      ['POST', '/api/svc/llm/credentials', { kind: 'openai', api_key: 'sk-test-0123456789' }],
      ['POST', '/api/llm/chat', { messages: [{ role: 'user', content: 'hi' }] }],
      ['POST', '/api/chain/state-machines', { slug: 'scoped-third' }],
      ['POST', '/api/genesis/execute', { document: { slug: 'scoped-genesis' } }],
      ['GET', '/api/auth/keys', undefined],
      ['POST', '/api/auth/keys', {}],
    ];
    for (const [method, path, body] of routes) {
      const e = expectError(await call(t.url, method, path, body, bearer(id.adminKey)), 403, 'SVC_FORBIDDEN');
      expect(e, `${method} ${path}`).toMatchObject({ key_kind: 'zsm', key_scope: id.slug, required: 'identity key (sk_ or sk_test_)' });
      expect(e.message).toContain('login-v3');
    }
    expect((await call(t.url, 'GET', `/api/chain/scoped-third/settings`, undefined, bearer(id.key))).status).toBe(404);
    expect((await call(t.url, 'GET', `/api/chain/scoped-genesis/settings`, undefined, bearer(id.key))).status).toBe(404);
    const sealed = await call(t.url, 'POST', '/api/svc/compute', COMPUTE, bearer(id.adminKey));
    expect(sealed.status, sealed.text).toBe(200);
    // The same routes with the identity key pass the door (the mode switch, a webhook list).
    expect((await call(t.url, 'GET', '/api/webhooks', undefined, bearer(id.key))).status).toBe(200);
    expect((await call(t.url, 'GET', `/api/tally/envelopes/${id.zid}`, undefined, bearer(id.key))).status).toBe(200);
  });
});

describe('GET and DELETE /api/auth/keys', () => {
  it("lists the identity's keys — id, kind, scope, created, last used, revoked — never a secret nor its digest", async () => {
    const r = await call(t.url, 'GET', '/api/auth/keys', undefined, bearer(id.key));
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ zid: id.zid, total: 3 });
    const byId = new Map((r.body.keys as Record<string, unknown>[]).map((k) => [k.key_id, k]));
    expect(byId.get(keyId(id.key))).toMatchObject({ kind: 'sk', scope: 'identity', slug: null, revoked_at: null, expires_at: null });
    expect(byId.get(keyId(id.adminKey))).toMatchObject({ kind: 'zsm', scope: 'machine', slug: id.slug, revoked_at: null });
    expect(byId.get(keyId(other.adminKey))).toMatchObject({ kind: 'zsm', scope: 'machine', slug: other.slug });
    for (const k of byId.values()) {
      expect(Object.keys(k).sort()).toEqual(['created_at', 'expires_at', 'key_id', 'kind', 'last_used_at', 'plan', 'revoked_at', 'scope', 'slug']);
      expect(Date.parse(k.created_at as string)).not.toBeNaN();
    }
    // Each key was used above: its last use is recorded.
    for (const key of [id.key, id.adminKey, other.adminKey]) expect(Date.parse(byId.get(keyId(key))!.last_used_at as string)).not.toBeNaN();
    for (const key of [id.key, id.adminKey, other.adminKey]) {
      expect(r.text).not.toContain(key);
      expect(r.text).not.toContain(key.slice(-20));
      expect(r.text).not.toContain(keyDigest(key));
    }
    // Another identity sees its own keys only.
    const stranger = await zkIdentity(t.url, 'scoped-keys-stranger');
    const theirs = await call(t.url, 'GET', '/api/auth/keys', undefined, bearer(stranger.key));
    expect((theirs.body.keys as { key_id: string }[]).map((k) => k.key_id).sort()).toEqual([keyId(stranger.key), keyId(stranger.adminKey)].sort());
    expectError(await call(t.url, 'DELETE', `/api/auth/keys/${keyId(id.adminKey)}`, undefined, bearer(stranger.key)), 404, 'SVC_NOT_FOUND');
  });

  it('mints an identity key shown once; a bad key id is 400, an unknown one 404', async () => {
    const m = await call(t.url, 'POST', '/api/auth/keys', { kind: 'sk_test' }, bearer(id.key));
    expect(m.status, m.text).toBe(201);
    expect(m.body.key).toMatch(/^sk_test_/);
    expect(m.body).toMatchObject({ key_id: keyId(m.body.key), kind: 'sk_test', scope: 'identity', revoked_at: null });
    expect((await call(t.url, 'GET', '/api/auth/whoami', undefined, bearer(m.body.key))).body).toMatchObject({ zid: id.zid, key_kind: 'sk_test' });
    expectError(await call(t.url, 'POST', '/api/auth/keys', { kind: 'zsm' }, bearer(id.key)), 400, 'SVC_INVALID_INPUT');
    expectError(await call(t.url, 'DELETE', '/api/auth/keys/not-a-key-id', undefined, bearer(id.key)), 400, 'SVC_INVALID_INPUT');
    expectError(await call(t.url, 'DELETE', '/api/auth/keys/sk_00000000', undefined, bearer(id.key)), 404, 'SVC_NOT_FOUND');
  });

  it('a key that expires mints only keys that expire no later, a test key only test keys: 403 naming the key, nothing minted', async () => {
    const me = await zkIdentity(t.url, 'minting-rules');
    const listed = async () => (await call(t.url, 'GET', '/api/auth/keys', undefined, bearer(me.key))).body.total as number;
    const tenMinutes = await call(t.url, 'POST', '/api/auth/keys', { kind: 'sk', ttl_seconds: 600 }, bearer(me.key));
    expect(tenMinutes.status, tenMinutes.text).toBe(201);
    const test = await call(t.url, 'POST', '/api/auth/keys', { kind: 'sk_test' }, bearer(me.key));
    const before = await listed();
    const refused = [
      [tenMinutes.body.key, { kind: 'sk' }, /expires .* no later: give ttl_seconds/],
      [tenMinutes.body.key, { kind: 'sk', ttl_seconds: 3600 }, /no later/],
      [test.body.key, { kind: 'sk' }, /mints only sk_test keys/],
    ] as const;
    for (const [key, body, message] of refused) {
      const e = expectError(await call(t.url, 'POST', '/api/auth/keys', body, bearer(key)), 403, 'SVC_FORBIDDEN');
      expect(e.message).toMatch(message);
      expect(e.key_id).toBe(keyId(key));
    }
    expect(await listed()).toBe(before);
    // Within its grant it mints: an earlier expiry, or a test key of a test key.
    const shorter = await call(t.url, 'POST', '/api/auth/keys', { kind: 'sk', ttl_seconds: 300 }, bearer(tenMinutes.body.key));
    expect(shorter.status, shorter.text).toBe(201);
    expect(Date.parse(shorter.body.expires_at)).toBeLessThanOrEqual(Date.parse(tenMinutes.body.expires_at));
    expect((await call(t.url, 'POST', '/api/auth/keys', { kind: 'sk_test' }, bearer(test.body.key))).status).toBe(201);
  });

  it('revokes at once (401 SVC_INVALID_KEY with revoked_at) and the revocation survives a restart', async () => {
    const d = await call(t.url, 'DELETE', `/api/auth/keys/${keyId(other.adminKey)}`, undefined, bearer(id.key));
    expect(d.status, d.text).toBe(200);
    expect(d.body).toMatchObject({ key_id: keyId(other.adminKey), kind: 'zsm', slug: other.slug });
    const revokedAt = d.body.revoked_at as string;
    expect(Date.parse(revokedAt)).not.toBeNaN();
    const e = expectError(await call(t.url, 'GET', '/api/auth/whoami', undefined, bearer(other.adminKey)), 401, 'SVC_INVALID_KEY');
    expect(e).toMatchObject({ key_id: keyId(other.adminKey), reason: 'revoked', revoked_at: revokedAt });
    expectError(await call(t.url, 'POST', `/api/chain/${other.slug}/events`, { payload: 1 }, bearer(other.adminKey)), 401, 'SVC_INVALID_KEY');
    // Again: the same record, the same time.
    expect((await call(t.url, 'DELETE', `/api/auth/keys/${keyId(other.adminKey)}`, undefined, bearer(id.key))).body.revoked_at).toBe(revokedAt);
    // An identity key revokes itself too.
    const spare = await call(t.url, 'POST', '/api/auth/keys', {}, bearer(id.key));
    expect((await call(t.url, 'DELETE', `/api/auth/keys/${spare.body.key_id}`, undefined, bearer(spare.body.key))).status).toBe(200);
    expectError(await call(t.url, 'GET', '/api/auth/keys', undefined, bearer(spare.body.key)), 401, 'SVC_INVALID_KEY');

    t = await t.restart();
    const after = expectError(await call(t.url, 'GET', '/api/auth/whoami', undefined, bearer(other.adminKey)), 401, 'SVC_INVALID_KEY');
    expect(after.revoked_at).toBe(revokedAt);
    const listed = (await call(t.url, 'GET', '/api/auth/keys', undefined, bearer(id.key))).body.keys as { key_id: string; revoked_at: string | null }[];
    expect(listed.find((k) => k.key_id === keyId(other.adminKey))?.revoked_at).toBe(revokedAt);
    expect(listed.find((k) => k.key_id === keyId(id.adminKey))?.revoked_at).toBeNull();
    expect((await call(t.url, 'GET', '/api/auth/whoami', undefined, bearer(id.adminKey))).status).toBe(200);
  }, 60_000);
});

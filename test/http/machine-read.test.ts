// Who may read a state machine's chain: a public machine is readable by anyone, with a key of
// any identity, a demo key or no key at all; a private one only by an identity that holds a role on it. A key that is
// present but bad is 401 on either.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

let t: TestNode;
let owner: { zid: string; key: string; slug: string };
let stranger: { zid: string; key: string; slug: string };
let openBook: string;
const kinetic = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: {} };
/** Every read of a machine's chain, settings, contracts, log export and proofs included. */
const routes = (slug: string) => [
  `/api/chain/${slug}/pohc/validate`,
  `/api/chain/${slug}/explore`,
  `/api/chain/${slug}/settings`,
  `/api/chain/${slug}/contracts`,
  `/api/chain/${slug}/export`,
  `/api/chain/${slug}/proof/consistency?from=1`,
];

beforeAll(async () => {
  t = await startTestNode();
  owner = await zkIdentity(t.url, 'reader-owner');
  stranger = await zkIdentity(t.url, 'reader-stranger');
  const made = await call(t.url, 'POST', '/api/chain/state-machines', { slug: 'public-book', is_public: true }, bearer(owner.key));
  expect(made.status, made.text).toBe(201);
  openBook = made.body.admin_key;
  expect((await call(t.url, 'POST', '/api/svc/compute', kinetic, bearer(openBook))).status).toBe(200);
});
afterAll(async () => t.destroy());

describe('a public machine', () => {
  it("is readable with another identity's key, a demo key, its sk_ key by ?key=, and with no key: the same answer", async () => {
    const demo = (await call(t.url, 'GET', '/api/demo-key')).body.key as string;
    for (const path of routes('public-book')) {
      const anonymous = await call(t.url, 'GET', path);
      expect(anonymous.status, anonymous.text).toBe(200);
      for (const headers of [bearer(stranger.key), bearer(demo), bearer(owner.key), bearer(openBook)]) {
        const r = await call(t.url, 'GET', path, undefined, headers);
        expect(r.status, r.text).toBe(200);
        expect(r.body).toEqual(anonymous.body);
      }
      const byQuery = await call(t.url, 'GET', `${path}${path.includes('?') ? '&' : '?'}key=${stranger.key}`);
      expect(byQuery.status, byQuery.text).toBe(200);
    }
    expect((await call(t.url, 'GET', '/api/chain/public-book/pohc/validate', undefined, bearer(stranger.key))).body).toMatchObject({
      slug: 'public-book',
      valid: true,
      rows: 1,
    });
  });

  it('a key that is present but bad is still 401 SVC_INVALID_KEY, never read as no key', async () => {
    const e = expectError(await call(t.url, 'GET', '/api/chain/public-book/pohc/validate', undefined, bearer(`sk_${'A'.repeat(32)}`)), 401, 'SVC_INVALID_KEY');
    expect(e.reason).toBe('unknown');
    expectError(await call(t.url, 'GET', '/api/chain/public-book/explore?key=nonsense'), 401, 'SVC_INVALID_KEY');
  });
});

describe('a private machine', () => {
  it("is read by role only: its owner's keys yes; another identity 403, a demo key 403, no key 401", async () => {
    const sk = (await t.node.identity.mintKeyFor(owner.zid, 'sk', null)).key;
    // A row on the chain, so that a proof of it exists.
    expect((await call(t.url, 'POST', '/api/svc/compute', kinetic, bearer(owner.key))).status).toBe(200);
    for (const path of routes(owner.slug)) {
      for (const key of [owner.key, sk]) {
        const r = await call(t.url, 'GET', path, undefined, bearer(key));
        expect(r.status, `${path} ${r.text}`).toBe(200);
      }
      expectError(await call(t.url, 'GET', path, undefined, bearer(stranger.key)), 403, 'SVC_FORBIDDEN');
      expectError(await call(t.url, 'GET', path, undefined, bearer((await call(t.url, 'GET', '/api/demo-key')).body.key)), 403, 'SVC_FORBIDDEN');
      const none = expectError(await call(t.url, 'GET', path), 401, 'SVC_NO_KEY');
      expect(none.message).not.toContain('rows');
    }
  });

  it('an admin key whose machine record no longer names its identity (a record rewritten under it) opens nothing', async () => {
    const m = (await t.node.chain.getMachine(owner.slug))!;
    await t.node.store.commit(t.node.chain.machineOps({ ...m, owner: stranger.zid, roles: { [stranger.zid]: 'owner' } }));
    try {
      expectError(await call(t.url, 'GET', `/api/chain/${owner.slug}/pohc/validate`, undefined, bearer(owner.key)), 403, 'SVC_FORBIDDEN');
      expect((await call(t.url, 'GET', `/api/chain/${owner.slug}/pohc/validate`, undefined, bearer(stranger.key))).status).toBe(200);
    } finally {
      await t.node.store.commit(t.node.chain.machineOps(m));
    }
  });
});

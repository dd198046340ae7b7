// Minting keys (identity/service.ts mintKeyFor). A key id is 32 bits of the key's digest and an identity's (and a
// machine's embed) key list keeps one key per id (unlistedKey): a new key whose id is taken is minted again, so no key
// ever replaces another's entry and becomes a working key that no listing shows and no revocation by id reaches. An
// identity holds at most limits.keysPerIdentity live sk_ and sk_test_ keys on a node (checkKeyCap).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyDigest, keyId } from '../../src/identity/keys.js';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

const CAP = 3;
let t: TestNode;
beforeAll(async () => {
  t = await startTestNode({ limits: { keysPerIdentity: CAP } });
}, 60_000);
afterAll(async () => {
  await t?.destroy();
});

describe('key ids', () => {
  it('a key whose id an identity already lists is minted again; the listed key keeps its entry', async () => {
    const id = await zkIdentity(t.url, 'key-ids');
    const listed = (await call(t.url, 'GET', '/api/auth/keys', undefined, bearer(id.key))).body.keys as { key_id: string }[];
    // A second key whose id equals the identity's own key's id (a digest collision in 32 bits), then a fresh one.
    const clash = 'sk_' + 'A'.repeat(32);
    const fresh = 'sk_' + 'B'.repeat(32);
    const store = t.node.store;
    const identityKeys = store.sub('identity_keys');
    const planted = `${id.zid}!${keyId(clash)}`;
    await store.commit([{ type: 'put', sub: identityKeys, key: planted, value: keyDigest(id.key) }]);
    const identity = t.node.identity;
    const draw = identity.drawKey.bind(identity);
    const queued = [clash, fresh];
    identity.drawKey = (kind) => queued.shift() ?? draw(kind);
    const minted = await call(t.url, 'POST', '/api/auth/keys', { kind: 'sk' }, bearer(id.key)).finally(() => (identity.drawKey = draw));
    expect(minted.status, minted.text).toBe(201);
    expect(minted.body.key).toBe(fresh);
    expect(queued).toEqual([]);
    expect(await store.get(identityKeys, planted)).toBe(keyDigest(id.key));
    const after = (await call(t.url, 'GET', '/api/auth/keys', undefined, bearer(id.key))).body.keys as { key_id: string }[];
    expect(after.map((k) => k.key_id)).toEqual(expect.arrayContaining([...listed.map((k) => k.key_id), keyId(fresh)]));
    // The refused draw was never a key: it authenticates nothing.
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(clash))).status).toBe(401);
  });

  it('an identity holds at most keysPerIdentity live keys: 409 with limit and count, nothing minted; revoking one frees a slot', async () => {
    const id = await zkIdentity(t.url, 'key-cap');
    const count = async () =>
      ((await call(t.url, 'GET', '/api/auth/keys', undefined, bearer(id.key))).body.keys as { kind: string; revoked_at: string | null }[]).filter(
        (k) => k.kind.startsWith('sk') && k.revoked_at === null,
      ).length;
    const held = await count();
    const minted: string[] = [];
    for (let i = held; i < CAP; i++) {
      const r = await call(t.url, 'POST', '/api/auth/keys', { kind: i % 2 ? 'sk_test' : 'sk' }, bearer(id.key));
      expect(r.status, r.text).toBe(201);
      minted.push(r.body.key);
    }
    const over = expectError(await call(t.url, 'POST', '/api/auth/keys', { kind: 'sk' }, bearer(id.key)), 409, 'SVC_CONFLICT');
    expect(over).toMatchObject({ limit: CAP, count: CAP, resource: 'live API keys' });
    expect(await count()).toBe(CAP);
    const revoked = await call(t.url, 'DELETE', `/api/auth/keys/${keyId(minted[0]!)}`, undefined, bearer(id.key));
    expect(revoked.status, revoked.text).toBe(200);
    const again = await call(t.url, 'POST', '/api/auth/keys', { kind: 'sk' }, bearer(id.key));
    expect(again.status, again.text).toBe(201);
    expect(await count()).toBe(CAP);
  });
});

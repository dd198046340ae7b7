// Identity records are kept in memory (identity/service.ts getIdentity): a keyed request reads its identity's record
// for its home, and reads it from the store only the first time. Every write of a record is followed by a forget:
// the service's own writes (a registration, an assertion that teaches an identity), and a home move written by
// another part (identityRecordWritten); a read in flight across such a write is made again, never kept stale. A
// record handed out is frozen, so no caller can change the kept one.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { zidOfEquation, type IdentityRecord } from '../../src/identity/service.js';
import { identityAssertBody } from '../helpers/identity-assert.js';
import { bearer, call, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

const HOME = '12D3KooWCacheHomeCacheHomeCacheHomeCacheHomeCacheHom';
let t: TestNode;
beforeAll(async () => {
  t = await startTestNode();
}, 60_000);
afterAll(async () => {
  await t?.destroy();
});

/** Count the store's reads of identity records while `run` runs; `delay` holds each read that long first. */
async function countingReads<T>(run: () => Promise<T>, delay?: () => Promise<void>): Promise<{ result: T; reads: string[] }> {
  const store = t.node.store;
  const identities = store.sub('identities');
  const get = store.get.bind(store);
  const reads: string[] = [];
  store.get = (async (sub: Parameters<typeof get>[0], key: string) => {
    if (sub === identities) {
      reads.push(key);
      const value = get(sub, key);
      await delay?.();
      return value;
    }
    return get(sub, key);
  }) as typeof store.get;
  try {
    return { result: await run(), reads };
  } finally {
    store.get = get;
  }
}

const whoami = (key: string) => call(t.url, 'GET', '/api/auth/whoami', undefined, bearer(key));

describe('identity records in memory', () => {
  it('a keyed request reads its identity from the store once, and the record handed out cannot be changed', async () => {
    const who = await zkIdentity(t.url, 'identity-cache-once');
    const { reads } = await countingReads(async () => {
      for (let i = 0; i < 5; i++) expect((await whoami(who.key)).body.zid).toBe(who.zid);
    });
    expect(reads.filter((z) => z === who.zid).length).toBeLessThanOrEqual(1);
    const rec = (await t.node.identity.getIdentity(who.zid))!;
    expect(Object.isFrozen(rec)).toBe(true);
    expect(() => {
      (rec as { home: string }).home = 'elsewhere';
    }).toThrow(TypeError);
    expect((await t.node.identity.getIdentity(who.zid))!.home).toBe(t.node.nodeId);
  });

  it('a zid unknown, then registered, is found at once', async () => {
    const digest = createHash('sha256').update('equation:identity-cache-late').digest('hex');
    const zid = zidOfEquation(digest);
    expect(await t.node.identity.getIdentity(zid)).toBeUndefined();
    const r = await call(t.url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: digest });
    expect(r.status, r.text).toBe(201);
    expect(await t.node.identity.getIdentity(zid)).toMatchObject({ zid, kind: 'zk', home: t.node.nodeId });
  });

  it('a home move written by another part is read at once; a read in flight across it is made again', async () => {
    const who = await zkIdentity(t.url, 'identity-cache-move');
    const before = (await t.node.identity.getIdentity(who.zid))!;
    expect(before.home).toBe(t.node.nodeId);
    const move = async () => {
      await t.node.store.commit([t.node.identity.homeMoveOp(before, HOME)]);
      t.node.identity.identityRecordWritten(who.zid);
    };
    // Kept: the move is not seen until the part that wrote it says so.
    t.node.identity.identityRecordWritten(who.zid);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const { result, reads } = await countingReads(
      async () => {
        // A read of the old record starts, the move is written meanwhile, then the read lands.
        const reading = t.node.identity.getIdentity(who.zid);
        await new Promise((resolve) => setTimeout(resolve, 20));
        await move();
        release();
        return reading;
      },
      () => held,
    );
    expect(reads.filter((z) => z === who.zid).length).toBe(2);
    expect(result?.home).toBe(HOME);
    expect((await t.node.identity.getIdentity(who.zid))?.home).toBe(HOME);
  });

  it('an assertion that teaches an identity its verifier is read at once', async () => {
    const digest = createHash('sha256').update('equation:identity-cache-assert').digest('hex');
    const zid = zidOfEquation(digest);
    const assertion = (identity: Record<string, unknown>) => identityAssertBody(`sk_${'ca'.repeat(24)}`, zid, HOME, 1, null, identity);
    expect(await t.node.identity.getIdentity(zid)).toBeUndefined();
    expect(await t.node.identity.applyAssertion(assertion({}), HOME)).toBe(true);
    expect((await t.node.identity.getIdentity(zid))?.hash).toBeUndefined();
    const verifier = { hash: 'ab'.repeat(32), salt: 'cd'.repeat(16), scrypt_cost: 10 };
    expect(await t.node.identity.applyAssertion(assertion({ verifier }), HOME)).toBe(true);
    expect(await t.node.identity.getIdentity(zid)).toMatchObject({ kind: 'remote', home: HOME, ...verifier } satisfies Partial<IdentityRecord>);
  });
});

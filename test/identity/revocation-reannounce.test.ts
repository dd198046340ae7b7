// The revocations of keys homed here are asserted again for a day (identity/service.ts reannounceRevocations), from
// markers written in the revocation's batch: through a restart, and no more once the day is over (the marker goes).
// The mesh side (a node stopped while a key was revoked) is test/cluster/revoked-while-away.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/kernel/clock.js';
import { keyDigest } from '../../src/identity/keys.js';
import { REVOCATION_REANNOUNCE_MS, type IdentityAssertion } from '../../src/identity/service.js';
import { bearer, call, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

const clock = new ManualClock(BigInt(Date.UTC(2026, 5, 1)) * 1_000_000n);
let t: TestNode;
beforeAll(async () => {
  t = await startTestNode({}, { clock });
}, 60_000);
afterAll(async () => {
  await t?.destroy();
});

/** What the node asserts to the mesh from now on. */
function asserted(n: TestNode): IdentityAssertion[] {
  const heard: IdentityAssertion[] = [];
  n.node.identity.onAssertions((as) => heard.push(...as));
  return heard;
}

describe('a revocation', () => {
  it('is asserted again on every run for a day, through a restart, then no more', async () => {
    const x = await zkIdentity(t.url, 'revocation-reannounce');
    const minted = await call(t.url, 'POST', '/api/auth/keys', {}, bearer(x.key));
    const kept = await call(t.url, 'POST', '/api/auth/keys', {}, bearer(x.key));
    expect([minted.status, kept.status]).toEqual([201, 201]);
    let heard = asserted(t);
    expect(await t.node.identity.reannounceRevocations()).toBe(0);
    expect((await call(t.url, 'DELETE', `/api/auth/keys/${minted.body.key_id}`, undefined, bearer(x.key))).status).toBe(200);
    // The revocation itself, then once a run: the revoked record only, never the live key beside it.
    expect(heard.map((a) => a.digest)).toEqual([keyDigest(minted.body.key)]);
    expect(await t.node.identity.reannounceRevocations()).toBe(1);
    expect(heard).toHaveLength(2);
    expect(heard[1]).toMatchObject({ digest: keyDigest(minted.body.key), key: { zid: x.zid, home: t.node.nodeId, revoked_unix_ms: expect.any(Number) } });

    t = await t.restart();
    heard = asserted(t);
    clock.set(clock.nowNs() + BigInt(REVOCATION_REANNOUNCE_MS - 1000) * 1_000_000n);
    expect(await t.node.identity.reannounceRevocations()).toBe(1);
    expect(heard.map((a) => a.digest)).toEqual([keyDigest(minted.body.key)]);

    clock.set(clock.nowNs() + 2000n * 1_000_000n);
    expect(await t.node.identity.reannounceRevocations()).toBe(0);
    expect(await t.node.identity.reannounceRevocations()).toBe(0);
    expect(heard).toHaveLength(1);
    // The key stays revoked.
    expect((await call(t.url, 'GET', '/api/auth/whoami', undefined, bearer(minted.body.key))).status).toBe(401);
    expect((await call(t.url, 'GET', '/api/auth/whoami', undefined, bearer(kept.body.key))).status).toBe(200);
  });
});

// An identity's keys after a failover (identity/service.ts applyAssertion, assertionFor, revokeKeyOf): on three real
// bonded nodes, x is homed on a with a spare key k. a goes; b or c, h, takes x over. A fourth node d joins, having
// heard neither x's keys nor its move (before any of x's keys is revoked: a revocation is asserted again every few
// ticks, and would tell it): x's custody status at d names h (h answers for x by zid, with the login verifier x
// registered with at a), and x's key authenticates at d. h lists x's keys minted at a, with their last use at h, and revokes k, and the other node, o, refuses k from then
// on: the identity's home speaks for its keys. o, lying, asserts k live again as x's home: refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyDigest } from '../../src/identity/keys.js';
import { IDENTITY_ASSERT } from '../../src/mesh/identity-assert.js';
import { TOPICS } from '../../src/mesh/wire.js';
import { COMPUTE, custodyConfig, custodyNodeOptions, grant, startBondedTrio } from '../helpers/custody.js';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitFor } from '../mesh/helpers.js';

const SECRET = 'custody-keys-after-failover-secret-0123456789';
let nodes: TestNode[] = [];
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.destroy()));
});

const whoami = (n: TestNode, key: string) => call(n.url, 'GET', '/api/auth/whoami', undefined, bearer(key));

describe('the keys of an identity taken over', () => {
  let a: TestNode, b: TestNode, c: TestNode, h: TestNode, o: TestNode;
  let x: { zid: string; key: string };
  let k: { key: string; key_id: string };
  let registered: { hash?: string; salt: string };
  beforeAll(async () => {
    nodes = [a, b, c] = await startBondedTrio(SECRET, 0);
    x = await zkIdentity(a.url, 'keys-after-failover-x');
    registered = (await a.node.identity.getIdentity(x.zid))!;
    await grant(a, x.zid, 20);
    expect((await call(a.url, 'POST', '/api/svc/compute', COMPUTE, bearer(x.key))).status).toBe(200);
    const minted = await call(a.url, 'POST', '/api/auth/keys', {}, bearer(x.key));
    expect(minted.status, minted.text).toBe(201);
    k = minted.body;
    for (const n of [b, c]) await waitFor(async () => (await whoami(n, k.key)).status === 200, 15_000, 'k known at b and c');
    await a.destroy();
    nodes = [b, c];
    const home = await waitFor(
      async () => {
        const change = await b.node.custody.homeChanges.latest(x.zid);
        return change !== null && change.home !== a.node.nodeId ? change.home : null;
      },
      60_000,
      'x taken over',
    );
    [h, o] = home === b.node.nodeId ? [b, c] : [c, b];
    await waitFor(async () => (await o.node.identity.getIdentity(x.zid))?.home === h.node.nodeId, 30_000, 'the move applied at o');
  }, 180_000);

  it('are found by a node that joined after the failover, and so is the identity’s new home', async () => {
    const addr = (n: TestNode) => n.node.mesh.multiaddrs()[0]!;
    const d = await startTestNode(custodyConfig(SECRET, [addr(o)]), custodyNodeOptions(0));
    nodes.push(d);
    await waitFor(() => d.node.mesh.peers().filter((p) => p.url && p.connected).length >= 2, 30_000, 'd meshed with b and c');
    expect(await d.node.identity.getIdentity(x.zid)).toBeUndefined();
    // Named by its zid (asked of the peers by zid), then by its key (asked by digest).
    const status = await call(d.url, 'GET', `/api/mesh/custody/${x.zid}`);
    expect(status.status, status.text).toBe(200);
    expect(status.body).toMatchObject({ zid: x.zid, home: h.node.nodeId });
    // With the login verifier x registered with at a, as h asserts it: a later failover's home checks x's logins.
    expect(await d.node.identity.getIdentity(x.zid)).toMatchObject({ kind: 'remote', home: h.node.nodeId, hash: registered.hash, salt: registered.salt });
    const me = await whoami(d, x.key);
    expect(me.status, me.text).toBe(200);
    expect(me.body).toMatchObject({ zid: x.zid });
  }, 60_000);

  it('are listed and revoked at the new home, and the revocation holds everywhere', async () => {
    // Used at the new home: its last use is noted there.
    expect((await whoami(h, k.key)).status).toBe(200);
    const listed = await call(h.url, 'GET', '/api/auth/keys', undefined, bearer(x.key));
    expect(listed.status, listed.text).toBe(200);
    const spare = listed.body.keys.find((key: { key_id: string }) => key.key_id === k.key_id);
    expect(spare).toMatchObject({ key_id: k.key_id, revoked_at: null, last_used_at: expect.any(String) });

    const revoked = await call(h.url, 'DELETE', `/api/auth/keys/${k.key_id}`, undefined, bearer(x.key));
    expect(revoked.status, revoked.text).toBe(200);
    expect(revoked.body.revoked_at).toEqual(expect.any(String));
    await waitFor(async () => (await whoami(o, k.key)).status === 401, 15_000, 'k refused at o');
    expect(expectError(await whoami(o, k.key), 401, 'SVC_INVALID_KEY')).toMatchObject({ reason: 'revoked', revoked_at: revoked.body.revoked_at });
    expect((await whoami(o, x.key)).status).toBe(200);

    // o, lying, asserts k live again with itself as x's home: refused at h (and at o's own directory nothing moves).
    const live = { digest: keyDigest(k.key), key: { ...(await h.node.identity.assertionFor(keyDigest(k.key)))!.key, revoked_unix_ms: null } };
    await o.node.mesh.publish(IDENTITY_ASSERT, { ...live, identity: { zid: x.zid, home: o.node.nodeId, default_machine: null } }, TOPICS.identity);
    expect(await h.node.identity.applyAssertion({ ...live, identity: { zid: x.zid, home: o.node.nodeId } }, o.node.nodeId)).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect((await whoami(h, k.key)).status).toBe(401);
    expect((await h.node.identity.getIdentity(x.zid))?.home).toBe(h.node.nodeId);
  }, 60_000);
});

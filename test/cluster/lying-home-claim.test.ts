// A lying member claims another's identity at a node that joined late. On a line A — B — L — D, x is registered at A
// and every node learns it; L (the liar, composed here: its own store says x is homed at L, with x's key and a key L
// made up) gossips its claim and answers lookups with it. C joins through D, which is then stopped. C weighs each claim
// to x against the peers that know x: L's is outvoted, so the key L made up is refused at C, and x's own key, looked up
// on every peer (L answers too), is learnt from A, and x's requests at C are forwarded to A, never to L. So is a
// machine of x's that L answers it holds as well.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyDigest, keyId, mintKey } from '../../src/identity/keys.js';
import { IDENTITY_ASSERT } from '../../src/mesh/identity-assert.js';
import { TOPICS } from '../../src/mesh/wire.js';
import type { KeyRecord } from '../../src/records/types.js';
import { bearer, call, expectError, sparseMeshConfig, startMesh, startTestNode, waitMeshHeard, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitUntil } from '../helpers/wait.js';

const MESH_SECRET = 'lying-home-claim-secret-0123456789ab';
const meshConfig = sparseMeshConfig(MESH_SECRET);
const opts = { mesh: { redialMinMs: 100, redialMaxMs: 1000 }, initialCredits: 1000 };
const BOOK = 'lying-claim-book';

let a: TestNode;
let b: TestNode;
let l: TestNode;
let d: TestNode;
let c: TestNode;
let x: { zid: string; key: string; slug: string };
/** A key L made up for x: only L's store holds it. */
const madeUp = mintKey('sk');

const whoami = (n: TestNode, key: string) => call(n.url, 'GET', '/api/auth/whoami', undefined, bearer(key));

/**
 * L's claim to x's key `key` (an `sk_` key, or the admin key of x's machine `slug`): the record as L's store holds it,
 * and the assertion L signs.
 */
function claimOf(key: string, slug: string | null = null) {
  const record: KeyRecord = {
    key_id: keyId(key),
    kind: slug === null ? 'sk' : 'zsm',
    zid: x.zid,
    slug,
    plan: 'standard',
    created_unix_ms: 1,
    expires_unix_ms: null,
    revoked_unix_ms: null,
    home: l.node.nodeId,
  };
  return { record, assertion: { digest: keyDigest(key), key: record, identity: { zid: x.zid, home: l.node.nodeId, default_machine: null } } };
}

beforeAll(async () => {
  [a, b, l, d] = (await startMesh(4, meshConfig, opts, 'line')) as [TestNode, TestNode, TestNode, TestNode];
  x = await zkIdentity(a.url, 'lying-home-claim');
  await waitUntil(
    async () => (await Promise.all([b, l, d].map((n) => n.node.identity.getIdentity(x.zid)))).every(Boolean),
    'x known at B, L and D',
    15_000,
    50,
  );
  // The liar's store: x homed at L, with x's key and the one L made up.
  const store = l.node.store;
  const ops = [x.key, madeUp].flatMap((key) => {
    const { record } = claimOf(key);
    return [
      { type: 'put' as const, sub: store.sub('keys'), key: keyDigest(key), value: record },
      { type: 'put' as const, sub: store.sub('identity_keys'), key: `${x.zid}!${record.key_id}`, value: keyDigest(key) },
    ];
  });
  await store.commit([
    ...ops,
    { type: 'put', sub: store.sub('identities'), key: x.zid, value: { zid: x.zid, kind: 'remote', salt: '', home: l.node.nodeId, created_unix_ms: 1 } },
  ]);
  // A machine of x's at A, claimed before C joins; L's store holds one of that slug too, homed at L, made earlier.
  const made = await call(a.url, 'POST', '/api/chain/state-machines', { slug: BOOK, is_public: true }, bearer(x.key));
  expect(made.status, made.text).toBe(201);
  await waitUntil(async () => (await b.node.mesh.machines.known(BOOK)) === a.node.nodeId, "A's claim known at B", 15_000, 50);
  const book = (await a.node.chain.getMachine(BOOK))!;
  await store.commit(l.node.chain.machineMoveOps(null, { ...book, home: l.node.nodeId, created_unix_ms: 0 }));
  c = await startTestNode(meshConfig([d.node.mesh.multiaddrs()[0]!]), opts);
  await waitMeshHeard([a, b, l, d, c]);
}, 120_000);

afterAll(async () => {
  await Promise.all([a, b, l, d, c].map((n) => n?.destroy()));
});

describe("a lying member's claim to another's identity, at a node that joined late", () => {
  it("is refused when gossiped: C does not learn x, or x's machine, as L's, and L's made-up key is refused", async () => {
    const claims = [claimOf(madeUp).assertion, claimOf(mintKey('zsm'), x.slug).assertion];
    const heard = new Set<string>();
    const off = c.node.mesh.onEvent(TOPICS.identity, (e) => {
      if (e.type === IDENTITY_ASSERT && e.sender === l.node.nodeId) heard.add((e.body as { digest: string }).digest);
    });
    try {
      // Published again until C has heard them (gossipsub's mesh forms a moment after the peers connect).
      await waitUntil(
        async () => {
          for (const claim of claims) if (!heard.has(claim.digest)) await l.node.mesh.publish(IDENTITY_ASSERT, claim, TOPICS.identity);
          return heard.size === claims.length;
        },
        "L's claims heard at C",
        20_000,
        500,
      );
    } finally {
      off();
    }
    expect(await c.node.identity.getIdentity(x.zid)).toBeUndefined();
    expect(await c.node.mesh.machines.known(x.slug)).toBeNull();
    // Asked, C places x's default machine at A, its holder: L's view (x homed at L) is outvoted.
    expect(await c.node.mesh.machines.homeOf(x.slug)).toBe(a.node.nodeId);
    // Looked up on the peers, L alone answers for its made-up key: refused all the same.
    expect(expectError(await whoami(c, madeUp), 401, 'SVC_INVALID_KEY')).toBeDefined();
    expect(await c.node.identity.getIdentity(x.zid)).toBeUndefined();
  }, 60_000);

  it("learns x and its key from A when D, C's seed, is stopped and L answers the lookup too", async () => {
    await d.stop();
    const me = await whoami(c, x.key);
    expect(me.status, me.text).toBe(200);
    expect(me.body).toMatchObject({ zid: x.zid });
    expect(await c.node.identity.getIdentity(x.zid)).toMatchObject({ zid: x.zid, kind: 'remote', home: a.node.nodeId });
    // x's ledger, asked at C, is served by A: the key went to x's home, not to L.
    const envelopes = await call(c.url, 'GET', `/api/tally/envelopes/${x.zid}`, undefined, bearer(x.key));
    expect(envelopes.status, envelopes.text).toBe(200);
    expect(envelopes.headers.get('x-svc-served-by')).toBe(a.node.nodeId);
    // Known now: L's claim, heard again, is refused as from a node that is not x's home.
    expect(await c.node.identity.applyAssertion(claimOf(madeUp).assertion, l.node.nodeId)).toBe(false);
    expect(await c.node.identity.getIdentity(x.zid)).toMatchObject({ home: a.node.nodeId });
    expect((await whoami(c, madeUp)).status).toBe(401);
  }, 60_000);

  it("finds x's machine at A, though L answers that it holds it too", async () => {
    expect(await c.node.mesh.machines.known(BOOK)).toBeNull();
    const read = await call(c.url, 'GET', `/api/chain/${BOOK}/explore`);
    expect(read.status, read.text).toBe(200);
    expect(read.headers.get('x-svc-served-by')).toBe(a.node.nodeId);
    expect(await c.node.mesh.machines.known(BOOK)).toBe(a.node.nodeId);
  }, 60_000);
});

// A key revoked while a node that knew it was stopped: gossip is not sent again, so the node came back holding the live
// record and took the key for what it serves itself. On a line A — B — C, C learns x's key k, stops; k is revoked at
// A; C starts again on its data dir and refuses k once A asserts the revocation again (every reannounceTicks, for a
// day). B, lying, asserts k live again as A's: every node refuses it, and a revocation heard again writes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyDigest } from '../../src/identity/keys.js';
import { IDENTITY_ASSERT } from '../../src/mesh/identity-assert.js';
import { TOPICS } from '../../src/mesh/wire.js';
import { bearer, call, expectError, sparseMeshConfig, startMesh, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitUntil } from '../helpers/wait.js';

const MESH_SECRET = 'revoked-while-away-secret-0123456789';
const meshConfig = sparseMeshConfig(MESH_SECRET);
const opts = { mesh: { redialMinMs: 100, redialMaxMs: 1000 }, reannounceTicks: 2 };

let a: TestNode;
let b: TestNode;
let c: TestNode;
let x: { zid: string; key: string };
let k: { key: string; key_id: string };

const whoami = (n: TestNode, key: string) => call(n.url, 'GET', '/api/auth/whoami', undefined, bearer(key));

beforeAll(async () => {
  [a, b, c] = (await startMesh(3, meshConfig, opts, 'line')) as [TestNode, TestNode, TestNode];
  x = await zkIdentity(a.url, 'revoked-while-away');
  const minted = await call(a.url, 'POST', '/api/auth/keys', {}, bearer(x.key));
  expect(minted.status, minted.text).toBe(201);
  k = minted.body;
}, 90_000);

afterAll(async () => {
  await Promise.all([a, b, c].map((n) => n?.destroy()));
});

describe('a key revoked while a node that knew it was stopped', () => {
  it('is refused by that node once it is back', async () => {
    const before = await whoami(c, k.key);
    expect(before.status, before.text).toBe(200);
    expect(before.body).toMatchObject({ zid: x.zid });
    const live = await a.node.identity.assertionFor(keyDigest(k.key));
    await c.stop();

    const revoked = await call(a.url, 'DELETE', `/api/auth/keys/${k.key_id}`, undefined, bearer(x.key));
    expect(revoked.status, revoked.text).toBe(200);
    expect(revoked.body.revoked_at).toEqual(expect.any(String));
    await waitUntil(async () => (await whoami(b, k.key)).status === 401, 'k refused at B', 15_000, 50);

    // Back on its data dir, C holds the record it learnt: live, until A asserts the revocation again.
    c = await startTestNode(meshConfig([b.node.mesh.multiaddrs()[0]!]), opts, c.dataDir);
    await waitUntil(async () => (await whoami(c, k.key)).status === 401, 'k refused at C', 30_000, 100);
    expect(expectError(await whoami(c, k.key), 401, 'SVC_INVALID_KEY')).toMatchObject({ reason: 'revoked', revoked_at: revoked.body.revoked_at });

    // Heard again, the revocation writes nothing; the live record, asserted again by anyone, is refused.
    const again = await a.node.identity.assertionFor(keyDigest(k.key));
    expect(again?.key.revoked_unix_ms).toEqual(expect.any(Number));
    expect(await b.node.identity.applyAssertion(again, a.node.nodeId)).toBe(false);
    expect(await b.node.identity.applyAssertion(live, a.node.nodeId)).toBe(false);
    await b.node.mesh.publish(IDENTITY_ASSERT, live, TOPICS.identity);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    for (const n of [a, b, c]) expect((await whoami(n, k.key)).status).toBe(401);
  }, 90_000);
});

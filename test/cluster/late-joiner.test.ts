// A node that joins after an identity was registered never hears its assertion (gossip is not replayed to a late
// joiner). On a line A — B, y, w and v are registered at A; then C joins through B. C finds them when asked: y's custody
// status names A as its home, a transfer from C's identity to w is delivered at A, and v's record is read at A. A zid
// no node holds is 404.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, sparseMeshConfig, startTestNode, waitMeshHeard, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitUntil } from '../helpers/wait.js';

const MESH_SECRET = 'late-joiner-secret-0123456789abcdef';
const RECEIPT_SECRET = 'ab'.repeat(32);
const compute = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: {} };
const meshConfig = sparseMeshConfig(MESH_SECRET, { receiptSecret: RECEIPT_SECRET });
const opts = { mesh: { redialMinMs: 100, redialMaxMs: 1000 }, initialCredits: 0 };

let a: TestNode;
let b: TestNode;
let c: TestNode;
let y: { zid: string; key: string };
let w: { zid: string; key: string };
let v: { zid: string; key: string };

async function grant(n: TestNode, zid: string, credits: number): Promise<void> {
  const token = (await readFile(join(n.dataDir, 'operator-token'), 'utf8')).trim();
  const r = await call(n.url, 'POST', '/api/tally/grants', { zid, credits }, bearer(token));
  expect(r.status, r.text).toBe(201);
}

beforeAll(async () => {
  a = await startTestNode(meshConfig([]), opts);
  b = await startTestNode(meshConfig([a.node.mesh.multiaddrs()[0]!]), opts);
  await waitMeshHeard([a, b]);
  y = await zkIdentity(a.url, 'late-joiner-status');
  w = await zkIdentity(a.url, 'late-joiner-receiver');
  v = await zkIdentity(a.url, 'late-joiner-owner');
  const atB = (zid: string) => b.node.identity.getIdentity(zid);
  await waitUntil(async () => (await atB(y.zid)) && (await atB(w.zid)) && atB(v.zid), 'y, w and v known at B', 15_000, 50);
  c = await startTestNode(meshConfig([b.node.mesh.multiaddrs()[0]!]), opts);
  await waitMeshHeard([a, b, c]);
}, 90_000);

afterAll(async () => {
  await Promise.all([a, b, c].map((n) => n?.destroy()));
});

describe('a node that joined after an identity was registered', () => {
  it("has not heard y's assertion, and finds y's home when asked for its custody status", async () => {
    expect(await c.node.identity.getIdentity(y.zid)).toBeUndefined();
    const status = await call(c.url, 'GET', `/api/mesh/custody/${y.zid}`);
    expect(status.status, status.text).toBe(200);
    expect(status.body).toMatchObject({ zid: y.zid, home: a.node.nodeId });
    // Learnt as gossip's assertion would have taught it: a remote identity homed at A.
    expect(await c.node.identity.getIdentity(y.zid)).toMatchObject({ zid: y.zid, kind: 'remote', home: a.node.nodeId });
  }, 30_000);

  it("delivers a transfer from C's identity to w, another of A's identities, at A", async () => {
    const x = await zkIdentity(c.url, 'late-joiner-sender');
    await grant(c, x.zid, 1);
    const minted = await call(c.url, 'POST', '/api/svc/compute', compute, bearer(x.key));
    expect(minted.status, minted.text).toBe(200);
    expect(await c.node.identity.getIdentity(w.zid)).toBeUndefined();
    const r = await call(c.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: w.zid, token_ids: [minted.body.envelope.token_id] }, bearer(x.key));
    expect(r.status, r.text).toBe(202);
    expect(r.body.to_home).toBe(a.node.nodeId);
    await waitUntil(
      async () => (await call(c.url, 'GET', `/api/tally/transfers/${r.body.transfer_id}`, undefined, bearer(x.key))).body.state === 'delivered',
      'the transfer delivered',
      30_000,
      100,
    );
    const ws = await call(a.url, 'GET', `/api/tally/envelopes/${w.zid}`, undefined, bearer(w.key));
    expect(ws.body.total).toBe(1);
    expect(ws.body.items[0]).toMatchObject({ token_id: minted.body.envelope.token_id, owner: w.zid, folder: 'inbox' });
  }, 60_000);

  it("serves v's published record, read at A", async () => {
    expect(await c.node.identity.getIdentity(v.zid)).toBeUndefined();
    const r = await call(c.url, 'GET', `/api/tally/record?owner=${v.zid}`, undefined, bearer(y.key));
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ node: a.node.nodeId, owner: v.zid, results: [] });
    expect(r.headers.get('x-svc-served-by')).toBe(a.node.nodeId);
  }, 30_000);

  it('answers 404 for a zid no node holds, naming the zid', async () => {
    const nobody = `zid_${'0'.repeat(32)}`;
    const e = expectError(await call(c.url, 'GET', `/api/mesh/custody/${nobody}`), 404, 'SVC_NOT_FOUND');
    expect(e.message).toContain(nobody);
    expect(await c.node.identity.getIdentity(nobody)).toBeUndefined();
  }, 30_000);
});

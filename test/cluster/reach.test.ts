// A home whose URL does not connect (a node behind NAT: only its libp2p host is reachable). On a line A — B — C, C
// advertises a URL on a closed port: A reaches C's API over libp2p (/svc/http/1) for a forwarded write and a transfer
// delivery, although A holds no connection to C and knows no working URL of it. With C stopped, neither way works and
// the caller gets a 503 that names C and both attempts.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, sparseMeshConfig, startTestNode, waitMeshHeard, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitUntil } from '../helpers/wait.js';
import { PEER_HTTP_PROTOCOL, peerHttpOverMesh } from '../../src/mesh/peer-http.js';
import { freePort } from '../helpers/free-port.js';

const MESH_SECRET = 'reach-cluster-secret-0123456789abcdef';
const RECEIPT_SECRET = 'ef'.repeat(32);
const compute = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: {} };
const meshConfig = sparseMeshConfig(MESH_SECRET, { receiptSecret: RECEIPT_SECRET });
const opts = { mesh: { redialMinMs: 100, redialMaxMs: 1000 }, initialCredits: 0 };

let a: TestNode;
let b: TestNode;
let c: TestNode;
/** Where C's server really listens (its advertised URL is a closed port). */
let cUrl: string;
let deadUrl: string;

/** Paid credits for `zid`, granted by the operator of node `n` (served at `url`). */
async function grant(n: TestNode, url: string, zid: string, credits: number): Promise<void> {
  const token = (await readFile(join(n.dataDir, 'operator-token'), 'utf8')).trim();
  const r = await call(url, 'POST', '/api/tally/grants', { zid, credits }, bearer(token));
  expect(r.status, r.text).toBe(201);
}

const waitFor = <T>(fn: () => Promise<T | null | false | undefined> | T | null | false | undefined, what: string, timeoutMs = 30_000) =>
  waitUntil(fn, what, timeoutMs, 100);

beforeAll(async () => {
  b = await startTestNode(meshConfig([]), opts);
  const addrB = b.node.mesh.multiaddrs()[0]!;
  a = await startTestNode(meshConfig([addrB]), opts);
  const [port, dead] = [await freePort(), await freePort()];
  cUrl = `http://127.0.0.1:${port}`;
  deadUrl = `http://127.0.0.1:${dead}`;
  c = await startTestNode({ ...meshConfig([addrB]), port, publicUrl: deadUrl }, opts);
  await waitMeshHeard([a, b, c]);
  // A knows C only by its tick events, relayed by B: a URL that does not connect, and its libp2p addresses.
  await waitFor(() => a.node.mesh.peers().find((p) => p.peerId === c.node.nodeId && p.multiaddrs.length > 0), 'C dialable at A');
}, 90_000);

afterAll(async () => {
  await Promise.all([a, b, c].map((n) => n?.destroy()));
});

describe('a home reached over libp2p when its URL does not connect', () => {
  it('a write through A lands once at C, served over /svc/http/1', async () => {
    expect(a.node.mesh.peerUrl(c.node.nodeId)).toBe(deadUrl);
    expect(a.node.mesh.p2p?.connectedPeers()).not.toContain(c.node.nodeId);
    const id = await zkIdentity(cUrl, 'behind-nat');
    await grant(c, cUrl, id.zid, 1);
    await waitFor(() => a.node.identity.getIdentity(id.zid), 'the identity known at A');
    const r = await call(a.url, 'POST', '/api/svc/compute', compute, bearer(id.key));
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get('x-svc-served-by')).toBe(c.node.nodeId);
    expect(r.body.node).toBe(c.node.nodeId);
    expect(r.body.envelope).not.toBeNull();
    // Sealed and charged at C once, nothing at A.
    await c.node.counters.loadIdentity(id.zid);
    await a.node.counters.loadIdentity(id.zid);
    expect(c.node.counters.get(`env:${id.zid}`)).toBe(1);
    expect(a.node.counters.get(`env:${id.zid}`)).toBe(0);
    expect(a.node.counters.get('sealed_total')).toBe(0);
    // The stream dialled C through the addresses its tick events carry.
    expect(a.node.mesh.p2p?.connectedPeers()).toContain(c.node.nodeId);
    // C's own errors come back as C gave them (part 7, its trace id): a bad body.
    const bad = await call(a.url, 'POST', '/api/svc/compute', { ...compute, domain: 'nowhere' }, bearer(id.key));
    expectError(bad, 400, 'SVC_INVALID_DOMAIN');
    expect(bad.headers.get('x-svc-served-by')).toBe(c.node.nodeId);
  }, 60_000);

  it("a transfer from A's identity to C's is delivered to C over libp2p", async () => {
    const x = await zkIdentity(a.url, 'nat-sender');
    await grant(a, a.url, x.zid, 1);
    const minted = await call(a.url, 'POST', '/api/svc/compute', compute, bearer(x.key));
    expect(minted.status, minted.text).toBe(200);
    const y = await zkIdentity(cUrl, 'nat-receiver');
    await waitFor(() => a.node.identity.getIdentity(y.zid), 'the receiver known at A');
    const r = await call(a.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: y.zid, token_ids: [minted.body.envelope.token_id] }, bearer(x.key));
    expect(r.status, r.text).toBe(202);
    expect(r.body.to_home).toBe(c.node.nodeId);
    const done = await waitFor(async () => {
      const t = await call(a.url, 'GET', `/api/tally/transfers/${r.body.transfer_id}`, undefined, bearer(x.key));
      return t.body.state === 'delivered' ? t.body : null;
    }, 'the transfer delivered');
    expect(done.token_ids).toEqual([minted.body.envelope.token_id]);
    const ys = await call(cUrl, 'GET', `/api/tally/envelopes/${y.zid}`, undefined, bearer(y.key));
    expect(ys.body.total).toBe(1);
    expect(ys.body.items[0]).toMatchObject({ token_id: minted.body.envelope.token_id, owner: y.zid, folder: 'inbox' });
  }, 60_000);

  it('a key C never gossiped is looked up at C over libp2p, and a write with it through A lands at C', async () => {
    const id = await zkIdentity(cUrl, 'nat-lookup');
    await grant(c, cUrl, id.zid, 1);
    await waitFor(() => a.node.identity.getIdentity(id.zid), 'the identity known at A');
    const { key } = await c.node.identity.mintKeyFor(id.zid, 'sk', null);
    const r = await call(a.url, 'POST', '/api/svc/compute', compute, bearer(key));
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get('x-svc-served-by')).toBe(c.node.nodeId);
    expect(r.body.node).toBe(c.node.nodeId);
  }, 60_000);

  it('the libp2p entrance refuses a request without the mesh handshake: part-7 401, nothing run', async () => {
    const mesh = a.node.mesh;
    const send = peerHttpOverMesh({
      openStream: (p, proto, signal) => mesh.openStream(p, proto, signal),
      selfId: () => mesh.nodeId,
      secret: 'another-mesh-secret-0123456789abcdef',
      nowSvcond: () => mesh.nowSvcond(),
    });
    const answer = await send(c.node.nodeId, { method: 'GET', path: '/api/health', headers: {}, body: '' }, AbortSignal.timeout(5_000));
    expect(answer.via).toBe('libp2p');
    expect(answer.status).toBe(401);
    const body = JSON.parse(answer.text);
    expect(body.error.code).toBe('INVALID_HANDSHAKE');
    expect(body.error.trace_id).toBe(answer.headers['x-trace-id']);
    // With the mesh's secret the same stream protocol answers C's health.
    const ok = await peerHttpOverMesh({
      openStream: (p, proto, signal) => mesh.openStream(p, proto, signal),
      selfId: () => mesh.nodeId,
      secret: MESH_SECRET,
      nowSvcond: () => mesh.nowSvcond(),
    })(c.node.nodeId, { method: 'GET', path: '/api/health', headers: {}, body: '' }, AbortSignal.timeout(5_000));
    expect(ok.status, ok.text).toBe(200);
    expect(PEER_HTTP_PROTOCOL).toBe('/svc/http/1');
  }, 30_000);

  it('with C stopped neither way works: 503 SVC_HOME_UNREACHABLE naming C and both attempts, with Retry-After', async () => {
    const id = await zkIdentity(cUrl, 'nat-gone');
    await grant(c, cUrl, id.zid, 1);
    await waitFor(() => a.node.identity.getIdentity(id.zid), 'the identity known at A');
    await c.stop();
    const r = await call(a.url, 'POST', '/api/svc/compute', compute, bearer(id.key));
    const e = expectError(r, 503, 'SVC_HOME_UNREACHABLE');
    expect(e.home).toBe(c.node.nodeId);
    expect(e.message).toContain(c.node.nodeId);
    expect(e.tried).toHaveLength(2);
    expect(e.tried[0]).toBe(`HTTP at ${deadUrl}: ECONNREFUSED`);
    expect(e.tried[1]).toMatch(/^libp2p \/svc\/http\/1: /);
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  }, 60_000);
});

// The economy on two meshed nodes: claims and folder moves made through any node land at the identity's home;
// a grant for an identity homed elsewhere is refused, naming the home (the operator token never leaves its node).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { solveChallenge } from '../../src/tally/claim-proof.js';

const MESH_SECRET = 'economy-cluster-secret-0123456789abcdef';
const RECEIPT_SECRET = 'ab'.repeat(32);

let a: TestNode;
let b: TestNode;
const meshConfig = (bootstrap: string[]) => ({
  receiptSecret: RECEIPT_SECRET,
  mesh: { secret: MESH_SECRET, p2pPort: 0, bootstrap, tickEvery: 1 },
  limits: { claimDifficultyBits: 4 },
});
const opts = { mesh: { redialMinMs: 100, redialMaxMs: 1000 }, initialCredits: 0 };

beforeAll(async () => {
  a = await startTestNode(meshConfig([]), opts);
  b = await startTestNode(meshConfig([a.node.mesh.multiaddrs()[0]!]), opts);
  const end = Date.now() + 60_000;
  while (![a, b].every((n) => n.node.mesh.peers().some((p) => p.url))) {
    if (Date.now() > end) throw new Error('the nodes did not hear each other');
    await new Promise((r) => setTimeout(r, 100));
  }
}, 120_000);
afterAll(async () => {
  await Promise.all([a, b].map((n) => n?.destroy()));
});

describe('economy through any node', () => {
  it("a claim and a folder move through B land once at A; a grant at B for A's identity names A", async () => {
    const id = await zkIdentity(a.url, 'economy-any-node');
    const st = await call(b.url, 'GET', '/api/tally/claim', undefined, bearer(id.key));
    expect(st.status, st.text).toBe(200);
    expect(st.headers.get('x-svc-served-by')).toBe(a.node.nodeId);
    expect(st.body.claimable).toBe(true);
    const r = await call(
      b.url,
      'POST',
      '/api/tally/claim',
      { challenge: st.body.challenge, nonce: solveChallenge(st.body.challenge, st.body.difficulty) },
      bearer(id.key),
    );
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get('x-svc-served-by')).toBe(a.node.nodeId);
    expect((await a.node.ledger.wallet(id.zid)).free).toBe(128);

    const sealed = await call(
      b.url,
      'POST',
      '/api/svc/compute',
      { domain: 'thermodynamics', operators: ['KO42', 'THERMO_CARNOT_EFFICIENCY'], inputs: {} },
      bearer(id.key),
    );
    expect(sealed.status, sealed.text).toBe(200);
    const m = await call(b.url, 'POST', '/api/tally/envelopes/folder', { folder: 'kept', token_ids: [sealed.body.envelope.token_id] }, bearer(id.key));
    expect(m.status, m.text).toBe(200);
    expect(m.body).toMatchObject({ moved: 1, folders: [{ folder: 'kept', count: 1 }] });
    expect(a.node.ledger.folders(id.zid)).toEqual([{ folder: 'kept', count: 1 }]);

    // B knows A's identity (from its assertion) and refuses to grant it: A's operator grants it.
    const tokenB = (await readFile(join(b.dataDir, 'operator-token'), 'utf8')).trim();
    const e = expectError(await call(b.url, 'POST', '/api/tally/grants', { zid: id.zid, credits: 5 }, bearer(tokenB)), 409, 'SVC_CONFLICT');
    expect(e).toMatchObject({ home: a.node.nodeId, home_url: a.url });
    const tokenA = (await readFile(join(a.dataDir, 'operator-token'), 'utf8')).trim();
    expect(tokenA).not.toBe(tokenB);
    expect((await call(a.url, 'POST', '/api/tally/grants', { zid: id.zid, credits: 5 }, bearer(tokenA))).body.balance).toMatchObject({ paid: 5 });
  }, 120_000);
});

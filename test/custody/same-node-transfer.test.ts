// A transfer between two identities homed on one node whose ledgers custodians certify: the debit and the credit are
// two writes, as between nodes (the credit delivered on the node itself). One write would be an entry of each
// identity, and custodians that certify the sender's entry and refuse the receiver's would keep a debit the home
// never wrote, with no credit: a failover then takes the sender's chain without the envelopes, and nobody holds them.
// Here the receiver's custodians refuse its entries (fenced: each promised a higher epoch to another candidate,
// composed in the test), and the sender's are certified.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, zkIdentity, type TestNode } from '../helpers/node.js';
import { COMPUTE, grant, startBondedTrio } from '../helpers/custody.js';
import { waitFor } from '../mesh/helpers.js';

const MESH_SECRET = 'same-node-transfer-secret-0123456789';
let a: TestNode;
let b: TestNode;
let c: TestNode;

beforeAll(async () => {
  [a, b, c] = await startBondedTrio(MESH_SECRET, 0);
}, 90_000);

afterAll(async () => {
  await Promise.all([a, b, c].map((n) => n?.destroy()));
});

describe('a transfer between two identities homed on one node', () => {
  it('is a debit the sender’s custodians certify and a credit of its own: a refused credit loses no envelope', async () => {
    const x = await zkIdentity(a.url, 'same-node-sender');
    const y = await zkIdentity(a.url, 'same-node-receiver');
    await grant(a, x.zid, 5);
    await grant(a, y.zid, 5);
    const sealed: string[] = [];
    for (let i = 0; i < 2; i++) {
      const r = await call(a.url, 'POST', '/api/svc/compute', COMPUTE, bearer(x.key));
      expect(r.status, r.text).toBe(200);
      sealed.push(r.body.envelope.token_id);
    }
    // Y's custodians promise epoch 5 to C: they refuse Y's entries from A as fenced from now on.
    for (const n of [b, c]) expect(await n.node.custody.custodian.promiseTo(y.zid, 5, c.node.nodeId)).toHaveProperty('promise');

    const sent = await call(a.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: y.zid, token_ids: [sealed[0]] }, bearer(x.key));
    expect(sent.status, sent.text).toBe(202);
    expect(sent.body).toMatchObject({ state: 'pending', from: x.zid, to: y.zid, token_ids: [sealed[0]] });
    // The debit is written at the home and certified: its custodians hold the home's entries, no more.
    const homeHead = await a.node.custody.replicator.certifiedHead(x.zid);
    for (const n of [b, c]) expect((await n.node.custody.custodian.head(x.zid))?.seq).toBe(homeHead?.seq);
    const held = await call(a.url, 'GET', `/api/tally/envelopes/${x.zid}?limit=10`, undefined, bearer(x.key));
    expect(held.body.items.map((e: { token_id: string }) => e.token_id)).toEqual([sealed[1]]);
    // The credit is refused meanwhile: the transfer stays pending at the home, the envelope travelling with it.
    await new Promise((r) => setTimeout(r, 1000));
    const pending = await call(a.url, 'GET', `/api/tally/transfers/${sent.body.transfer_id}`, undefined, bearer(x.key));
    expect(pending.body).toMatchObject({ state: 'pending' });
    const stored = await a.node.transfers.load(sent.body.transfer_id);
    expect(stored?.envelopes?.map((e) => e.token_id)).toEqual([sealed[0]]);
    // Once Y's custodians take Y's entries again (the home takes Y over above the fence), the credit lands, once.
    await waitFor(
      async () => (await call(a.url, 'GET', `/api/tally/transfers/${sent.body.transfer_id}`, undefined, bearer(x.key))).body.state === 'delivered',
      60_000,
      'the transfer delivered',
    );
    const got = await call(a.url, 'GET', `/api/tally/envelopes/${y.zid}?limit=10`, undefined, bearer(y.key));
    expect(got.body.items.map((e: { token_id: string; transfer_id?: string }) => [e.token_id, e.transfer_id])).toEqual([[sealed[0], sent.body.transfer_id]]);
  }, 120_000);
});

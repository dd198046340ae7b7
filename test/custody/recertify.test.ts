// A debit whose sender's custody set changed before its delivery is certified again under the set of now, instead of
// staying in the outbox: on three real bonded nodes, x homed on A sends to y homed on L while x's other custodian H
// is stopped, so the debit's certificate is A's and L's signatures. A fourth node D bonds and takes L's place in x's
// set (its rank is between H's and L's): the kept certificate is one signature short there. When A's outbox resumes,
// A proposes the debit entry again to H and D, which catch up and sign it, and the delivery carries the new
// certificate: y is credited at L.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitFor } from '../mesh/helpers.js';
import { bond, COMPUTE, custodyConfig, custodyNodeOptions, grant, startBondedTrio } from '../helpers/custody.js';
import { DebitCertificates } from '../../src/custody/debit-certificate.js';
import { entryHash, signingTextOf } from '../../src/custody/entry.js';
import { rankWeight } from '../../src/consensus/committee.js';
import { verifyText } from '../../src/mesh/wire.js';

const SECRET = 'custody-recertify-secret-0123456789abcdef';

let a: TestNode;
let b: TestNode;
let c: TestNode;
let d: TestNode;

beforeAll(async () => {
  [a, b, c] = await startBondedTrio(SECRET, 0);
  const addr = (n: TestNode) => n.node.mesh.multiaddrs()[0]!;
  d = await startTestNode(custodyConfig(SECRET, [addr(a), addr(b), addr(c)]), custodyNodeOptions(0));
  await waitFor(() => d.node.mesh.peers().filter((p) => p.url && p.connected).length >= 3, 30_000, 'D meshed with A, B and C');
}, 120_000);

afterAll(async () => {
  await Promise.all([a, b, c, d].map((n) => n?.destroy()));
});

describe('a debit whose custody set changed before its delivery', () => {
  it('is certified again under the set of now and delivered', async () => {
    // x on A, with D ranked between B and C: D takes the lower one's place once bonded.
    let x: { zid: string; key: string; slug: string } | null = null;
    for (let i = 0; x === null; i++) {
      const id = await zkIdentity(a.url, `recertify-x-${i}`);
      const w = (n: TestNode) => rankWeight(id.zid, n.node.nodeId);
      if ((w(d) > w(b) && w(d) < w(c)) || (w(d) > w(c) && w(d) < w(b))) x = id;
    }
    const w = (n: TestNode) => rankWeight(x.zid, n.node.nodeId);
    const [high, low] = w(b) > w(c) ? [b, c] : [c, b];
    const y = await zkIdentity(low.url, 'recertify-y');
    await grant(a, x.zid, 2);
    for (let i = 0; i < 2; i++) expect((await call(a.url, 'POST', '/api/svc/compute', COMPUTE, bearer(x.key))).status).toBe(200);
    await waitFor(async () => (await a.node.identity.getIdentity(y.zid)) && (await low.node.identity.getIdentity(x.zid)), 20_000, 'x and y known at A and L');

    // The debit, certified by A and L alone (H stopped), held in A's outbox.
    const highNode = high.node.nodeId;
    await high.stop();
    await a.node.transferDelivery.stop();
    const t = await call(a.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: y.zid, count: 1 }, bearer(x.key));
    expect(t.status, t.text).toBe(202);
    const id = t.body.transfer_id as string;
    const kept = (await new DebitCertificates(a.node.store).get(id))!;
    expect(kept.signatures.map((s) => s.node)).toEqual([a.node.nodeId, low.node.nodeId]);

    // H returns, D bonds and replaces L in x's set, at A and at L.
    const restarted = await high.restart();
    if (high === b) b = restarted;
    else c = restarted;
    await bond(d, 'recertify-operator-d', 0);
    const inSet = async (n: TestNode) => (await n.node.custody.view.status(x.zid))?.custodians ?? [];
    await waitFor(async () => (await inSet(a)).includes(d.node.nodeId) && (await inSet(low)).includes(d.node.nodeId), 30_000, 'D in x’s set at A and L');
    expect(new Set(await inSet(a))).toEqual(new Set([a.node.nodeId, highNode, d.node.nodeId]));

    // A's outbox resumes (a restart): the delivery carries a certificate of the set of now, and y is credited at L.
    a = await a.restart();
    await waitFor(
      async () => (await call(a.url, 'GET', `/api/tally/transfers/${id}`, undefined, bearer(x.key))).body.state === 'delivered',
      30_000,
      'delivered',
    );
    const now = (await new DebitCertificates(a.node.store).get(id))!;
    expect(now.entry).toEqual(kept.entry);
    const signers = now.signatures.map((s) => s.node);
    expect(signers[0]).toBe(a.node.nodeId);
    expect(signers.length).toBeGreaterThanOrEqual(2);
    for (const s of now.signatures) {
      expect([a.node.nodeId, highNode, d.node.nodeId]).toContain(s.node);
      expect(verifyText(s.node, signingTextOf(entryHash(now.entry)), s.signature)).toBe(true);
    }
    expect((await low.node.transfers.load(id))?.debit_certificate).toEqual(now);
    const landed = await call(low.url, 'GET', `/api/tally/envelopes/${y.zid}`, undefined, bearer(y.key));
    expect(landed.body.items.map((e: { token_id: string }) => e.token_id)).toEqual(t.body.token_ids);
  });
});

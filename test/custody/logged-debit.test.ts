// A pending debit whose home keeps no certificate of it (a new home that could not gather one when it took the identity
// over) is certified at its next delivery from the home's certified log, under the set of the debit's epoch: the home's
// own signature and its custodians' (asked for the entry they hold), then kept and delivered. On three real bonded
// nodes: x homed on A sends to y homed on B while A's delivery is stopped; the test removes the kept certificate from
// A's store, then A's outbox resumes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitFor } from '../mesh/helpers.js';
import { COMPUTE, grant, startBondedTrio } from '../helpers/custody.js';
import { DebitCertificates } from '../../src/custody/debit-certificate.js';
import { entryHash, signingTextOf } from '../../src/custody/entry.js';
import { verifyText } from '../../src/mesh/wire.js';

const SECRET = 'custody-logged-debit-secret-0123456789abcdef';

let a: TestNode;
let b: TestNode;
let c: TestNode;

beforeAll(async () => {
  [a, b, c] = await startBondedTrio(SECRET, 0);
}, 120_000);

afterAll(async () => {
  await Promise.all([a, b, c].map((n) => n?.destroy()));
});

describe('a pending debit with no certificate kept', () => {
  it('is certified from the certified log at its delivery, kept, and credited', async () => {
    const x = await zkIdentity(a.url, 'logged-debit-x');
    const y = await zkIdentity(b.url, 'logged-debit-y');
    await grant(a, x.zid, 2);
    for (let i = 0; i < 2; i++) expect((await call(a.url, 'POST', '/api/svc/compute', COMPUTE, bearer(x.key))).status).toBe(200);
    await waitFor(async () => (await a.node.identity.getIdentity(y.zid)) && (await b.node.identity.getIdentity(x.zid)), 20_000, 'x and y known at A and B');

    await a.node.transferDelivery.stop();
    const t = await call(a.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: y.zid, count: 1 }, bearer(x.key));
    expect(t.status, t.text).toBe(202);
    const id = t.body.transfer_id as string;
    const certificates = new DebitCertificates(a.node.store);
    const made = (await certificates.get(id))!;
    expect(made.signatures.length).toBeGreaterThanOrEqual(2);
    await a.node.store.commitAside([{ type: 'del', sub: a.node.store.sub('custody_debits'), key: id }]);
    expect(await certificates.get(id)).toBeNull();

    // A's outbox resumes (a restart): the delivery carries a certificate made from A's log, and y is credited at B.
    a = await a.restart();
    await waitFor(
      async () => (await call(a.url, 'GET', `/api/tally/transfers/${id}`, undefined, bearer(x.key))).body.state === 'delivered',
      30_000,
      'delivered',
    );
    const again = (await new DebitCertificates(a.node.store).get(id))!;
    expect(again.entry).toEqual(made.entry);
    const set = new Set([a, b, c].map((n) => n.node.nodeId));
    expect(new Set(again.signatures.map((s) => s.node)).size).toBeGreaterThanOrEqual(2);
    for (const s of again.signatures) {
      expect(set.has(s.node)).toBe(true);
      expect(verifyText(s.node, signingTextOf(entryHash(again.entry)), s.signature)).toBe(true);
    }
    expect((await b.node.transfers.load(id))?.debit_certificate).toEqual(again);
    const landed = await call(b.url, 'GET', `/api/tally/envelopes/${y.zid}`, undefined, bearer(y.key));
    expect(landed.body.items.map((e: { token_id: string }) => e.token_id)).toEqual(t.body.token_ids);
  });
});

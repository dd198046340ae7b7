// A cross-node transfer carries the sender's debit certificate (docs/protocol.md §19), on three real bonded nodes
// (every custody set all three): x homed on A sends to y homed on B. A's debit is certified by A and a custodian; the
// receiver's custodian C refuses a credit of y whose certificate is short, forged, missing or for another amount (B's
// libp2p host sending credits the test composes), and B refuses such a delivery; the honest delivery (resumed from A's
// outbox after a restart, with the certificate kept there) is credited at B and signed by y's custodians once: again,
// it is a duplicate at B and `transfer-reused` at C.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitFor } from '../mesh/helpers.js';
import { COMPUTE, forge, grant, outcomes, propose, startBondedTrio } from '../helpers/custody.js';
import { DebitCertificates, type DebitCertificate } from '../../src/custody/debit-certificate.js';
import { entryHash, signingTextOf, tokensDigest, type CustodyEntry, type EntryTransfer } from '../../src/custody/entry.js';
import { HANDSHAKE_HEADER, signText, verifyText } from '../../src/mesh/wire.js';
import { TRANSFER_EVENT, type DeliveryBody } from '../../src/tally/transfer-wire.js';
import { DELIVER_PATH, deliveryOf } from '../../src/tally/transfer-delivery.js';

const SECRET = 'debit-certificate-secret-0123456789abcdef';

let a: TestNode;
let b: TestNode;
let c: TestNode;

beforeAll(async () => {
  // No initial credits: every credit is paid (granted), so every envelope sealed is movable.
  [a, b, c] = await startBondedTrio(SECRET, 0);
}, 90_000);

afterAll(async () => {
  await Promise.all([a, b, c].map((n) => n?.destroy()));
});

/** A delivery to B signed by A (the sender's home), and B's answer for it. */
async function deliverToB(body: DeliveryBody): Promise<{ status: number; ack: Record<string, unknown> }> {
  const env = await a.node.mesh.signDirect(TRANSFER_EVENT, { deliveries: [body] });
  const r = await call(b.url, 'POST', DELIVER_PATH, env.event, { [HANDSHAKE_HEADER]: env.handshake! });
  return { status: r.status, ack: r.body?.body?.acks?.[0] };
}

describe('a transfer from A to B carries its debit certificate', () => {
  it("is refused by the receiver's custodian and home with a short, forged, missing or other-amount certificate, and credited once with the honest one", async () => {
    const x = await zkIdentity(a.url, 'debit-sender');
    await grant(a, x.zid, 3);
    for (let i = 0; i < 3; i++) expect((await call(a.url, 'POST', '/api/svc/compute', COMPUTE, bearer(x.key))).status).toBe(200);
    const y = await zkIdentity(b.url, 'debit-receiver');
    await grant(b, y.zid, 1);
    await waitFor(async () => (await a.node.identity.getIdentity(y.zid)) && (await b.node.identity.getIdentity(x.zid)), 20_000, 'x and y known at A and B');
    await waitFor(async () => (await c.node.identity.getIdentity(x.zid)) && (await c.node.custody.custodian.head(y.zid)), 20_000, 'C knows x and holds y');

    // The delivery loop is paused: the transfer stays pending at A with its certificate.
    await a.node.transferDelivery.stop();
    const t = await call(a.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: y.zid, count: 2 }, bearer(x.key));
    expect(t.status, t.text).toBe(202);
    const id = t.body.transfer_id as string;
    const cert = (await new DebitCertificates(a.node.store).get(id))!;
    const moved: EntryTransfer = { id, side: 'debit', party: y.zid, amount: t.body.face_value_total, tokens: tokensDigest(t.body.token_ids) };
    expect(cert.entry).toMatchObject({ zid: x.zid, kind: 'transfer', transfer: moved });
    const hash = entryHash(cert.entry);
    expect(cert.signatures[0]!.node).toBe(a.node.nodeId);
    expect(cert.signatures.length).toBeGreaterThanOrEqual(2);
    expect(new Set(cert.signatures.map((s) => s.node)).size).toBe(cert.signatures.length);
    for (const s of cert.signatures) expect(verifyText(s.node, signingTextOf(hash), s.signature)).toBe(true);
    // The certificate is the debit entry A's custody log holds.
    const atA = await call(a.url, 'GET', `/api/mesh/custody/${x.zid}/entries`);
    expect(atA.body.entries.find((e: { hash: string }) => e.hash === hash)).toBeDefined();

    // Credits of y composed in the test, proposed to C by y's home B, chained on what C holds of y.
    const head = (await c.node.custody.custodian.head(y.zid))!;
    const credit = (transfer: Partial<EntryTransfer> = {}): CustodyEntry =>
      forge({
        v: 1,
        zid: y.zid,
        epoch: 1,
        seq: head.seq + 1,
        prev_hash: head.hash,
        kind: 'transfer',
        records: '',
        balance: null,
        transfer: { ...moved, side: 'credit', party: x.zid, ...transfer },
      });
    const short: DebitCertificate = { entry: cert.entry, signatures: cert.signatures.slice(0, 1) };
    const otherText = signText(a.node.nodeIdentity.privateKey, signingTextOf('00'.repeat(32)));
    const forged: DebitCertificate = { entry: cert.entry, signatures: cert.signatures.map((s) => ({ ...s, signature: otherText })) };
    const refused = await propose(SECRET, b, c, [credit(), credit(), credit({ amount: moved.amount + 1 }), credit()], [short, forged, cert, null]);
    expect(outcomes(refused)).toEqual(['debit-uncertified', 'debit-uncertified', 'debit-uncertified', 'debit-uncertified']);
    const reasons = refused.results.map((r) => (r.ok ? '' : r.reason));
    expect(reasons[0]).toContain('1 of the 3 custodians');
    expect(reasons[1]).toContain('does not verify');
    expect(reasons[2]).toContain(`the credit is ${moved.amount + 1}`);
    expect(reasons[3]).toContain('no debit certificate');
    expect(await c.node.custody.custodian.head(y.zid)).toEqual(head);

    // B checks it too: a short certificate credits nothing there.
    const [pending] = await a.node.transfers.loadMany([id]);
    const body = deliveryOf(pending!, 1);
    expect(body.debit_certificate).toEqual(cert);
    const shortAtB = await deliverToB({ ...body, debit_certificate: short });
    expect(shortAtB.status).toBe(200);
    expect(shortAtB.ack).toMatchObject({ transfer_id: id, error: { status: 403, code: 'SVC_DEBIT_UNCERTIFIED' } });
    expect(await b.node.transfers.load(id)).toBeUndefined();

    // The honest delivery, after A restarts: its outbox resumes with the certificate kept in the debit's batch. Credited
    // at B with that very certificate, the credit entry signed by y's custodians A and C.
    a = await a.restart();
    await waitFor(
      async () => (await call(a.url, 'GET', `/api/tally/transfers/${id}`, undefined, bearer(x.key))).body.state === 'delivered',
      20_000,
      'delivered',
    );
    type Held = { entry: CustodyEntry; hash: string; signatures: { node: string; signature: string }[] };
    const held = async (n: TestNode) => ((await call(n.url, 'GET', `/api/mesh/custody/${y.zid}/entries`)).body?.entries ?? []) as Held[];
    const creditHeld = { ...moved, side: 'credit', party: x.zid };
    // B's certified log holds the credit with the signature of a custodian of y (A, just restarted, may have missed it).
    await waitFor(async () => (await held(b)).some((h) => h.entry.transfer?.id === id), 5000, 'the credit certified at B');
    const atB = (await held(b)).filter((h) => h.entry.transfer?.id === id);
    expect(atB.map((h) => h.entry.transfer)).toEqual([creditHeld]);
    const signers = atB[0]!.signatures.map((s) => s.node);
    expect(signers.length).toBeGreaterThanOrEqual(1);
    for (const s of atB[0]!.signatures) {
      expect([a.node.nodeId, c.node.nodeId]).toContain(s.node);
      expect(verifyText(s.node, signingTextOf(atB[0]!.hash), s.signature)).toBe(true);
    }
    const holder = signers.includes(c.node.nodeId) ? c : a;
    expect((await held(holder)).filter((h) => h.entry.transfer?.id === id).map((h) => h.entry.transfer)).toEqual([creditHeld]);
    expect((await b.node.transfers.load(id))?.debit_certificate).toEqual(cert);
    const envelopes = async () => (await call(b.url, 'GET', `/api/tally/envelopes/${y.zid}`, undefined, bearer(y.key))).body;
    const landed = await envelopes();
    expect(
      landed.items
        .filter((e: { transfer_id?: string }) => e.transfer_id === id)
        .map((e: { token_id: string }) => e.token_id)
        .sort(),
    ).toEqual([...t.body.token_ids].sort());

    // Once: delivered again it is a duplicate at B; proposed again to C it is a reused transfer id.
    const again = await deliverToB(body);
    expect(again.ack).toMatchObject({ transfer_id: id, duplicate: true });
    expect((await envelopes()).total).toBe(landed.total);
    const now = (await holder.node.custody.custodian.head(y.zid))!;
    const replay = forge({ ...credit(), seq: now.seq + 1, prev_hash: now.hash });
    expect(outcomes(await propose(SECRET, b, holder, [replay], [cert]))).toEqual(['transfer-reused']);
  });
});

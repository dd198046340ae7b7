// Cross-node transfers on three meshed nodes (architecture.md §7): the sender's home debits and
// keeps an outbox entry, its delivery loop sends the transfer to the receiver's home until acknowledged, and the
// receiver's home applies it once by transfer id. A request made at a third node is forwarded to the sender's home.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, connectedIndexes, expectError, startMesh, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { TRANSFER_EVENT, type DeliveryBody } from '../../src/tally/transfer-wire.js';
import { DELIVER_PATH, verifiedAnswers } from '../../src/tally/transfer-delivery.js';
import { HANDSHAKE_HEADER, signText } from '../../src/mesh/wire.js';
import { debitCertificateSchema, DebitCertificates } from '../../src/custody/debit-certificate.js';
import { entryHash, signingTextOf, tokensDigest, type CustodyEntry } from '../../src/custody/entry.js';
import { waitUntil } from '../helpers/wait.js';

const MESH_SECRET = 'transfer-cluster-secret-0123456789abcdef';
const RECEIPT_SECRET = 'cd'.repeat(32);
const cost1 = { domain: 'thermodynamics', operators: ['KO42', 'THERMO_CARNOT_EFFICIENCY'], inputs: {} };

let a: TestNode;
let b: TestNode;
let c: TestNode;
const meshConfig = (bootstrap: string[], ports: { port: number; p2pPort: number } = { port: 0, p2pPort: 0 }) => ({
  receiptSecret: RECEIPT_SECRET,
  port: ports.port,
  mesh: { secret: MESH_SECRET, p2pPort: ports.p2pPort, bootstrap, tickEvery: 1 },
});
const opts = { mesh: { redialMinMs: 100, redialMaxMs: 1000 }, initialCredits: 0 };

const waitFor = <T>(fn: () => Promise<T | null | false | undefined> | T | null | false | undefined, what: string, timeoutMs = 30_000) =>
  waitUntil(fn, what, timeoutMs, 100);

async function grant(n: TestNode, zid: string, credits: number): Promise<void> {
  const token = (await readFile(join(n.dataDir, 'operator-token'), 'utf8')).trim();
  const r = await call(n.url, 'POST', '/api/tally/grants', { zid, credits }, bearer(token));
  expect(r.status, r.text).toBe(201);
}

/** An identity homed on `n` holding `count` paid (movable) envelopes. */
async function richIdentity(n: TestNode, seed: string, count: number): Promise<{ zid: string; key: string; slug: string; minted: string[] }> {
  const id = await zkIdentity(n.url, seed);
  await grant(n, id.zid, count);
  const minted: string[] = [];
  for (let i = 0; i < count; i++) {
    const r = await call(n.url, 'POST', '/api/svc/compute', cost1, bearer(id.key));
    expect(r.status, r.text).toBe(200);
    minted.push(r.body.envelope.token_id);
  }
  return { ...id, minted };
}

/** An identity homed on `home`, once `knownAt` has heard of it (its assertion gossiped). */
async function remoteIdentity(home: TestNode, knownAt: TestNode, seed: string): Promise<{ zid: string; key: string; slug: string }> {
  const id = await zkIdentity(home.url, seed);
  await waitFor(() => knownAt.node.identity.getIdentity(id.zid), `${seed} known at the sender's home`);
  return id;
}

async function held(
  n: TestNode,
  who: { zid: string; key: string },
): Promise<{ total: number; items: { token_id: string; owner: string; folder: string; transfer_id?: string }[] }> {
  const r = await call(n.url, 'GET', `/api/tally/envelopes/${who.zid}?limit=500`, undefined, bearer(who.key));
  expect(r.status, r.text).toBe(200);
  return r.body;
}

async function delivered(n: TestNode, who: { key: string }, id: string, timeoutMs = 30_000): Promise<Record<string, any>> {
  return waitFor(
    async () => {
      const r = await call(n.url, 'GET', `/api/tally/transfers/${id}`, undefined, bearer(who.key));
      return r.status === 200 && r.body.state === 'delivered' ? r.body : null;
    },
    `transfer ${id} delivered`,
    timeoutMs,
  );
}

/** A delivery of transfer `t` from `from` to `to`, both homed on `n`, as its delivery loop sends it. */
function deliveryOfPending(t: Record<string, any>, from: string, to: string, n: TestNode): DeliveryBody {
  return {
    transfer_id: t.transfer_id,
    from,
    to,
    from_home: n.node.nodeId,
    to_home: n.node.nodeId,
    created_svcond: t.created_svcond,
    created_unix_ms: t.created_unix_ms,
    attempt: 2,
    picked_by: 'count',
    seed: t.seed,
    envelopes: t.token_ids.map((token_id: string) => ({ token_id, face_value: 1, funding: 'paid', svcond: 1, result_id: 'res_1_test', hash: 'a'.repeat(64) })),
    debit_certificate: null,
  };
}

const portsOf = (n: TestNode) => ({ port: Number(new URL(n.url).port), p2pPort: Number(/\/tcp\/(\d+)\//.exec(n.node.mesh.multiaddrs()[0]!)![1]) });

beforeAll(async () => {
  a = await startTestNode(meshConfig([]), opts);
  const addrA = a.node.mesh.multiaddrs()[0]!;
  b = await startTestNode(meshConfig([addrA]), opts);
  c = await startTestNode(meshConfig([addrA, b.node.mesh.multiaddrs()[0]!]), opts);
  await waitFor(() => [a, b, c].every((n) => n.node.mesh.peers().filter((p) => p.url).length >= 2), 'tick events from every peer');
}, 120_000);
afterAll(async () => {
  await Promise.all([a, b, c].map((n) => n?.destroy()));
});

/**
 * A transfer made at `c` from an identity homed on `a` to one homed on `b`: debited at `a`, delivered once to `b`, and
 * passed back. `tag` keeps the identities of each mesh apart.
 */
async function transferThroughThirdNode(a: TestNode, b: TestNode, c: TestNode, tag = ''): Promise<void> {
  const x = await richIdentity(a, `xn-sender${tag}`, 8);
  const y = await remoteIdentity(b, a, `xn-receiver${tag}`);
  await waitFor(() => c.node.identity.getIdentity(x.zid), 'the sender known at C');

  const r = await call(c.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: y.zid, count: 5 }, bearer(x.key));
  expect(r.status, r.text).toBe(202);
  expect(r.headers.get('x-svc-served-by')).toBe(a.node.nodeId);
  expect(r.body).toMatchObject({
    state: 'pending',
    from: x.zid,
    to: y.zid,
    count: 5,
    from_home: a.node.nodeId,
    to_home: b.node.nodeId,
    delivered_svcond: null,
  });
  const sent: string[] = r.body.token_ids;
  // The debit is at once: X holds 3.
  expect((await held(a, x)).total).toBe(3);
  await a.node.counters.loadIdentity(x.zid); // counters are read on demand
  expect(a.node.counters.get(`env:${x.zid}`)).toBe(3);

  const done = await delivered(a, x, r.body.transfer_id);
  expect(done.attempts).toBeGreaterThanOrEqual(1);
  expect(done.delivered_svcond).toBeGreaterThanOrEqual(done.created_svcond);
  // The receiver's home shows it to the receiver (and not to the sender's key there: the sender's home answers it).
  const atB = await call(b.url, 'GET', `/api/tally/transfers/${r.body.transfer_id}`, undefined, bearer(y.key));
  expect(atB.status, atB.text).toBe(200);
  expect(atB.body).toMatchObject({ state: 'delivered', from: x.zid, to: y.zid, count: 5, token_ids: sent, from_home: a.node.nodeId, to_home: b.node.nodeId });

  const ys = await held(b, y);
  expect(ys.total).toBe(5);
  expect(ys.items.map((e) => e.token_id).sort()).toEqual([...sent].sort());
  expect(ys.items.every((e) => e.owner === y.zid && e.folder === 'inbox' && e.transfer_id === r.body.transfer_id)).toBe(true);
  await b.node.counters.loadIdentity(y.zid); // counters are read on demand
  expect(b.node.counters.get(`env:${y.zid}`)).toBe(5);
  expect(b.node.counters.get(`envf:${y.zid}:inbox`)).toBe(5);
  // The envelopes left A's ledger (no record there), and no other node wrote them.
  expect((await a.node.ledger.envelopesById(sent)).every((e) => e === undefined)).toBe(true);
  expect((await c.node.ledger.envelopesById(sent)).every((e) => e === undefined)).toBe(true);
  await c.node.counters.loadIdentity(y.zid); // counters are read on demand
  expect(c.node.counters.get(`env:${y.zid}`)).toBe(0);
  // Nothing left in A's outbox.
  expect(await a.node.transfers.pending()).toEqual([]);

  // The receiver passes two back to the sender across the mesh: they land at A again.
  const back = await call(b.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: x.zid, token_ids: sent.slice(0, 2) }, bearer(y.key));
  expect(back.status, back.text).toBe(202);
  await delivered(b, y, back.body.transfer_id);
  expect((await held(a, x)).total).toBe(5);
  expect((await held(b, y)).total).toBe(3);
}

describe('cross-node transfers', () => {
  it('a transfer made through a third node is debited at the sender home and lands exactly once at the receiver home', async () => {
    await transferThroughThirdNode(a, b, c);
  }, 120_000);

  it('a delivery replayed (the same bytes, or signed again) is acknowledged as a duplicate and applied once; concurrent first deliveries apply once', async () => {
    const x = await richIdentity(a, 'xn-replay-sender', 3);
    const y = await remoteIdentity(b, a, 'xn-replay-receiver');
    const r = await call(a.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: y.zid, count: 3 }, bearer(x.key));
    expect(r.status, r.text).toBe(202);
    await delivered(a, x, r.body.transfer_id);
    const items = (await b.node.ledger.envelopesById(r.body.token_ids)).map((e) => e!);
    const body: DeliveryBody = {
      transfer_id: r.body.transfer_id,
      from: x.zid,
      to: y.zid,
      from_home: a.node.nodeId,
      to_home: b.node.nodeId,
      created_svcond: r.body.created_svcond,
      created_unix_ms: r.body.created_unix_ms,
      attempt: 9,
      picked_by: 'count',
      seed: r.body.seed,
      envelopes: items.map((e) => ({
        token_id: e.token_id,
        face_value: e.face_value,
        funding: 'paid',
        svcond: e.svcond,
        result_id: e.result_id,
        hash: e.hash,
      })),
      debit_certificate: (await new DebitCertificates(a.node.store).get(r.body.transfer_id))!,
    };
    expect(body.debit_certificate!.entry.transfer).toMatchObject({ id: r.body.transfer_id, side: 'debit', party: y.zid });
    const deliver = async (from: TestNode, payload: unknown, handshake?: string) => {
      const env = await from.node.mesh.signDirect(TRANSFER_EVENT, { deliveries: [payload] });
      return call(b.url, 'POST', DELIVER_PATH, env.event, { [HANDSHAKE_HEADER]: handshake ?? env.handshake! });
    };
    const seqBefore = b.node.counters.get('envelope_seq');
    const again = await deliver(a, body);
    expect(again.status, again.text).toBe(200);
    const [outcome] = (await verifiedAnswers(again.body, b.node.nodeId, [r.body.transfer_id]))!;
    expect(outcome).toMatchObject({ ack: { transfer_id: r.body.transfer_id, to: y.zid, duplicate: true } });
    // The very same bytes twice; and twice in one request.
    const env = await a.node.mesh.signDirect(TRANSFER_EVENT, { deliveries: [body] });
    for (let i = 0; i < 2; i++) {
      const same = await call(b.url, 'POST', DELIVER_PATH, env.event, { [HANDSHAKE_HEADER]: env.handshake! });
      expect(same.status, same.text).toBe(200);
      expect(same.body.body.acks[0].duplicate).toBe(true);
    }
    // Credited already: a duplicate even with no certificate (a home that took the sender over may hold none).
    const uncertified = await deliver(a, { ...body, debit_certificate: null });
    expect(uncertified.body.body.acks[0]).toMatchObject({ transfer_id: r.body.transfer_id, duplicate: true });
    const twice = await a.node.mesh.signDirect(TRANSFER_EVENT, { deliveries: [body, body] });
    const both = await call(b.url, 'POST', DELIVER_PATH, twice.event, { [HANDSHAKE_HEADER]: twice.handshake! });
    expect(both.body.body.acks.map((x: { duplicate: boolean }) => x.duplicate)).toEqual([true, true]);
    await b.node.counters.loadIdentity(y.zid); // counters are read on demand
    expect(b.node.counters.get(`env:${y.zid}`)).toBe(3);
    expect(b.node.counters.get('envelope_seq')).toBe(seqBefore);

    // Refusals of the node-to-node route: no handshake, a wrong one, a signer that is not the sender's home.
    expectError(await call(b.url, 'POST', DELIVER_PATH, env.event), 401, 'MISSING_HANDSHAKE');
    expectError(await call(b.url, 'POST', DELIVER_PATH, env.event, { [HANDSHAKE_HEADER]: `v1=${'0'.repeat(64)}` }), 401, 'INVALID_HANDSHAKE');
    expectError(
      await call(
        b.url,
        'POST',
        DELIVER_PATH,
        { ...env.event, signature: env.event.signature.replace(/^./, (ch) => (ch === 'A' ? 'B' : 'A')) },
        { [HANDSHAKE_HEADER]: env.handshake! },
      ),
      401,
      'INVALID_SIGNATURE',
    );
    // Signed by a node that is not the sender's home: that transfer is refused (403), nothing applied.
    const forged = await deliver(c, body);
    expect(forged.status, forged.text).toBe(200);
    expect(forged.body.body.acks[0]).toMatchObject({ transfer_id: body.transfer_id, error: { status: 403, code: 'SVC_FORBIDDEN' } });
    // Not a batch: 400.
    const flat = await a.node.mesh.signDirect(TRANSFER_EVENT, body);
    expectError(await call(b.url, 'POST', DELIVER_PATH, flat.event, { [HANDSHAKE_HEADER]: flat.handshake! }), 400, 'SVC_INVALID_INPUT');

    // A first delivery sent five times at once (made up here with A's key: the receiver trusts what the sender's home
    // signs) is applied once.
    // Its debit certificate is A's own signature: x's custody set is A alone (no bonds on this mesh).
    const freshId = `xfer_${'5'.repeat(24)}`;
    const freshToken = `env_${'7'.repeat(24)}`;
    const debited = debitCertificateSchema.parse(body.debit_certificate).entry;
    const freshDebit: CustodyEntry = {
      ...debited,
      seq: debited.seq + 1,
      transfer: { id: freshId, side: 'debit', party: y.zid, amount: 1, tokens: tokensDigest([freshToken]) },
    };
    const fresh: DeliveryBody = {
      ...body,
      transfer_id: freshId,
      envelopes: [{ token_id: freshToken, face_value: 1, funding: 'paid', svcond: 1, result_id: 'res_1_test', hash: 'a'.repeat(64) }],
      debit_certificate: {
        entry: freshDebit,
        signatures: [{ node: a.node.nodeId, signature: signText(a.node.nodeIdentity.privateKey, signingTextOf(entryHash(freshDebit))) }],
      },
    };
    // B checks the certificate itself (its custody set of one holds nothing): a certificate for another amount, or
    // signed by a node that is not x's custodian, credits nothing.
    const signedBy = (n: TestNode, e: CustodyEntry) => ({
      node: n.node.nodeId,
      signature: signText(n.node.nodeIdentity.privateKey, signingTextOf(entryHash(e))),
    });
    const twoCredits: CustodyEntry = { ...freshDebit, transfer: { ...freshDebit.transfer!, amount: 2 } };
    for (const [certificate, why] of [
      [{ entry: twoCredits, signatures: [signedBy(a, twoCredits)] }, 'debits 2'],
      [{ entry: freshDebit, signatures: [signedBy(c, freshDebit)] }, 'is not a custodian'],
      [
        { entry: freshDebit, signatures: [{ ...signedBy(a, freshDebit), node: a.node.nodeId, signature: signedBy(c, freshDebit).signature }] },
        'does not verify',
      ],
    ] as const) {
      const refused = await deliver(a, { ...fresh, debit_certificate: certificate });
      expect(refused.status, refused.text).toBe(200);
      expect(refused.body.body.acks[0]).toMatchObject({ transfer_id: freshId, error: { status: 403, code: 'SVC_DEBIT_UNCERTIFIED' } });
      expect(refused.body.body.acks[0].error.message).toContain(why);
    }
    expect(await b.node.transfers.load(freshId)).toBeUndefined();
    const answers = await Promise.all(Array.from({ length: 5 }, () => deliver(a, fresh)));
    for (const x5 of answers) expect(x5.status, x5.text).toBe(200);
    expect(answers.filter((x5) => x5.body.body.acks[0].duplicate === false)).toHaveLength(1);
    await b.node.counters.loadIdentity(y.zid); // counters are read on demand
    expect(b.node.counters.get(`env:${y.zid}`)).toBe(4);
    expect(b.node.counters.get('envelope_seq')).toBe(seqBefore + 1);
  }, 120_000);

  it('a pending transfer whose receiver is homed on the sending node (its home moved there) is credited there, once', async () => {
    const x = await richIdentity(a, 'xn-moved-sender', 2);
    const y = await remoteIdentity(b, a, 'xn-moved-receiver');
    await a.node.transferDelivery.stop();
    let started = false;
    try {
      const r = await call(a.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: y.zid, count: 1 }, bearer(x.key));
      expect(r.status, r.text).toBe(202);
      // y's home moves to A (as a custody failover writes it) while the debit waits in A's outbox.
      const ident = (await a.node.identity.getIdentity(y.zid))!;
      await a.node.store.commit([a.node.identity.homeMoveOp(ident, a.node.nodeId)]);
      a.node.identity.identityRecordWritten(y.zid);
      started = true;
      await a.node.transferDelivery.start();
      const done = await delivered(a, x, r.body.transfer_id);
      expect(done).toMatchObject({ from: x.zid, to: y.zid, state: 'delivered' });
      const got = await a.node.ledger.listEnvelopes(y.zid, { limit: 10, offset: 0 });
      expect(got.items.map((e) => [e.token_id, e.owner, e.transfer_id])).toEqual([[r.body.token_ids[0], y.zid, r.body.transfer_id]]);
      expect(await a.node.transfers.pending()).toEqual([]);
      // Delivered again (a later home of x replays the debit): a duplicate, nothing credited twice.
      const again = await a.node.transfers.receive({ ...deliveryOfPending(done, x.zid, y.zid, a), debit_certificate: null }, a.node.nodeId);
      expect(again).toMatchObject({ transfer_id: r.body.transfer_id, duplicate: true });
      expect((await a.node.ledger.listEnvelopes(y.zid, { limit: 10, offset: 0 })).items).toHaveLength(1);
    } finally {
      if (!started) await a.node.transferDelivery.start();
    }
  }, 120_000);

  it('a stale copy of the envelope at the receiver home (the sender was homed there before a failover) does not block the credit', async () => {
    const x = await richIdentity(a, 'xn-stale-sender', 1);
    const y = await remoteIdentity(b, a, 'xn-stale-receiver');
    await waitFor(() => b.node.identity.getIdentity(x.zid), 'x known at B');
    const [record] = await a.node.ledger.envelopesById([x.minted[0]!]);
    // B still holds x's envelope as x's: its copy of x's ledger from before x's home moved to A.
    await b.node.store.commit([{ type: 'put', sub: b.node.store.sub('envelopes'), key: record!.token_id, value: record }]);
    const r = await call(a.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: y.zid, count: 1 }, bearer(x.key));
    expect(r.status, r.text).toBe(202);
    await delivered(a, x, r.body.transfer_id);
    const got = await b.node.ledger.listEnvelopes(y.zid, { limit: 10, offset: 0 });
    expect(got.items.map((e) => [e.token_id, e.owner, e.transfer_id])).toEqual([[x.minted[0], y.zid, r.body.transfer_id]]);
  }, 120_000);

  it('with the receiver home stopped, the transfer stays pending (attempts counted) and lands once it is back', async () => {
    const x = await richIdentity(a, 'xn-outage-sender', 4);
    const y = await remoteIdentity(b, a, 'xn-outage-receiver');
    const ports = portsOf(b);
    const addrA = a.node.mesh.multiaddrs()[0]!;
    await b.stop();

    const r = await call(a.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: y.zid, count: 4 }, bearer(x.key));
    expect(r.status, r.text).toBe(202);
    expect((await held(a, x)).total).toBe(0);
    const failing = await waitFor(async () => {
      const g = await call(a.url, 'GET', `/api/tally/transfers/${r.body.transfer_id}`, undefined, bearer(x.key));
      return g.body.attempts >= 2 ? g.body : null;
    }, 'two failed attempts');
    expect(failing.state).toBe('pending');
    expect(typeof failing.last_error).toBe('string');

    b = await startTestNode(meshConfig([addrA], ports), opts, b.dataDir);
    const done = await delivered(a, x, r.body.transfer_id);
    expect(done.attempts).toBeGreaterThan(failing.attempts);
    expect((await held(b, y)).total).toBe(4);
    await b.node.counters.loadIdentity(y.zid); // counters are read on demand
    expect(b.node.counters.get(`env:${y.zid}`)).toBe(4);
  }, 120_000);
});

// The same on a line: the two homes are its ends and hold no connection to each other; the request is made at the middle.
describe('cross-node transfers on a line', () => {
  let line: TestNode[] = [];
  beforeAll(async () => {
    line = await startMesh(3, (bootstrap) => meshConfig(bootstrap), opts, 'line');
  }, 120_000);
  afterAll(async () => {
    await Promise.all(line.map((n) => n.destroy()));
  });

  it('debited at one end, delivered once at the other, passed back', async () => {
    const [home, middle, far] = line as [TestNode, TestNode, TestNode];
    expect(connectedIndexes(home, line)).toEqual([1]);
    expect(connectedIndexes(far, line)).toEqual([1]);
    await transferThroughThirdNode(home, far, middle, '-line');
  }, 120_000);
});

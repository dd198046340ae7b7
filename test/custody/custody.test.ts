// Custody across three real nodes (HTTP + libp2p on 127.0.0.1), each with a bonded operator, so every identity's
// custody set is all three: an identity homed on A spends, and B and C hold its certified entries (chained, signed);
// a lying home (A's own libp2p host sending entries the test forges) is refused for each broken rule, also after a
// custodian restarts; with both custodians stopped, A's write answers 503 and nothing of it is written.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitFor } from '../mesh/helpers.js';
import { COMPUTE, forge, propose as proposeFrom, recordsOf, startBondedTrio } from '../helpers/custody.js';
import { custodyRequest } from '../../src/custody/client.js';
import { entryHash, GENESIS_ENTRY_HASH, signingTextOf, type CustodyEntry } from '../../src/custody/entry.js';
import type { CustodyAnswer } from '../../src/custody/protocol.js';
import { verifyText } from '../../src/mesh/wire.js';

const MESH_SECRET = 'custody-cluster-secret-0123456789abcdef';

let a: TestNode;
let b: TestNode;
let c: TestNode;

/** Send `entries` to `to` over /svc/custody/1 from `from`'s libp2p host (a home the test makes lie). */
const propose = (from: TestNode, to: TestNode, entries: CustodyEntry[]): Promise<CustodyAnswer> => proposeFrom(MESH_SECRET, from, to, entries);

const forgedDebit = { id: 'tr_forged_1', side: 'debit' as const, party: `zid_${'9'.repeat(32)}`, amount: 1, tokens: 'ab'.repeat(32) };
const entry = (zid: string, seq: number, prevHash: string, more: Partial<CustodyEntry> = {}, note = ''): CustodyEntry =>
  forge(
    {
      v: 1,
      zid,
      epoch: 1,
      seq,
      prev_hash: prevHash,
      kind: 'wallet',
      records: '',
      balance: { free: 100, paid: 0 },
      transfer: null,
      ...more,
    },
    note,
  );

beforeAll(async () => {
  [a, b, c] = await startBondedTrio(MESH_SECRET, 10_000);
}, 90_000);

afterAll(async () => {
  await Promise.all([a, b, c].map((n) => n?.destroy()));
});

describe('custody of an identity homed on A', () => {
  let spender: { zid: string; key: string; slug: string };

  it('spends on A, and B and C hold every entry, chained and signed', async () => {
    spender = await zkIdentity(a.url, 'custody-spender');
    for (let i = 0; i < 4; i++) {
      const r = await call(a.url, 'POST', '/api/svc/compute', COMPUTE, bearer(spender.key));
      expect(r.status, r.text).toBe(200);
    }
    const atHome = await call(a.url, 'GET', `/api/mesh/custody/${spender.zid}`);
    expect(atHome.status, atHome.text).toBe(200);
    expect(atHome.body).toMatchObject({ zid: spender.zid, epoch: 1, home: a.node.nodeId, finality: 'certified' });
    expect(new Set(atHome.body.custodians)).toEqual(new Set([a.node.nodeId, b.node.nodeId, c.node.nodeId]));
    expect(atHome.body.custodians[0]).toBe(a.node.nodeId);
    const seq = atHome.body.certified_seq as number;
    expect(seq).toBe(4);
    const balance = (await call(a.url, 'GET', '/api/tally/balance', undefined, bearer(spender.key))).body;
    expect(atHome.body.balance).toEqual({ free: balance.free, paid: balance.paid });

    const home = await call(a.url, 'GET', `/api/mesh/custody/${spender.zid}/entries`);
    expect(home.body.entries).toHaveLength(4);
    for (const custodian of [b, c]) {
      // A write is acknowledged once one of them holds it: the other may be a batch behind.
      await waitFor(
        async () => (await call(custodian.url, 'GET', `/api/mesh/custody/${spender.zid}`)).body.certified_seq === seq,
        5000,
        'the custodian caught up',
      );
      const read = await call(custodian.url, 'GET', `/api/mesh/custody/${spender.zid}`);
      expect(read.body).toMatchObject({ zid: spender.zid, home: a.node.nodeId, certified_seq: seq, finality: 'held', balance: atHome.body.balance });
      const held = await call(custodian.url, 'GET', `/api/mesh/custody/${spender.zid}/entries`);
      expect(held.status, held.text).toBe(200);
      expect(held.body).toMatchObject({ seq, finality: 'held' });
      let prev = GENESIS_ENTRY_HASH;
      held.body.entries.forEach((h: { entry: CustodyEntry; hash: string; signatures: { node: string; signature: string }[] }, i: number) => {
        expect(h.entry).toMatchObject({ zid: spender.zid, epoch: 1, seq: i + 1, prev_hash: prev, kind: 'seal' });
        expect(entryHash(h.entry)).toBe(h.hash);
        expect(h.hash).toBe(home.body.entries[i].hash);
        expect(verifyText(custodian.node.nodeId, signingTextOf(h.hash), h.signatures[0]!.signature)).toBe(true);
        prev = h.hash;
      });
      // The home's certificate of each entry carries at least one custodian's signature, and every one verifies.
      for (const cert of home.body.entries) {
        expect(cert.signatures.length).toBeGreaterThanOrEqual(1);
        for (const s of cert.signatures) expect(verifyText(s.node, signingTextOf(cert.hash), s.signature)).toBe(true);
      }
    }
  });

  it('a custodian refuses a seq past its head, a wrong prev_hash, a negative balance, a reused transfer id, a second entry for a slot, a node not the home', async () => {
    const liar = await zkIdentity(a.url, 'custody-forged');
    const first = entry(liar.zid, 1, GENESIS_ENTRY_HASH, { kind: 'transfer', transfer: forgedDebit });
    const h1 = entryHash(first);
    const ok = await propose(a, b, [first]);
    expect(ok.results).toEqual([{ ok: true, signature: expect.any(String) }]);
    expect(verifyText(b.node.nodeId, signingTextOf(h1), (ok.results[0] as { signature: string }).signature)).toBe(true);

    const answer = await propose(a, b, [
      entry(liar.zid, 3, h1),
      entry(liar.zid, 2, 'cd'.repeat(32)),
      entry(liar.zid, 2, h1, { balance: { free: -1, paid: 0 } }),
      entry(liar.zid, 2, h1, { kind: 'transfer', transfer: forgedDebit }),
      entry(liar.zid, 1, GENESIS_ENTRY_HASH, {}, 'another'),
    ]);
    expect(answer.results.map((r) => (r.ok ? 'signed' : r.code))).toEqual(['behind', 'prev-hash', 'balance', 'transfer-reused', 'slot-taken']);
    expect(answer.results[0]).toMatchObject({ head: { seq: 1, hash: h1 } });
    // C is not the identity's home: B refuses what C proposes for it.
    expect((await propose(c, b, [entry(liar.zid, 2, h1)])).results.map((r) => (r.ok ? 'signed' : r.code))).toEqual(['not-home']);
    // The same entry again: signed again, the same signature (a home retrying a batch whose answer it lost).
    expect((await propose(a, b, [first])).results[0]).toEqual(ok.results[0]);

    // After a restart B still refuses a second entry for the slot it signed (it is on disk, not in memory).
    b = await b.restart();
    const second = entry(liar.zid, 1, GENESIS_ENTRY_HASH, {}, 'a second');
    const again = custodyRequest(MESH_SECRET, a.node.nodeId, b.node.mesh.nowSvcond(), [second], [recordsOf(second)]);
    const afterRestart = (await b.node.custody.custodian.answer(again, a.node.nodeId)) as CustodyAnswer;
    expect(afterRestart.results.map((r) => (r.ok ? 'signed' : r.code))).toEqual(['slot-taken']);
  });

  it('with both custodians stopped, a write on A answers 503 and nothing of it is written', async () => {
    const balance = async () => (await call(a.url, 'GET', '/api/tally/balance', undefined, bearer(spender.key))).body;
    const envelopes = async () => (await call(a.url, 'GET', `/api/tally/envelopes/${spender.zid}`, undefined, bearer(spender.key))).body.total;
    const before = { balance: await balance(), envelopes: await envelopes(), head: (await call(a.url, 'GET', `/api/mesh/custody/${spender.zid}`)).body };
    await a.node.chain.prepare(spender.slug);
    const chainNext = a.node.chain.nextSeq(spender.slug);
    await Promise.all([b.stop(), c.stop()]);
    const r = await call(a.url, 'POST', '/api/svc/compute', COMPUTE, bearer(spender.key));
    const e = expectError(r, 503, 'SVC_CUSTODY_UNAVAILABLE');
    expect(e.needed).toBe(2);
    expect(e.signed).toBe(0);
    expect(await balance()).toEqual(before.balance);
    expect(await envelopes()).toBe(before.envelopes);
    expect(a.node.chain.nextSeq(spender.slug)).toBe(chainNext);
    expect((await call(a.url, 'GET', `/api/mesh/custody/${spender.zid}`)).body.certified_seq).toBe(before.head.certified_seq);
  });
});

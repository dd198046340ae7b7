// State transfer across three real bonded nodes (every custody set all three): x homed on A seals, moves a folder,
// sends to y (homed on B) and receives from z (homed on C). Its chain fetched over /svc/custody/1 from its custodian B
// and from its home A checks (hash chain, records, signatures), and replayed into a fresh store it is x's ledger as A
// holds it, record by record. A tampered record, a broken prev_hash, a short or forged signature are refused with
// the reason; a custodian refuses records that are not the entry's, and a fetch by a node outside the set.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitFor } from '../mesh/helpers.js';
import { COMPUTE, fetcherFrom, forge, grant, ledgerIn, outcomes, propose, recordsOf, rowKeysOf, startBondedTrio } from '../helpers/custody.js';
import { chainRequest, fetchChain } from '../../src/custody/client.js';
import { GENESIS_ENTRY_HASH, type CustodyEntry } from '../../src/custody/entry.js';
import { recordsDigest, type ChainAnswer, type ChainLink, type EntryRecords } from '../../src/custody/protocol.js';
import { checkChain, GENESIS_HEAD, replayOps, type Quorum } from '../../src/custody/replica.js';
import { verifyText } from '../../src/mesh/wire.js';
import { Store } from '../../src/store/db.js';

const SECRET = 'custody-replica-secret-0123456789abcdef';

let a: TestNode;
let b: TestNode;
let c: TestNode;
const dirs: string[] = [];

beforeAll(async () => {
  // No initial credits: every credit is paid (granted), so every envelope sealed is movable.
  [a, b, c] = await startBondedTrio(SECRET, 0);
}, 90_000);

afterAll(async () => {
  await Promise.all([a, b, c].map((n) => n?.destroy()));
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

/** Replay `links` into a fresh store. */
async function replayed(links: ChainLink[]): Promise<Store> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-replica-'));
  dirs.push(dir);
  const store = await Store.open(dir, { sync: false });
  await store.commit(replayOps(store, links));
  return store;
}

describe("an identity's chain, fetched, checked and replayed", () => {
  let x: { zid: string; key: string; slug: string };
  let fromB: ChainLink[];
  let fromA: ChainLink[];
  let quorum: Quorum;
  const sentAway: string[] = [];

  it('x seals, moves a folder, sends to y and receives from z; its custodians hold every entry with its records', async () => {
    x = await zkIdentity(a.url, 'replica-x');
    const y = await zkIdentity(b.url, 'replica-y');
    const z = await zkIdentity(c.url, 'replica-z');
    await grant(a, x.zid, 4);
    await grant(c, z.zid, 2);
    for (let i = 0; i < 4; i++) expect((await call(a.url, 'POST', '/api/svc/compute', COMPUTE, bearer(x.key))).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await call(c.url, 'POST', '/api/svc/compute', COMPUTE, bearer(z.key))).status).toBe(200);
    const moved = await call(a.url, 'POST', '/api/tally/envelopes/folder', { folder: 'savings', count: 2 }, bearer(x.key));
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.moved).toBe(2);
    await waitFor(async () => (await a.node.identity.getIdentity(y.zid)) && (await c.node.identity.getIdentity(x.zid)), 20_000, 'y known at A, x at C');
    const out = await call(a.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: y.zid, count: 1 }, bearer(x.key));
    expect(out.status, out.text).toBe(202);
    sentAway.push(...(out.body.token_ids as string[]));
    const into = await call(c.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: x.zid, count: 1 }, bearer(z.key));
    expect(into.status, into.text).toBe(202);
    for (const [url, key, id] of [
      [a.url, x.key, out.body.transfer_id],
      [c.url, z.key, into.body.transfer_id],
    ] as const)
      await waitFor(async () => (await call(url, 'GET', `/api/tally/transfers/${id}`, undefined, bearer(key))).body.state === 'delivered', 20_000, 'delivered');

    const head = (await a.node.custody.replicator.certifiedHead(x.zid))!;
    await waitFor(async () => (await b.node.custody.custodian.head(x.zid))?.seq === head.seq, 10_000, 'B holds every entry of x');
    const fetch = fetcherFrom(SECRET, c);
    fromB = await fetchChain(fetch, b.node.nodeId, x.zid, 1, AbortSignal.timeout(10_000));
    fromA = await fetchChain(fetch, a.node.nodeId, x.zid, 1, AbortSignal.timeout(10_000));
    expect(fromB.map((l) => l.entry)).toEqual(fromA.map((l) => l.entry));
    expect(fromB.map((l) => l.records)).toEqual(fromA.map((l) => l.records));
    expect(fromA.map((l) => l.entry.seq)).toEqual(Array.from({ length: head.seq }, (_, i) => i + 1));
    // Every kind of write is there: seals, the folder move (envelopes only), the debit to y and the credit from z.
    const kinds = fromA.map((l) => (l.entry.transfer === null ? l.entry.kind : `${l.entry.kind}-${l.entry.transfer.side}`));
    for (const kind of ['seal', 'envelope', 'transfer-debit', 'transfer-credit']) expect(kinds).toContain(kind);
    // The credit carries the debit certificate its custodian checked.
    const credit = fromB.find((l) => l.entry.transfer?.side === 'credit')!;
    expect(credit.certificate?.entry.transfer).toMatchObject({ id: into.body.transfer_id, side: 'debit', party: x.zid });
  });

  it('checks against the chain and a majority of the set, and its replay is x’s ledger as A holds it', async () => {
    const set = a.node.custody.replicator.setOf(x.zid);
    quorum = { accepts: (node) => set.custodians.includes(node), needed: set.majority };
    // The home's copy carries a majority (its own signature and the custodians'); a custodian's carries its own.
    expect(checkChain(x.zid, fromA, GENESIS_HEAD, quorum, verifyText)).toMatchObject({ ok: true, head: { seq: fromA.length } });
    expect(checkChain(x.zid, fromB, GENESIS_HEAD, { accepts: (n) => n === b.node.nodeId, needed: 1 }, verifyText).ok).toBe(true);
    const short = checkChain(x.zid, fromB, GENESIS_HEAD, quorum, verifyText);
    expect(short).toMatchObject({ ok: false, seq: 1, fault: 'signatures' });

    const rows = rowKeysOf(fromB);
    expect(rows.some((k) => k.startsWith(`${x.slug}!`))).toBe(true);
    const store = await replayed(fromB);
    try {
      const home = await ledgerIn(a.node.store, x.zid, rows, sentAway);
      const replica = await ledgerIn(store, x.zid, rows, sentAway);
      expect(replica).toEqual(home);
      // Not vacuous: x holds envelopes in two folders (the one received among them), and the one it sent is gone in both.
      expect(home.owner.length).toBe(4);
      expect(new Set(home.folder.map((r) => r.key.split('!')[1]))).toEqual(new Set(['inbox', 'savings']));
      expect(home.envelopes.filter((e) => (e as { transfer_id?: string } | undefined)?.transfer_id !== undefined)).toHaveLength(1);
      expect(home.envelopes.slice(-sentAway.length)).toEqual(sentAway.map(() => undefined));
      expect(home.rows.every((r) => r !== undefined)).toBe(true);
      const balance = (await call(a.url, 'GET', '/api/tally/balance', undefined, bearer(x.key))).body;
      expect(replica.wallet).toMatchObject({ free: balance.free, paid: balance.paid });
      // Every audit row of x's machine at A is in the replay.
      const atHome = await a.node.store.range(a.node.store.sub('chain_rows'), { gte: `${x.slug}!`, lt: `${x.slug}!~` });
      const inReplay = await store.range(store.sub('chain_rows'), { gte: `${x.slug}!`, lt: `${x.slug}!~` });
      expect(inReplay).toEqual(atHome);
    } finally {
      await store.close();
    }
  });

  it('refuses a tampered record, a broken prev_hash, a forged signature, a gap, with the reason', () => {
    const tampered = structuredClone(fromA);
    const wallet = tampered[0]!.records.ops.findIndex((op) => op[1] === 'wallets');
    tampered[0]!.records.ops[wallet] = ['put', 'wallets', x.zid, '{"free":0,"paid":1000000}'];
    expect(checkChain(x.zid, tampered, GENESIS_HEAD, quorum, verifyText)).toEqual({
      ok: false,
      seq: 1,
      fault: 'records-mismatch',
      reason: 'the records of seq 1 do not hash to its digest',
    });
    const broken = structuredClone(fromA);
    broken[2]!.entry.prev_hash = GENESIS_ENTRY_HASH;
    expect(checkChain(x.zid, broken, GENESIS_HEAD, quorum, verifyText)).toMatchObject({ ok: false, seq: 3, fault: 'prev-hash' });
    const forged = structuredClone(fromA);
    forged[1]!.signatures = forged[1]!.signatures.map((s) => ({ ...s, signature: forged[0]!.signatures[0]!.signature }));
    expect(checkChain(x.zid, forged, GENESIS_HEAD, quorum, verifyText)).toMatchObject({ ok: false, seq: 2, fault: 'signatures' });
    expect(checkChain(x.zid, fromA.slice(1), GENESIS_HEAD, quorum, verifyText)).toMatchObject({ ok: false, seq: 2, fault: 'seq' });
    // Another identity's wallet among records that hash right: not x's ledger.
    const records: EntryRecords = { v: 1, ops: [['put', 'wallets', `zid_${'7'.repeat(32)}`, '{"free":1,"paid":0}']] };
    const foreign: ChainLink = { ...fromA[0]!, entry: { ...fromA[0]!.entry, records: recordsDigest(records) }, records };
    expect(checkChain(x.zid, [foreign], GENESIS_HEAD, null, verifyText)).toMatchObject({
      ok: false,
      fault: 'records-mismatch',
      reason: `seq 1 carries a record of another wallet (zid_${'7'.repeat(32)})`,
    });
  });

  it('a custodian refuses records that are not the entry’s, and a fetch from outside the set', async () => {
    const w = await zkIdentity(a.url, 'replica-w');
    const first = forge({
      v: 1,
      zid: w.zid,
      epoch: 1,
      seq: 1,
      prev_hash: GENESIS_ENTRY_HASH,
      kind: 'wallet',
      records: '',
      balance: { free: 5, paid: 0 },
      transfer: null,
    });
    const other = forge({ ...first }, 'other');
    const answer = await propose(SECRET, a, b, [first], undefined, [recordsOf(other)]);
    expect(outcomes(answer)).toEqual(['records-mismatch']);
    expect(await b.node.custody.custodian.head(w.zid)).toBeNull();
    const outsider = '12D3KooWQK1wnefoLrcVHbbnf5tLzbopUd3K3bFAoJpA7YJgL5pV';
    const refused = (await b.node.custody.custodian.answer(chainRequest(SECRET, outsider, b.node.mesh.nowSvcond(), x.zid, 1), outsider)) as ChainAnswer;
    expect(refused).toMatchObject({ refused: { code: 'not-custodian' }, links: [] });
    const honest = (await b.node.custody.custodian.answer(
      chainRequest(SECRET, c.node.nodeId, b.node.mesh.nowSvcond(), x.zid, 2),
      c.node.nodeId,
    )) as ChainAnswer;
    expect(honest.links.map((l) => l.entry.seq)[0]).toBe(2);
    expect(honest.head?.seq).toBe(fromB.length);
    const entries: CustodyEntry[] = honest.links.map((l) => l.entry);
    expect(entries).toEqual(fromB.slice(1).map((l) => l.entry));
  });
});

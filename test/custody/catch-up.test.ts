// A custodian that joins an identity's custody set after the identity has history catches up before it counts: on
// three real bonded nodes, x homed on A writes (signed by B and C); a fourth node D, whose rank puts it in x's set,
// bonds. With no further write, A hands x's certified head to D once D is in x's set (set-changes.ts): D refuses it as
// `behind`, fetches and checks x's whole chain from A, then signs it. The set's other custodian stops: x's next write
// is certified by D, and D's copy replayed is x's ledger as A holds it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitFor } from '../mesh/helpers.js';
import { bond, COMPUTE, custodyConfig, custodyNodeOptions, fetcherFrom, grant, ledgerIn, rowKeysOf, startBondedTrio } from '../helpers/custody.js';
import { fetchChain } from '../../src/custody/client.js';
import { checkChain, GENESIS_HEAD, replayOps } from '../../src/custody/replica.js';
import { rankWeight } from '../../src/consensus/committee.js';
import { verifyText } from '../../src/mesh/wire.js';
import { Store } from '../../src/store/db.js';

const SECRET = 'custody-catch-up-secret-0123456789abcdef';

let a: TestNode;
let b: TestNode;
let c: TestNode;
let d: TestNode;
let dir: string | null = null;

beforeAll(async () => {
  [a, b, c] = await startBondedTrio(SECRET, 0);
  const addr = (n: TestNode) => n.node.mesh.multiaddrs()[0]!;
  d = await startTestNode(custodyConfig(SECRET, [addr(a), addr(b), addr(c)]), custodyNodeOptions(0));
  await waitFor(() => d.node.mesh.peers().filter((p) => p.url && p.connected).length >= 3, 30_000, 'D meshed with A, B and C');
}, 120_000);

afterAll(async () => {
  await Promise.all([a, b, c, d].map((n) => n?.destroy()));
  if (dir !== null) await rm(dir, { recursive: true, force: true });
});

describe('a custodian that joins a set late', () => {
  it('is handed the head, catches up from the home, then signs, and its copy is the home’s', async () => {
    // An identity on A whose set D will enter: D outranks B or C for it.
    let x: { zid: string; key: string; slug: string } | null = null;
    for (let i = 0; x === null; i++) {
      const id = await zkIdentity(a.url, `catch-up-x-${i}`);
      const w = (n: TestNode) => rankWeight(id.zid, n.node.nodeId);
      if (w(d) > w(b) || w(d) > w(c)) x = id;
    }
    await grant(a, x.zid, 12);
    for (let i = 0; i < 3; i++) expect((await call(a.url, 'POST', '/api/svc/compute', COMPUTE, bearer(x.key))).status).toBe(200);
    expect((await call(a.url, 'POST', '/api/tally/envelopes/folder', { folder: 'kept', count: 1 }, bearer(x.key))).status).toBe(200);
    const before = (await a.node.custody.replicator.certifiedHead(x.zid))!;
    expect(before.seq).toBeGreaterThanOrEqual(5);
    expect(await d.node.custody.custodian.head(x.zid)).toBeNull();

    await bond(d, 'catch-up-operator-d', 0);
    await waitFor(() => a.node.custody.replicator.setOf(x.zid).custodians.includes(d.node.nodeId), 30_000, 'D in x’s custody set at A');
    const set = a.node.custody.replicator.setOf(x.zid);
    expect(set.custodians).toHaveLength(3);
    // The members changed: A hands x's head to D, which catches up from A, before any further write.
    await waitFor(async () => (await d.node.custody.custodian.head(x.zid))?.seq === before.seq, 15_000, 'D handed x’s head');
    await waitFor(() => a.node.custody.setChanges!.stats.handedOver >= 1, 10_000, 'D’s signature of the head at A');
    expect((await a.node.custody.replicator.certifiedHead(x.zid))!.seq).toBe(before.seq);

    // The set's other custodian stops: x's next write needs D's signature, and gets it.
    const other = [b, c].find((n) => set.custodians.includes(n.node.nodeId))!;
    await other.stop();
    const r = await call(a.url, 'POST', '/api/svc/compute', COMPUTE, bearer(x.key));
    expect(r.status, r.text).toBe(200);
    const [last] = await a.node.custody.replicator.entries(x.zid, before.seq + 1, 1);
    expect(last!.signatures.map((s) => s.node)).toEqual([d.node.nodeId]);
    expect(d.node.custody.custodian.stats.catchUps).toBeGreaterThanOrEqual(1);
    expect(d.node.custody.custodian.stats.caughtUp).toBeGreaterThanOrEqual(before.seq);
    const head = (await a.node.custody.replicator.certifiedHead(x.zid))!;
    await waitFor(async () => (await d.node.custody.custodian.head(x.zid))?.seq === head.seq, 10_000, 'D holds x’s head');

    // D's copy: the whole chain from seq 1, checked with D's own signatures, replayed: x's ledger as A holds it.
    const links = await fetchChain(fetcherFrom(SECRET, a), d.node.nodeId, x.zid, 1, AbortSignal.timeout(10_000));
    expect(links.map((l) => l.entry.seq)).toEqual(Array.from({ length: head.seq }, (_, i) => i + 1));
    // The entries certified before D joined carry no signature of D at the home (D holds them by catching up) but the
    // head it was handed, whose signatures name D since.
    const early = await a.node.custody.replicator.entries(x.zid, 1, before.seq);
    const signedByD = early.map((e) => e.signatures.some((s) => s.node === d.node.nodeId));
    expect(signedByD).toEqual(early.map((e) => e.entry.seq === before.seq));
    expect(links.slice(0, before.seq).map((l) => l.entry)).toEqual(early.map((e) => e.entry));
    expect(checkChain(x.zid, links, GENESIS_HEAD, { accepts: (n) => n === d.node.nodeId, needed: 1 }, verifyText)).toMatchObject({
      ok: true,
      head: { seq: head.seq, hash: head.hash },
    });
    dir = await mkdtemp(join(tmpdir(), 'svc-catch-up-'));
    const store = await Store.open(dir, { sync: false });
    try {
      await store.commit(replayOps(store, links));
      const rows = rowKeysOf(links);
      const home = await ledgerIn(a.node.store, x.zid, rows);
      expect(await ledgerIn(store, x.zid, rows)).toEqual(home);
      expect(home.owner.length).toBeGreaterThanOrEqual(4);
      expect(home.folder.some((r) => r.key.includes('!kept!'))).toBe(true);
    } finally {
      await store.close();
    }
  });
});

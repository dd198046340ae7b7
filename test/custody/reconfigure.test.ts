// Reconfiguration on four real bonded nodes (custody.replaceTicks 6): x is homed on a, its custody set a and the two
// others of highest weight, p and q; r is the fourth node. q stops. Once q has gone unheard for replaceTicks, a opens
// an epoch of its own whose set passes over q: promised by a majority of the set before (a and p), its epoch entry
// signed by r once r has caught up. Then p stops too, and a's writes are still acknowledged: a and r are a majority of
// the new set, where the old one (a, p, q) would have left a alone. A transfer from x to an identity homed on r is
// credited there: r checks its debit certificate against the set of x's new epoch.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMPUTE, grant, startBondedNodes } from '../helpers/custody.js';
import { bearer, call, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitFor } from '../mesh/helpers.js';

const SECRET = 'custody-reconfigure-mesh-secret-0123456789';
let nodes: TestNode[] = [];
const stopped = new Set<TestNode>();
afterAll(async () => {
  await Promise.all(nodes.filter((n) => !stopped.has(n)).map((n) => n.destroy()));
});

/** A write of x at a, tried until one is acknowledged (a reconfiguration fences the writes in flight for a moment). */
async function acknowledgedWrite(a: TestNode, key: string, what: string): Promise<void> {
  await waitFor(async () => (await call(a.url, 'POST', '/api/svc/compute', COMPUTE, bearer(key))).status === 200, 60_000, `a write acknowledged ${what}`);
}

describe('a custodian gone longer than the grace period', () => {
  let a: TestNode, p: TestNode, q: TestNode, r: TestNode;
  let x: { zid: string; key: string };
  beforeAll(async () => {
    nodes = await startBondedNodes(SECRET, 4, 0, { replaceTicks: 6 });
    a = nodes[0]!;
    x = await zkIdentity(a.url, 'reconfigure-x');
    const set = a.node.custody.replicator.setOf(x.zid).custodians;
    expect(set[0]).toBe(a.node.nodeId);
    const byId = (id: string) => nodes.find((n) => n.node.nodeId === id)!;
    p = byId(set[1]!);
    q = byId(set[2]!);
    r = nodes.find((n) => !set.includes(n.node.nodeId))!;
    expect(new Set([a, p, q, r]).size).toBe(4);
    // Paid credits: each compute seals a movable envelope (one is transferred at the end).
    await grant(a, x.zid, 20);
    expect((await call(a.url, 'POST', '/api/svc/compute', COMPUTE, bearer(x.key))).status).toBe(200);
    await waitFor(async () => (await r.node.identity.getIdentity(x.zid))?.home === a.node.nodeId, 15_000, 'x known at r');
  }, 180_000);

  it('is replaced by the next member, which catches up first; the set then outlives a second loss', async () => {
    const before = await a.node.custody.replicator.certifiedHead(x.zid);
    expect(before?.epoch).toBe(1);
    stopped.add(q);
    await q.destroy();

    // a reconfigures x: an epoch of its own whose set passes over q and takes r.
    await waitFor(async () => (await a.node.custody.homeChanges.latest(x.zid))?.excluded?.includes(q.node.nodeId) === true, 60_000, 'x reconfigured at a');
    const change = (await a.node.custody.homeChanges.latest(x.zid))!;
    expect(change).toMatchObject({ zid: x.zid, home: a.node.nodeId, excluded: [q.node.nodeId] });
    expect(change.epoch).toBeGreaterThanOrEqual(2);
    // Promised by a majority of the set before: a and p (q is gone), each naming the set it promised.
    expect(change.promises.map((s) => s.node).sort()).toEqual([a.node.nodeId, p.node.nodeId].sort());
    expect(change.promises.every((s) => s.promise.excluded?.join() === q.node.nodeId)).toBe(true);
    const set = a.node.custody.replicator.setOf(x.zid).custodians;
    expect([...set].sort()).toEqual([a.node.nodeId, p.node.nodeId, r.node.nodeId].sort());
    // r caught up before it signed the epoch's entry: it holds the whole chain, the epoch entry naming the set.
    const head = await a.node.custody.replicator.certifiedHead(x.zid);
    const epochEntry = (await a.node.custody.replicator.entries(x.zid, head!.seq, 1))[0]!;
    expect(epochEntry.entry).toMatchObject({ kind: 'epoch', epoch: change.epoch, excluded: [q.node.nodeId] });
    await waitFor(async () => (await r.node.custody.custodian.head(x.zid))?.seq === head!.seq, 20_000, 'r holds the chain');
    const held = await r.node.custody.custodian.entries(x.zid, 1, 1000);
    expect(held.map((h) => h.entry.seq)).toEqual(Array.from({ length: head!.seq }, (_, i) => i + 1));
    // The mesh names the new set: r applied the change and answers with it.
    await waitFor(async () => (await r.node.custody.homeChanges.latest(x.zid))?.epoch === change.epoch, 20_000, 'r applies the change');
    const atR = await call(r.url, 'GET', `/api/mesh/custody/${x.zid}`);
    expect(atR.status).toBe(200);
    expect([...atR.body.custodians].sort()).toEqual([...set].sort());
    expect(atR.body).toMatchObject({ home: a.node.nodeId, finality: 'held' });

    await acknowledgedWrite(a, x.key, 'in the new epoch');
    // p stops too: a and r are a majority of the new set.
    stopped.add(p);
    await p.destroy();
    await acknowledgedWrite(a, x.key, 'with p and q gone');
    const last = await a.node.custody.replicator.certifiedHead(x.zid);
    await waitFor(async () => (await r.node.custody.custodian.head(x.zid))?.seq === last!.seq, 20_000, 'r holds the last write');

    // A transfer from x to an identity homed on r: its debit certificate is checked at r against x's set of now. The
    // credit is y's first entry: y is one whose set holds a (with p and q both gone, a set of r, p and q cannot
    // certify it, nor be reconfigured without a majority of its own).
    let y = await zkIdentity(r.url, 'reconfigure-y-0');
    for (let i = 1; !r.node.custody.replicator.setOf(y.zid).custodians.includes(a.node.nodeId); i++) y = await zkIdentity(r.url, `reconfigure-y-${i}`);
    await waitFor(async () => (await a.node.identity.getIdentity(y.zid))?.home === r.node.nodeId, 15_000, 'y known at a');
    let sent: { transfer_id: string } | null = null;
    await waitFor(
      async () => {
        const t = await call(a.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: y.zid, count: 1 }, bearer(x.key));
        if (t.status === 202) sent = t.body;
        return sent !== null;
      },
      60_000,
      'a transfer from x acknowledged',
    );
    await waitFor(
      async () => {
        const atY = await call(r.url, 'GET', `/api/tally/transfers/${sent!.transfer_id}`, undefined, bearer(y.key));
        return atY.status === 200 && atY.body.state === 'delivered';
      },
      60_000,
      'the transfer credited at r',
    );
    const debit = (await a.node.custody.replicator.entries(x.zid, 1, 1000)).find((c) => c.entry.transfer?.id === sent!.transfer_id)!;
    expect(debit.entry.epoch).toBe((await a.node.custody.homeChanges.latest(x.zid))!.epoch);
    expect(debit.signatures.map((s) => s.node)).toContain(r.node.nodeId);
  }, 240_000);
});

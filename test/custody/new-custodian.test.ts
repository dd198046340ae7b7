// A failover whose new set holds a node new to the identity, on four real bonded nodes (custody.replaceTicks 12): x is
// homed on a, its set a, s and t, where u, the fourth node, weighs least of all four. s stops: a reconfigures x, its
// set a, t and u, passing over s. s comes back. a stops: t, the first candidate, gathers the promises of t and u (a
// majority of the set of epoch 2) and opens epoch 3 with its own set, t, s and a (s is back, a gone for less than the
// grace period). s, in no set asked, promises the epoch too, so it takes the epoch's entries from t; with a gone, t's
// epoch entry is certified by t and s, s having caught up from the chain t took. Without s's promise, s refused t's
// entries as `not-home` (its directory names a) and t's set could certify nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rankWeight } from '../../src/consensus/committee.js';
import { COMPUTE, custodyConfig, custodyNodeOptions, grant, startBondedNodes } from '../helpers/custody.js';
import { bearer, call, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitFor } from '../mesh/helpers.js';

const SECRET = 'custody-new-custodian-mesh-secret-012345';
const CUSTODY = { replaceTicks: 12 };
let nodes: TestNode[] = [];
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.destroy()));
});

describe('a failover candidate whose set holds a node new to the identity', () => {
  let a: TestNode, s: TestNode, t: TestNode, u: TestNode;
  let x: { zid: string; key: string };
  beforeAll(async () => {
    nodes = await startBondedNodes(SECRET, 4, 0, CUSTODY);
    a = nodes[0]!;
    const members = nodes.map((n) => n.node.nodeId);
    const byWeight = (zid: string) => [...members].sort((m, n) => (rankWeight(zid, m) < rankWeight(zid, n) ? 1 : -1));
    // An identity of a for which a node other than a weighs least.
    for (let i = 0; ; i++) {
      x = await zkIdentity(a.url, `new-custodian-x-${i}`);
      if (byWeight(x.zid).at(-1) !== a.node.nodeId) break;
    }
    const [first, second, third] = byWeight(x.zid).filter((m) => m !== a.node.nodeId);
    const byId = (id: string) => nodes.find((n) => n.node.nodeId === id)!;
    [s, t, u] = [byId(first!), byId(second!), byId(third!)];
    // The members are read once a tick: the last bond advertised may join a's view a tick later.
    const expected = [a.node.nodeId, s.node.nodeId, t.node.nodeId].join();
    await waitFor(() => a.node.custody.replicator.setOf(x.zid).custodians.join() === expected, 15_000, 'x’s set at a');
    await grant(a, x.zid, 10);
    expect((await call(a.url, 'POST', '/api/svc/compute', COMPUTE, bearer(x.key))).status).toBe(200);
  }, 180_000);

  it('has it promise the epoch, catch up from the chain the candidate took and certify its epoch entry', async () => {
    // s stops; a passes over it.
    const sDir = s.dataDir;
    await s.stop();
    await waitFor(async () => (await a.node.custody.homeChanges.latest(x.zid))?.excluded?.includes(s.node.nodeId) === true, 60_000, 'x reconfigured');
    expect([...a.node.custody.replicator.setOf(x.zid).custodians].sort()).toEqual([a.node.nodeId, t.node.nodeId, u.node.nodeId].sort());
    expect((await call(a.url, 'POST', '/api/svc/compute', COMPUTE, bearer(x.key))).status).toBe(200);
    // s comes back, and is heard again.
    const addrs = [a, t, u].map((n) => n.node.mesh.multiaddrs()[0]!);
    s = await startTestNode(custodyConfig(SECRET, addrs, CUSTODY), custodyNodeOptions(0), sDir);
    nodes[nodes.findIndex((n) => n.dataDir === sDir)] = s;
    await waitFor(() => t.node.mesh.peers().some((p) => p.peerId === s.node.nodeId && p.lastTick !== null && p.connected), 30_000, 's heard at t');
    await waitFor(async () => (await s.node.custody.homeChanges.latest(x.zid))?.epoch === 2, 30_000, 's knows epoch 2');
    const written = (await a.node.custody.replicator.certifiedHead(x.zid))!;

    // a stops for good: t takes x over with a set holding s.
    await a.stop();
    await waitFor(async () => (await t.node.custody.homeChanges.latest(x.zid))?.epoch === 3, 60_000, 'x taken over');
    const change = (await t.node.custody.homeChanges.latest(x.zid))!;
    expect(change.home).toBe(t.node.nodeId);
    expect(change.promises.map((p) => p.node).sort()).toEqual([t.node.nodeId, u.node.nodeId].sort());
    expect(await s.node.custody.custodian.promised(x.zid)).toMatchObject({ epoch: 3, candidate: t.node.nodeId });
    const head = (await t.node.custody.replicator.certifiedHead(x.zid))!;
    const epochEntry = (await t.node.custody.replicator.entries(x.zid, head.seq, 1))[0]!;
    expect(epochEntry.entry).toMatchObject({ kind: 'epoch', epoch: 3, seq: written.seq + 1 });
    expect(epochEntry.signatures.map((sig) => sig.node)).toEqual([s.node.nodeId]);
    // s caught up: it holds the whole chain up to the epoch entry.
    const held = await s.node.custody.custodian.entries(x.zid, 1, 1000);
    expect(held.filter((h) => h.entry.seq <= head.seq).map((h) => h.entry.seq)).toEqual(Array.from({ length: head.seq }, (_, i) => i + 1));
    const w = await call(t.url, 'POST', '/api/svc/compute', COMPUTE, bearer(x.key));
    expect(w.status, w.text).toBe(200);
  }, 180_000);
});

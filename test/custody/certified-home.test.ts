// A write of this run that a majority certified shows the node is still the identity's home (node/custody.ts wires
// the replicator's onCertified to home-check.ts): on three real bonded nodes, an identity registered on a is granted
// credits there (a certified entry); with both other custodians stopped, its key is served at a without the check
// that asks them, which would find no one to answer (503 "home not confirmed").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grant, startBondedTrio } from '../helpers/custody.js';
import { bearer, call, zkIdentity, type TestNode } from '../helpers/node.js';

const SECRET = 'custody-certified-home-secret-0123456789';
let nodes: TestNode[] = [];
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.destroy()));
});

describe('an identity whose write this run certified', () => {
  let a: TestNode;
  let x: { zid: string; key: string };
  beforeAll(async () => {
    nodes = await startBondedTrio(SECRET, 0);
    a = nodes[0]!;
    x = await zkIdentity(a.url, 'certified-home-x');
    await grant(a, x.zid, 20);
    expect((await a.node.custody.replicator.certifiedHead(x.zid))?.seq).toBeGreaterThan(0);
    expect(a.node.custody.replicator.setOf(x.zid).custodians).toHaveLength(3);
    for (const n of nodes.slice(1)) await n.destroy();
    nodes = [a];
  }, 120_000);

  it('is served by its home with its custodians gone: the certification confirmed it', async () => {
    const balance = await call(a.url, 'GET', '/api/tally/balance', undefined, bearer(x.key));
    expect(balance.status, balance.text).toBe(200);
    expect(balance.body.free + balance.body.paid).toBeGreaterThanOrEqual(20);
    expect((await call(a.url, 'GET', `/api/mesh/custody/${x.zid}`)).body).toMatchObject({ home: a.node.nodeId });
  });
});

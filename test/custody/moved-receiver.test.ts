// A transfer to a receiver whose home moved, from a sender whose home did not hear it: on three real bonded nodes, r
// is homed on a, s on c. b gathers the promises of epoch 2 for r (its own and c's) and the change that makes b r's
// home is applied at a and b only, as when c misses the custody.home event. c's directory still names a: it delivers
// s's transfer there, a refuses it (404, r is not homed on a) with the change it applied, and c checks that change,
// applies it and delivers to b from then on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HomeChange } from '../../src/custody/home-change.js';
import type { SignedPromise } from '../../src/custody/promise.js';
import { COMPUTE, grant, startBondedTrio } from '../helpers/custody.js';
import { bearer, call, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitFor } from '../mesh/helpers.js';

const SECRET = 'custody-moved-receiver-secret-0123456789';
let trio: TestNode[] = [];
afterAll(async () => {
  await Promise.all(trio.map((n) => n.destroy()));
});

describe('a delivery to the receiver’s old home', () => {
  let a: TestNode, b: TestNode, c: TestNode;
  let r: { zid: string; key: string }, s: { zid: string; key: string };
  beforeAll(async () => {
    trio = [a, b, c] = await startBondedTrio(SECRET, 0);
    r = await zkIdentity(a.url, 'moved-receiver-r');
    s = await zkIdentity(c.url, 'moved-receiver-s');
    await grant(c, s.zid, 20);
    expect((await call(c.url, 'POST', '/api/svc/compute', COMPUTE, bearer(s.key))).status).toBe(200);
    await waitFor(async () => (await c.node.identity.getIdentity(r.zid))?.home === a.node.nodeId, 15_000, 'r known at c');
    await waitFor(async () => (await b.node.identity.getIdentity(r.zid))?.home === a.node.nodeId, 15_000, 'r known at b');
  }, 120_000);

  it('is refused with the receiver’s home change, which the sender’s home applies before delivering to the new home', async () => {
    const promises: SignedPromise[] = [];
    for (const answer of [
      await b.node.custody.custodian.promiseTo(r.zid, 2, b.node.nodeId),
      await c.node.custody.custodian.promiseTo(r.zid, 2, b.node.nodeId),
    ]) {
      expect(answer).toHaveProperty('promise');
      if ('promise' in answer) promises.push(answer.promise);
    }
    const change: HomeChange = { zid: r.zid, epoch: 2, home: b.node.nodeId, promises };
    for (const n of [b, a]) expect(await n.node.custody.homeMoves.apply(change)).toEqual({ apply: true });
    expect((await c.node.identity.getIdentity(r.zid))?.home).toBe(a.node.nodeId);

    const sent = await call(c.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: r.zid, count: 1 }, bearer(s.key));
    expect([200, 202], sent.text).toContain(sent.status);
    const id = sent.body.transfer_id as string;

    // c learns the change from a's refusal, checked against its own view (the promises of r's set at a).
    await waitFor(async () => (await c.node.identity.getIdentity(r.zid))?.home === b.node.nodeId, 30_000, 'c names b as r’s home');
    expect(await c.node.custody.homeChanges.latest(r.zid)).toMatchObject({ epoch: 2, home: b.node.nodeId });
    // From then on the transfer goes to b: an attempt there is answered by b (delivered, or refused by b), not by a's 404.
    const record = await waitFor(
      async () => {
        const [t] = await c.node.transfers.loadMany([id]);
        return t !== undefined && t.attempts >= 2 && (t.state === 'delivered' || !/is homed on this node/.test(t.last_error ?? '')) ? t : null;
      },
      30_000,
      'an attempt at b',
    );
    if (record.state === 'pending') expect(record.to_home).toBe(b.node.nodeId);
  }, 120_000);
});

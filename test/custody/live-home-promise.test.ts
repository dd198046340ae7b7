// A custodian promises a remote candidate nothing while it hears the identity's home (promise.ts, the pre-vote row):
// on three real bonded nodes, b asks c over the mesh for epoch 2 of x, homed on a. While a ticks, c refuses (`home`,
// naming a), keeps no promise and goes on certifying a's writes: a candidate that stopped hearing a (loaded, cut off,
// or lying) cannot fence it. Once a is gone and its tick event overdue at c, the same request is promised.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { promiseClient } from '../../src/custody/client.js';
import { COMPUTE, startBondedTrio } from '../helpers/custody.js';
import { bearer, call, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitFor } from '../mesh/helpers.js';

const SECRET = 'custody-live-home-mesh-secret-0123456789';
let trio: TestNode[] = [];
afterAll(async () => {
  await Promise.all(trio.map((n) => n.destroy()));
});

describe('a promise asked while the home is heard', () => {
  let a: TestNode, b: TestNode, c: TestNode;
  let zid: string, key: string;
  beforeAll(async () => {
    trio = [a, b, c] = await startBondedTrio(SECRET, 100);
    ({ zid, key } = await zkIdentity(a.url, 'live-home-identity'));
    expect((await call(a.url, 'POST', '/api/svc/compute', COMPUTE, bearer(key))).status).toBe(200);
    await waitFor(async () => (await c.node.identity.getIdentity(zid))?.home === a.node.nodeId, 15_000, 'the identity known at c');
  }, 120_000);

  it('is refused while the home ticks, and given once its tick event is overdue', async () => {
    const ask = promiseClient({
      openStream: (p, proto, signal) => b.node.mesh.openStream(p, proto, signal),
      selfId: () => b.node.nodeId,
      secret: SECRET,
      nowSvcond: () => b.node.mesh.nowSvcond(),
    });
    const refused = await ask(c.node.nodeId, zid, 2, AbortSignal.timeout(5000));
    expect(refused).toMatchObject({ refused: { code: 'home' } });
    expect(refused !== null && 'refused' in refused && refused.refused?.reason).toContain(a.node.nodeId);
    expect(await c.node.custody.custodian.promised(zid)).toBeNull();
    // c still signs a's entries: a's write is acknowledged, nothing fenced.
    const write = await call(a.url, 'POST', '/api/svc/compute', COMPUTE, bearer(key));
    expect(write.status, write.text).toBe(200);
    const certified = await a.node.custody.replicator.certifiedHead(zid);
    expect((await c.node.custody.custodian.head(zid))?.seq).toBe(certified?.seq);

    // a goes: once its tick event is overdue at c, b's request is promised (and kept).
    await a.destroy();
    trio = [b, c];
    const promised = await waitFor(
      async () => {
        const answer = await ask(c.node.nodeId, zid, 2, AbortSignal.timeout(5000));
        return answer !== null && 'promise' in answer ? answer.promise : null;
      },
      30_000,
      'c promising epoch 2 to b',
    );
    expect(promised.promise).toMatchObject({ zid, epoch: 2, candidate: b.node.nodeId });
    expect(await c.node.custody.custodian.promised(zid)).toMatchObject({ epoch: 2, candidate: b.node.nodeId });
  }, 90_000);
});

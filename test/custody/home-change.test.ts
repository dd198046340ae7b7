// A home change as every node checks it (custody/home-change.ts, home-moves.ts), on three real bonded nodes: a liar
// composed here (a custodian of the identity, with its own node key) sends custody.home events whose promises do not
// make it the home; each is refused and changes no directory. Then the same custodian gathers a real majority (its
// own promise and another custodian's, over /svc/custody/1): the change is applied, and the old home's next write is
// refused as fenced by both (503, nothing written), which shows it the change: it names the new home from then on.
import type { PrivateKey } from '@libp2p/interface';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOME_CHANGE_EVENT, type HomeChange } from '../../src/custody/home-change.js';
import { promiseSigningText, type PromiseBody, type SignedPromise } from '../../src/custody/promise.js';
import { ServiceError } from '../../src/kernel/errors.js';
import { loadOrCreateNodeKey } from '../../src/mesh/identity.js';
import { bodyDigest, handshakeFor, signEvent, signText } from '../../src/mesh/wire.js';
import { COMPUTE, startBondedTrio } from '../helpers/custody.js';
import { bearer, call, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitFor } from '../mesh/helpers.js';

const SECRET = 'custody-home-change-mesh-secret-0123456789';
let trio: TestNode[] = [];
afterAll(async () => {
  await Promise.all(trio.map((n) => n.destroy()));
});

describe('a custody.home event', () => {
  let a: TestNode, b: TestNode, c: TestNode;
  let zid: string, key: string, liarKey: PrivateKey;
  beforeAll(async () => {
    trio = [a, b, c] = await startBondedTrio(SECRET, 100);
    ({ zid, key } = await zkIdentity(a.url, 'home-change-identity'));
    expect((await call(a.url, 'POST', '/api/svc/compute', COMPUTE, bearer(key))).status).toBe(200);
    await waitFor(async () => (await c.node.identity.getIdentity(zid))?.home === a.node.nodeId, 15_000, 'the identity known at c');
    liarKey = (await loadOrCreateNodeKey(b.dataDir)).privateKey;
  }, 120_000);

  const promiseBy = (signer: PrivateKey, node: string, more: Partial<PromiseBody> = {}): SignedPromise => {
    const promise: PromiseBody = { zid, epoch: 2, candidate: b.node.nodeId, head: null, ...more };
    return { promise, node, signature: signText(signer, promiseSigningText(promise)) };
  };
  /** `body` as an event of b's, sent to c's HTTP entrance: the error it is refused with (null: accepted). */
  const sendToC = async (body: unknown): Promise<ServiceError | null> => {
    const svcond = c.node.mesh.nowSvcond();
    const event = await signEvent(liarKey, b.node.nodeId, HOME_CHANGE_EVENT, svcond, body);
    return c.node.mesh.acceptHttpEvent(event, handshakeFor(SECRET, b.node.nodeId, svcond, bodyDigest(body))).then(
      () => null,
      (err: unknown) => err as ServiceError,
    );
  };

  it('is refused when its promises do not hold, and changes no directory', async () => {
    const own = promiseBy(liarKey, b.node.nodeId);
    const forged: [string, HomeChange | Record<string, unknown>, number, string, RegExp][] = [
      ['no promises', { zid, epoch: 2, home: b.node.nodeId, promises: [] }, 400, 'INVALID_EVENT', /promises/],
      [
        'its own promise alone',
        { zid, epoch: 2, home: b.node.nodeId, promises: [own] },
        403,
        'SVC_FORBIDDEN',
        /1 distinct custodians of the set of epoch 1's home .*, 2 needed/,
      ],
      ['its own promise twice', { zid, epoch: 2, home: b.node.nodeId, promises: [own, own] }, 403, 'SVC_FORBIDDEN', /1 distinct custodians/],
      [
        'a promise of c it signed itself',
        { zid, epoch: 2, home: b.node.nodeId, promises: [own, promiseBy(liarKey, c.node.nodeId)] },
        403,
        'SVC_FORBIDDEN',
        /does not verify/,
      ],
      ['another node named as home', { zid, epoch: 2, home: c.node.nodeId, promises: [own] }, 403, 'SVC_FORBIDDEN', /new home only/],
    ];
    for (const [name, body, status, code, reason] of forged) {
      const err = await sendToC(body);
      expect(err, name).toBeInstanceOf(ServiceError);
      expect(err!.status, name).toBe(status);
      expect(err!.code, name).toBe(code);
      expect(err!.message, name).toMatch(reason);
    }
    expect((await c.node.identity.getIdentity(zid))?.home).toBe(a.node.nodeId);
    expect(await c.node.custody.homeChanges.latest(zid)).toBeNull();
    expect(c.node.custody.homeMoves.stats).toMatchObject({ applied: 0, refused: 3 });
    // The identity is served by its home as before.
    expect((await call(a.url, 'POST', '/api/svc/compute', COMPUTE, bearer(key))).status).toBe(200);
  });

  it('with a majority of real promises it moves the home; the old home is fenced, answers 503, and learns the new home', async () => {
    const own = await b.node.custody.custodian.promiseTo(zid, 2, b.node.nodeId);
    const fromC = await c.node.custody.custodian.promiseTo(zid, 2, b.node.nodeId);
    if (!('promise' in own) || !('promise' in fromC)) throw new Error(`no promise: ${JSON.stringify([own, fromC])}`);
    expect(fromC.promise.promise.head?.epoch).toBe(1);
    // c promised epoch 2 to b: another candidate is refused it.
    const other = await c.node.custody.custodian.promiseTo(zid, 2, a.node.nodeId);
    expect(other).toMatchObject({ refused: { code: 'promised', epoch: 2 } });

    // a still takes itself for the home: its write of epoch 1 is refused fenced by b and c, nothing written.
    const before = await call(a.url, 'GET', '/api/tally/balance', undefined, bearer(key));
    const refused = async () => {
      const write = await call(a.url, 'POST', '/api/svc/compute', COMPUTE, bearer(key));
      expect(write.status, write.text).toBe(503);
      expect(write.body.error.code).toBe('SVC_CUSTODY_UNAVAILABLE');
      expect(write.body.error.refusals.join(' ')).toMatch(/fenced/);
    };
    await refused();
    expect((await a.node.identity.getIdentity(zid))?.home).toBe(a.node.nodeId);

    // c applies the change (as its custody.home row does; not relayed here, so a can learn it only from c's refusal).
    const change: HomeChange = { zid, epoch: 2, home: b.node.nodeId, promises: [own.promise, fromC.promise] };
    expect(await c.node.custody.homeMoves.apply(change)).toEqual({ apply: true });
    expect((await c.node.identity.getIdentity(zid))?.home).toBe(b.node.nodeId);
    expect((await c.node.custody.homeChanges.latest(zid))?.epoch).toBe(2);
    // a's next write is refused again; c's refusal carries the change, which a checks and applies.
    await refused();
    // The identity record and the change are one batch; the change's in-memory copy follows once the chains it rewrote
    // are read again, so both are waited for.
    await waitFor(
      async () => (await a.node.identity.getIdentity(zid))?.home === b.node.nodeId && (await a.node.custody.homeChanges.latest(zid))?.epoch === 2,
      10_000,
      'a naming the new home and keeping its change',
    );
    const balance = await a.node.ledger.wallet(zid);
    expect(balance.free + balance.paid).toBe(before.body.free + before.body.paid);
  });
});

// An identity's default machine follows its home (identity/service.ts homeMoveOps, http/machine-place.ts): its slug
// names its owner (the first hex of the zid), the move writes the machine's record naming the new home, and a node
// that becomes the home without a record of the machine writes the record registration writes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { machinePlace } from '../../src/http/machine-place.js';
import { COMPUTE } from '../helpers/custody.js';
import { bearer, call, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

const OTHER_NODE = '12D3KooWOtherHomeOtherHomeOtherHomeOtherHomeOther';
let t: TestNode;
beforeAll(async () => {
  t = await startTestNode();
}, 60_000);
afterAll(async () => {
  await t?.destroy();
});

describe('an identity’s default machine', () => {
  it('is known by its slug as its owner’s, and no other slug is', async () => {
    const x = await zkIdentity(t.url, 'default-machine-owner');
    const y = await zkIdentity(t.url, 'default-machine-other');
    expect(x.slug).toBe(`m-${x.zid.slice(4, 20)}`);
    expect((await t.node.identity.ownerOfDefaultMachine(x.slug))?.zid).toBe(x.zid);
    expect((await t.node.identity.ownerOfDefaultMachine(y.slug))?.zid).toBe(y.zid);
    // Same 16 hex, another tail: a slug no identity here has as its default machine.
    expect(await t.node.identity.ownerOfDefaultMachine(`m-${x.zid.slice(4)}`)).toBeUndefined();
    expect(await t.node.identity.ownerOfDefaultMachine('my-machine')).toBeUndefined();
    expect(await machinePlace(t.node.nodeId, t.node, x.slug)).toBe('here');
  });

  it('moves with its identity: the record names the new home, and the machine is served there', async () => {
    const x = await zkIdentity(t.url, 'default-machine-moved');
    const ident = (await t.node.identity.getIdentity(x.zid))!;
    const before = (await t.node.chain.getMachine(x.slug))!;
    await t.node.store.commit(await t.node.identity.homeMoveOps(ident, OTHER_NODE));
    expect(await t.node.chain.getMachine(x.slug)).toEqual({ ...before, home: OTHER_NODE });
    expect(await machinePlace(t.node.nodeId, t.node, x.slug)).toBe(OTHER_NODE);
    // A read here goes to the new home (unreachable: no mesh), never to the copy this node still holds.
    const r = await call(t.url, 'GET', `/api/chain/${x.slug}/explore`, undefined, bearer(x.key));
    expect(r.status, r.text).not.toBe(200);
  });

  it('is written where its identity arrives without a record of it, as registration writes it', async () => {
    const x = await zkIdentity(t.url, 'default-machine-arrives');
    const sealed = await call(t.url, 'POST', '/api/svc/compute', COMPUTE, bearer(x.key));
    expect(sealed.status, sealed.text).toBe(200);
    const ident = (await t.node.identity.getIdentity(x.zid))!;
    const registered = (await t.node.chain.getMachine(x.slug))!;
    await t.node.store.commit([{ type: 'del', sub: t.node.store.sub('machines'), key: x.slug }]);
    expect(await machinePlace(t.node.nodeId, t.node, x.slug)).toBeNull();
    await t.node.store.commit(await t.node.identity.homeMoveOps(ident, t.node.nodeId));
    expect(await t.node.chain.getMachine(x.slug)).toEqual({
      ...registered,
      genesis_svcond: 0,
      key_digest: '',
      created_unix_ms: ident.created_unix_ms,
    });
    const r = await call(t.url, 'GET', `/api/chain/${x.slug}/explore`, undefined, bearer(x.key));
    expect(r.status, r.text).toBe(200);
    expect(r.body.rows.map((row: { hash: string }) => row.hash)).toContain(sealed.body.audit.hash);
    // A record already naming the home is left as it is: the move writes the identity record only.
    expect(await t.node.identity.homeMoveOps(ident, t.node.nodeId)).toHaveLength(1);
  });
});

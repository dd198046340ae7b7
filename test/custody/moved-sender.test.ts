// A delivery from a sender whose home moved, to a receiver's home that missed the move: on three real bonded nodes, s
// is homed on a and r on c. The change making b s's home from epoch 2 (promised by b and c) is applied at a and b only,
// as when c misses the custody.home event. b, s's home, delivers a transfer whose debit s's set of epoch 2 certified
// (b's and a's signatures, composed here with their node keys). Without the change, c cannot check that certificate
// (it knows no home of s in epoch 2) and refuses it; the delivery carrying the change is checked, the change applied
// and the transfer credited to r.
import type { PrivateKey } from '@libp2p/interface';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { entryHash, GENESIS_ENTRY_HASH, signingTextOf, tokensDigest, type CustodyEntry } from '../../src/custody/entry.js';
import type { HomeChange } from '../../src/custody/home-change.js';
import type { SignedPromise } from '../../src/custody/promise.js';
import { loadOrCreateNodeKey } from '../../src/mesh/identity.js';
import { bodyDigest, HANDSHAKE_HEADER, handshakeFor, signEvent, signText } from '../../src/mesh/wire.js';
import { DELIVER_PATH } from '../../src/tally/transfer-delivery.js';
import { TRANSFER_EVENT, type DeliveryBody } from '../../src/tally/transfer-wire.js';
import { startBondedTrio } from '../helpers/custody.js';
import { call, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitFor } from '../mesh/helpers.js';

const SECRET = 'custody-moved-sender-secret-0123456789ab';
let trio: TestNode[] = [];
afterAll(async () => {
  await Promise.all(trio.map((n) => n.destroy()));
});

describe('a delivery from a sender whose home moved', () => {
  let a: TestNode, b: TestNode, c: TestNode;
  let s: string, r: string;
  let keys: Map<string, PrivateKey>;
  beforeAll(async () => {
    trio = [a, b, c] = await startBondedTrio(SECRET, 0);
    s = (await zkIdentity(a.url, 'moved-sender-s')).zid;
    r = (await zkIdentity(c.url, 'moved-sender-r')).zid;
    keys = new Map(await Promise.all(trio.map(async (n) => [n.node.nodeId, (await loadOrCreateNodeKey(n.dataDir)).privateKey] as const)));
    await waitFor(async () => (await c.node.identity.getIdentity(s))?.home === a.node.nodeId, 15_000, 's known at c');
  }, 120_000);

  /** Send `deliveries` to c as b, signed with b's node key: c's answer for each. */
  const deliverAsB = async (deliveries: DeliveryBody[]) => {
    const body = { deliveries };
    const svcond = b.node.mesh.nowSvcond();
    const event = await signEvent(keys.get(b.node.nodeId)!, b.node.nodeId, TRANSFER_EVENT, svcond, body);
    const res = await call(c.url, 'POST', DELIVER_PATH, event, { [HANDSHAKE_HEADER]: handshakeFor(SECRET, b.node.nodeId, svcond, bodyDigest(body)) });
    expect(res.status, res.text).toBe(200);
    return res.body.body.acks as { transfer_id: string; error?: { status: number; message: string }; duplicate?: boolean }[];
  };

  it('carries the sender’s home change, which the receiver’s home applies before it checks the debit certificate', async () => {
    const promises: SignedPromise[] = [];
    for (const answer of [await b.node.custody.custodian.promiseTo(s, 2, b.node.nodeId), await c.node.custody.custodian.promiseTo(s, 2, b.node.nodeId)]) {
      expect(answer).toHaveProperty('promise');
      if ('promise' in answer) promises.push(answer.promise);
    }
    const change: HomeChange = { zid: s, epoch: 2, home: b.node.nodeId, promises };
    for (const n of [b, a]) expect(await n.node.custody.homeMoves.apply(change)).toEqual({ apply: true });

    const transferId = `xfer_${'5e'.repeat(12)}`;
    const envelope = {
      token_id: `env_${'7a'.repeat(12)}`,
      face_value: 2,
      funding: 'paid' as const,
      svcond: 1,
      result_id: 'res_moved_sender',
      hash: '3c'.repeat(32),
    };
    const debit: CustodyEntry = {
      v: 1,
      zid: s,
      epoch: 2,
      seq: 1,
      prev_hash: GENESIS_ENTRY_HASH,
      kind: 'transfer',
      records: '00'.repeat(32),
      balance: null,
      transfer: { id: transferId, side: 'debit', party: r, amount: 2, tokens: tokensDigest([envelope.token_id]) },
    };
    const hash = entryHash(debit);
    const signatures = [b, a].map((n) => ({ node: n.node.nodeId, signature: signText(keys.get(n.node.nodeId)!, signingTextOf(hash)) }));
    const delivery: DeliveryBody = {
      transfer_id: transferId,
      from: s,
      to: r,
      from_home: b.node.nodeId,
      to_home: c.node.nodeId,
      created_svcond: 1,
      created_unix_ms: 1,
      attempt: 1,
      picked_by: 'token_ids',
      seed: null,
      envelopes: [envelope],
      debit_certificate: { entry: debit, signatures },
    };

    const [refused] = await deliverAsB([delivery]);
    expect(refused?.error?.status).toBe(403);
    expect(refused?.error?.message).toMatch(/home of the sender .* in epoch 2 is not known/);
    expect((await c.node.identity.getIdentity(s))?.home).toBe(a.node.nodeId);

    const [credited] = await deliverAsB([{ ...delivery, attempt: 2, from_home_change: change }]);
    expect(credited, JSON.stringify(credited)).toMatchObject({ transfer_id: transferId, duplicate: false });
    expect(credited?.error).toBeUndefined();
    expect((await c.node.identity.getIdentity(s))?.home).toBe(b.node.nodeId);
    expect(await c.node.custody.homeChanges.latest(s)).toMatchObject({ epoch: 2, home: b.node.nodeId });
    const held = await c.node.store.get<{ owner: string; transfer_id: string }>(c.node.store.sub('envelopes'), envelope.token_id);
    expect(held).toMatchObject({ owner: r, transfer_id: transferId });
  }, 120_000);
});

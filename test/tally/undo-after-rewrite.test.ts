// A write whose batch fails after the identity's ledger was rewritten from a custody chain (a takeover writes the
// chain's wallet and running totals, then drops what memory held of them): its undo must not touch the values read
// again from the store, which never held the write. Given back anyway, the wallet gained the charge and the running
// total lost it, and the next write certified both (a seal that charged nothing, in the 200-fault run at seed 11).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { chargedCounter } from '../../src/store/counter-keys.js';

let t: TestNode;

beforeAll(async () => {
  t = await startTestNode();
}, 60_000);
afterAll(async () => {
  await t.stop();
});

describe('the undo of a failed charge', () => {
  it('leaves the wallet and running total read again after a rewrite, and gives the charge back otherwise', async () => {
    const { ledger, counters } = t.node;
    const a = await zkIdentity(t.url, 'undo-after-rewrite-a');
    const before = await ledger.wallet(a.zid);
    await counters.loadIdentity(a.zid);
    const chargedBefore = counters.get(chargedCounter(a.zid));
    // Charged in memory, its batch not yet settled; the ledger is then rewritten from a chain without it.
    const charge = ledger.chargeOps(a.zid, 'test_undo', 2);
    expect(ledger.cachedWallet(a.zid).free + ledger.cachedWallet(a.zid).paid).toBe(before.free + before.paid - 2);
    ledger.forgetWallet(a.zid);
    counters.forgetIdentity(a.zid);
    // Read again (the next request does), then the failed batch's undo arrives.
    await ledger.wallet(a.zid);
    await counters.loadIdentity(a.zid);
    charge.rollback();
    expect(await ledger.wallet(a.zid)).toEqual(before);
    await counters.loadIdentity(a.zid);
    expect(counters.get(chargedCounter(a.zid))).toBe(chargedBefore);

    // Without a rewrite in between, the undo gives the charge back as before.
    const b = await zkIdentity(t.url, 'undo-after-rewrite-b');
    const walletB = await ledger.wallet(b.zid);
    const failed = ledger.chargeOps(b.zid, 'test_undo', 3);
    failed.rollback();
    expect(ledger.cachedWallet(b.zid)).toEqual(walletB);
  });
});

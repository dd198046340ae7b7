// Wallets and identity counters in bounded caches: two charges of a wallet that is not in memory, the first one's
// read slow, while the wallet is loaded, charged and evicted in between. Both charges are in the balance and in the
// identity's charged counter: a read made before a write never becomes the value the next charge starts from.
// A real store, counters, chain and ledger in a temp dir.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/db.js';
import { Counters } from '../../src/store/counters.js';
import { chargedCounter } from '../../src/store/counter-keys.js';
import { ChainService } from '../../src/chain/service.js';
import { Ledger } from '../../src/tally/ledger.js';

let dir: string;
let store: Store;
let counters: Counters;
let ledger: Ledger;
const INITIAL = 100;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-bounded-wallets-'));
  store = await Store.open(join(dir, 'db'), { sync: false });
  counters = new Counters(store, 1);
  await counters.load();
  ledger = new Ledger(store, counters, new ChainService(store, 1), { initialCredits: INITIAL, walletCacheMax: 1 });
});

afterAll(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

/** A charge made as the seal makes it: loaded until wallet and counters are in memory at once, then synchronous. */
async function charge(zid: string, cost: number): Promise<void> {
  while (!ledger.isLoaded(zid)) await ledger.wallet(zid);
  const c = ledger.chargeOps(zid, 'test', cost);
  await store.commit(c.ops);
}

describe('bounded wallets and identity counters', () => {
  // The slow read: the identity's counter record, or its wallet (read after the counters).
  it.each([
    ['counters', '#id:zid_a', 'zid_a'],
    ['wallet', 'zid_a', 'zid_c'],
  ])('a slow read of an evicted %s does not overwrite the charges made while it was in flight', async (_what, slowKey, zid) => {
    await charge(zid, 1);
    await ledger.wallet('zid_b'); // bound 1: the wallet and counters leave memory
    const realGet = store.get.bind(store);
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let slowed = false;
    // The first read of that key is made now and answered late.
    store.get = (async (sub, key) => {
      const value = await realGet(sub, key);
      if (!slowed && key === slowKey.replace('zid_a', zid)) {
        slowed = true;
        await gate;
      }
      return value;
    }) as typeof store.get;
    try {
      const slow = charge(zid, 2);
      await new Promise((r) => setTimeout(r, 20));
      const quick = charge(zid, 4);
      await Promise.race([quick, new Promise((r) => setTimeout(r, 100))]);
      await ledger.wallet('zid_b');
      release();
      await Promise.all([slow, quick]);
    } finally {
      store.get = realGet;
    }
    expect(slowed).toBe(true);
    await ledger.wallet('zid_b');
    const w = await ledger.wallet(zid);
    expect(w.free + w.paid).toBe(INITIAL - 7);
    expect(counters.get(chargedCounter(zid))).toBe(7);
  });

  it('holding() keeps a wallet and its counters in memory across other loads until the charge, then lets them go', async () => {
    // Without a hold, another identity's load (bound 1) takes them out: the synchronous charge would find nothing.
    await ledger.wallet('zid_d');
    await ledger.wallet('zid_b');
    expect(ledger.isLoaded('zid_d')).toBe(false);
    const before = (await ledger.wallet('zid_d')).free;
    await ledger.holding('zid_d', async () => {
      await ledger.wallet('zid_b');
      await ledger.wallet('zid_e');
      expect(ledger.isLoaded('zid_d')).toBe(true);
      const c = ledger.chargeOps('zid_d', 'test', 3);
      await store.commit(c.ops);
    });
    await ledger.wallet('zid_b');
    expect(ledger.isLoaded('zid_d')).toBe(false);
    expect(ledger.walletsCached).toBe(1);
    expect((await ledger.wallet('zid_d')).free).toBe(before - 3);
  });
});

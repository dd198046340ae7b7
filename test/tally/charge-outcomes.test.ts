// The machine's home's record of charged vouchers (tally/charge-outcomes.ts): applied, refused or void, once each,
// keyed by the payer's home; a question about a voucher being applied waits; a voided voucher never applies.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/db.js';
import { ChargeOutcomes } from '../../src/tally/charge-outcomes.js';
import type { SettleItem } from '../../src/tally/remote-charges.js';

let dir: string;
let store: Store;
let outcomes: ChargeOutcomes;
const P = 'payer-home';
const ZID = `zid_${'a'.repeat(32)}`;
const nonce = (n: number) => n.toString(16).padStart(32, '0');
const ask = (n: number): SettleItem => ({ nonce: nonce(n), zid: ZID, slug: 'book', credits: 5, attempt: 1 });

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-charge-outcomes-'));
  store = await Store.open(dir, { sync: false });
  outcomes = new ChargeOutcomes(store, () => 1_000);
});
afterAll(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe('charge outcomes at the machine’s home', () => {
  it('applied in the action’s batch: answered applied with its row; the voucher is not applied twice', async () => {
    const claim = await outcomes.claim(P, nonce(1), ZID, 'book');
    // Asked while it is being applied: "ask again", nothing voided.
    const during = await outcomes.answer([ask(1)], P);
    expect(during.outcomes[0]).toMatchObject({ nonce: nonce(1), error: { status: 409, code: 'SVC_CONFLICT' } });
    await expect(outcomes.claim(P, nonce(1), ZID, 'book')).rejects.toMatchObject({ status: 401, code: 'SVC_INVALID_KEY' });
    await store.commit([claim.appliedOp(7)]);
    claim.release();
    expect((await outcomes.answer([ask(1)], P)).outcomes).toEqual([{ nonce: nonce(1), outcome: 'applied', seq: 7 }]);
    await expect(outcomes.claim(P, nonce(1), ZID, 'book')).rejects.toMatchObject({ status: 401, extra: { reason: 'used before' } });
  });

  it('refused after acceptance: answered refused; unknown when asked: voided first, and never applied after', async () => {
    const claim = await outcomes.claim(P, nonce(2), ZID, 'book');
    await claim.refused('409 SVC_ILLEGAL_TRANSITION: no');
    claim.release();
    const a = await outcomes.answer([ask(2), ask(3)], P);
    expect(a.outcomes).toEqual([
      { nonce: nonce(2), outcome: 'refused', seq: null },
      { nonce: nonce(3), outcome: 'void', seq: null },
    ]);
    await expect(outcomes.claim(P, nonce(3), ZID, 'book')).rejects.toMatchObject({ status: 401 });
    // Asked again: the same answers.
    expect((await outcomes.answer([ask(3), ask(2)], P)).outcomes.map((o) => ('outcome' in o ? o.outcome : null))).toEqual(['void', 'refused']);
  });

  it('another node’s question voids only its own nonces; two claims of one voucher at once: one wins', async () => {
    expect((await outcomes.answer([ask(4)], 'someone-else')).outcomes[0]).toMatchObject({ outcome: 'void' });
    const [x, y] = await Promise.allSettled([outcomes.claim(P, nonce(4), ZID, 'book'), outcomes.claim(P, nonce(4), ZID, 'book')]);
    expect([x.status, y.status].sort()).toEqual(['fulfilled', 'rejected']);
    const won = (x.status === 'fulfilled' ? x.value : (y as PromiseFulfilledResult<Awaited<ReturnType<ChargeOutcomes['claim']>>>).value)!;
    won.release();
  });
});

// The caller's home's side of a remote charge (tally/remote-charges.ts): its states as a table, and the machine's
// home's answer accepted only signed by that home, for exactly the charges asked about, in order.
import { describe, expect, it } from 'vitest';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import type { PrivateKey } from '@libp2p/interface';
import { signEvent } from '../../src/mesh/wire.js';
import { MAX_SKEW_TICKS } from '../../src/mesh/validator.js';
import { TICK_SECONDS_EXACT } from '../../src/kernel/clock.js';
import {
  CHARGE_OUTCOME_EVENT,
  CHARGE_SETTLE_EVENT,
  PAYER_TRANSITIONS,
  SETTLE_AFTER_MS,
  settleBatch,
  verifiedOutcomes,
} from '../../src/tally/remote-charges.js';

describe('a remote charge', () => {
  it('moves only from pending: applied settles it as charged, refused and void refund it; settled states are final', () => {
    expect(PAYER_TRANSITIONS.pending).toEqual({ applied: 'charged', refused: 'refunded', void: 'refunded' });
    expect(PAYER_TRANSITIONS.charged).toEqual({});
    expect(PAYER_TRANSITIONS.refunded).toEqual({});
  });

  it('is first asked about once its voucher can no longer be used at the machine’s home', () => {
    expect(SETTLE_AFTER_MS).toBeGreaterThan(MAX_SKEW_TICKS * TICK_SECONDS_EXACT * 1000);
    expect(SETTLE_AFTER_MS).toBeLessThan(2 * MAX_SKEW_TICKS * TICK_SECONDS_EXACT * 1000);
  });

  it('takes an answer only signed by the machine’s home, for the charges asked, in order', async () => {
    const key = (await generateKeyPair('Ed25519')) as unknown as PrivateKey;
    const home = peerIdFromPrivateKey(key as never).toString();
    const other = peerIdFromPrivateKey((await generateKeyPair('Ed25519')) as never).toString();
    const nonces = ['1'.repeat(32), '2'.repeat(32)];
    const body = {
      outcomes: [
        { nonce: nonces[0], outcome: 'applied', seq: 4 },
        { nonce: nonces[1], error: { status: 409, code: 'SVC_CONFLICT', message: 'ask again' } },
      ],
    };
    const signed = await signEvent(key, home, CHARGE_OUTCOME_EVENT, 5, body);
    expect(await verifiedOutcomes(signed, home, nonces)).toEqual([
      { ack: { nonce: nonces[0], outcome: 'applied', seq: 4 } },
      { error: '409 SVC_CONFLICT: ask again' },
    ]);
    expect(await verifiedOutcomes(signed, other, nonces)).toBeNull();
    expect(await verifiedOutcomes(signed, home, [...nonces].reverse())).toBeNull();
    expect(await verifiedOutcomes({ ...signed, type: CHARGE_SETTLE_EVENT }, home, nonces)).toBeNull();
    expect(await verifiedOutcomes({ ...signed, body: { outcomes: [{ ...body.outcomes[0], outcome: 'void' }, body.outcomes[1]] } }, home, nonces)).toBeNull();
    expect(await verifiedOutcomes({ ...signed, body: { outcomes: [{ nonce: nonces[0], outcome: 'maybe' }, body.outcomes[1]] } }, home, nonces)).toBeNull();
    expect(settleBatch.safeParse({ charges: [] }).success).toBe(false);
  });
});

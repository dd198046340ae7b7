// The parts of a cross-node transfer that need no node: the random pick, the delivery's size bound, the backoff and
// the acknowledgement check.
import { describe, expect, it } from 'vitest';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { canonicalJson } from '../../src/kernel/canonical.js';
import { MAX_BODY_BYTES } from '../../src/mesh/validator.js';
import { signEvent } from '../../src/mesh/wire.js';
import { MAX_TRANSFER_ENVELOPES, TRANSFER_ACK_EVENT, deliveryBody, pickAtRandom, type DeliveryBody } from '../../src/tally/transfers.js';
import { BACKOFF, backoffMs, verifiedAck } from '../../src/tally/transfer-delivery.js';

describe('pickAtRandom', () => {
  it('picks distinct members, the same for the same seed, and every member about equally often', () => {
    const items = Array.from({ length: 10 }, (_, i) => i);
    expect(pickAtRandom(items, 4, 'a')).toEqual(pickAtRandom(items, 4, 'a'));
    expect(pickAtRandom(items, 4, 'a')).not.toEqual(pickAtRandom(items, 4, 'b'));
    expect(pickAtRandom(items, 10, 'c').sort((x, y) => x - y)).toEqual(items);
    // Uniform: 20 000 picks of 3 of 10 give each member 6 000 in expectation; a binomial sd is ~65, so ±400 is > 6 sd.
    const hits = new Array<number>(10).fill(0);
    for (let i = 0; i < 20_000; i++) {
      const p = pickAtRandom(items, 3, `seed-${i}`);
      expect(new Set(p).size).toBe(3);
      for (const k of p) hits[k]!++;
    }
    for (const h of hits) expect(Math.abs(h - 6000)).toBeLessThan(400);
  });
});

describe('a delivery', () => {
  it('of the largest transfer, with every field at its longest, fits in one mesh event body', () => {
    const body: DeliveryBody = {
      transfer_id: `xfer_${'f'.repeat(24)}`,
      from: `zid_${'a'.repeat(32)}`,
      to: `zid_${'b'.repeat(32)}`,
      from_home: 'p'.repeat(128),
      to_home: 'q'.repeat(128),
      created_svcond: Number.MAX_SAFE_INTEGER,
      created_unix_ms: Number.MAX_SAFE_INTEGER,
      attempt: Number.MAX_SAFE_INTEGER,
      picked_by: 'count',
      seed: 'e'.repeat(64),
      envelopes: Array.from({ length: MAX_TRANSFER_ENVELOPES }, () => ({
        token_id: `env_${'c'.repeat(24)}`,
        face_value: Number.MAX_SAFE_INTEGER,
        funding: 'paid' as const,
        svcond: Number.MAX_SAFE_INTEGER,
        result_id: 'r'.repeat(64),
        hash: 'd'.repeat(64),
      })),
    };
    expect(deliveryBody.safeParse(body).success).toBe(true);
    expect(Buffer.byteLength(canonicalJson(body), 'utf8')).toBeLessThan(MAX_BODY_BYTES);
    expect(deliveryBody.safeParse({ ...body, envelopes: [...body.envelopes, body.envelopes[0]!] }).success).toBe(false);
  });

  it('is retried after 250 ms, doubling, at most 5 s apart', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 50].map(backoffMs)).toEqual([250, 500, 1000, 2000, 4000, 5000, 5000, 5000]);
    expect(BACKOFF.maxMs).toBe(5000);
  });

  it("is marked delivered only on an acknowledgement signed by the receiver's home for that transfer", async () => {
    const key = await generateKeyPair('Ed25519');
    const home = peerIdFromPrivateKey(key).toString();
    const other = peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString();
    const ack = { transfer_id: `xfer_${'1'.repeat(24)}`, to: `zid_${'b'.repeat(32)}`, delivered_svcond: 5, delivered_unix_ms: 6, duplicate: false };
    const signed = await signEvent(key, home, TRANSFER_ACK_EVENT, 5, ack);
    expect(await verifiedAck(signed, home, ack.transfer_id)).toEqual(ack);
    expect(await verifiedAck(signed, other, ack.transfer_id)).toBeNull();
    expect(await verifiedAck(signed, home, `xfer_${'2'.repeat(24)}`)).toBeNull();
    expect(await verifiedAck({ ...signed, body: { ...ack, duplicate: true } }, home, ack.transfer_id)).toBeNull();
    expect(await verifiedAck({ ...signed, type: 'tally.transfer' }, home, ack.transfer_id)).toBeNull();
    expect(await verifiedAck(null, home, ack.transfer_id)).toBeNull();
  });
});

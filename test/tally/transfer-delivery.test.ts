// The parts of a cross-node transfer that need no node: the random pick, the delivery's size bound, the backoff and
// the acknowledgement check.
import { describe, expect, it } from 'vitest';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { canonicalJson } from '../../src/kernel/canonical.js';
import { MAX_BODY_BYTES } from '../../src/mesh/validator.js';
import { signEvent } from '../../src/mesh/wire.js';
import { MAX_TRANSFER_ENVELOPES, TRANSFER_ACK_EVENT, deliveryBatch, deliveryBody, pickAtRandom, type DeliveryBody } from '../../src/tally/transfers.js';
import { BACKOFF, BATCH_BYTES, backoffMs, verifiedAnswers } from '../../src/tally/transfer-delivery.js';

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
    // The loop packs deliveries up to BATCH_BYTES; the largest one alone, wrapped, is still a valid event body.
    expect(Buffer.byteLength(canonicalJson(body), 'utf8')).toBeLessThan(BATCH_BYTES);
    expect(BATCH_BYTES + 1024).toBeLessThan(MAX_BODY_BYTES);
    expect(Buffer.byteLength(canonicalJson({ deliveries: [body] }), 'utf8')).toBeLessThan(MAX_BODY_BYTES);
    expect(deliveryBatch.safeParse({ deliveries: [body] }).success).toBe(true);
    expect(deliveryBody.safeParse({ ...body, envelopes: [...body.envelopes, body.envelopes[0]!] }).success).toBe(false);
  });

  it('is retried after 250 ms, doubling, at most 5 s apart', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 50].map(backoffMs)).toEqual([250, 500, 1000, 2000, 4000, 5000, 5000, 5000]);
    expect(BACKOFF.maxMs).toBe(5000);
  });

  it("is marked delivered only on an acknowledgement signed by the receiver's home for those transfers, in order", async () => {
    const key = await generateKeyPair('Ed25519');
    const home = peerIdFromPrivateKey(key).toString();
    const other = peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString();
    const ids = [`xfer_${'1'.repeat(24)}`, `xfer_${'2'.repeat(24)}`];
    const ack = { transfer_id: ids[0]!, to: `zid_${'b'.repeat(32)}`, delivered_svcond: 5, delivered_unix_ms: 6, duplicate: false };
    const refusal = { transfer_id: ids[1]!, error: { status: 404, code: 'SVC_NOT_FOUND', message: 'no identity' } };
    const body = { acks: [ack, refusal] };
    const signed = await signEvent(key, home, TRANSFER_ACK_EVENT, 5, body);
    expect(await verifiedAnswers(signed, home, ids)).toEqual([{ ack }, { error: '404 SVC_NOT_FOUND: no identity' }]);
    expect(await verifiedAnswers(signed, other, ids)).toBeNull();
    expect(await verifiedAnswers(signed, home, [...ids].reverse())).toBeNull();
    expect(await verifiedAnswers(signed, home, ids.slice(0, 1))).toBeNull();
    expect(await verifiedAnswers({ ...signed, body: { acks: [{ ...ack, duplicate: true }, refusal] } }, home, ids)).toBeNull();
    expect(await verifiedAnswers({ ...signed, type: 'tally.transfer' }, home, ids)).toBeNull();
    expect(await verifiedAnswers(null, home, ids)).toBeNull();
  });
});

// The parts of a cross-node transfer that need no node: the random pick, the delivery's size bound, the backoff, the
// acknowledgement check, and the delivery loop over an outbox in memory.
import { describe, expect, it } from 'vitest';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import type { PrivateKey } from '@libp2p/interface';
import { canonicalJson } from '../../src/kernel/canonical.js';
import { MAX_BODY_BYTES } from '../../src/mesh/validator.js';
import { debitCertificateSchema, MAX_CERTIFICATE_SIGNATURES } from '../../src/custody/debit-certificate.js';
import { signEvent } from '../../src/mesh/wire.js';
import { pickAtRandom, type Transfers } from '../../src/tally/transfers.js';
import {
  MAX_TRANSFER_ENVELOPES,
  TRANSFER_ACK_EVENT,
  deliveryBatch,
  deliveryBody,
  type DeliveryBody,
  type TransferAck,
  type TransferRecord,
} from '../../src/tally/transfer-wire.js';
import { BACKOFF, BATCH_BYTES, TransferDelivery, backoffMs, verifiedAnswers, type DeliverySender } from '../../src/tally/transfer-delivery.js';

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
      debit_certificate: {
        entry: {
          v: 1,
          zid: `zid_${'a'.repeat(32)}`,
          epoch: Number.MAX_SAFE_INTEGER,
          seq: Number.MAX_SAFE_INTEGER,
          prev_hash: '0'.repeat(64),
          kind: 'transfer',
          records: '1'.repeat(64),
          balance: { free: -Number.MAX_SAFE_INTEGER, paid: -Number.MAX_SAFE_INTEGER },
          transfer: { id: 'x'.repeat(128), side: 'debit', party: `zid_${'b'.repeat(32)}`, amount: Number.MAX_SAFE_INTEGER, tokens: '2'.repeat(64) },
        },
        signatures: Array.from({ length: MAX_CERTIFICATE_SIGNATURES }, () => ({ node: 'n'.repeat(128), signature: 's'.repeat(128) })),
      },
    };
    expect(deliveryBody.safeParse(body).success).toBe(true);
    // The loop packs deliveries up to BATCH_BYTES; the largest one alone, wrapped, is still a valid event body.
    expect(Buffer.byteLength(canonicalJson(body), 'utf8')).toBeLessThan(BATCH_BYTES);
    expect(BATCH_BYTES + 1024).toBeLessThan(MAX_BODY_BYTES);
    expect(Buffer.byteLength(canonicalJson({ deliveries: [body] }), 'utf8')).toBeLessThan(MAX_BODY_BYTES);
    expect(deliveryBatch.safeParse({ deliveries: [body] }).success).toBe(true);
    expect(deliveryBody.safeParse({ ...body, envelopes: [...body.envelopes, body.envelopes[0]!] }).success).toBe(false);
    // Its certificate at its longest is one (custody checks the shape at the receiver's home), and one more signer is not.
    const signatures = body.debit_certificate!.signatures;
    expect(debitCertificateSchema.safeParse(body.debit_certificate).success).toBe(true);
    expect(debitCertificateSchema.safeParse({ ...body.debit_certificate, signatures: [...signatures, signatures[0]!] }).success).toBe(false);
  });

  it('is retried after 250 ms, doubling, at most 5 s apart', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 50].map(backoffMs)).toEqual([250, 500, 1000, 2000, 4000, 5000, 5000, 5000]);
    expect(BACKOFF.maxMs).toBe(5000);
  });

  it("is marked delivered only on an acknowledgement signed by the receiver's home for those transfers, in order", async () => {
    // @libp2p/crypto is typed against a newer @libp2p/interface than libp2p's (see src/mesh/identity.ts): same key objects.
    const key = (await generateKeyPair('Ed25519')) as unknown as PrivateKey;
    const home = peerIdFromPrivateKey(key as never).toString();
    const other = peerIdFromPrivateKey((await generateKeyPair('Ed25519')) as never).toString();
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

describe('the delivery loop', () => {
  /** An outbox in memory, standing in for Transfers (the loop's only view of the store). */
  function fakeOutbox(records: TransferRecord[]) {
    const byId = new Map(records.map((r) => [r.transfer_id, { ...r }]));
    return {
      byId,
      onPending: () => undefined,
      pending: async () => [...byId.values()].filter((r) => r.state === 'pending'),
      loadMany: async (ids: string[]) => ids.map((id) => byId.get(id)),
      settle: async (outcomes: { id: string; attempts: number; ack?: TransferAck; error?: string }[]) => {
        for (const o of outcomes) {
          const r = byId.get(o.id)!;
          r.attempts = o.attempts;
          if (o.ack) r.state = 'delivered';
          else r.last_error = o.error ?? null;
        }
      },
    };
  }
  const record = (i: number, home: string): TransferRecord => ({
    transfer_id: `xfer_${String(i).padStart(24, '0')}`,
    state: 'pending',
    from: `zid_${'a'.repeat(32)}`,
    to: `zid_${'b'.repeat(32)}`,
    from_home: 'here',
    to_home: home,
    count: 1,
    token_ids: [`env_${String(i).padStart(24, '0')}`],
    face_value_total: 1,
    picked_by: 'count',
    seed: 'e'.repeat(64),
    attempts: 0,
    last_error: null,
    created_svcond: 1,
    created_unix_ms: 1,
    delivered_svcond: null,
    delivered_unix_ms: null,
    envelopes: [{ token_id: `env_${String(i).padStart(24, '0')}`, face_value: 1, funding: 'paid', svcond: 1, result_id: 'res_1_x', hash: 'd'.repeat(64) }],
    // The loop carries the certificate as it is; its checks are the receiver's (test/custody).
    debit_certificate: {
      entry: {
        v: 1,
        zid: `zid_${'a'.repeat(32)}`,
        epoch: 1,
        seq: i + 1,
        prev_hash: '0'.repeat(64),
        kind: 'transfer',
        records: '1'.repeat(64),
        balance: null,
        transfer: { id: `xfer_${String(i).padStart(24, '0')}`, side: 'debit', party: `zid_${'b'.repeat(32)}`, amount: 1, tokens: '2'.repeat(64) },
      },
      signatures: [{ node: 'here', signature: 'c2ln' }],
    },
  });

  it('sends the due transfers of a home in one request, one request in flight per home, and backs off while the home is down', async () => {
    const outbox = fakeOutbox([
      ...Array.from({ length: 20 }, (_, i) => record(i, 'down-for-a-while')),
      ...Array.from({ length: 5 }, (_, i) => record(100 + i, 'up')),
    ]);
    const requests: { home: string; ids: string[]; at: number }[] = [];
    const inFlight = new Map<string, number>();
    let overlap = false;
    const send: DeliverySender = async (home, _url, deliveries) => {
      requests.push({ home, ids: deliveries.map((d) => d.transfer_id), at: Date.now() });
      inFlight.set(home, (inFlight.get(home) ?? 0) + 1);
      if (inFlight.get(home)! > 1) overlap = true;
      await new Promise((r) => setTimeout(r, 20));
      inFlight.set(home, inFlight.get(home)! - 1);
      if (home === 'down-for-a-while' && requests.filter((q) => q.home === home).length <= 3) throw new Error('connection refused');
      return deliveries.map((d) => ({ ack: { transfer_id: d.transfer_id, to: d.to, delivered_svcond: 2, delivered_unix_ms: 2, duplicate: false } }));
    };
    const loop = new TransferDelivery({
      transfers: outbox as unknown as Transfers,
      send,
      peerUrl: () => 'http://127.0.0.1:1',
      logger: { info: () => undefined, warn: () => undefined },
    });
    expect(await loop.start()).toBe(25);
    const end = Date.now() + 10_000;
    while ([...outbox.byId.values()].some((r) => r.state === 'pending') && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    await loop.stop();
    expect([...outbox.byId.values()].every((r) => r.state === 'delivered')).toBe(true);
    expect(overlap).toBe(false);
    // The home that is up: one request with its five. The one that is down: four requests (three refused), each with all twenty.
    expect(requests.filter((q) => q.home === 'up').map((q) => q.ids.length)).toEqual([5]);
    const down = requests.filter((q) => q.home === 'down-for-a-while');
    expect(down.map((q) => q.ids.length)).toEqual([20, 20, 20, 20]);
    // 250, 500 and 1000 ms apart (the backoff after attempts 1, 2 and 3), give or take the timers.
    const gaps = down.slice(1).map((q, k) => q.at - down[k]!.at);
    [250, 500, 1000].forEach((ms, k) => {
      expect(gaps[k]).toBeGreaterThanOrEqual(ms);
      expect(gaps[k]).toBeLessThan(ms + 400);
    });
    expect([...outbox.byId.values()].filter((r) => r.to_home === 'down-for-a-while').every((r) => r.attempts === 4)).toBe(true);
    expect(loop.stats).toMatchObject({ delivered: 25, failed: 60, requests: 5 });
  });
});

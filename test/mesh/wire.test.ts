// Wire format and validator units: signatures interoperate with libp2p's own Ed25519 keys, the handshake is the
// documented HMAC, and the seen cache stays bounded.
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import type { PrivateKey } from '@libp2p/interface';
import { ManualClock, TICK_NS } from '../../src/kernel/clock.js';
import { canonicalJson } from '../../src/kernel/canonical.js';
import { sha256Hex } from '../../src/kernel/bytes.js';
import { MeshValidator, SeenCache } from '../../src/mesh/validator.js';
import { bodyDigest, handshakeFor, signEvent, signingText, topicForType, verifyEventSignature } from '../../src/mesh/wire.js';

describe('wire format', () => {
  it('signs canonicalJson({type, sender, svcond, body}) so that libp2p verifies it with the peer id key', async () => {
    const key = (await generateKeyPair('Ed25519')) as unknown as PrivateKey;
    const pid = peerIdFromPrivateKey(key as never);
    const e = await signEvent(key, pid.toString(), 'test.x', 42, { b: 2, a: [1, 'x'] });
    expect(signingText(e)).toBe(canonicalJson({ type: 'test.x', sender: pid.toString(), svcond: 42, body: { a: [1, 'x'], b: 2 } }));
    const ok = await pid.publicKey!.verify(new TextEncoder().encode(signingText(e)), Buffer.from(e.signature, 'base64'));
    expect(ok).toBe(true);
    expect(await verifyEventSignature(e)).toBe(true);
    expect(await verifyEventSignature({ ...e, svcond: 43 })).toBe(false);
    expect(await verifyEventSignature({ ...e, signature: 'AAAA' })).toBe(false);
  });

  it('an event with no canonical text (a lone surrogate from JSON) does not verify: false, not a throw', async () => {
    const key = (await generateKeyPair('Ed25519')) as unknown as PrivateKey;
    const pid = peerIdFromPrivateKey(key as never).toString();
    const e = await signEvent(key, pid, 'test.x', 42, { a: 'x' });
    expect(await verifyEventSignature({ ...e, body: JSON.parse('{"a":"\\ud800"}') as unknown })).toBe(false);
    expect(await verifyEventSignature({ ...e, type: JSON.parse('"t\\udc00"') as string })).toBe(false);
  });

  it("handshake is 'v1=' + hex HMAC-SHA256(secret, sender|svcond|sha256hex(canonical(body)))", () => {
    const body = { z: 1, a: 'é' };
    const d = sha256Hex(canonicalJson(body));
    expect(bodyDigest(body)).toBe(d);
    const expected = 'v1=' + createHmac('sha256', 's3cret').update(`peer|7|${d}`).digest('hex');
    expect(handshakeFor('s3cret', 'peer', 7, d)).toBe(expected);
  });

  it('routes event types to the versioned topics', () => {
    expect(topicForType('tick')).toBe('svc/ticks/1');
    expect(topicForType('dns.register')).toBe('svc/dns/1');
    expect(topicForType('identity.key')).toBe('svc/identity/1');
    expect(topicForType('consensus.vote')).toBe('svc/consensus/1');
    expect(topicForType('anything')).toBe('svc/events/1');
  });
});

describe('seen cache', () => {
  it('is bounded in size, oldest first', () => {
    const c = new SeenCache(3);
    for (let i = 0; i < 5; i++) c.add(`id${i}`, 1_000, 0);
    expect(c.size).toBe(3);
    expect(c.has('id0')).toBe(false);
    expect(c.has('id4')).toBe(true);
  });

  it('forgets entries once their events are stale', () => {
    const c = new SeenCache(100);
    c.add('old', 10, 0);
    c.add('new', 500, 0);
    c.sweep(11);
    expect(c.has('old')).toBe(false);
    expect(c.has('new')).toBe(true);
  });

  it('a validator claims an id once: of two concurrent deliveries exactly one is new', async () => {
    const clock = new ManualClock(1_000n * TICK_NS);
    const v = new MeshValidator({ secret: 'a-secret-of-16-chars', clock });
    const key = (await generateKeyPair('Ed25519')) as unknown as PrivateKey;
    const sender = peerIdFromPrivateKey(key as never).toString();
    const e = await signEvent(key, sender, 'test.x', 1_000, { n: 1 });
    const hs = handshakeFor('a-secret-of-16-chars', sender, 1_000, bodyDigest(e.body));
    const [a, b] = await Promise.all([v.validate(e, hs), v.validate(e, hs)]);
    expect(a.ok && b.ok).toBe(true);
    expect([a, b].filter((x) => x.ok && !x.duplicate)).toHaveLength(1);
  });
});

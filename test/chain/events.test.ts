// POST /api/chain/:slug/events: rows commit SHA-256 of the payload, never its bytes (read back from the store);
// sealed: a sealed envelope that /api/svc/verify accepts, and transitionType sealed_event.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { canonicalJson } from '../../src/kernel/canonical.js';

let t: TestNode;
let owner: { zid: string; key: string; slug: string };
const MARKER = 'payload-marker-7f3a9c1e5b';
const sha = (v: unknown) => createHash('sha256').update(canonicalJson(v)).digest('hex');

beforeAll(async () => {
  t = await startTestNode();
  owner = await zkIdentity(t.url, 'events-owner');
});
afterAll(async () => t.destroy());

describe('events', () => {
  it('a plain event commits the payload digest; a sealed one commits its envelope, which verifies', async () => {
    const payload = { note: MARKER, n: 1 };
    const r = await call(t.url, 'POST', `/api/chain/${owner.slug}/events`, { payload }, bearer(owner.key));
    expect(r.status, r.text).toBe(201);
    expect(r.body.row).toMatchObject({ seq: 1, transitionType: 'event', payload_sha256: sha(payload) });
    const sealedPayload = { secret: `${MARKER}-sealed` };
    const s = await call(t.url, 'POST', `/api/chain/${owner.slug}/events`, { payload: sealedPayload, sealed: true }, bearer(owner.key));
    expect(s.status, s.text).toBe(201);
    expect(s.body.row.transitionType).toBe('sealed_event');
    expect(s.body.envelope).toMatchObject({ kind: 'sealed_event', seq: 2, payload_sha256: sha(sealedPayload) });
    expect(s.body.row.payload_sha256).toBe(sha(s.body.envelope));
    expect(JSON.stringify(s.body.envelope)).not.toContain(MARKER);
    const v = await call(t.url, 'POST', '/api/svc/verify', s.body.envelope, bearer(owner.key));
    expect(v.body).toMatchObject({ valid: true, proof_valid: true, receipt_valid: true });
    const tampered = await call(t.url, 'POST', '/api/svc/verify', { ...s.body.envelope, payload_sha256: sha('other') }, bearer(owner.key));
    expect(tampered.body.valid).toBe(false);
    const chain = await call(t.url, 'GET', `/api/chain/${owner.slug}/pohc/validate`, undefined, bearer(owner.key));
    expect(chain.body).toMatchObject({ valid: true, rows: 2 });
  });

  it('a missing or null payload is 400 naming payload; an unknown member is 400; no key is 401', async () => {
    expect(expectError((await call(t.url, 'POST', `/api/chain/${owner.slug}/events`, {}, bearer(owner.key))) as never, 400, 'SVC_INVALID_INPUT').field).toBe(
      'payload',
    );
    expectError((await call(t.url, 'POST', `/api/chain/${owner.slug}/events`, { payload: null }, bearer(owner.key))) as never, 400, 'SVC_INVALID_INPUT');
    expectError((await call(t.url, 'POST', `/api/chain/${owner.slug}/events`, { payload: 1, extra: 1 }, bearer(owner.key))) as never, 400, 'SVC_INVALID_INPUT');
    expectError((await call(t.url, 'POST', `/api/chain/${owner.slug}/events`, { payload: 1 })) as never, 401, 'SVC_NO_KEY');
  });

  it('the payload bytes are nowhere in the store (every key and value read back)', async () => {
    let entries = 0;
    for await (const [key, value] of t.node.store.db.iterator({ valueEncoding: 'buffer', keyEncoding: 'buffer' } as never) as AsyncIterable<[Buffer, Buffer]>) {
      entries++;
      expect(Buffer.from(key).includes(MARKER)).toBe(false);
      expect(Buffer.from(value).includes(MARKER)).toBe(false);
    }
    expect(entries).toBeGreaterThan(5);
  });
});

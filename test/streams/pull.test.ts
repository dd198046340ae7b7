import { createDecipheriv, diffieHellman, generateKeyPairSync, createPublicKey, hkdfSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/kernel/clock.js';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

const clock = new ManualClock(BigInt(Date.now()) * 1_000_000n);
let t: TestNode;
let owner: { zid: string; key: string };
let a: { id: string; key: string };
let b: { id: string; key: string };
let sealedA: any;

beforeAll(async () => {
  t = await startTestNode({ solverThreads: 0, sealWorker: false }, { initialCredits: 10_000, clock });
  owner = await zkIdentity(t.url, 'pull-owner');
  const mk = async () => (await call(t.url, 'POST', '/api/svc/streams', { solver: 'lorenz', inputs: { t_end: 0.2 } }, bearer(owner.key))).body;
  a = await mk();
  b = await mk();
  sealedA = (await call(t.url, 'POST', `/api/svc/streams/${a.id}/tick`, undefined, bearer(a.key))).body;
  await call(t.url, 'POST', `/api/svc/streams/${b.id}/tick`, undefined, bearer(b.key));
});
afterAll(() => t.destroy());

const pull = (id: string, sig: string) => call(t.url, 'GET', `/api/svc/streams/${id}/pull?sig=${encodeURIComponent(sig)}`);

describe('signed pull links', () => {
  it('a link pulls the latest sealed envelope without a key; altered, other-channel and expired signatures are refused', async () => {
    const l = await call(t.url, 'POST', `/api/svc/streams/${a.id}/link`, { ttlSeconds: 60 }, bearer(a.key));
    expect(l.status).toBe(201);
    expect(l.body.url).toBe(`${t.url}/api/svc/streams/${a.id}/pull?sig=${encodeURIComponent(l.body.sig)}`);
    const r = await call(t.url, 'GET', l.body.url.slice(t.url.length));
    expect(r.status).toBe(200);
    expect(r.body).toEqual(sealedA);
    expect(r.headers.get('x-svc-proof')).toBe(sealedA.svcProof);
    expect(r.headers.get('x-svc-token')).toBe(sealedA.envelope.token_id);
    expect(r.headers.get('x-svc-sealed')).toBe('true');

    // X-Svc-Verify: a verify the link holder calls without a key, opened by the same signature.
    const verifyUrl = r.headers.get('x-svc-verify')!;
    expect(verifyUrl).toBe(`${t.url}/api/svc/streams/${a.id}/verify?sig=${encodeURIComponent(l.body.sig)}`);
    const v = await call(t.url, 'POST', verifyUrl.slice(t.url.length), r.body);
    expect(v.status, v.text).toBe(200);
    expect(v.body).toMatchObject({ valid: true, proof_valid: true, result_id: sealedA.result_id, svcond: sealedA.svcond });
    const tampered = await call(t.url, 'POST', verifyUrl.slice(t.url.length), { ...r.body, value: r.body.value + 1 });
    expect(tampered.body.valid).toBe(false);
    expectError(await call(t.url, 'POST', `/api/svc/streams/${b.id}/verify?sig=${encodeURIComponent(l.body.sig)}`, r.body), 401, 'SVC_INVALID_KEY');
    expectError(await call(t.url, 'POST', `/api/svc/streams/${a.id}/verify`, r.body), 401, 'SVC_NO_KEY');
    expectError(await call(t.url, 'POST', '/api/svc/verify', r.body), 401, 'SVC_NO_KEY');

    const sig: string = l.body.sig;
    const flipped = sig.slice(0, -1) + (sig.endsWith('0') ? '1' : '0');
    expectError(await pull(a.id, flipped), 401, 'SVC_INVALID_KEY');
    const [exp, mac] = sig.split('.');
    expectError(await pull(a.id, `${Number(exp) + 1000}.${mac}`), 401, 'SVC_INVALID_KEY');
    expectError(await pull(b.id, sig), 401, 'SVC_INVALID_KEY');
    expectError(await pull(a.id, 'garbage'), 401, 'SVC_INVALID_KEY');
    const noSig = expectError(await call(t.url, 'GET', `/api/svc/streams/${a.id}/pull`), 401, 'SVC_NO_KEY');
    expect(noSig).toMatchObject({ auth_header_example: `GET /api/svc/streams/${a.id}/pull?sig=…`, docs_url: expect.any(String) });

    clock.set(clock.nowNs() + 61_000_000_000n);
    const expired = expectError(await pull(a.id, sig), 401, 'SVC_INVALID_KEY');
    expect(expired.reason).toBe('expired');
    expectError(await call(t.url, 'POST', `/api/svc/streams/${a.id}/link`, { ttlSeconds: 0 }, bearer(a.key)), 400, 'SVC_INVALID_INPUT');
  });
});

describe('secure pull', () => {
  /** A client written from the key agreement documented in src/streams/secure.ts and the README. */
  async function openClient(channel: { id: string; key: string }) {
    const { privateKey, publicKey } = generateKeyPairSync('x25519');
    const raw = publicKey.export({ format: 'jwk' }).x!;
    const o = await call(t.url, 'POST', `/api/svc/streams/${channel.id}/secure/open`, { client_public_key: raw }, bearer(channel.key));
    expect(o.status, o.text).toBe(201);
    const server = createPublicKey({ key: { kty: 'OKP', crv: 'X25519', x: o.body.server_public_key }, format: 'jwk' });
    const shared = diffieHellman({ privateKey, publicKey: server });
    const key = Buffer.from(hkdfSync('sha256', shared, Buffer.from(o.body.session), Buffer.from(`svc-stream-secure/v1|${channel.id}`), 32));
    const decrypt = (f: any): Buffer => {
      const nonce = Buffer.alloc(12);
      nonce.writeBigUInt64BE(BigInt(f.seq), 4);
      expect(Buffer.from(f.nonce, 'base64url')).toEqual(nonce);
      const d = createDecipheriv('aes-256-gcm', key, nonce);
      d.setAAD(Buffer.from(`${o.body.session}|${f.seq}`));
      d.setAuthTag(Buffer.from(f.tag, 'base64url'));
      return Buffer.concat([d.update(Buffer.from(f.ciphertext, 'base64url')), d.final()]);
    };
    return { session: o.body.session as string, decrypt, key };
  }

  it('a test client decrypts the sealed envelope; nonces never repeat; sessions are per channel and expire', async () => {
    const c = await openClient(a);
    const seen = new Set<string>();
    for (let i = 1; i <= 3; i++) {
      const r = await call(t.url, 'GET', `/api/svc/streams/${a.id}/secure/pull?session=${c.session}`);
      expect(r.status).toBe(200);
      expect(r.headers.get('x-svc-proof')).toBe(sealedA.svcProof);
      expect(r.body.seq).toBe(i);
      expect(seen.has(r.body.nonce)).toBe(false);
      seen.add(r.body.nonce);
      expect(JSON.parse(c.decrypt(r.body).toString('utf8'))).toEqual(sealedA);
    }
    expectError(await call(t.url, 'GET', `/api/svc/streams/${b.id}/secure/pull?session=${c.session}`), 401, 'SVC_INVALID_KEY');
    expectError(await call(t.url, 'GET', `/api/svc/streams/${a.id}/secure/pull?session=ses_nope`), 401, 'SVC_INVALID_KEY');
    const noSession = expectError(await call(t.url, 'GET', `/api/svc/streams/${a.id}/secure/pull`), 401, 'SVC_NO_KEY');
    expect(noSession).toMatchObject({ auth_header_example: `GET /api/svc/streams/${a.id}/secure/pull?session=…`, docs_url: expect.any(String) });
    expectError(await call(t.url, 'POST', `/api/svc/streams/${a.id}/secure/open`, { client_public_key: 'AAAA' }, bearer(a.key)), 400, 'SVC_INVALID_INPUT');
    // Low-order points (0 and 1): no exchange takes them — a 400 naming the key, not a 500 from the exchange.
    for (const low of ['A'.repeat(43), `AQ${'A'.repeat(41)}`])
      expect(
        expectError(await call(t.url, 'POST', `/api/svc/streams/${a.id}/secure/open`, { client_public_key: low }, bearer(a.key)), 400, 'SVC_INVALID_INPUT')
          .field,
      ).toBe('client_public_key');
    expectError(await call(t.url, 'POST', `/api/svc/streams/${a.id}/secure/open`, { client_public_key: 'x'.repeat(43) }), 401, 'SVC_NO_KEY');
    clock.set(clock.nowNs() + 11n * 60n * 1_000_000_000n);
    expectError(await call(t.url, 'GET', `/api/svc/streams/${a.id}/secure/pull?session=${c.session}`), 401, 'SVC_INVALID_KEY');
  });

  it('a session survives a restart: its key encrypted at rest, its counter continuing past the stored mark', async () => {
    const c = await openClient(a);
    const nonces = new Set<string>();
    const pullOnce = async () => {
      const r = await call(t.url, 'GET', `/api/svc/streams/${a.id}/secure/pull?session=${c.session}`);
      expect(r.status, r.text).toBe(200);
      expect(nonces.has(r.body.nonce)).toBe(false);
      nonces.add(r.body.nonce);
      expect(JSON.parse(c.decrypt(r.body).toString('utf8'))).toEqual(sealedA);
      return r.body.seq as number;
    };
    expect(await pullOnce()).toBe(1);
    expect(await pullOnce()).toBe(2);

    // Stored, the key never in clear (nor in base64 or hex).
    const rows = await t.node.store.range<any>(t.node.store.sub('stream_sessions'));
    const text = JSON.stringify(rows);
    expect(text).toContain(c.session);
    for (const form of [c.key.toString('base64'), c.key.toString('base64url'), c.key.toString('hex')]) expect(text).not.toContain(form);

    t = await t.restart();
    // Past every seq the first run may have used (a reservation of 1,024), never 3 again.
    expect(await pullOnce()).toBe(1025);
    expect(await pullOnce()).toBe(1026);
    t = await t.restart();
    expect(await pullOnce()).toBe(2049);

    clock.set(clock.nowNs() + 11n * 60n * 1_000_000_000n);
    t = await t.restart();
    expect((await t.node.store.range(t.node.store.sub('stream_sessions'))).length).toBe(0);
    expectError(await call(t.url, 'GET', `/api/svc/streams/${a.id}/secure/pull?session=${c.session}`), 401, 'SVC_INVALID_KEY');
  });
});

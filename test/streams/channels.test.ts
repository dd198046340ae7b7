import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

let t: TestNode;
let owner: { zid: string; key: string };
let other: { zid: string; key: string };

beforeAll(async () => {
  t = await startTestNode({ solverThreads: 0, sealWorker: false }, { initialCredits: 10_000 });
  owner = await zkIdentity(t.url, 'stream-owner');
  other = await zkIdentity(t.url, 'stream-other');
});
afterAll(() => t.destroy());

const expectStreamHeaders = (h: Headers, body: any, channel: string) => {
  expect(h.get('x-svc-sealed')).toBe('true');
  expect(h.get('x-svc-proof')).toBe(body.svcProof);
  expect(h.get('x-svc-token')).toBe(body.envelope.token_id);
  expect(h.get('x-svc-svcond')).toBe(String(body.svcond));
  expect(h.get('x-svc-verify')).toBe(`${t.url}/api/svc/streams/${channel}/verify`);
};

describe('stream channels', () => {
  it('N ticks of a stateful solver equal one long run, bit for bit', async () => {
    const c = await call(t.url, 'POST', '/api/svc/streams', { solver: 'lorenz', inputs: { t_end: 0.5 } }, bearer(owner.key));
    expect(c.status).toBe(201);
    expect(c.body.key).toMatch(/^stk_[0-9a-f]{48}$/);
    expect(c.body).toMatchObject({ solver: 'lorenz', tick_count: 0, outputFormat: 'json', autotick: false, tickIntervalZeqonds: 1, status: 'open' });
    let last: any;
    for (let i = 1; i <= 4; i++) {
      const r = await call(t.url, 'POST', `/api/svc/streams/${c.body.id}/tick`, undefined, bearer(i % 2 ? owner.key : c.body.key));
      expect(r.status, r.text).toBe(200);
      expectStreamHeaders(r.headers, r.body, c.body.id);
      expect(r.body.stream).toEqual({ channel: c.body.id, tick: i });
      expect(r.body.tally_charge.charged).toBe(10);
      last = r.body;
    }
    const long = await call(t.url, 'POST', '/api/svc/lorenz', { t_end: 2 }, bearer(owner.key));
    expect(long.status).toBe(200);
    for (const k of ['x', 'y', 'z']) expect(Object.is(last.state[k], long.body.state[k]), k).toBe(true);
    const g = await call(t.url, 'GET', `/api/svc/streams/${c.body.id}`, undefined, bearer(c.body.key));
    expect(g.body.tick_count).toBe(4);
    expect(g.body.head_state).toEqual(last.state);
    expect(g.body.last_result_id).toBe(last.result_id);
    expect(g.body.key).toBeUndefined();
    const latest = await call(t.url, 'GET', `/api/svc/streams/${c.body.id}/latest`, undefined, bearer(owner.key));
    expect(latest.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(latest.body).toEqual(last);
    expectStreamHeaders(latest.headers, last, c.body.id);
    // The sealed tick verifies like any sealed result.
    const v = await call(t.url, 'POST', '/api/svc/verify', last, bearer(owner.key));
    expect(v.body.valid).toBe(true);
  });

  it('the older path creates too; a template channel answers text with placeholders filled', async () => {
    const c = await call(
      t.url,
      'POST',
      '/api/svc/stream/channels',
      { solver: 'heat', inputs: {}, outputFormat: 'template', template: 'T={{value}} {{unit}} tick {{stream.tick}} {{constructor.constructor}}' },
      bearer(owner.key),
    );
    expect(c.status, c.text).toBe(201);
    const empty = await call(t.url, 'GET', `/api/svc/streams/${c.body.id}/latest`, undefined, bearer(owner.key));
    expect(empty.status).toBe(204);
    expect(empty.headers.get('x-svc-sealed')).toBe('false');
    const tick = await call(t.url, 'POST', `/api/svc/streams/${c.body.id}/tick`, undefined, bearer(c.body.key));
    expect(tick.status).toBe(200);
    const latest = await call(t.url, 'GET', `/api/svc/streams/${c.body.id}/latest`, undefined, bearer(c.body.key));
    expect(latest.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(latest.text).toBe(`T=${tick.body.value} K tick 1 `);
    expectStreamHeaders(latest.headers, tick.body, c.body.id);
  });

  it('an operator chain ticks too', async () => {
    const c = await call(t.url, 'POST', '/api/svc/streams', { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: {} }, bearer(owner.key));
    expect(c.status, c.text).toBe(201);
    const r = await call(t.url, 'POST', `/api/svc/streams/${c.body.id}/tick`, undefined, bearer(c.body.key));
    expect(r.status, r.text).toBe(200);
    expectStreamHeaders(r.headers, r.body, c.body.id);
    // The channel key that ticked verifies at X-Svc-Verify; a stranger's key does not open it.
    const verify = r.headers.get('x-svc-verify')!.slice(t.url.length);
    const v = await call(t.url, 'POST', verify, r.body, bearer(c.body.key));
    expect(v.status, v.text).toBe(200);
    expect(v.body.valid).toBe(true);
    expectError(await call(t.url, 'POST', verify, r.body, bearer(other.key)), 403, 'SVC_FORBIDDEN');
    expectError(await call(t.url, 'POST', verify, r.body), 401, 'SVC_NO_KEY');
  });

  it('who may open a channel; validation; close', async () => {
    const c = await call(t.url, 'POST', '/api/svc/streams', { solver: 'lorenz', inputs: { t_end: 0.1 } }, bearer(owner.key));
    const path = `/api/svc/streams/${c.body.id}`;
    expectError(await call(t.url, 'GET', path), 401, 'SVC_NO_KEY');
    expectError(await call(t.url, 'GET', path, undefined, bearer(other.key)), 403, 'SVC_FORBIDDEN');
    expectError(await call(t.url, 'GET', path, undefined, bearer(`stk_${'0'.repeat(48)}`)), 401, 'SVC_INVALID_KEY');
    expect((await call(t.url, 'GET', `${path}?key=${c.body.key}`)).status).toBe(200);
    expectError(await call(t.url, 'GET', '/api/svc/streams/str_nope', undefined, bearer(owner.key)), 404, 'SVC_NOT_FOUND');
    expectError(await call(t.url, 'POST', '/api/svc/streams', { solver: 'lorenz', inputs: { t_end: -1 } }, bearer(owner.key)), 400, 'SVC_INVALID_INPUT');
    expectError(await call(t.url, 'POST', '/api/svc/streams', { solver: 'lorenz', outputFormat: 'template' }, bearer(owner.key)), 400, 'SVC_INVALID_INPUT');
    expectError(await call(t.url, 'POST', '/api/svc/streams', { solver: 'lorenz' }), 401, 'SVC_NO_KEY');
    // A channel's contract has no behaviour here: naming one is refused; null (none) is taken.
    const withContract = await call(t.url, 'POST', '/api/svc/streams', { solver: 'lorenz', contract: 'ctr_0123' }, bearer(owner.key));
    expect(expectError(withContract, 400, 'SVC_INVALID_INPUT')).toMatchObject({ field: 'contract' });
    expect(withContract.body.error.reason).toContain('takes no contract');
    const noContract = await call(t.url, 'POST', '/api/svc/streams', { solver: 'lorenz', contract: null }, bearer(owner.key));
    expect(noContract.status, noContract.text).toBe(201);
    expect(noContract.body.contract).toBeNull();
    expectError(
      await call(t.url, 'POST', '/api/svc/streams', { domain: 'nowhere', operators: ['KO42'], inputs: {} }, bearer(owner.key)),
      400,
      'SVC_INVALID_DOMAIN',
    );
    const closed = await call(t.url, 'POST', `${path}/close`, undefined, bearer(owner.key));
    expect(closed.body.status).toBe('closed');
    const refused = await call(t.url, 'POST', `${path}/tick`, undefined, bearer(owner.key));
    expectError(refused, 409, 'SVC_CONFLICT');
    // The stream headers are on a refused tick too: nothing sealed, the channel's verify named.
    expect(refused.headers.get('x-svc-sealed')).toBe('false');
    expect(refused.headers.get('x-svc-verify')).toBe(`${t.url}${path}/verify`);
    for (const h of ['x-svc-proof', 'x-svc-token', 'x-svc-svcond']) expect(refused.headers.get(h), h).toBe('');
    // An id that is no channel's, in any script, is a 404 with the headers (the verify URL encodes it).
    const unknown = await call(t.url, 'POST', '/api/svc/streams/%C3%A9t%C3%A9/tick', undefined, bearer(owner.key));
    expectError(unknown, 404, 'SVC_NOT_FOUND');
    expect(unknown.headers.get('x-svc-verify')).toBe(`${t.url}/api/svc/streams/%C3%A9t%C3%A9/verify`);
    const badLink = await call(t.url, 'GET', `${path}/pull?sig=garbage`);
    expectError(badLink, 401, 'SVC_INVALID_KEY');
    expect(badLink.headers.get('x-svc-sealed')).toBe('false');
  });
});

describe('a closed channel', () => {
  it('refuses a link, a pull, a secure session and its pull with 409 SVC_CONFLICT, minting nothing; it is still read', async () => {
    const { generateKeyPairSync } = await import('node:crypto');
    const clientKey = () => generateKeyPairSync('x25519').publicKey.export({ format: 'jwk' }).x;
    const c = (await call(t.url, 'POST', '/api/svc/streams', { solver: 'lorenz', inputs: { t_end: 0.1 } }, bearer(owner.key))).body;
    const path = `/api/svc/streams/${c.id}`;
    expect((await call(t.url, 'POST', `${path}/tick`, undefined, bearer(c.key))).status).toBe(200);
    // Taken while it was open: a pull link and a secure session.
    const link = await call(t.url, 'POST', `${path}/link`, { ttlSeconds: 600 }, bearer(owner.key));
    expect(link.status, link.text).toBe(201);
    const open = await call(t.url, 'POST', `${path}/secure/open`, { client_public_key: clientKey() }, bearer(c.key));
    expect(open.status, open.text).toBe(201);
    expect((await call(t.url, 'GET', `${path}/pull?sig=${encodeURIComponent(link.body.sig)}`)).status).toBe(200);
    expect((await call(t.url, 'GET', `${path}/secure/pull?session=${open.body.session}`)).status).toBe(200);
    const sessions = async () => (await t.node.store.range(t.node.store.sub('stream_sessions'))).length;
    const counted = await t.node.streams.secure.openBy(owner.zid);

    expect((await call(t.url, 'POST', `${path}/close`, undefined, bearer(owner.key))).body.status).toBe('closed');
    // Its session no longer counts against the owner's cap.
    expect(await t.node.streams.secure.openBy(owner.zid)).toBe(counted - 1);
    const stored = await sessions();

    const isClosed = (r: Awaited<ReturnType<typeof call>>, what: string) => {
      const e = expectError(r, 409, 'SVC_CONFLICT');
      expect(e, what).toMatchObject({ message: `stream channel ${c.id} is closed`, channel: c.id });
      expect(r.body, what).not.toHaveProperty('url');
      expect(r.body, what).not.toHaveProperty('sig');
      expect(r.body, what).not.toHaveProperty('session');
      return r;
    };
    for (const key of [owner.key, c.key]) {
      isClosed(await call(t.url, 'POST', `${path}/link`, { ttlSeconds: 60 }, bearer(key)), 'link');
      isClosed(await call(t.url, 'POST', `${path}/secure/open`, { client_public_key: clientKey() }, bearer(key)), 'secure/open');
      isClosed(await call(t.url, 'POST', `${path}/tick`, undefined, bearer(key)), 'tick');
    }
    const pulled = isClosed(await call(t.url, 'GET', `${path}/pull?sig=${encodeURIComponent(link.body.sig)}`), 'pull');
    expect(pulled.headers.get('x-svc-sealed')).toBe('false');
    const securePulled = isClosed(await call(t.url, 'GET', `${path}/secure/pull?session=${open.body.session}`), 'secure/pull');
    expect(securePulled.headers.get('x-svc-sealed')).toBe('false');
    // No session was opened; none counts.
    expect(await sessions()).toBe(stored);
    expect(await t.node.streams.secure.openBy(owner.zid)).toBe(counted - 1);
    // The credential is checked first: a bad link or session is still 401, not a word about the channel.
    expectError(await call(t.url, 'GET', `${path}/pull?sig=garbage`), 401, 'SVC_INVALID_KEY');
    expectError(await call(t.url, 'GET', `${path}/secure/pull?session=ses_${'0'.repeat(32)}`), 401, 'SVC_INVALID_KEY');
    expectError(await call(t.url, 'POST', `${path}/link`, { ttlSeconds: 60 }, bearer(other.key)), 403, 'SVC_FORBIDDEN');
    // Read as before: the record, and its last output.
    expect((await call(t.url, 'GET', path, undefined, bearer(owner.key))).body).toMatchObject({ status: 'closed', tick_count: 1 });
    expect((await call(t.url, 'GET', `${path}/latest`, undefined, bearer(c.key))).status).toBe(200);
  });
});

describe('a channel that is closing', () => {
  it('holds a link asked for during the close and refuses it once closed, issuing nothing', async () => {
    const c = (await call(t.url, 'POST', '/api/svc/streams', { solver: 'lorenz', inputs: { t_end: 0.1 } }, bearer(owner.key))).body;
    const path = `/api/svc/streams/${c.id}`;
    // The close's batch waits here (it is made just before the close commits) until released.
    const secure = t.node.streams.secure;
    const uncountOps = secure.uncountOps;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const closing = new Promise<void>((resolve) => (entered = resolve));
    secure.uncountOps = async (...args: Parameters<typeof uncountOps>) => {
      entered();
      await held;
      return uncountOps.apply(secure, args);
    };
    try {
      const closed = call(t.url, 'POST', `${path}/close`, undefined, bearer(owner.key));
      await closing;
      const link = call(t.url, 'POST', `${path}/link`, { ttlSeconds: 60 }, bearer(owner.key));
      // A read answered after the link was asked for: the link's request has reached the channel by then.
      expect((await call(t.url, 'GET', path, undefined, bearer(owner.key))).body.status).toBe('open');
      release();
      expect((await closed).body.status).toBe('closed');
      const refused = await link;
      expect(expectError(refused, 409, 'SVC_CONFLICT')).toMatchObject({ message: `stream channel ${c.id} is closed`, channel: c.id });
      expect(refused.body).not.toHaveProperty('sig');
    } finally {
      secure.uncountOps = uncountOps;
      release();
    }
  });
});

describe('channels and secure sessions per identity', () => {
  let n: TestNode;
  let who: { zid: string; key: string };
  beforeAll(async () => {
    n = await startTestNode({ limits: { streamChannelsPerIdentity: 2, secureSessionsPerIdentity: 2 } }, { initialCredits: 1000 });
    who = await zkIdentity(n.url, 'stream-capped');
  });
  afterAll(() => n.destroy());
  const create = (path = '/api/svc/streams') => call(n.url, 'POST', path, { solver: 'lorenz', inputs: { t_end: 0.5 } }, bearer(who.key));
  const channels = async () => (await n.node.store.range(n.node.store.sub('stream_channels'))).length;

  it('creates up to the cap on either path, refuses one more with 409 and nothing written, and a closed channel frees its slot', async () => {
    const a = await create();
    const b = await create('/api/svc/stream/channels');
    expect([a.status, b.status]).toEqual([201, 201]);
    const before = await channels();
    for (const path of ['/api/svc/streams', '/api/svc/stream/channels']) {
      const e = expectError((await create(path)) as never, 409, 'SVC_CONFLICT');
      expect(e).toMatchObject({
        message: 'an identity holds at most 2 open stream channels on this node (it holds 2); close one to open another',
        limit: 2,
        count: 2,
        resource: 'open stream channels',
      });
    }
    expect(await channels()).toBe(before);
    expect(await n.node.streams.openBy(who.zid)).toBe(2);
    expect((await call(n.url, 'DELETE', `/api/svc/streams/${a.body.id}`, undefined, bearer(who.key))).body.status).toBe('closed');
    expect(await n.node.streams.openBy(who.zid)).toBe(1);
    const c = await create();
    expect(c.status, c.text).toBe(201);
    expectError((await create()) as never, 409, 'SVC_CONFLICT');
    // The owner index is in the store: a restart keeps the count, and a closed channel stays out of it.
    n = await n.restart();
    expect(await n.node.streams.openBy(who.zid)).toBe(2);
    expectError((await create()) as never, 409, 'SVC_CONFLICT');
  }, 30_000);

  it('refuses a secure session past the cap with 429, Retry-After until the first expires, and nothing written', async () => {
    const { generateKeyPairSync } = await import('node:crypto');
    const ch = (await n.node.store.range<{ id: string; status: string; owner: { zid: string } }>(n.node.store.sub('stream_channels'))).find(
      (c) => c.value.status === 'open' && c.value.owner.zid === who.zid,
    )!.value;
    const openSession = () =>
      call(
        n.url,
        'POST',
        `/api/svc/streams/${ch.id}/secure/open`,
        { client_public_key: generateKeyPairSync('x25519').publicKey.export({ format: 'jwk' }).x },
        bearer(who.key),
      );
    expect((await openSession()).status).toBe(201);
    expect((await openSession()).status).toBe(201);
    const sessions = async () => (await n.node.store.range(n.node.store.sub('stream_sessions'))).length;
    const before = await sessions();
    const r = await openSession();
    const e = expectError(r as never, 429, 'SVC_RATE_LIMIT');
    expect(e).toMatchObject({ limit: 2, scope: 'identity', open_sessions: 2, window_seconds: 600 });
    expect(e.retry_after_seconds).toBeGreaterThan(590);
    expect(e.retry_after_seconds).toBeLessThanOrEqual(600);
    expect(Date.parse(e.reset_at)).toBeGreaterThan(Date.now());
    expect(r.headers.get('retry-after')).toBe(String(e.retry_after_seconds));
    expect(await sessions()).toBe(before);
    // Closing the channel frees the slots its sessions held: another channel of the owner's opens one.
    const rest = (await n.node.store.range<{ id: string; status: string; owner: { zid: string } }>(n.node.store.sub('stream_channels'))).find(
      (c) => c.value.status === 'open' && c.value.owner.zid === who.zid && c.value.id !== ch.id,
    )!.value;
    expect((await call(n.url, 'POST', `/api/svc/streams/${ch.id}/close`, undefined, bearer(who.key))).body.status).toBe('closed');
    expect(await n.node.streams.secure.openBy(who.zid)).toBe(0);
    const again = await call(
      n.url,
      'POST',
      `/api/svc/streams/${rest.id}/secure/open`,
      { client_public_key: generateKeyPairSync('x25519').publicKey.export({ format: 'jwk' }).x },
      bearer(who.key),
    );
    expect(again.status, again.text).toBe(201);
    // The count is the store's: a restart keeps the closed channel's sessions out of it.
    n = await n.restart();
    expect(await n.node.streams.secure.openBy(who.zid)).toBe(1);
  }, 30_000);
});

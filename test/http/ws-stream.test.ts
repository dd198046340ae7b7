import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { bearer, call, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

let t: TestNode;
let owner: { zid: string; key: string };
let other: { zid: string; key: string };
let channel: { id: string; key: string };
const wsUrl = (q: string) => `${t.url.replace(/^http/, 'ws')}/ws/stream?${q}`;

beforeAll(async () => {
  // The heartbeat is long enough that the paused client of the bounded-buffer test is dropped for its buffer, not
  // for a pong it cannot send while paused.
  t = await startTestNode({ solverThreads: 0, sealWorker: false }, { initialCredits: 10_000, wsHeartbeatMs: 1000 });
  owner = await zkIdentity(t.url, 'ws-owner');
  other = await zkIdentity(t.url, 'ws-other');
  channel = (await call(t.url, 'POST', '/api/svc/streams', { solver: 'lorenz', inputs: { t_end: 0.1 } }, bearer(owner.key))).body;
});
afterAll(() => t.destroy());

async function until(cond: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Open a client; resolves after the subscribed frame, with every later frame collected. */
function open(q: string, headers: Record<string, string> = {}, options: WebSocket.ClientOptions = {}) {
  return new Promise<{ ws: WebSocket; frames: string[]; hello: any }>((resolve, reject) => {
    const ws = new WebSocket(wsUrl(q), { headers, ...options });
    const frames: string[] = [];
    let hello: any = null;
    ws.on('message', (d) => {
      if (hello === null) {
        hello = JSON.parse(String(d));
        resolve({ ws, frames, hello });
      } else frames.push(String(d));
    });
    ws.on('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => reject(new Error(`refused ${res.statusCode} ${text}`)));
    });
    ws.on('error', reject);
  });
}

describe('WS /ws/stream', () => {
  it('pushes each sealed tick to the owner, the channel key and a signed link', async () => {
    const link = (await call(t.url, 'POST', `/api/svc/streams/${channel.id}/link`, {}, bearer(owner.key))).body;
    const clients = await Promise.all([
      open(`channel=${channel.id}`, bearer(owner.key)),
      open(`channel=${channel.id}&key=${channel.key}`),
      open(`channel=${channel.id}&sig=${encodeURIComponent(link.sig)}`),
    ]);
    for (const c of clients) expect(c.hello).toEqual({ subscribed: channel.id, tick_count: 0 });
    const ticks: string[] = [];
    for (let i = 0; i < 3; i++) ticks.push((await call(t.url, 'POST', `/api/svc/streams/${channel.id}/tick`, undefined, bearer(channel.key))).text);
    await until(() => clients.every((c) => c.frames.length === 3));
    for (const c of clients) expect(c.frames).toEqual(ticks);
    for (const c of clients) c.ws.close();
  });

  it('closing a channel tells its subscribers with a close frame (1000), and a closed channel takes no new one', async () => {
    const c = (await call(t.url, 'POST', '/api/svc/streams', { solver: 'lorenz', inputs: {} }, bearer(owner.key))).body;
    const client = await open(`channel=${c.id}`, bearer(owner.key));
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      client.ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })),
    );
    expect((await call(t.url, 'POST', `/api/svc/streams/${c.id}/close`, undefined, bearer(owner.key))).status).toBe(200);
    expect(await closed).toEqual({ code: 1000, reason: 'channel closed' });
    await expect(open(`channel=${c.id}`, bearer(owner.key))).rejects.toThrow(/refused 409 .*is closed/);
    await expect(open(`channel=${c.id}&key=${c.key}`)).rejects.toThrow('refused 409');
  });

  it('a close landing between the subscription’s check and its joining still ends it with 1000', async () => {
    const c = (await call(t.url, 'POST', '/api/svc/streams', { solver: 'lorenz', inputs: {} }, bearer(owner.key))).body;
    const streams = t.node.streams;
    const get = streams.get.bind(streams);
    // The subscription's check reads the channel open; the close is stored and told to the hub before it joins.
    let raced = false;
    streams.get = async (id: string) => {
      const rec = await get(id);
      if (id === c.id && !raced) {
        raced = true;
        await streams.close(id);
      }
      return rec;
    };
    try {
      const client = await open(`channel=${c.id}&key=${c.key}`);
      const closed = new Promise<{ code: number; reason: string }>((resolve) =>
        client.ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })),
      );
      expect(raced).toBe(true);
      expect(await closed).toEqual({ code: 1000, reason: 'channel closed' });
      await until(() => streams.hub.count(c.id) === 0);
    } finally {
      streams.get = get;
    }
  });

  it('refuses a missing or wrong key, another identity, a bad link and another path', async () => {
    const noKey = await open(`channel=${channel.id}`).catch((err: Error) => err.message);
    expect(noKey).toMatch(/^refused 401 /);
    const e = JSON.parse(String(noKey).slice('refused 401 '.length)).error;
    expect(e).toMatchObject({ code: 'SVC_NO_KEY', auth_header_example: expect.stringContaining(channel.id), docs_url: expect.any(String) });
    await expect(open(`channel=${channel.id}&key=stk_${'0'.repeat(48)}`)).rejects.toThrow('refused 401');
    await expect(open(`channel=${channel.id}`, bearer(other.key))).rejects.toThrow('refused 403');
    await expect(open(`channel=${channel.id}&sig=1.${'0'.repeat(64)}`)).rejects.toThrow('refused 401');
    await expect(open(`channel=str_nope&key=${owner.key}`)).rejects.toThrow('refused 404');
    await expect(open('')).rejects.toThrow('refused 400');
    await expect(
      new Promise((resolve, reject) =>
        new WebSocket(`${t.url.replace(/^http/, 'ws')}/ws/other`).on('unexpected-response', (_q, r) => resolve(r.statusCode)).on('error', reject),
      ),
    ).resolves.toBe(404);
  });

  it('drops a stalled client (bounded buffer) while a reading client keeps receiving', async () => {
    const hub = t.node.streams.hub;
    const slow = await open(`channel=${channel.id}&key=${channel.key}`);
    const fast = await open(`channel=${channel.id}&key=${channel.key}`);
    let slowClosed = false;
    slow.ws.on('close', () => (slowClosed = true));
    slow.ws.pause();
    const frame = Buffer.alloc(256 * 1024, 0x20);
    const droppedBefore = hub.dropped;
    let sent = 0;
    while (hub.dropped === droppedBefore && !slowClosed && sent < 400) {
      hub.publish(channel.id, frame);
      sent++;
      await new Promise((r) => setImmediate(r)); // the reading client reads
    }
    expect({ dropped: hub.dropped - droppedBefore, slowClosedFirst: slowClosed && hub.dropped === droppedBefore }).toEqual({
      dropped: 1,
      slowClosedFirst: false,
    });
    // The node let go of it: its socket is gone from the server, not kept with frames queued.
    await until(() => t.node.wsClients === 1);
    await until(() => fast.frames.length === sent);
    expect(hub.count(channel.id)).toBe(1);
    slow.ws.resume();
    await until(() => slowClosed);
    fast.ws.close();
    await until(() => hub.count(channel.id) === 0);
  });

  it('a subscription ends within a heartbeat once its key is revoked or its link expires (1008); the channel key holds', async () => {
    const spare = (await call(t.url, 'POST', '/api/auth/keys', { kind: 'sk_test' }, bearer(owner.key))).body;
    expect(spare.key).toMatch(/^sk_/);
    const link = (await call(t.url, 'POST', `/api/svc/streams/${channel.id}/link`, { ttlSeconds: 2 }, bearer(owner.key))).body;
    const byKey = await open(`channel=${channel.id}`, bearer(spare.key));
    const byLink = await open(`channel=${channel.id}&sig=${encodeURIComponent(link.sig)}`);
    const byChannelKey = await open(`channel=${channel.id}&key=${channel.key}`);
    const closeOf = (ws: WebSocket) => new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
    const [keyClosed, linkClosed] = [closeOf(byKey.ws), closeOf(byLink.ws)];
    expect((await call(t.url, 'DELETE', `/api/auth/keys/${spare.key_id}`, undefined, bearer(owner.key))).status).toBe(200);
    expect(await keyClosed).toBe(1008);
    expect(await linkClosed).toBe(1008);
    expect(byChannelKey.ws.readyState).toBe(WebSocket.OPEN);
    byChannelKey.ws.close();
  });

  it('pings every heartbeat and drops a client that stops answering', async () => {
    const silent = await open(`channel=${channel.id}&key=${channel.key}`, {}, { autoPong: false });
    const live = await open(`channel=${channel.id}&key=${channel.key}`);
    let pings = 0;
    live.ws.on('ping', () => pings++);
    let closed = false;
    silent.ws.on('close', () => (closed = true));
    await until(() => closed && pings >= 2);
    expect(live.ws.readyState).toBe(WebSocket.OPEN);
    live.ws.close();
  });
});

describe('textFrame', () => {
  it('frames a tick once as a text frame a ws client reads, at every length encoding', async () => {
    const { textFrame } = await import('../../src/http/ws-stream.js');
    const { Receiver } = (await import('ws')) as unknown as { Receiver: new (o: object) => import('node:stream').Writable };
    for (const len of [0, 125, 126, 65_535, 65_536]) {
      const data = Buffer.alloc(len, 0x61);
      const got = await new Promise<Buffer>((resolve, reject) => {
        const r = new Receiver({ isServer: false, maxPayload: 0, skipUTF8Validation: false });
        r.on('message', (d: Buffer, isBinary: boolean) => (isBinary ? reject(new Error('binary')) : resolve(d)));
        r.on('error', reject);
        r.write(textFrame(data));
      });
      expect(got.equals(data)).toBe(true);
    }
  });
});

describe('the upgrade listener', () => {
  it('never lets an exception out (it would end the process): the caller gets a part-7 500 and the server goes on', async () => {
    const { createServer } = await import('node:http');
    const { connect } = await import('node:net');
    const pino = (await import('pino')).default;
    const { attachStreamSocket } = await import('../../src/http/ws-stream.js');
    const server = createServer((_req, res) => res.end('ok'));
    const socketApi = attachStreamSocket(server, {
      streams: { hub: { closeAll: () => undefined } } as never,
      nodeId: () => {
        throw new Error('a fault inside the listener');
      },
      peerUrl: () => null,
      identity: {} as never,
      logger: pino({ level: 'silent' }),
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    const raw = await new Promise<string>((resolve, reject) => {
      const c = connect(port, '127.0.0.1', () =>
        c.write(
          `GET /ws/stream?channel=str_${'1'.repeat(40)}_${'0'.repeat(24)} HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
        ),
      );
      let text = '';
      c.on('data', (d) => (text += String(d)));
      c.on('close', () => resolve(text));
      c.on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 500/);
    expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)).error).toMatchObject({ code: 'SVC_INTERNAL_ERROR', status: 500 });
    expect(await (await fetch(`http://127.0.0.1:${port}/`)).text()).toBe('ok');
    socketApi.close();
    await new Promise((r) => server.close(r));
  });
});

describe('keyed sockets per identity', () => {
  let n: TestNode;
  let who: { zid: string; key: string };
  let ch: { id: string; key: string };
  beforeAll(async () => {
    n = await startTestNode({ limits: { keyedStreamsPerIdentity: 2 } }, { initialCredits: 1000 });
    who = await zkIdentity(n.url, 'ws-capped');
    ch = (await call(n.url, 'POST', '/api/svc/streams', { solver: 'lorenz', inputs: {} }, bearer(who.key))).body;
  });
  afterAll(() => n.destroy());
  const url = (q: string) => `${n.url.replace(/^http/, 'ws')}/ws/stream?${q}`;
  /** Opens, or resolves with the refusal's status, Retry-After and part-7 body. */
  const attempt = (q: string, headers: Record<string, string> = {}) =>
    new Promise<{ ws: WebSocket } | { status: number; retryAfter: string | undefined; body: any }>((resolve, reject) => {
      const ws = new WebSocket(url(q), { headers });
      ws.on('message', () => resolve({ ws }));
      ws.on('unexpected-response', (_req, res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, retryAfter: res.headers['retry-after'], body: JSON.parse(text) }));
      });
      ws.on('error', reject);
    });

  it('opens keyed sockets up to the cap, refuses one more with 429 in the part-7 shape, and a closed socket frees its slot', async () => {
    const first = await attempt(`channel=${ch.id}`, bearer(who.key));
    const second = await attempt(`channel=${ch.id}&key=${ch.key}`);
    expect('ws' in first && 'ws' in second).toBe(true);
    const refused = await attempt(`channel=${ch.id}`, bearer(who.key));
    expect(refused).toMatchObject({
      status: 429,
      retryAfter: '5',
      body: {
        error: {
          code: 'SVC_RATE_LIMIT',
          message: "too many keyed streams open: at most 2 on one identity's channels; close one and retry",
          limit: 2,
          scope: 'identity',
          stream: 'ws',
          open_streams: 2,
          window_seconds: null,
          retry_after_seconds: 5,
          reset_at: null,
        },
      },
    });
    for (const f of ['trace_id', 'timestamp', 'documentation_url']) expect(typeof (refused as { body: any }).body.error[f]).toBe('string');
    // A pull link's socket is keyless: counted per address, not here.
    const link = (await call(n.url, 'POST', `/api/svc/streams/${ch.id}/link`, {}, bearer(who.key))).body;
    const linked = await attempt(`channel=${ch.id}&sig=${encodeURIComponent(link.sig)}`);
    expect('ws' in linked).toBe(true);
    // Another identity's channels have their own slots.
    const other = await zkIdentity(n.url, 'ws-capped-other');
    const och = (await call(n.url, 'POST', '/api/svc/streams', { solver: 'lorenz', inputs: {} }, bearer(other.key))).body;
    expect('ws' in (await attempt(`channel=${och.id}`, bearer(other.key)))).toBe(true);

    (first as { ws: WebSocket }).ws.close();
    let again = await attempt(`channel=${ch.id}`, bearer(who.key));
    const end = Date.now() + 10_000;
    while (!('ws' in again) && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 20));
      again = await attempt(`channel=${ch.id}`, bearer(who.key));
    }
    expect('ws' in again).toBe(true);
    expect(await attempt(`channel=${ch.id}`, bearer(who.key))).toMatchObject({ status: 429 });
  }, 30_000);
});

// Keyless long-lived streams are capped per caller address (IPv6: its /64) and per node, and a closed stream frees
// its slot. The node is reached from several loopback addresses (127.0.0.x).
import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { addressKey } from '../../src/http/caller-address.js';
import { loadConfig } from '../../src/config/load.js';
import { FORWARDED_FOR_HEADER, forwardedForValue } from '../../src/http/forwarded-address.js';
import { StreamSlots } from '../../src/http/stream-slots.js';
import { ServiceError } from '../../src/kernel/errors.js';
import { bearer, call, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitUntil } from '../helpers/wait.js';

describe('StreamSlots', () => {
  it('is configured in limits.*, with an environment override, defaults 16 per address and 1024 per node', () => {
    expect(loadConfig({ env: {} }).limits).toMatchObject({ keylessStreamsPerAddress: 16, keylessStreamsPerNode: 1024 });
    const c = loadConfig({ env: { SVC_KEYLESS_STREAMS_PER_ADDRESS: '3', SVC_KEYLESS_STREAMS_PER_NODE: '50' } });
    expect(c.limits).toMatchObject({ keylessStreamsPerAddress: 3, keylessStreamsPerNode: 50 });
  });

  it('caps per address and per node, counts an IPv6 caller by its /64, and releases once', () => {
    const slots = new StreamSlots({ perAddress: 2, perNode: 3 });
    const a = slots.take(addressKey('2001:db8:1:2::1'), 'pulse');
    slots.take(addressKey('2001:db8:1:2:ffff::9'), 'pulse');
    let err: unknown;
    try {
      slots.take(addressKey('2001:db8:1:2:abcd::1'), 'pulse');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ServiceError);
    expect((err as ServiceError).status).toBe(429);
    expect((err as ServiceError).extra).toMatchObject({ scope: 'address', limit: 2, stream: 'pulse', retry_after_seconds: 5 });
    slots.take('10.0.0.1', 'ws');
    expect(() => slots.take('10.0.0.2', 'ws')).toThrow(/on this node/);
    a();
    a();
    expect(slots.open()).toBe(2);
    expect(slots.open(addressKey('2001:db8:1:2::1'))).toBe(1);
    expect(() => slots.take('10.0.0.2', 'ws')).not.toThrow();
  });
});

const MESH_SECRET = 'stream-slots-mesh-secret-0123456789';
let t: TestNode;
beforeAll(async () => {
  t = await startTestNode(
    { solverThreads: 0, sealWorker: false, limits: { keylessStreamsPerAddress: 2, keylessStreamsPerNode: 4 }, mesh: { secret: MESH_SECRET } },
    { initialCredits: 10_000 },
  );
});
afterAll(() => t.destroy());

interface Opened {
  status: number;
  res: IncomingMessage;
  req: ClientRequest;
  body: () => Promise<any>;
}

/** GET the pulse stream from a given loopback address; resolves on the response head. */
function pulse(from: string): Promise<Opened> {
  const u = new URL(`${t.url}/api/svc/pulse/stream`);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, localAddress: from, agent: false }, (res) => {
      const body = () =>
        new Promise<any>((ok) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => (text += d));
          res.on('end', () => ok(JSON.parse(text)));
        });
      resolve({ status: res.statusCode ?? 0, res, req, body });
    });
    req.on('error', reject);
    req.end();
  });
}

/** Open /ws/stream from a given loopback address: 'open' or the refusal's status and body. */
function ws(
  q: string,
  from: string,
  headers: Record<string, string> = {},
): Promise<{ ws: WebSocket; status: number; body: any; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const sock = new WebSocket(`${t.url.replace(/^http/, 'ws')}/ws/stream?${q}`, { headers, localAddress: from });
    sock.on('open', () => resolve({ ws: sock, status: 101, body: null, headers: {} }));
    sock.on('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += String(d)));
      res.on('end', () => resolve({ ws: sock, status: res.statusCode ?? 0, body: JSON.parse(text), headers: res.headers }));
    });
    sock.on('error', reject);
  });
}

describe('keyless stream caps on a node', () => {
  it('pulse SSE: 429 per address, then per node, with scope and Retry-After; a closed stream frees its slot', async () => {
    const a1 = await pulse('127.0.0.1');
    const a2 = await pulse('127.0.0.1');
    expect([a1.status, a2.status]).toEqual([200, 200]);
    const a3 = await pulse('127.0.0.1');
    expect(a3.status).toBe(429);
    expect(a3.res.headers['retry-after']).toBe('5');
    const body = await a3.body();
    expect(body.error).toMatchObject({ code: 'SVC_RATE_LIMIT', status: 429, scope: 'address', limit: 2, stream: 'pulse' });
    expect(typeof body.error.trace_id).toBe('string');

    // Another address has its own allowance, up to the node's 4.
    const b1 = await pulse('127.0.0.2');
    const b2 = await pulse('127.0.0.2');
    expect([b1.status, b2.status]).toEqual([200, 200]);
    const c1 = await pulse('127.0.0.3');
    expect(c1.status).toBe(429);
    expect((await c1.body()).error).toMatchObject({ scope: 'node', limit: 4 });

    // A WebSocket opened with a pull link (no key) counts against the same slots; one with a key does not.
    const refusedWs = await ws('channel=x&sig=nope', '127.0.0.3');
    expect(refusedWs.status).toBe(429);
    expect(refusedWs.body.error).toMatchObject({ code: 'SVC_RATE_LIMIT', scope: 'node', stream: 'ws' });
    expect(refusedWs.headers['retry-after']).toBe('5');
    const keyed = await ws('channel=x', '127.0.0.3', bearer('svc_nope'));
    expect(keyed.status).not.toBe(429);

    // The client goes away: its slot is free again.
    a1.req.destroy();
    b1.req.destroy();
    const again = await waitUntil(async () => {
      const r = await pulse('127.0.0.1');
      if (r.status === 200) return r;
      r.req.destroy();
      return null;
    }, 'a freed pulse slot');
    expect(again.status).toBe(200);
    for (const o of [a2, b2, again]) o.req.destroy();
    await waitUntil(async () => {
      const r = await pulse('127.0.0.3');
      r.req.destroy();
      return r.status === 200;
    }, 'every slot freed');
  });

  it('HEAD of the pulse stream answers its head at once and takes no slot', async () => {
    const before = t.node.url;
    const res = await fetch(`${before}/api/svc/pulse/stream`, { method: 'HEAD', signal: AbortSignal.timeout(10_000) });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
  });

  it('a pull-link WebSocket holds a slot of its address until it closes', async () => {
    const owner = await zkIdentity(t.url, 'slots-owner');
    const channel = (await call(t.url, 'POST', '/api/svc/streams', { solver: 'lorenz', inputs: { t_end: 0.1 } }, bearer(owner.key))).body;
    const link = (await call(t.url, 'POST', `/api/svc/streams/${channel.id}/link`, {}, bearer(owner.key))).body;
    const q = `channel=${channel.id}&sig=${encodeURIComponent(link.sig)}`;
    const w1 = await ws(q, '127.0.0.4');
    const w2 = await ws(q, '127.0.0.4');
    expect([w1.status, w2.status]).toEqual([101, 101]);
    const w3 = await ws(q, '127.0.0.4');
    expect(w3.status).toBe(429);
    expect(w3.body.error).toMatchObject({ scope: 'address', stream: 'ws' });
    // The pulse stream shares the address's slots.
    const p = await pulse('127.0.0.4');
    expect(p.status).toBe(429);
    w1.ws.close();
    const w4 = await waitUntil(async () => {
      const r = await ws(q, '127.0.0.4');
      return r.status === 101 ? r : null;
    }, 'a freed ws slot');
    w2.ws.close();
    w4.ws.close();
  });

  it('a relayed upgrade counts against the caller address its relay stated (verified), not the relay', async () => {
    const owner = await zkIdentity(t.url, 'slots-relay-owner');
    const channel = (await call(t.url, 'POST', '/api/svc/streams', { solver: 'lorenz', inputs: { t_end: 0.1 } }, bearer(owner.key))).body;
    const link = (await call(t.url, 'POST', `/api/svc/streams/${channel.id}/link`, {}, bearer(owner.key))).body;
    const q = `channel=${channel.id}&sig=${encodeURIComponent(link.sig)}`;
    const forwarder = 'relay-node';
    const stated = (ip: string, secret = MESH_SECRET) => ({
      'x-svc-forwarded-by': forwarder,
      [FORWARDED_FOR_HEADER]: forwardedForValue(secret, { forwarder, ip, unixMs: Date.now(), method: 'GET', path: `/ws/stream?${q}`, body: '' }),
    });
    const a = await ws(q, '127.0.0.5', stated('10.9.9.9'));
    const b = await ws(q, '127.0.0.5', stated('10.9.9.9'));
    expect([a.status, b.status]).toEqual([101, 101]);
    const c = await ws(q, '127.0.0.5', stated('10.9.9.9'));
    expect(c.status).toBe(429);
    expect(c.body.error).toMatchObject({ scope: 'address' });
    // The relay's own address is untouched; a statement under another secret is not believed (the socket's counts).
    const d = await ws(q, '127.0.0.5', stated('10.9.9.9', 'not-the-mesh-secret-at-all-0000'));
    expect(d.status).toBe(101);
    for (const x of [a, b, d]) x.ws.close();
  });
});

// Request bodies (src/http/body.ts) against a real node: JSON types, lenient types, limits, encodings, poisoning.
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

let t: TestNode;
let key: string;
let slug: string;

beforeAll(async () => {
  t = await startTestNode();
  ({ key, slug } = await zkIdentity(t.url, 'body-suite'));
});
afterAll(async () => t.destroy());

const ke = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } };

async function post(path: string, body: string | Buffer, headers: Record<string, string>): Promise<{ status: number; body: any }> {
  const res = await fetch(t.url + path, { method: 'POST', headers: { ...bearer(key), ...headers }, body });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) };
}

describe('JSON request bodies', () => {
  it('parses application/json with a charset parameter and +json types', async () => {
    const a = await post('/api/svc/compute', JSON.stringify(ke), { 'content-type': 'application/json; charset=utf-8' });
    expect(a.status).toBe(200);
    expect(a.body.value).toBe(9);
    const b = await post('/api/svc/compute', JSON.stringify(ke), { 'content-type': 'application/vnd.api+json' });
    expect(b.status).toBe(200);
    expect(b.body.value).toBe(9);
  });

  it('reads JSON sent as a form or without a content type (curl -d), but refuses a form body that is not JSON', async () => {
    const form = await post('/api/svc/compute', JSON.stringify(ke), { 'content-type': 'application/x-www-form-urlencoded' });
    expect(form.status).toBe(200);
    expect(form.body.value).toBe(9);
    const plain = await post('/api/svc/compute', JSON.stringify(ke), { 'content-type': 'text/plain' });
    expect(plain.status).toBe(200);
    const notJson = await post('/api/svc/compute', 'domain=mechanics&operators=KO42', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(notJson.status).toBe(415);
    expect(notJson.body.error.code).toBe('SVC_UNSUPPORTED_MEDIA_TYPE');
    expect(notJson.body.error.message).toContain('application/json');
  });

  it('refuses other media types with 415 and nothing sealed', async () => {
    const before = (await call(t.url, 'GET', '/api/compute/usage', undefined, bearer(key))).body;
    const r = await post('/api/svc/compute', '<compute/>', { 'content-type': 'application/xml' });
    expect(r.status).toBe(415);
    expect(r.body.error.code).toBe('SVC_UNSUPPORTED_MEDIA_TYPE');
    expect(typeof r.body.error.trace_id).toBe('string');
    const after = (await call(t.url, 'GET', '/api/compute/usage', undefined, bearer(key))).body;
    expect(after).toEqual(before);
  });

  it('answers 400 SVC_INVALID_JSON for a scalar at the top level, broken JSON and prototype-poisoning keys', async () => {
    for (const text of [
      '42',
      '"text"',
      '{"domain": ',
      '{"__proto__": {"admin": true}, "domain": "mechanics"}',
      '{"inputs": {"constructor": {"prototype": {"x": 1}}}}',
    ]) {
      const r = await post('/api/svc/compute', text, { 'content-type': 'application/json' });
      expect(r.status, text).toBe(400);
      expect(r.body.error.code, text).toBe('SVC_INVALID_JSON');
    }
  });

  it('answers a caller without a valid key 401 whatever its body, and reads a bad body only after the key', async () => {
    const events = `/api/chain/${slug}/events`;
    const bodies: [text: string, type: string][] = [
      ['{"payload": ', 'application/json'],
      ['42', 'application/json'],
      ['<event/>', 'application/xml'],
      ['{"payload":{"name":"\\ud800"}}', 'application/json'],
    ];
    for (const [text, type] of bodies) {
      const none = await fetch(t.url + events, { method: 'POST', headers: { 'content-type': type }, body: text });
      expect(none.status, text).toBe(401);
      expect(((await none.json()) as any).error.code, text).toBe('SVC_NO_KEY');
      // A key that is present must be good, on a route open to anonymous callers too.
      for (const path of [events, '/api/svc/compute']) {
        const wrong = await fetch(t.url + path, { method: 'POST', headers: { 'content-type': type, ...bearer('sk_' + 'a'.repeat(48)) }, body: text });
        expect(wrong.status, `${path} ${text}`).toBe(401);
        expect(((await wrong.json()) as any).error.code, text).toBe('SVC_INVALID_KEY');
      }
      const keyed = await post(events, text, { 'content-type': type });
      expect(keyed.status, text).toBe(type === 'application/xml' ? 415 : 400);
    }
    // A route open to anyone refuses the body itself.
    const open = await fetch(t.url + '/api/svc/lib-search', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query": ' });
    expect(open.status).toBe(400);
    expect(((await open.json()) as any).error.code).toBe('SVC_INVALID_JSON');
  });

  it('answers 400 SVC_INVALID_INPUT naming the path of a string or key that holds a lone surrogate', async () => {
    const events = `/api/chain/${slug}/events`;
    // Raw JSON text: each \uXXXX escape below reaches the parser as written.
    const cases: [text: string, field: string][] = [
      ['{"payload":{"name":"\\ud800"}}', 'payload.name'],
      ['{"payload":{"list":[1,{"deep":["ok","\\udfff"]}]}}', 'payload.list.1.deep.1'],
      ['{"payload":{"\\udc00x":1}}', 'payload.\\udc00x'],
      ['{"payload":{"pair":"\\ud83d\\ude00","tail":"\\ud83d"}}', 'payload.tail'],
    ];
    for (const [text, field] of cases) {
      const r = await post(events, text, { 'content-type': 'application/json' });
      expect(r.status, text).toBe(400);
      expect(r.body.error.code, text).toBe('SVC_INVALID_INPUT');
      expect(r.body.error.field, text).toBe(field);
      expect(r.body.error.message, text).toContain(field);
      expect(r.body.error.message, text).toContain('lone UTF-16 surrogate');
      expect(typeof r.body.error.trace_id).toBe('string');
    }
    // A surrogate pair, escaped, is one well-formed character.
    const pair = await post(events, '{"payload":{"smile":"\\ud83d\\ude00"}}', { 'content-type': 'application/json' });
    expect(pair.status).toBe(201);
  });

  it('accepts a legitimate "constructor" string value (only constructor.prototype objects are refused)', async () => {
    const r = await post('/api/svc/lib-search', JSON.stringify({ query: 'constructor' }), { 'content-type': 'application/json' });
    expect(r.status).toBe(200);
  });

  it('answers 413 with the limit for a body over 1 MiB', async () => {
    const big = JSON.stringify({ ...ke, padding: 'x'.repeat(1_100_000) });
    const r = await post('/api/svc/compute', big, { 'content-type': 'application/json' });
    expect(r.status).toBe(413);
    expect(r.body.error.code).toBe('SVC_PAYLOAD_TOO_LARGE');
    expect(r.body.error.limit_bytes).toBe(1_048_576);
  });

  it('decodes a gzip body and refuses an unknown content encoding', async () => {
    const r = await post('/api/svc/compute', gzipSync(JSON.stringify(ke)), { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    expect(r.status).toBe(200);
    expect(r.body.value).toBe(9);
    const bad = await post('/api/svc/compute', JSON.stringify(ke), { 'content-type': 'application/json', 'content-encoding': 'compress' });
    expect(bad.status).toBe(415);
    expect(bad.body.error.code).toBe('SVC_UNSUPPORTED_MEDIA_TYPE');
  });

  it('treats a POST without a body as {} (the route then names the missing field)', async () => {
    const r = await fetch(t.url + '/api/svc/compute', { method: 'POST', headers: bearer(key) });
    expect(r.status).toBe(400);
    const b = (await r.json()) as any;
    expect(b.error.code).toMatch(/^SVC_/);
    expect(b.error.code).not.toBe('SVC_INVALID_JSON');
  });
});

/** Raw HTTP/1.1 over one socket: each chunk written as its own packet (`gapMs` apart); the responses parsed in order. */
async function rawExchange(chunks: (string | Buffer)[], gapMs: number): Promise<{ status: number; body: any }[]> {
  const { hostname, port } = new URL(t.url);
  const socket = connect(Number(port), hostname);
  socket.setNoDelay(true);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const received: Buffer[] = [];
  socket.on('data', (d) => received.push(d));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  for (const c of chunks) {
    socket.write(c);
    await new Promise((r) => setTimeout(r, gapMs));
  }
  await closed;
  let rest = Buffer.concat(received).toString('latin1');
  const out: { status: number; body: any }[] = [];
  while (rest.length > 0) {
    const head = rest.slice(0, rest.indexOf('\r\n\r\n'));
    const length = Number(/content-length: (\d+)/i.exec(head)![1]);
    const start = head.length + 4;
    out.push({ status: Number(head.slice(9, 12)), body: JSON.parse(Buffer.from(rest.slice(start, start + length), 'latin1').toString('utf8')) });
    rest = rest.slice(start + length);
  }
  return out;
}

function rawRequest(body: Buffer, last: boolean): { head: string; body: Buffer } {
  const head = `POST /api/svc/compute HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n${last ? 'Connection: close\r\n' : ''}\r\n`;
  return { head, body };
}

describe('request bodies as they arrive', () => {
  const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(ke))]);

  it('reads a body that comes with its headers, and one that comes later in its own packets', async () => {
    const whole = rawRequest(Buffer.from(JSON.stringify(ke)), true);
    const [a] = await rawExchange([whole.head + whole.body.toString('latin1')], 0);
    expect(a).toMatchObject({ status: 200, body: { value: 9, unit: 'J' } });
    const later = rawRequest(Buffer.from(JSON.stringify({ ...ke, inputs: { mass_kg: 4, velocity_m_s: 3 } })), true);
    const [b] = await rawExchange([later.head, later.body.subarray(0, 10), later.body.subarray(10)], 30);
    expect(b).toMatchObject({ status: 200, body: { value: 18 } });
  });

  it('drops a UTF-8 byte order mark, whole or split', async () => {
    const r = rawRequest(bom, true);
    const [whole] = await rawExchange([Buffer.concat([Buffer.from(r.head), r.body])], 0);
    expect(whole).toMatchObject({ status: 200, body: { value: 9 } });
    const [split] = await rawExchange([r.head, r.body.subarray(0, 2), r.body.subarray(2)], 30);
    expect(split).toMatchObject({ status: 200, body: { value: 9 } });
  });

  it('answers pipelined requests in one packet, each with its own body', async () => {
    const first = rawRequest(Buffer.from(JSON.stringify(ke)), false);
    const second = rawRequest(Buffer.from(JSON.stringify({ ...ke, inputs: { mass_kg: 1, velocity_m_s: 2 } })), true);
    const answers = await rawExchange([first.head + first.body.toString('latin1') + second.head + second.body.toString('latin1')], 0);
    expect(answers.map((x) => [x.status, x.body.value])).toEqual([
      [200, 9],
      [200, 2],
    ]);
  });
});

// The WebSocket upgrade fuzz's generator and checks (ws-upgrade.test.ts against one node; test/cluster/ws-relay.test.ts
// through a relaying node): raw upgrade requests and the properties every answer must hold.
import { connect } from 'node:net';
import fc from 'fast-check';
import { anyString, encode } from './arbitraries.js';

/** How long one answer may take before the run fails as a hang (generous: the machine may be loaded). */
const ANSWER_MS = 10_000;

/** Where the upgrades go, the real credentials a sample may use, and the tally of answers. */
export interface WsTarget {
  url: string;
  owner: { key: string };
  other: { key: string };
  channel: { id: string; key: string };
  sig: string;
  seen: { requests: number; byStatus: Map<number, number> };
}

/** A value that is either one of the test's real credentials (resolved at run time) or hostile text. */
type Val = { real: 'channel' | 'foreign' | 'ownerKey' | 'otherKey' | 'channelKey' | 'sig' } | { raw: string } | { text: string };
const hostile: fc.Arbitrary<Val> = fc.oneof(
  { weight: 3, arbitrary: anyString.map((s) => ({ text: s })) },
  {
    weight: 1,
    arbitrary: fc.constantFrom<Val>(
      { raw: '%' },
      { raw: '%E0%A4%A' },
      { raw: '%00' },
      { raw: '' },
      { text: 'x'.repeat(4000) },
      { text: 'y'.repeat(20_000) },
      { text: 'str_' + '1'.repeat(40) + '_' + '0'.repeat(24) },
      { text: 'stk_' + 'a'.repeat(40) },
      { text: 'svc_' + 'b'.repeat(40) },
    ),
  },
);
const param = (...real: Extract<Val, { real: string }>['real'][]): fc.Arbitrary<Val | null> =>
  fc.oneof(
    { weight: 2, arbitrary: fc.constant(null) },
    { weight: 3, arbitrary: fc.constantFrom(...real.map((r) => ({ real: r }) as Val)) },
    { weight: 2, arbitrary: hostile },
  );
const header = (good: string[]): fc.Arbitrary<string | null> =>
  fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(...good) },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
    { weight: 1, arbitrary: fc.constantFrom('', ' ', '\x01', 'é', 'x'.repeat(9000), 'websocket, h2c', '13, 8', 'AAAAAAAAAAAAAAAAAAAAAA', '=='.repeat(11)) },
  );

export interface Upgrade {
  method: string;
  path: string;
  channel: Val | null;
  key: Val | null;
  sig: Val | null;
  extra: string;
  auth: Val | null;
  upgrade: string | null;
  connection: string | null;
  wsKey: string | null;
  wsVersion: string | null;
  padBytes: number;
  /** Half the samples keep a well-formed handshake (GET /ws/stream, right headers), so the parameters reach auth. */
  clean: boolean;
}

export const upgradeArb: fc.Arbitrary<Upgrade> = fc
  .record({
    method: fc.constantFrom('GET', 'GET', 'GET', 'GET', 'POST', 'HEAD', 'PUT', 'OPTIONS'),
    path: fc.oneof(
      { weight: 8, arbitrary: fc.constant('/ws/stream') },
      {
        weight: 1,
        arbitrary: fc.constantFrom(
          '/ws/stream/',
          '/WS/STREAM',
          '/ws',
          '/api/health',
          '/api/svc/pulse/stream',
          '/',
          '/ws/stream%00',
          '//ws/stream',
          '/ws/../ws/stream',
        ),
      },
      { weight: 1, arbitrary: anyString.map((s) => `/${encode(s)}`) },
    ),
    channel: param('channel', 'channel', 'foreign'),
    key: param('channelKey', 'ownerKey', 'otherKey'),
    sig: param('sig'),
    extra: fc.constantFrom('', '', '&channel=other', '&key=&sig=', '&&&', '&channel', '#frag'),
    auth: fc.oneof({ weight: 3, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: param('ownerKey', 'otherKey', 'channelKey') }),
    upgrade: header(['websocket', 'WebSocket']),
    connection: header(['Upgrade', 'upgrade', 'keep-alive, Upgrade']),
    wsKey: header(['dGhlIHNhbXBsZSBub25jZQ==', 'AQIDBAUGBwgJCgsMDQ4PEA==']),
    wsVersion: header(['13', '13', '8']),
    padBytes: fc.oneof({ weight: 6, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constantFrom(100, 8_000, 17_000, 70_000) }),
    clean: fc.boolean(),
  })
  .map((u) =>
    u.clean
      ? {
          ...u,
          method: 'GET',
          path: '/ws/stream',
          upgrade: 'websocket',
          connection: 'Upgrade',
          wsKey: 'dGhlIHNhbXBsZSBub25jZQ==',
          wsVersion: '13',
          padBytes: 0,
        }
      : u,
  );

function resolve(target: WsTarget, v: Val): string {
  if ('raw' in v) return v.raw;
  if ('text' in v) return encode(v.text);
  switch (v.real) {
    case 'channel':
      return target.channel.id;
    case 'foreign':
      // Names a home that is not this node (and that no peer knows).
      return target.channel.id.replace(/^str_[^_]+_/, `str_${'2'.repeat(44)}_`);
    case 'ownerKey':
      return target.owner.key;
    case 'otherKey':
      return target.other.key;
    case 'channelKey':
      return target.channel.key;
    case 'sig':
      return encode(target.sig);
  }
}

function requestText(target: WsTarget, u: Upgrade): string {
  const q: string[] = [];
  if (u.channel) q.push(`channel=${resolve(target, u.channel)}`);
  if (u.key) q.push(`key=${resolve(target, u.key)}`);
  if (u.sig) q.push(`sig=${resolve(target, u.sig)}`);
  const requestTarget = `${u.path}${q.length ? `?${q.join('&')}` : ''}${u.extra}`;
  const lines = [`${u.method} ${requestTarget} HTTP/1.1`, 'Host: 127.0.0.1'];
  if (u.upgrade !== null) lines.push(`Upgrade: ${u.upgrade}`);
  if (u.connection !== null) lines.push(`Connection: ${u.connection}`);
  if (u.wsKey !== null) lines.push(`Sec-WebSocket-Key: ${u.wsKey}`);
  if (u.wsVersion !== null) lines.push(`Sec-WebSocket-Version: ${u.wsVersion}`);
  if (u.auth !== null) lines.push(`Authorization: Bearer ${resolve(target, u.auth)}`);
  if (u.padBytes > 0) lines.push(`X-Pad: ${'p'.repeat(u.padBytes)}`);
  if (u.method === 'POST' || u.method === 'PUT') lines.push('Content-Length: 0');
  return `${lines.join('\r\n')}\r\n\r\n`;
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** After a 101: the first frame's opcode and payload. */
  frame?: { opcode: number; payload: Buffer };
}

/** Send the request on a fresh socket; resolve with the answer (head, body or first frame), or reject on a hang. */
function exchange(target: WsTarget, text: string, noBody: boolean): Promise<Answer> {
  const u = new URL(target.url);
  return new Promise((done, fail) => {
    const socket = connect(Number(u.port), u.hostname);
    let buf = Buffer.alloc(0);
    let head: { status: number; headers: Record<string, string>; at: number } | null = null;
    const timer = setTimeout(() => {
      socket.destroy();
      fail(new Error(`no answer within ${ANSWER_MS} ms (got ${JSON.stringify(buf.subarray(0, 200).toString('latin1'))})`));
    }, ANSWER_MS);
    const finish = (a: Answer | Error) => {
      clearTimeout(timer);
      socket.destroy();
      if (a instanceof Error) fail(a);
      else done(a);
    };
    const parse = (ended: boolean): void => {
      if (!head) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) {
          if (ended) finish(new Error(`connection closed without an answer (${JSON.stringify(buf.toString('latin1').slice(0, 200))})`));
          return;
        }
        const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
        const m = /^HTTP\/1\.1 (\d{3})/.exec(lines[0] ?? '');
        if (!m) return finish(new Error(`not an HTTP answer: ${lines[0]}`));
        const headers: Record<string, string> = {};
        for (const l of lines.slice(1)) {
          const i = l.indexOf(':');
          if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
        }
        head = { status: Number(m[1]), headers, at: end + 4 };
      }
      const rest = buf.subarray(head.at);
      if (head.status === 101) {
        if (rest.length < 2) return ended ? finish(new Error('101 then closed without a frame')) : undefined;
        const len7 = rest[1]! & 0x7f;
        const hl = len7 < 126 ? 2 : len7 === 126 ? 4 : 10;
        if (rest.length < hl) return;
        const len = len7 < 126 ? len7 : len7 === 126 ? rest.readUInt16BE(2) : Number(rest.readBigUInt64BE(2));
        if (rest.length < hl + len) return ended ? finish(new Error('101 then a cut frame')) : undefined;
        return finish({ status: 101, headers: head.headers, body: Buffer.alloc(0), frame: { opcode: rest[0]! & 0x0f, payload: rest.subarray(hl, hl + len) } });
      }
      // A plain GET of the pulse stream (not an upgrade) opens it: let it go at its head. A HEAD answer has no body.
      if (noBody || (head.headers['content-type'] ?? '').startsWith('text/event-stream'))
        return finish({ status: head.status, headers: head.headers, body: Buffer.alloc(0) });
      const want = head.headers['content-length'] !== undefined ? Number(head.headers['content-length']) : null;
      if (want !== null && rest.length >= want) return finish({ status: head.status, headers: head.headers, body: rest.subarray(0, want) });
      if (ended) finish({ status: head.status, headers: head.headers, body: rest });
    };
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      parse(false);
    });
    socket.on('end', () => parse(true));
    socket.on('close', () => parse(true));
    // A refusal may reset a connection the client is still writing to (a huge header block): what arrived counts.
    socket.on('error', () => parse(true));
    socket.write(text);
  });
}

export async function check(target: WsTarget, u: Upgrade): Promise<void> {
  const { channel, seen } = target;
  const text = requestText(target, u);
  const a = await exchange(target, text, u.method === 'HEAD').catch((err: Error) => {
    throw new Error(`${err.message}: ${text.slice(0, 300)}`);
  });
  seen.requests++;
  seen.byStatus.set(a.status, (seen.byStatus.get(a.status) ?? 0) + 1);
  const where = `${text.slice(0, 300).replace(/\r\n/g, ' | ')} → ${a.status} ${a.body.toString('utf8').slice(0, 300)}`;
  if (a.status === 101) {
    const f = a.frame!;
    if (f.opcode === 0x1) {
      const hello = JSON.parse(f.payload.toString('utf8'));
      if (hello.subscribed !== channel.id) throw new Error(`first frame is not the subscription: ${where} ${f.payload.toString('utf8')}`);
    } else if (f.opcode === 0x8) {
      const code = f.payload.length >= 2 ? f.payload.readUInt16BE(0) : 1005;
      if (!(code === 1005 || (code >= 1000 && code <= 1014) || (code >= 3000 && code <= 4999))) throw new Error(`close code ${code}: ${where}`);
    } else throw new Error(`first frame opcode ${f.opcode}: ${where}`);
    return;
  }
  // Node hands a request to the upgrade handler only when it asks for one (Connection: upgrade and an Upgrade header);
  // any other request is an ordinary one, answered by its route like any other (the route fuzz covers those).
  const asksUpgrade = u.upgrade !== null && /(^|,)\s*upgrade\s*(,|$)/i.test(u.connection ?? '');
  if (a.status < 400) {
    if (asksUpgrade || u.path === '/ws/stream') throw new Error(`not a refusal: ${where}`);
    return;
  }
  if (u.method === 'HEAD' && a.status !== 101) {
    // No body to check: the head still says JSON and carries the trace id.
    if (!/^application\/json/.test(a.headers['content-type'] ?? '') || !a.headers['x-trace-id'])
      throw new Error(`HEAD refusal head: ${where} ${JSON.stringify(a.headers)}`);
    if (a.status >= 500) throw new Error(`5xx: ${where}`);
    return;
  }
  let body: any;
  try {
    body = JSON.parse(a.body.toString('utf8'));
  } catch {
    throw new Error(`refusal is not JSON: ${where}`);
  }
  const err = body?.error;
  if (!err || typeof err !== 'object') throw new Error(`no error object: ${where}`);
  for (const f of ['code', 'message', 'trace_id', 'timestamp', 'documentation_url'])
    if (typeof err[f] !== 'string' || err[f].length === 0) throw new Error(`error lacks ${f}: ${where}`);
  if (err.status !== a.status) throw new Error(`error.status ${err.status} ≠ ${a.status}: ${where}`);
  if (a.headers['x-trace-id'] !== err.trace_id) throw new Error(`X-Trace-Id ${a.headers['x-trace-id']} ≠ trace_id: ${where}`);
  if (!/^application\/json/.test(a.headers['content-type'] ?? '')) throw new Error(`content-type ${a.headers['content-type']}: ${where}`);
  if (a.status >= 500 && err.code !== 'SVC_HOME_UNREACHABLE') throw new Error(`5xx ${err.code}: ${where}`);
  if (a.status === 429 && !a.headers['retry-after']) throw new Error(`429 without Retry-After: ${where}`);
}

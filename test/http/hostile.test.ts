// Hostile input against real nodes: input that must not answer 500 (deep bodies, results that cannot be
// sealed), Node's parser errors with a JSON body, a 413 that closes its connection, DNS's 409 in the
// error shape, the mesh's read routes on a node without a mesh secret, and a forwarded request's voucher whose text
// cannot be canonical.
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type Reply, type TestNode } from '../helpers/node.js';
import { defaultRegistry, type AnySolver } from '../../src/solvers/registry.js';
import type { SolverOutput } from '../../src/solvers/types.js';
import { BODY_MAX_DEPTH } from '../../src/http/body.js';

const registry = defaultRegistry();
const heat = registry.get('heat')!;

/** heat, with its (passing) result changed by `spoil` after the run: what the sealing path must refuse. */
function spoiled(id: string, spoil: (out: SolverOutput) => SolverOutput): AnySolver {
  return { ...heat, id, endpoint: null, run: (inputs, state) => spoil(heat.run(inputs, state)) };
}
const SPOILED = [
  spoiled('heat_inf_field', (o) => ({ ...o, receipt_fields: { temperature_field: { value: Infinity, unit: 'K' } } })),
  spoiled('heat_nan_output', (o) => ({ ...o, outputs: { ...o.outputs, peak: NaN } })),
  spoiled('heat_tiny_profile', (o) => ({ ...o, rule8: (o.rule8 as number[]).map((_, i) => (i === 1 ? 5e-324 : 0)) })),
];

let t: TestNode;
let spoilt: TestNode;
let key: string;
let spoiltKey: string;

beforeAll(async () => {
  t = await startTestNode({}, { initialCredits: 100000 });
  spoilt = await startTestNode({}, { registry: registry.with(SPOILED), initialCredits: 100000 });
  key = (await zkIdentity(t.url, 'hostile')).key;
  spoiltKey = (await zkIdentity(spoilt.url, 'hostile-spoilt')).key;
});
afterAll(async () => {
  await t.destroy();
  await spoilt.destroy();
});

/** `depth` nested objects {"a":{"a":…}} around `inner`. */
const nested = (depth: number, inner: string): string => '{"a":'.repeat(depth) + inner + '}'.repeat(depth);

async function healthy(url: string): Promise<void> {
  expect((await call(url, 'GET', '/api/health')).status).toBe(200);
}

describe('bodies nested deeply (defect 4)', () => {
  it('answers 400 SVC_INVALID_INPUT naming the depth for deep bodies with or without poisoning keys (401 first on a keyed route)', async () => {
    const bodies = [nested(20_000, '{"constructor":{"prototype":{}}}'), nested(20_000, '{"__proto__":{"x":1}}'), '['.repeat(100_000) + ']'.repeat(100_000)];
    for (const [path, keyed] of [
      ['/api/svc/compute', false],
      ['/api/auth/register', false],
      ['/api/svc-auth/register-v3', false],
      ['/api/svc/verify', true],
    ] as const) {
      for (const body of bodies) {
        if (keyed) expectError(await call(t.url, 'POST', path, body), 401, 'SVC_NO_KEY');
        const e = expectError(await call(t.url, 'POST', path, body, keyed ? bearer(key) : {}), 400, 'SVC_INVALID_INPUT');
        expect(e.field, path).toBe('body');
        expect(e.allowed).toEqual({ max_depth: BODY_MAX_DEPTH });
        expect(e.message).toContain(String(BODY_MAX_DEPTH));
      }
    }
    await healthy(t.url);
  });

  it('lets a body of exactly the limit through to its route, and refuses one level more', async () => {
    // Both are short texts padded past the length under which the walk is skipped.
    const pad = `"pad":"${'x'.repeat(200)}"`;
    const atLimit = `{${pad},"a":${nested(BODY_MAX_DEPTH - 1, '1')}}`;
    const over = `{${pad},"a":${nested(BODY_MAX_DEPTH, '1')}}`;
    const ok = await call(t.url, 'POST', '/api/svc/verify', atLimit, bearer(key));
    expect(ok.status).toBe(200);
    expect(ok.body.valid).toBe(false);
    expect(expectError(await call(t.url, 'POST', '/api/svc/verify', over, bearer(key)), 400, 'SVC_INVALID_INPUT').field).toBe('body');
  });
});

describe('solver results that cannot be sealed (defect 4)', () => {
  const balance = async (url: string, k: string) => (await call(url, 'GET', '/api/tally/balance', undefined, bearer(k))).body;

  it('refuses react and tumour inputs too small to mean anything with 400 naming the field, before any work', async () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ['/api/svc/react', { c_max_mol_m3: 5e-324 }, 'c_max_mol_m3'],
      ['/api/svc/react', { c_max_mol_m3: 1e300 }, 'c_max_mol_m3'],
      ['/api/svc/solve', { solver: 'tumour', inputs: { carrying_capacity_cells_m3: 5e-324 } }, 'carrying_capacity_cells_m3'],
      ['/api/svc/solve', { solver: 'tumour', inputs: { carrying_capacity_cells_m3: 1e300 } }, 'carrying_capacity_cells_m3'],
      // Found by the fuzz sweep: a field of subnormal numbers (its rule-8 terms were NaN, a 500 at sealing).
      ['/api/svc/wave', { amplitude_m: 1e-310 }, 'amplitude_m'],
      ['/api/svc/wave', { amplitude_m: -5e-324 }, 'amplitude_m'],
      ['/api/svc/climate', { amplitude_m: 1e-310 }, 'amplitude_m'],
    ];
    const before = await balance(t.url, key);
    for (const [path, body, field] of cases) {
      expect(expectError(await call(t.url, 'POST', path, body, bearer(key)), 400, 'SVC_INVALID_INPUT').field, path).toBe(field);
    }
    expect(await balance(t.url, key)).toEqual(before);
    // The bounds' ends are meaningful inputs and seal.
    const low = await call(t.url, 'POST', '/api/svc/react', { c_max_mol_m3: 1e-24 }, bearer(key));
    expect(low.status, low.text).toBe(200);
    expect(typeof low.body.result_id).toBe('string');
  });

  it('a load so small that the deflection would be subnormal (fea tip_load_N 1e-310): 400 naming the field, before any work', async () => {
    const before = await balance(t.url, key);
    const e = expectError(await call(t.url, 'POST', '/api/svc/fea', { tip_load_N: 1e-310 }, bearer(key)), 400, 'SVC_INVALID_INPUT');
    expect(e.field).toBe('tip_load_N');
    expect(await balance(t.url, key)).toEqual(before);
  });

  it.each(SPOILED.map((s) => s.id))('%s: a result with a number JSON cannot carry is 422, nothing charged, the node healthy', async (id) => {
    const before = await balance(spoilt.url, spoiltKey);
    const r = await call(spoilt.url, 'POST', '/api/svc/solve', { solver: id, inputs: {} }, bearer(spoiltKey));
    const e = expectError(r, 422, 'SVC_TOLERANCE_GATE');
    expect(e.solver).toBe(id);
    expect(e.message).toMatch(/reality check cannot pass: .*(not a finite number|too small to normalise)/);
    expect(await balance(spoilt.url, spoiltKey)).toEqual(before);
    await healthy(spoilt.url);
    // The real solver on the same node still seals.
    const ok = await call(spoilt.url, 'POST', '/api/svc/solve', { solver: 'heat', inputs: {} }, bearer(spoiltKey));
    expect(ok.status).toBe(200);
  });
});

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: any;
}

/** Parse HTTP/1.1 responses (each with Content-Length) from a byte stream. */
function parseResponses(bytes: Buffer): RawResponse[] {
  let rest = bytes.toString('latin1');
  const out: RawResponse[] = [];
  while (rest.length > 0) {
    const end = rest.indexOf('\r\n\r\n');
    const lines = rest.slice(0, end).split('\r\n');
    const headers: Record<string, string> = {};
    for (const l of lines.slice(1)) headers[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
    const length = Number(headers['content-length']);
    const start = end + 4;
    const text = Buffer.from(rest.slice(start, start + length), 'latin1').toString('utf8');
    out.push({ status: Number(lines[0]!.slice(9, 12)), headers, body: JSON.parse(text) });
    rest = rest.slice(start + length);
  }
  return out;
}

/** Write `text` on a fresh socket and read until the server closes it (the test's timeout bounds a hang). */
async function raw(url: string, text: string | Buffer): Promise<RawResponse[]> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  const received: Buffer[] = [];
  socket.on('data', (d) => received.push(d));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('error', () => undefined);
  socket.write(text);
  await closed;
  return parseResponses(Buffer.concat(received));
}

/** The part-7 shape of a raw response, with the trace id in its header. */
function expectRawError(r: RawResponse | undefined, status: number, code: string): Record<string, any> {
  expect(r, `a ${status} response`).toBeDefined();
  const reply: Reply = { status: r!.status, body: r!.body, headers: new Headers(r!.headers), text: JSON.stringify(r!.body) };
  const e = expectError(reply, status, code);
  expect(r!.headers['content-type']).toMatch(/^application\/json/);
  return e;
}

describe("Node's parser errors answer part-7 JSON (defect 5)", () => {
  const get = 'GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';

  it('431 for a 20 KB URL', async () => {
    const [r, ...more] = await raw(t.url, `GET /${'a'.repeat(20_000)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    expectRawError(r, 431, 'SVC_HEADERS_TOO_LARGE');
    expect(r!.headers.connection).toBe('close');
    expect(more).toHaveLength(0);
  });

  it.each([
    ['bare LF line ends', 'GET /api/health HTTP/1.1\nHost: 127.0.0.1\n\n'],
    [
      'Content-Length with Transfer-Encoding',
      'POST /api/svc/verify HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    ],
    ['two Content-Lengths', 'POST /api/svc/verify HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}'],
    ['no Host', 'GET /api/health HTTP/1.1\r\n\r\n'],
  ])('400 SVC_BAD_REQUEST for %s', async (_name, text) => {
    const [r, ...more] = await raw(t.url, text);
    expectRawError(r, 400, 'SVC_BAD_REQUEST');
    expect(r!.headers.connection).toBe('close');
    expect(more).toHaveLength(0);
  });

  it('a malformed request behind a good one on the same connection: the good one answered, then the 400', async () => {
    const [ok, bad] = await raw(t.url, `${get}GET /api/health HTTP/1.1\nHost: 127.0.0.1\n\n`);
    expect(ok!.status).toBe(200);
    expectRawError(bad, 400, 'SVC_BAD_REQUEST');
  });

  it('an HTTP/1.0 request without Host is still served', async () => {
    const [r] = await raw(t.url, 'GET /api/health HTTP/1.0\r\n\r\n');
    expect(r!.status).toBe(200);
  });
});

describe('a 413 closes its connection (defect 5)', () => {
  it('a gzip body that inflates past the limit: 413 with Connection: close, and the server closes the socket', async () => {
    const body = gzipSync(Buffer.alloc(2 * 1_048_576, 0x20));
    const head = `POST /api/svc/verify HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: ${body.length}\r\n\r\n`;
    // A second request on the same connection: without the close it waited for the first body to drain (~6 s).
    const responses = await raw(t.url, Buffer.concat([Buffer.from(head), body, Buffer.from('GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')]));
    expect(responses).toHaveLength(1);
    const e = expectRawError(responses[0], 413, 'SVC_PAYLOAD_TOO_LARGE');
    expect(e.limit_bytes).toBe(1_048_576);
    expect(responses[0]!.headers.connection).toBe('close');
    await healthy(t.url);
  });

  it('a declared Content-Length over the limit: 413 with Connection: close', async () => {
    const head = `POST /api/svc/verify HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2000000\r\n\r\n{"a":`;
    const [r] = await raw(t.url, head);
    expectRawError(r, 413, 'SVC_PAYLOAD_TOO_LARGE');
    expect(r!.headers.connection).toBe('close');
  });
});

describe('DNS registration conflicts are errors in the part-7 shape (defect 5)', () => {
  it('409 SVC_CONFLICT naming the earlier claim, which still resolves', async () => {
    const other = (await call(spoilt.url, 'GET', '/api/mesh/status')).body.nodeId as string;
    const dns = t.node.mesh.dns;
    const claimed = t.node.mesh.nowSvcond() - 5;
    await dns.apply({ name: 'taken.svc', peerId: other, url: 'http://127.0.0.1:9', multiaddrs: [], svcond: claimed, registrar: other });
    const e = expectError(await call(t.url, 'POST', '/api/dns/register', { name: 'taken.svc' }, bearer(key)), 409, 'SVC_CONFLICT');
    expect(e.name).toBe('taken.svc');
    expect(e.won).toBe(false);
    expect(e.winner).toMatchObject({ name: 'taken.svc', peerId: other, svcond: claimed });
    expect(e.record).toMatchObject({ name: 'taken.svc', peerId: t.node.nodeId });
    expect((await call(t.url, 'GET', '/api/dns/resolve?name=taken.svc')).body.peerId).toBe(other);
    // A free name is still 201 with the record.
    const won = await call(t.url, 'POST', '/api/dns/register', { name: 'free.svc' }, bearer(key));
    expect(won.status).toBe(201);
    expect(won.body).toMatchObject({ name: 'free.svc', won: true, record: { peerId: t.node.nodeId } });
  });
});

describe('a chain-caller voucher holding a lone surrogate', () => {
  it('is refused as the voucher it is (401 SVC_INVALID_KEY in the part-7 shape), not a 500', async () => {
    const { slug } = await zkIdentity(t.url, 'hostile-voucher');
    // A \ud800 escape parses to a lone surrogate: the event has no RFC 8785 text, so no signature can cover it.
    const voucher = JSON.stringify({
      type: 'chain.caller',
      sender: '12D3KooWQK1wnefoLrcVHbbnf5tLzbopUd3K3bFAoJpA7YJgL5pV',
      svcond: 1,
      signature: 'AAAA',
      body: { zid: `zid_${'0'.repeat(32)}`, key_id: 'k', method: 'GET', path: '/x\ud800', body_sha256: '0'.repeat(64), nonce: '0'.repeat(32) },
    });
    const r = await call(t.url, 'GET', `/api/chain/${slug}/settings`, undefined, {
      'x-svc-forwarded-by': 'some-node',
      'x-svc-chain-caller': Buffer.from(voucher, 'utf8').toString('base64url'),
    });
    const e = expectError(r, 401, 'SVC_INVALID_KEY');
    expect(e.message).toMatch(/voucher was refused/);
    await healthy(t.url);
  });
});

describe('a node without a mesh secret (defect 5)', () => {
  it('answers the mesh read routes and refuses gossip with 503', async () => {
    expect(t.node.mesh.enabled).toBe(false);
    await call(t.url, 'POST', '/api/dns/register', { name: 'alone.svc' }, bearer(key));
    const status = await call(t.url, 'GET', '/api/mesh/status');
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({ nodeId: t.node.nodeId, enabled: false, meshSize: 1 });
    expect((await call(t.url, 'GET', '/api/mesh/events?limit=5')).body).toMatchObject({ count: expect.any(Number), events: expect.any(Array) });
    expect((await call(t.url, 'GET', '/api/dns/resolve?name=alone.svc')).body).toMatchObject({ name: 'alone.svc', peerId: t.node.nodeId });
    expect((await call(t.url, 'GET', `/api/dns/lookup?peerId=${t.node.nodeId}`)).body.names.map((r: { name: string }) => r.name)).toContain('alone.svc');
    expect((await call(t.url, 'GET', '/api/dns/status')).body.ownedByThisNode).toBeGreaterThanOrEqual(1);
    for (const path of ['/api/transparency/history', '/api/transparency/breakdown', '/api/transparency/revenue']) {
      expect((await call(t.url, 'GET', path)).status, path).toBe(200);
    }
    expectError(await call(t.url, 'POST', '/api/mesh/gossip', {}, { 'x-node-handshake': 'v1=00' }), 503, 'MESH_DISABLED');
  });
});

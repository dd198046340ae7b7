// A hung home node. The home here is an in-test HTTP server that accepts and never answers,
// as a stopped process does; it joins the node's mesh as a peer by a signed tick event carrying its URL, and an
// identity and a machine homed on it are asserted by events it signs. Requests forwarded to it answer 503
// SVC_HOME_UNREACHABLE with Retry-After once the deadline passes; the home is then skipped (no request reaches it)
// until it answers a health probe again.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import type { PrivateKey } from '@libp2p/interface';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, type TestNode } from '../helpers/node.js';
import { loadConfig } from '../../src/config/load.js';
import { mintKey } from '../../src/identity/keys.js';
import { identityAssertBody } from '../helpers/identity-assert.js';
import { buildEnvelope } from '../../src/mesh/wire.js';
import { stampAt, systemClock } from '../../src/kernel/clock.js';

const MESH_SECRET = 'forward-test-secret-0123456789abcdef';
const DEADLINE_MS = 600;

/** An HTTP server that plays a home node: it hangs (accepts, never answers) or answers, and records what reached it. */
class FakeHome {
  hang = true;
  /** Stops listening at a request (as a node stopping does) and answers it 3 deadlines later. */
  stopAtRequest = false;
  readonly seen: string[] = [];
  /** The Idempotency-Key header of each request that reached it ('' when absent). */
  readonly idempotencyKeys: string[] = [];
  readonly server: Server;
  url = '';
  constructor() {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      this.seen.push(`${req.method} ${req.url}`);
      this.idempotencyKeys.push(String(req.headers['idempotency-key'] ?? ''));
      if (this.hang) return; // a stopped process: the connection is accepted, nothing comes back
      const answer = () => {
        res.setHeader('content-type', 'application/json');
        res.setHeader('x-trace-id', 'tr_fakehome');
        res.end(JSON.stringify(req.url === '/api/health' ? { ok: true } : { from: 'home', path: req.url, auth: req.headers.authorization ?? null }));
      };
      if (this.stopAtRequest && req.url !== '/api/health') {
        this.server.close();
        setTimeout(answer, 3 * DEADLINE_MS);
        return;
      }
      answer();
    });
  }
  async start(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  requests(): string[] {
    return this.seen.filter((s) => !s.endsWith('/api/health'));
  }
  async stop(): Promise<void> {
    this.server.closeAllConnections();
    if (this.server.listening) await new Promise<void>((r) => this.server.close(() => r()));
  }
}

let t: TestNode;
let home: FakeHome;
let homeKey: PrivateKey;
let homeId: string;
let key: string;
const zid = `zid_${'ab'.repeat(16)}`;

async function gossip(type: string, body: unknown): Promise<void> {
  const now = stampAt(systemClock.nowNs()).svcond;
  const env = await buildEnvelope(homeKey, homeId, MESH_SECRET, type, now, body);
  const r = await call(t.url, 'POST', '/api/mesh/gossip', env.event, { 'x-node-handshake': env.handshake });
  expect(r.status, r.text).toBe(200);
}

beforeAll(async () => {
  home = new FakeHome();
  await home.start();
  homeKey = (await generateKeyPair('Ed25519')) as unknown as PrivateKey;
  homeId = peerIdFromPrivateKey(homeKey as never).toString();
  t = await startTestNode({ mesh: { secret: MESH_SECRET, p2pPort: 0, bootstrap: [], tickEvery: 1, forwardTimeoutMs: DEADLINE_MS } });
  // The fake home joins: a tick event with its URL, then its identity's key and its machine.
  await gossip('tick', { url: home.url, kernelVersion: '1.287.6', sealedCount: 0, chainHeadsDigest: '0'.repeat(64) });
  expect(t.node.mesh.peers().find((p) => p.peerId === homeId)?.url).toBe(home.url);
  key = mintKey('sk');
  const now = Date.now();
  await gossip('identity.assert', identityAssertBody(key, zid, homeId, now));
  await t.node.mesh.machines.learn({ slug: 'far-away-book', home: homeId, created_unix_ms: now });
}, 30_000);

afterAll(async () => {
  await t.destroy();
  await home.stop();
});

describe('a hung home node', () => {
  it('a forwarded ledger request answers 503 SVC_HOME_UNREACHABLE with Retry-After, and the home is then skipped', async () => {
    const r = await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(key));
    const e = expectError(r, 503, 'SVC_HOME_UNREACHABLE');
    // It reached the home: a write there may have been applied, and the answer says so.
    expect(e).toMatchObject({ home: homeId, deadline_ms: DEADLINE_MS, retry_after_seconds: 1, may_have_applied: true });
    expect(e.message).toContain('may have been applied there');
    expect(r.headers.get('retry-after')).toBe('1');
    expect(home.requests()).toEqual(['GET /api/tally/balance']);
    // Marked: the next requests (a ledger read, a solver run, a chain read) do not reach it at all.
    for (const [method, path, body] of [
      ['GET', '/api/tally/balance'],
      ['POST', '/api/svc/heat', {}],
      ['GET', '/api/chain/far-away-book/pohc/validate'],
    ] as const) {
      const again = await call(t.url, method, path, body, bearer(key));
      expect(expectError(again, 503, 'SVC_HOME_UNREACHABLE')).toMatchObject({ home: homeId, may_have_applied: false });
      expect(again.headers.get('retry-after')).toBe('1');
    }
    expect(home.requests()).toEqual(['GET /api/tally/balance']);
  }, 20_000);

  it('once it answers its health again, the next request reaches it and its answer is relayed', async () => {
    home.hang = false;
    // The request waits for the marked home's probe: the first one after its return is served.
    const r = await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(key));
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ from: 'home', path: '/api/tally/balance', auth: `Bearer ${key}` });
    expect(r.headers.get('x-svc-served-by')).toBe(homeId);
    expect(r.headers.get('x-trace-id')).toBe('tr_fakehome');
  }, 20_000);

  it("a write's Idempotency-Key travels to the home; the same write sent again is answered from the kept answer", async () => {
    const before = home.requests().length;
    const send = () => call(t.url, 'POST', '/api/svc/heat', { n: 1 }, { ...bearer(key), 'idempotency-key': 'fwd-1' });
    const first = await send();
    expect(first.status, first.text).toBe(200);
    expect(home.requests().slice(before)).toEqual(['POST /api/svc/heat']);
    expect(home.idempotencyKeys.at(-1)).toBe('fwd-1');
    const again = await send();
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('x-svc-served-by')).toBe(homeId);
    expect(home.requests().length).toBe(before + 1);
  }, 20_000);

  it('a chain read with no key to a home that hangs again: 503 after the deadline, not a wait without end', async () => {
    home.hang = true;
    const before = home.requests().length;
    const r = await call(t.url, 'GET', '/api/chain/far-away-book/explore?from=1');
    expect(expectError(r, 503, 'SVC_HOME_UNREACHABLE')).toMatchObject({ home: homeId, slug: 'far-away-book', retry_after_seconds: 1 });
    expect(home.requests().slice(before)).toEqual(['GET /api/chain/far-away-book/explore?from=1']);
  }, 20_000);

  it('a home that stops listening while it answers (a node stopping) is waited for: its answer is relayed, not a 503', async () => {
    home.hang = false;
    home.stopAtRequest = true;
    // Its health probes are refused meanwhile (nothing listens): that is no hung home.
    const r = await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(key));
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ from: 'home', path: '/api/tally/balance' });
  }, 20_000);

  it('a home that no longer listens and that no libp2p stream reaches: 503 saying nothing was applied', async () => {
    // The last request closed the fake home's server; its kept-alive connections go too: a connect is refused, and
    // it has no libp2p address.
    home.server.closeAllConnections();
    const before = home.requests().length;
    const r = await call(t.url, 'POST', '/api/svc/heat', {}, bearer(key));
    const e = expectError(r, 503, 'SVC_HOME_UNREACHABLE');
    expect(e).toMatchObject({ home: homeId, may_have_applied: false });
    expect(e.tried).toHaveLength(2);
    expect(e.tried[0]).toMatch(/^HTTP .*ECONNREFUSED/);
    expect(e.tried[1]).toMatch(/^libp2p /);
    expect(e.message).not.toContain('may have been applied');
    expect(home.requests().length).toBe(before);
  }, 20_000);

  it("a node's operator token sent for an identity homed elsewhere is refused here, naming the home; nothing is forwarded", async () => {
    const before = home.requests().length;
    const r = await call(t.url, 'POST', '/api/contribute/bond', {}, { ...bearer(key), 'x-svc-operator-token': 'a-token' });
    const e = expectError(r, 403, 'SVC_FORBIDDEN');
    expect(e).toMatchObject({ zid, home: homeId, header: 'x-svc-operator-token' });
    expect(e.message).toContain(`homed on node ${homeId}`);
    expect(home.requests().length).toBe(before);
  });
});

describe('the deadline setting', () => {
  it('mesh.forwardTimeoutMs defaults to 5000, is set by SVC_MESH_FORWARD_TIMEOUT_MS, and is bounded', () => {
    expect(loadConfig({ env: {} }).mesh.forwardTimeoutMs).toBe(5000);
    expect(loadConfig({ env: { SVC_MESH_FORWARD_TIMEOUT_MS: '1500' } }).mesh.forwardTimeoutMs).toBe(1500);
    expect(() => loadConfig({ env: { SVC_MESH_FORWARD_TIMEOUT_MS: '0' } })).toThrow(/mesh\.forwardTimeoutMs/);
    expect(() => loadConfig({ env: { SVC_MESH_FORWARD_TIMEOUT_MS: 'soon' } })).toThrow(/SVC_MESH_FORWARD_TIMEOUT_MS must be an integer/);
  });
});

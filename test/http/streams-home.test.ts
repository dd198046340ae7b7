// A channel lives at its owner's home: channel requests made with the owner's key at another node are relayed to the
// home (here an in-test HTTP server that plays it, joined to the node's mesh by signed events, as in forward.test.ts).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import type { PrivateKey } from '@libp2p/interface';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { homeOfChannel } from '../../src/streams/channel-id.js';
import { mintKey } from '../../src/identity/keys.js';
import { identityAssertBody } from '../helpers/identity-assert.js';
import { buildEnvelope } from '../../src/mesh/wire.js';
import { stampAt, systemClock } from '../../src/kernel/clock.js';

const MESH_SECRET = 'streams-home-secret-0123456789abcdef';
let t: TestNode;
let home: Server;
let homeUrl = '';
const seen: string[] = [];
let homeKey: PrivateKey;
let homeId: string;
let key: string;
const zid = `zid_${'cd'.repeat(16)}`;

async function gossip(type: string, body: unknown, as: { key: PrivateKey; id: string } = { key: homeKey, id: homeId }): Promise<void> {
  const env = await buildEnvelope(as.key, as.id, MESH_SECRET, type, stampAt(systemClock.nowNs()).svcond, body);
  const r = await call(t.url, 'POST', '/api/mesh/gossip', env.event, { 'x-node-handshake': env.handshake });
  expect(r.status, r.text).toBe(200);
}

beforeAll(async () => {
  home = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ from: 'home', path: req.url }));
  });
  await new Promise<void>((r) => home.listen(0, '127.0.0.1', () => r()));
  homeUrl = `http://127.0.0.1:${(home.address() as AddressInfo).port}`;
  homeKey = (await generateKeyPair('Ed25519')) as unknown as PrivateKey;
  homeId = peerIdFromPrivateKey(homeKey as never).toString();
  t = await startTestNode({ mesh: { secret: MESH_SECRET, p2pPort: 0, bootstrap: [], tickEvery: 1 } });
  await gossip('tick', { url: homeUrl, kernelVersion: '1.287.6', sealedCount: 0, chainHeadsDigest: '0'.repeat(64) });
  key = mintKey('sk');
  const now = Date.now();
  await gossip('identity.assert', identityAssertBody(key, zid, homeId, now));
}, 30_000);

afterAll(async () => {
  await t.destroy();
  home.closeAllConnections();
  await new Promise<void>((r) => home.close(() => r()));
});

describe('stream channels at the owner home', () => {
  it("create and the channel's routes with the owner's key are relayed to the home; a channel key is served here", async () => {
    for (const [method, path] of [
      ['POST', '/api/svc/streams'],
      ['GET', '/api/svc/streams/str_far'],
      ['POST', '/api/svc/streams/str_far/tick'],
      ['GET', '/api/svc/streams/str_far/latest'],
      ['POST', '/api/svc/streams/str_far/close'],
    ] as const) {
      const r = await call(t.url, method, path, method === 'POST' ? { solver: 'lorenz' } : undefined, bearer(key));
      expect(r.status, `${method} ${path}: ${r.text}`).toBe(200);
      expect(r.body).toEqual({ from: 'home', path });
    }
    expect(seen).toEqual(expect.arrayContaining(['POST /api/svc/streams', 'GET /api/svc/streams/str_far', 'POST /api/svc/streams/str_far/tick']));
    expectError(await call(t.url, 'GET', '/api/svc/streams/str_far', undefined, bearer(`stk_${'1'.repeat(48)}`)), 404, 'SVC_NOT_FOUND');
  });

  it('a channel whose id names its home is relayed there whatever the request carries: channel key, signed link, nothing', async () => {
    const id = `str_${homeId}_${'ab'.repeat(12)}`;
    for (const [method, path, headers] of [
      ['GET', `/api/svc/streams/${id}`, bearer(`stk_${'1'.repeat(48)}`)],
      ['POST', `/api/svc/streams/${id}/tick`, bearer(`stk_${'1'.repeat(48)}`)],
      ['GET', `/api/svc/streams/${id}/latest`, bearer(`stk_${'1'.repeat(48)}`)],
      ['GET', `/api/svc/streams/${id}/pull?sig=abc`, {}],
      ['GET', `/api/svc/streams/${id}/secure/pull?session=s1`, {}],
    ] as const) {
      const r = await call(t.url, method, path, undefined, headers);
      expect(r.status, `${method} ${path}: ${r.text}`).toBe(200);
      expect(r.body).toEqual({ from: 'home', path });
      expect(r.headers.get('x-svc-served-by')).toBe(homeId);
    }
    // A WebSocket is relayed too (test/cluster/ws-relay.test.ts with a real home): this home speaks no WebSocket, so
    // its plain answer comes back as the upgrade's, from the home.
    const relayed = await new Promise<{ status: number; body: any; servedBy: unknown }>((resolve, reject) => {
      const ws = new WebSocket(`${t.url.replace(/^http/, 'ws')}/ws/stream?channel=${id}`);
      ws.on('unexpected-response', (_req, res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text), servedBy: res.headers['x-svc-served-by'] }));
      });
      ws.on('open', () => reject(new Error('opened')));
    });
    expect(relayed).toEqual({ status: 200, body: { from: 'home', path: `/ws/stream?channel=${id}` }, servedBy: homeId });

    // A home whose URL is known but that does not answer: the upgrade is accepted and closed at once with 1013 and
    // the part-7 code (a browser sees a close frame and its reason, not an HTTP status).
    const goneKey = (await generateKeyPair('Ed25519')) as unknown as PrivateKey;
    const goneId = peerIdFromPrivateKey(goneKey as never).toString();
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const goneUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise<void>((r) => closed.close(() => r()));
    await gossip('tick', { url: goneUrl, kernelVersion: '1.287.6', sealedCount: 0, chainHeadsDigest: '0'.repeat(64) }, { key: goneKey, id: goneId });
    const unreachable = await new Promise<{ code: number; reason: string }>((resolve) => {
      const ws = new WebSocket(`${t.url.replace(/^http/, 'ws')}/ws/stream?channel=str_${goneId}_${'cd'.repeat(12)}`);
      ws.on('close', (code, reason) => resolve({ code, reason: String(reason) }));
      ws.on('error', () => undefined);
    });
    expect(unreachable.code).toBe(1013);
    expect(unreachable.reason).toMatch(/^SVC_HOME_UNREACHABLE: .*retry after \d+ s$/);
  });

  it('a channel made here is named after this node and served here', async () => {
    const owner = (await zkIdentity(t.url, 'streams-here')).key;
    const created = await call(t.url, 'POST', '/api/svc/streams', { solver: 'lorenz' }, bearer(owner));
    expect(created.status, created.text).toBe(201);
    expect(homeOfChannel(created.body.id)).toBe(t.node.nodeId);
    const got = await call(t.url, 'GET', `/api/svc/streams/${created.body.id}`, undefined, bearer(created.body.key));
    expect(got.status, got.text).toBe(200);
    expect(got.headers.get('x-svc-served-by')).toBeNull();
  });
});

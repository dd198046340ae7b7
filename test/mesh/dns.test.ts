// Mesh DNS over three real nodes: a conflict goes to the earlier svcond, then the smaller peer id, and every node
// ends with the same answer whatever the order registrations arrived in.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stampAt, systemClock } from '../../src/kernel/clock.js';
import { ServiceError } from '../../src/kernel/errors.js';
import { buildEnvelope, TOPICS } from '../../src/mesh/wire.js';
import { DNS_EVENT_TYPE, parseDnsBody } from '../../src/mesh/dns.js';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import type { PrivateKey } from '@libp2p/interface';
import { removeDir, startNode, waitFor, waitForTopicMesh, type TestNode } from './helpers.js';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode as FullNode } from '../helpers/node.js';
import { firstN } from '../helpers/tuple.js';

const now = (): number => stampAt(systemClock.nowNs()).svcond;

describe('mesh DNS', () => {
  const nodes: TestNode[] = [];

  beforeAll(async () => {
    const a = await startNode({ clock: systemClock });
    const b = await startNode({ clock: systemClock, bootstrap: a.mesh.multiaddrs() });
    const c = await startNode({ clock: systemClock, bootstrap: [...a.mesh.multiaddrs(), ...b.mesh.multiaddrs()] });
    nodes.push(a, b, c);
    await waitForTopicMesh(nodes, TOPICS.dns);
  });

  afterAll(async () => {
    for (const n of nodes) {
      await n.stop();
      await removeDir(n.dataDir);
    }
  });

  const target = (n: TestNode, url: string) => ({ peerId: n.mesh.nodeId, url, multiaddrs: n.mesh.multiaddrs() });
  const allResolve = (name: string, peerId: string, url?: string) =>
    waitFor(
      () =>
        nodes.every((n) => {
          const r = n.mesh.dns.resolve(name);
          return r !== null && r.peerId === peerId && (url === undefined || r.url === url);
        }),
      8_000,
      `${name} → ${peerId} on every node`,
    );

  it('the earlier svcond wins, even when it arrives second', async () => {
    const [a, b, c] = firstN(nodes, 3);
    const t = now();
    const late = await b.mesh.dns.register('alpha.svc', target(b, 'http://127.0.0.1:7002'), t);
    expect(late.won).toBe(true);
    await allResolve('alpha.svc', b.mesh.nodeId);
    const early = await c.mesh.dns.register('alpha.svc', target(c, 'http://127.0.0.1:7003'), t - 5);
    expect(early.won).toBe(true);
    await allResolve('alpha.svc', c.mesh.nodeId, 'http://127.0.0.1:7003');
    // B tries again later: it still loses, and learns so from the answer.
    const again = await b.mesh.dns.register('alpha.svc', target(b, 'http://127.0.0.1:7012'), t + 1);
    expect(again.won).toBe(false);
    expect(again.winner.peerId).toBe(c.mesh.nodeId);
    // The owner may update its own record: the claim keeps its first tick, the URL changes everywhere.
    await c.mesh.dns.register('alpha.svc', target(c, 'http://127.0.0.1:7103'), t + 2);
    await allResolve('alpha.svc', c.mesh.nodeId, 'http://127.0.0.1:7103');
    for (const n of nodes) {
      expect(n.mesh.dns.resolve('ALPHA.svc')).toEqual(a.mesh.dns.resolve('alpha.svc'));
      expect(n.mesh.dns.lookup(c.mesh.nodeId).map((r) => r.name)).toContain('alpha.svc');
      expect(n.mesh.dns.lookup(b.mesh.nodeId).map((r) => r.name)).not.toContain('alpha.svc');
    }
  });

  it('same svcond: the smaller peer id wins on every node, whichever registered first', async () => {
    const t = now();
    const sorted = [...nodes].sort((x, y) => (x.mesh.nodeId < y.mesh.nodeId ? -1 : 1));
    const [smaller, , larger] = firstN(sorted, 3);
    await larger.mesh.dns.register('beta.svc', target(larger, 'http://127.0.0.1:7200'), t);
    await allResolve('beta.svc', larger.mesh.nodeId);
    await smaller.mesh.dns.register('beta.svc', target(smaller, 'http://127.0.0.1:7201'), t);
    await allResolve('beta.svc', smaller.mesh.nodeId);
    const answers = nodes.map((n) => JSON.stringify(n.mesh.dns.resolve('beta.svc')));
    expect(new Set(answers).size).toBe(1);
    for (const n of nodes) expect(n.mesh.dns.status().conflicts).toBe(2);
  });

  it('refuses bad records and claims far from now', async () => {
    const [a] = firstN(nodes, 1);
    const bad = [
      () => a.mesh.dns.register('-bad-', target(a, 'http://127.0.0.1:1')),
      () => a.mesh.dns.register('ok.svc', { peerId: 'nope', url: 'http://127.0.0.1:1', multiaddrs: [] }),
      () => a.mesh.dns.register('ok.svc', target(a, 'ftp://127.0.0.1:1')),
      () => a.mesh.dns.register('ok.svc', { ...target(a, 'http://127.0.0.1:1'), multiaddrs: ['not a multiaddr'] }),
      () => a.mesh.dns.register('ok.svc', target(a, 'http://127.0.0.1:1'), now() - 500),
    ];
    for (const f of bad) {
      const err = await f().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ServiceError);
      expect((err as ServiceError).status).toBe(400);
      expect((err as ServiceError).code).toBe('DNS_INVALID_RECORD');
    }
    expect(a.mesh.dns.resolve('ok.svc')).toBeNull();
  });

  it('a node registers names for its own peer id only: refused at its door, and such a claim gossiped by it is ignored everywhere', async () => {
    const [a, b] = firstN(nodes, 2);
    const err = await a.mesh.dns.register('forged.svc', target(b, 'http://127.0.0.1:7300')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceError);
    expect((err as ServiceError).code).toBe('DNS_INVALID_RECORD');
    expect(() =>
      parseDnsBody({ name: 'forged.svc', peerId: b.mesh.nodeId, url: 'http://127.0.0.1:7300', multiaddrs: [], svcond: now() }, a.mesh.nodeId),
    ).toThrow(/own peer id/);
    // A signs a claim naming B and gossips it; then a claim of its own, which every node applies.
    await a.mesh.publish(
      DNS_EVENT_TYPE,
      { name: 'forged.svc', peerId: b.mesh.nodeId, url: 'http://127.0.0.1:7300', multiaddrs: [], svcond: now() },
      TOPICS.dns,
    );
    await a.mesh.dns.register('honest.svc', target(a, 'http://127.0.0.1:7301'));
    await allResolve('honest.svc', a.mesh.nodeId);
    for (const n of nodes) expect(n.mesh.dns.resolve('forged.svc')).toBeNull();
  });
});

describe('POST /api/dns/register', () => {
  const MESH_SECRET = 'dns-route-secret-0123456789abcdef';
  let t: FullNode;
  let id: { key: string };
  beforeAll(async () => {
    t = await startTestNode({ mesh: { secret: MESH_SECRET, p2pPort: 0, bootstrap: [], tickEvery: 4 } });
    id = await zkIdentity(t.url, 'dns-route');
  });
  afterAll(async () => t.destroy());

  it('binds the name to this node: its peer id, URL and multiaddrs; another URL or multiaddr is 400 naming the field', async () => {
    const ok = await call(t.url, 'POST', '/api/dns/register', { name: 'mine.svc' }, bearer(id.key));
    expect(ok.status, ok.text).toBe(201);
    expect(ok.body.record).toMatchObject({ name: 'mine.svc', peerId: t.node.nodeId, url: t.url, multiaddrs: t.node.mesh.multiaddrs() });
    const same = await call(t.url, 'POST', '/api/dns/register', { name: 'mine-too.svc', url: t.url }, bearer(id.key));
    expect(same.status, same.text).toBe(201);
    const url = expectError(
      await call(t.url, 'POST', '/api/dns/register', { name: 'phish.svc', url: 'https://evil.example/login' }, bearer(id.key)),
      400,
      'SVC_INVALID_INPUT',
    );
    expect(url).toMatchObject({ field: 'url', allowed: [t.url] });
    const ma = expectError(
      await call(t.url, 'POST', '/api/dns/register', { name: 'phish.svc', multiaddrs: ['/ip4/10.0.0.1/tcp/4001'] }, bearer(id.key)),
      400,
      'SVC_INVALID_INPUT',
    );
    expect(ma.field).toBe('multiaddrs');
    expect(t.node.mesh.dns.resolve('phish.svc')).toBeNull();
  });

  it('a name another node holds is 409 SVC_CONFLICT in the part-7 shape, naming the winner', async () => {
    const key = (await generateKeyPair('Ed25519')) as unknown as PrivateKey;
    const other = peerIdFromPrivateKey(key as never).toString();
    const tick = now();
    const env = await buildEnvelope(key, other, MESH_SECRET, DNS_EVENT_TYPE, tick, {
      name: 'held.svc',
      peerId: other,
      url: 'http://127.0.0.1:7400',
      multiaddrs: [],
      svcond: tick - 10,
    });
    expect((await call(t.url, 'POST', '/api/mesh/gossip', env.event, { 'x-node-handshake': env.handshake })).status).toBe(200);
    expect(t.node.mesh.dns.resolve('held.svc')?.peerId).toBe(other);
    const r = await call(t.url, 'POST', '/api/dns/register', { name: 'held.svc' }, bearer(id.key));
    const e = expectError(r, 409, 'SVC_CONFLICT');
    expect(e).toMatchObject({ field: 'name', winner: { name: 'held.svc', peerId: other } });
  });
});

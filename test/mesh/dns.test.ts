// Mesh DNS over three real nodes: a conflict goes to the earlier svcond, then the smaller peer id, and every node
// ends with the same answer whatever the order registrations arrived in.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stampAt, systemClock } from '../../src/kernel/clock.js';
import { ServiceError } from '../../src/kernel/errors.js';
import { TOPICS } from '../../src/mesh/wire.js';
import { removeDir, startNode, waitFor, waitForTopicMesh, type TestNode } from './helpers.js';

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
    waitFor(() => nodes.every((n) => {
      const r = n.mesh.dns.resolve(name);
      return r !== null && r.peerId === peerId && (url === undefined || r.url === url);
    }), 8_000, `${name} → ${peerId} on every node`);

  it('the earlier svcond wins, even when it arrives second', async () => {
    const [, b, c] = nodes;
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
      expect(n.mesh.dns.resolve('ALPHA.svc')).toEqual(nodes[0].mesh.dns.resolve('alpha.svc'));
      expect(n.mesh.dns.lookup(c.mesh.nodeId).map((r) => r.name)).toContain('alpha.svc');
      expect(n.mesh.dns.lookup(b.mesh.nodeId).map((r) => r.name)).not.toContain('alpha.svc');
    }
  });

  it('same svcond: the smaller peer id wins on every node, whichever registered first', async () => {
    const t = now();
    const sorted = [...nodes].sort((x, y) => (x.mesh.nodeId < y.mesh.nodeId ? -1 : 1));
    const larger = sorted[2];
    const smaller = sorted[0];
    await larger.mesh.dns.register('beta.svc', target(larger, 'http://127.0.0.1:7200'), t);
    await allResolve('beta.svc', larger.mesh.nodeId);
    await smaller.mesh.dns.register('beta.svc', target(smaller, 'http://127.0.0.1:7201'), t);
    await allResolve('beta.svc', smaller.mesh.nodeId);
    const answers = nodes.map((n) => JSON.stringify(n.mesh.dns.resolve('beta.svc')));
    expect(new Set(answers).size).toBe(1);
    for (const n of nodes) expect(n.mesh.dns.status().conflicts).toBe(2);
  });

  it('refuses bad records and claims far from now', async () => {
    const [a] = nodes;
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
});

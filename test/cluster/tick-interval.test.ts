// The tick period that grows with the mesh, on four real nodes on 127.0.0.1 (HTTP + libp2p). With a mesh-wide rate
// of 2 tick events a second, four nodes each tick every ⌈4 / (2 · 0.777)⌉ = 3 ticks and say so in their tick events
// (`every`). Every node reads the others' liveness in their interval, not in ticks: each counts every other as heard
// and in step, and with liveTicks = 2 — shorter than the 3 ticks between a node’s events — every bonded, contributing
// operator is still eligible, so a challenge of A's result opened at B draws {C, D} every time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bondedOperator, contributingConfig, CONTRIBUTING_NODE_OPTIONS } from '../helpers/contributing.js';
import { bearer, call, startMesh, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitFor } from '../mesh/helpers.js';
import { sha256Hex } from '../../src/kernel/bytes.js';
import { intervalFor, tickPhase } from '../../src/mesh/tick-interval.js';

const MESH_SECRET = 'tick-interval-secret-0123456789abc';
const BOND = 2;
const RATE = 2;
const LIVE_TICKS = 2;
const config = contributingConfig({
  secret: MESH_SECRET,
  receiptSecret: 'c3'.repeat(32),
  contribution: { bondEnvelopes: BOND, committeeSize: 2, settleTicks: 1, deadlineTicks: 8, liveTicks: LIVE_TICKS },
  mesh: { tickRate: RATE },
});
const RANDOM_DIGEST = 'cd'.repeat(32);

let nodes: TestNode[] = [];
const keys: string[] = [];

beforeAll(async () => {
  nodes = await startMesh(4, config, CONTRIBUTING_NODE_OPTIONS);
  keys.push(...(await Promise.all(nodes.map(async (n, i) => (await bondedOperator(n, `ti-${i}`, BOND)).key))));
  await waitFor(() => nodes.every((n) => n.node.bonds.active().length === 4), 30_000, 'every bond at every node');
  await waitFor(
    () => nodes.every((n) => n.node.mesh.peers().filter((p) => p.mode === 'contributing' && p.bondId && p.every === 3).length === 3),
    30_000,
    'every node hears every operator contributing at an interval of 3',
  );
}, 120_000);

afterAll(async () => {
  await Promise.all(nodes.map((n) => n.destroy()));
});

describe('a tick period that grows with the mesh', () => {
  it('four nodes at 2 events a second tick every 3 ticks, and their tick events say so', async () => {
    expect(intervalFor(4, 1, RATE)).toBe(3);
    for (const n of nodes) {
      const s = await call(n.url, 'GET', '/api/mesh/status');
      expect(s.status).toBe(200);
      expect(s.body).toMatchObject({ tickEvery: 1, every: 3, nodesHeard: 4 });
      // The tick events heard from the others, as they arrived: the latest of each declares 3.
      const events = (await n.node.mesh.recentEvents(500)).filter((e) => e.event.type === 'tick' && e.via === 'gossip');
      const latest = new Map<string, { svcond: number; every: unknown }>();
      for (const e of events) {
        const known = latest.get(e.event.sender);
        if (!known || known.svcond < e.event.svcond) latest.set(e.event.sender, { svcond: e.event.svcond, every: (e.event.body as { every?: unknown }).every });
      }
      expect([...latest.keys()].sort()).toEqual(
        nodes
          .filter((o) => o !== n)
          .map((o) => o.node.nodeId)
          .sort(),
      );
      for (const { every } of latest.values()) expect(every).toBe(3);
      // Once the interval is set, a node sends one tick event per slot of 3 ticks, at its phase (from its node id):
      // wait for two of them (the interval may have been set one slot ago).
      const phase = tickPhase(sha256Hex(n.node.nodeId), 3);
      const slots = await waitFor(
        async () => {
          const own = (await n.node.mesh.recentEvents(500)).filter((e) => e.event.type === 'tick' && e.via === 'self').map((e) => e.event);
          const at = own.filter((e) => (e.body as { every: number }).every === 3).map((e) => Math.floor((e.svcond - phase) / 3));
          return at.length >= 2 ? at : null;
        },
        20_000,
        'two tick events at the interval of 3',
      );
      expect(new Set(slots).size).toBe(slots.length);
    }
  });

  it('every node counts every other as heard and in step, in the other’s interval', async () => {
    await waitFor(
      async () => {
        for (const n of nodes) {
          const s = (await call(n.url, 'GET', '/api/mesh/status')).body;
          if (s.coherenceScore !== 1) return false;
          const heard = (s.peers as { peerId: string; every: number; lastTick: number | null }[]).filter((p) => p.lastTick !== null && p.every === 3);
          if (heard.length !== 3) return false;
        }
        return true;
      },
      20_000,
      'every node in step with every other',
    );
  });

  it('with liveTicks shorter than the interval, every contributing operator stays eligible: B draws {C, D} each time', async () => {
    const [a, b, c, d] = nodes as [TestNode, TestNode, TestNode, TestNode];
    const challenger = await zkIdentity(b.url, 'ti-challenger');
    // Each challenge falls at another point of the senders' 3-tick cycle; read in ticks, C or D would be out of a
    // 2-tick window at many of them.
    for (let i = 0; i < 4; i++) {
      const r = await call(a.url, 'POST', '/api/svc/zeta', { n: 3 + i, count: 1 }, bearer(keys[0]!));
      expect(r.status, r.text).toBe(200);
      const opened = await call(
        b.url,
        'POST',
        '/api/tally/consensus/challenges',
        { result_id: r.body.result_id, claimed_digest: RANDOM_DIGEST },
        bearer(challenger.key),
      );
      expect(opened.status, opened.text).toBe(201);
      expect([...opened.body.eligible].sort()).toEqual([c.node.nodeId, d.node.nodeId].sort());
      expect([...opened.body.committee].sort()).toEqual([c.node.nodeId, d.node.nodeId].sort());
      await new Promise((res) => setTimeout(res, 700));
    }
    // Every node kept each challenge: its own record, read in the senders' intervals, agrees with B's eligible set.
    for (const n of nodes) expect(n.node.challenges.stats()).toMatchObject({ refused_challenges: 0 });
  }, 60_000);
});

// A sparse line heals when its middle dies (docs/decisions.md, "Mesh: a partition is a reason to dial"): five node
// processes 0 — 1 — 2 — 3 — 4, each bootstrapped to the one before it, at peer-set target 1 (SVC_MESH_PEERS_TARGET, as
// `--peers-target 1`). Each has heard every other's tick event, so each knows where the others listen, but holds a
// connection to its neighbours only. Node 2 is SIGKILLed: 1 keeps 0 and 3 keeps 4, each at its target, on two sides
// that no longer hear each other. Within a bounded time a connection crosses the gap, and a key revoked at node 0 after
// the kill is refused at node 4, which learnt the key live before it.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identityKey } from '../../scripts/bench/lib.js';
import { FaultCluster, logTail } from '../helpers/fault/cluster.js';
import { bearer, call, expectError } from '../helpers/node.js';
import { waitUntil } from '../helpers/wait.js';

const LEFT = [0, 1];
const MIDDLE = 2;
const RIGHT = [3, 4];
/** How long the two sides may stay apart after the kill: a few dial passes past the silent window (8 ticks ≈ 6 s). */
const HEAL_WITHIN_MS = 20_000;
let cluster: FaultCluster;

const whoami = (i: number, key: string) => call(cluster.url(i), 'GET', '/api/auth/whoami', undefined, bearer(key));
const connectedAt = async (i: number): Promise<string[]> => (await cluster.state(i))?.connected ?? [];
/** Node indexes a node holds a connection to. */
const linksOf = async (i: number): Promise<number[]> => {
  const peers = await connectedAt(i);
  return cluster.nodeIds.flatMap((id, j) => (peers.includes(id) ? [j] : [])).sort();
};

const meshStatus = async (i: number) =>
  (await call(cluster.url(i), 'GET', '/api/mesh/status')).body as { svcond: number; peers: { peerId: string; lastTick: number | null }[] };
const svcondAt = async (i: number): Promise<number> => (await meshStatus(i)).svcond;
/** The tick (svcond) of the latest tick event node i has heard from node j; -1 when none. */
const heardAt = async (i: number, j: number): Promise<number> => (await meshStatus(i)).peers.find((p) => p.peerId === cluster.nodeIds[j])?.lastTick ?? -1;

beforeAll(async () => {
  cluster = await FaultCluster.start({ nodes: 5, topology: 'line', env: { SVC_MESH_PEERS_TARGET: '1' } });
}, 120_000);

afterAll(async () => {
  await cluster?.destroy();
});

describe('a line at peer-set target 1 whose middle node is killed', () => {
  it('connects its two sides again, and a revocation at one end reaches the other', async () => {
    const equation = createHash('sha256').update('sparse-line-heals').digest('hex');
    const reg = await call(cluster.url(0), 'POST', '/api/svc-auth/register-v3', { equation_sha256: equation });
    expect(reg.status, reg.text).toBe(201);
    const key = await identityKey(cluster.url(0), equation);
    const minted = await call(cluster.url(0), 'POST', '/api/auth/keys', {}, bearer(key));
    expect(minted.status, minted.text).toBe(201);
    const k = minted.body as { key: string; key_id: string };
    // Node 4 learns the key live over the whole line, and the line is a line: each node holds its neighbours only.
    await waitUntil(async () => (await whoami(4, k.key)).status === 200, 'k live at node 4', 30_000, 100);
    expect((await whoami(4, k.key)).body).toMatchObject({ zid: reg.body.zid });
    expect(await Promise.all([0, 1, 2, 3, 4].map(linksOf))).toEqual([[1], [0, 2], [1, 3], [2, 4], [3]]);
    // Each node has heard every other's tick event (the addresses a node deaf to the far side dials).
    const pairs = [0, 1, 2, 3, 4].flatMap((i) => [0, 1, 2, 3, 4].filter((j) => j !== i).map((j) => [i, j] as const));
    await waitUntil(async () => (await Promise.all(pairs.map(([i, j]) => heardAt(i, j)))).every((t) => t >= 0), 'each node hearing every other', 30_000, 200);

    await cluster.kill(MIDDLE);
    const crossing = await waitUntil(
      async () => {
        const links = await Promise.all([...LEFT, ...RIGHT].map(async (i) => ({ i, links: await linksOf(i) })));
        return links.find((l) => LEFT.includes(l.i) && l.links.some((j) => RIGHT.includes(j))) ?? null;
      },
      'a connection between the two sides',
      HEAL_WITHIN_MS,
      100,
    ).catch(async (err: unknown) => {
      const links = await Promise.all([...LEFT, ...RIGHT].map(linksOf));
      throw new Error(`${String(err)}; links ${JSON.stringify(links)}; node 1's log ends with ${logTail(cluster.specs[1]!.dataDir)}`);
    });
    expect(crossing.links).not.toContain(MIDDLE);
    // The ends hear each other's tick events sent after the crossing: gossip flows end to end again.
    const crossedAt = await svcondAt(0);
    await waitUntil(async () => (await heardAt(0, 4)) > crossedAt && (await heardAt(4, 0)) > crossedAt, 'the ends hearing each other', HEAL_WITHIN_MS, 100);

    // Gossip issued on one side after the kill reaches the other: node 4 refuses the key revoked at node 0.
    const revoked = await call(cluster.url(0), 'DELETE', `/api/auth/keys/${k.key_id}`, undefined, bearer(key));
    expect(revoked.status, revoked.text).toBe(200);
    await waitUntil(async () => (await whoami(4, k.key)).status === 401, 'k refused at node 4', HEAL_WITHIN_MS, 100);
    expect(expectError(await whoami(4, k.key), 401, 'SVC_INVALID_KEY')).toMatchObject({ reason: 'revoked', revoked_at: revoked.body.revoked_at });
  }, 90_000);
});

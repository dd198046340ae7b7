// Slugs across the mesh on three real nodes: a claimed slug is refused everywhere else, a race between two homes is
// decided identically on every node (earlier tick, then smaller peer id), and the losing home forwards the slug.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { SLUG_CLAIM, better, type MachineHome } from '../../src/mesh/machines.js';
import { MAX_SKEW_TICKS } from '../../src/mesh/validator.js';
import { TOPICS } from '../../src/mesh/wire.js';
import { IDENTITY_ASSERT } from '../../src/mesh/identity-assert.js';
import { keyDigest, keyId, mintKey } from '../../src/identity/keys.js';
import { padNum } from '../../src/store/db.js';
import { waitUntil } from '../helpers/wait.js';
import { SLUG_OWED_SUB } from '../../src/chain/slug-loss.js';

const MESH_SECRET = 'slugs-test-secret-0123456789abcdef';
const meshConfig = (bootstrap: string[]) => ({ mesh: { secret: MESH_SECRET, p2pPort: 0, bootstrap, tickEvery: 1 } });
const opts = { mesh: { redialMinMs: 100, redialMaxMs: 1000 }, initialCredits: 1000 };

let nodes: TestNode[] = [];
const ids: { key: string; zid: string; slug: string }[] = [];

beforeAll(async () => {
  const a = await startTestNode(meshConfig([]), opts);
  const addrA = a.node.mesh.multiaddrs()[0]!;
  const b = await startTestNode(meshConfig([addrA]), opts);
  const c = await startTestNode(meshConfig([addrA, b.node.mesh.multiaddrs()[0]!]), opts);
  nodes = [a, b, c];
  await waitUntil(async () => nodes.every((n) => n.node.mesh.peers().filter((p) => p.url).length >= 2), 'tick events from every peer');
  for (const [i, n] of nodes.entries()) ids.push(await zkIdentity(n.url, `slugs-${i}`));
}, 60_000);
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.destroy()));
});

/** Publish `claims` on C's mesh, as C signs them, until `heard` holds. */
async function gossipFromC(claims: MachineHome[], heard: () => Promise<boolean>, what: string): Promise<void> {
  await waitUntil(
    async () => {
      for (const claim of claims) await nodes[2]!.node.mesh.publish(SLUG_CLAIM, claim, TOPICS.events);
      return heard();
    },
    what,
    20_000,
    500,
  );
}

const create = (i: number, slug: string) => call(nodes[i]!.url, 'POST', '/api/chain/state-machines', { slug, is_public: true }, bearer(ids[i]!.key));
const knownEverywhere = (slug: string) => Promise.all(nodes.map((n) => n.node.mesh.machines.known(slug)));

describe('slugs across the mesh', () => {
  it('a slug claimed on one node is refused on the others, and read there through its home', async () => {
    const [a] = nodes;
    expect((await create(0, 'mesh-wide-book')).status).toBe(201);
    await waitUntil(async () => (await knownEverywhere('mesh-wide-book')).every((h) => h === a!.node.nodeId), 'the claim on every node');
    for (const i of [1, 2]) expect(expectError((await create(i, 'mesh-wide-book')) as never, 409, 'SVC_CONFLICT').field).toBe('slug');
    const read = await call(nodes[2]!.url, 'GET', '/api/chain/mesh-wide-book/explore');
    expect(read.status, read.text).toBe(200);
    expect(read.headers.get('x-svc-served-by')).toBe(a!.node.nodeId);
    // Its checkpoint, read through C, is signed at A and gossiped: every node has seen it.
    expect((await call(a!.url, 'POST', '/api/chain/mesh-wide-book/events', { payload: 1 }, bearer(ids[0]!.key))).status).toBe(201);
    const cp = await call(nodes[2]!.url, 'GET', '/api/chain/mesh-wide-book/checkpoint');
    expect(cp.body).toMatchObject({ home: a!.node.nodeId, tree_size: 1 });
    const seen = `mesh-wide-book!${a!.node.nodeId}!${padNum(1)}`;
    await waitUntil(
      async () => (await Promise.all(nodes.map((n) => n.node.store.get(n.node.store.sub('chain_checkpoints_seen'), seen)))).every((c) => c !== undefined),
      'the checkpoint on every node',
    );
  });

  it('two homes creating one slug at once: every node picks the same winner, and the loser forwards to it', async () => {
    const made = await Promise.all([create(1, 'race-book'), create(2, 'race-book')]);
    const claims: MachineHome[] = made.flatMap((r, j) =>
      r.status === 201 ? [{ slug: 'race-book', home: nodes[j + 1]!.node.nodeId, svcond: r.body.genesis_svcond, created_unix_ms: 0 }] : [],
    );
    expect(claims.length).toBeGreaterThanOrEqual(1);
    const winner = claims.reduce(better).home;
    await waitUntil(async () => (await knownEverywhere('race-book')).every((h) => h === winner), 'one winner on every node');
    for (const n of nodes) {
      const r = await call(n.url, 'GET', '/api/chain/race-book/explore');
      expect(r.status, r.text).toBe(200);
      expect(r.headers.get('x-svc-served-by') ?? n.node.nodeId).toBe(winner);
    }
    // A loser (when both creations went through) marks its machine lost and refunds it.
    for (const [j, r] of made.entries()) {
      const n = nodes[j + 1]!;
      if (r.status !== 201 || n.node.nodeId === winner) continue;
      const loss = await waitUntil(async () => (await n.node.chain.getMachine('race-book'))?.lost, 'the loser marks its machine lost');
      expect(loss).toMatchObject({ lost_to: winner, refund: { credits: 50 } });
    }
  });

  it('claims learnt in any order give the same winner: the earlier tick, then the smaller peer id', async () => {
    const claims: MachineHome[] = [
      { slug: 'order-book', home: 'peer-z', svcond: 100, created_unix_ms: 5 },
      { slug: 'order-book', home: 'peer-a', svcond: 100, created_unix_ms: 9 },
      { slug: 'order-book', home: 'peer-0', svcond: 101, created_unix_ms: 1 },
    ];
    const orders = [
      [0, 1, 2],
      [2, 1, 0],
      [1, 2, 0],
    ];
    await Promise.all(
      nodes.map(async (n, i) => {
        for (const j of orders[i]!) await n.node.mesh.machines.learn(claims[j]!);
      }),
    );
    expect(await knownEverywhere('order-book')).toEqual(['peer-a', 'peer-a', 'peer-a']);
  });

  it('a claim dated outside the skew window is not heard: a member cannot take a slug held since, nor make its home mark it lost', async () => {
    const [a, c] = [nodes[0]!.node.nodeId, nodes[2]!.node.nodeId];
    const made = await create(0, 'held-book');
    expect(made.status, made.text).toBe(201);
    await waitUntil(async () => (await knownEverywhere('held-book')).every((h) => h === a), 'the claim on every node');
    // C claims A's slug at a tick before A's, outside the window, then a slug of its own: once A and B hold C's own
    // claim, they have heard the first.
    const lie = { slug: 'held-book', home: c, svcond: made.body.genesis_svcond - MAX_SKEW_TICKS - 1, created_unix_ms: 0 };
    const own = { slug: 'heard-book', home: c, svcond: nodes[2]!.node.mesh.nowSvcond(), created_unix_ms: 0 };
    const heldByC = async () => (await Promise.all(nodes.slice(0, 2).map((n) => n.node.mesh.machines.known('heard-book')))).every((h) => h === c);
    await gossipFromC([lie, own], heldByC, "C's claims heard at A and B");
    expect(await knownEverywhere('held-book')).toEqual([a, a, a]);
    expect((await nodes[0]!.node.chain.getMachine('held-book'))?.lost).toBeUndefined();
    const read = await call(nodes[1]!.url, 'GET', '/api/chain/held-book/explore');
    expect(read.status, read.text).toBe(200);
    expect(read.headers.get('x-svc-served-by')).toBe(a);
  }, 60_000);

  it("an admin key asserted for another's machine is not heard: a member cannot take a default machine, nor make its home mark it lost", async () => {
    const [a, c] = [nodes[0]!.node.nodeId, nodes[2]!.node.nodeId];
    // C asserts a zsm_ key of its own identity for the default machine of A's identity, dated before it.
    const forged = mintKey('zsm');
    const key = {
      key_id: keyId(forged),
      kind: 'zsm',
      zid: ids[2]!.zid,
      slug: ids[0]!.slug,
      plan: 'standard',
      created_unix_ms: 0,
      expires_unix_ms: null,
      revoked_unix_ms: null,
      home: c,
    };
    const assertion = { digest: keyDigest(forged), key, identity: { zid: ids[2]!.zid, home: c, default_machine: ids[2]!.slug } };
    // Then a claim of its own: once A and B hold it, they have heard the assertion.
    const own = { slug: 'heard-book-two', home: c, svcond: nodes[2]!.node.mesh.nowSvcond(), created_unix_ms: 0 };
    await waitUntil(
      async () => {
        await nodes[2]!.node.mesh.publish(IDENTITY_ASSERT, assertion, TOPICS.identity);
        await nodes[2]!.node.mesh.publish(SLUG_CLAIM, own, TOPICS.events);
        return (await Promise.all(nodes.slice(0, 2).map((n) => n.node.mesh.machines.known('heard-book-two')))).every((h) => h === c);
      },
      "C's assertion and claim heard at A and B",
      20_000,
      500,
    );
    expect((await nodes[0]!.node.chain.getMachine(ids[0]!.slug))?.lost).toBeUndefined();
    for (const n of nodes.slice(0, 2)) expect(await n.node.mesh.machines.known(ids[0]!.slug)).not.toBe(c);
    const read = await call(nodes[1]!.url, 'GET', `/api/chain/${ids[0]!.slug}/explore`, undefined, bearer(ids[0]!.key));
    expect(read.status, read.text).toBe(200);
    expect(read.headers.get('x-svc-served-by')).toBe(a);
  }, 60_000);

  it('the losing home marks its machine lost, refunds the creation charge once (across restarts too), revokes its admin key and shows it to the owner', async () => {
    const B = 1;
    const a = nodes[0]!.node.nodeId;
    const balance = async () => (await call(nodes[B]!.url, 'GET', '/api/tally/balance', undefined, bearer(ids[B]!.key))).body.total as number;
    const before = await balance();
    const made = await create(B, 'lost-book');
    expect(made.status, made.text).toBe(201);
    expect(await balance()).toBe(before - 50);
    // A claim of the slug by A at an earlier tick (as A would gossip had it created the slug within the gossip delay).
    await nodes[B]!.node.mesh.machines.learn({ slug: 'lost-book', home: a, svcond: made.body.genesis_svcond - 1, created_unix_ms: 0 });
    await waitUntil(async () => (await nodes[B]!.node.chain.getMachine('lost-book'))?.lost, 'the machine marked lost');
    expect(await balance()).toBe(before);
    const listed = async () =>
      ((await call(nodes[B]!.url, 'GET', '/api/chain/aggregate/list?limit=500', undefined, bearer(ids[B]!.key))).body.items as { slug: string }[]).find(
        (i) => i.slug === 'lost-book',
      );
    expect(await listed()).toMatchObject({ role: 'owner', status: 'lost', lost: { lost_to: a, refund: { credits: 50, to: 'free' } } });
    // Its rows stay readable at B by its owner, with ?lost=1 (served here, never forwarded to the winner).
    const kept = await call(nodes[B]!.url, 'GET', '/api/chain/lost-book/tally/charges?lost=1', undefined, bearer(ids[B]!.key));
    expect(kept.status, kept.text).toBe(200);
    expect(kept.headers.get('x-svc-served-by')).toBeNull();
    expect(kept.body.items[0]).toMatchObject({ seq: 0, charged: 50 });
    const adminKey = bearer(made.body.admin_key);
    expect(expectError((await call(nodes[B]!.url, 'GET', '/api/tally/balance', undefined, adminKey)) as never, 401, 'SVC_INVALID_KEY').reason).toBe('revoked');
    // Another claim of the same winner, gossiped again: nothing more is refunded.
    await nodes[B]!.node.mesh.machines.learn({ slug: 'lost-book', home: a, svcond: made.body.genesis_svcond - 2, created_unix_ms: 0 });
    // A loss learnt but not settled before a stop (the directory's entry written with its owed marker, the node gone
    // before the settlement's batch): settled at the next start, once, from the marker.
    const second = await create(B, 'lost-book-two');
    expect(second.status, second.text).toBe(201);
    const store = nodes[B]!.node.store;
    await waitUntil(async () => (await store.get(store.sub(SLUG_OWED_SUB), 'lost-book-two')) === undefined, 'the creation marker cleared');
    nodes[B]!.node.mesh.machines.onWonElsewhere(() => undefined);
    await nodes[B]!.node.mesh.machines.learn({ slug: 'lost-book-two', home: a, svcond: 1, created_unix_ms: 0 });
    expect(await store.get(store.sub(SLUG_OWED_SUB), 'lost-book-two')).toBeDefined();
    expect((await nodes[B]!.node.chain.getMachine('lost-book-two'))?.lost).toBeUndefined();
    expect(await balance()).toBe(before - 50);
    // Another home's claim learnt before this node's creation batch was on disk (that entry's batch found no machine):
    // the creation's own marker stays (the directory's check after it finds the slug won elsewhere) until settled.
    await nodes[B]!.node.mesh.machines.learn({ slug: 'lost-book-three', home: a, svcond: 1, created_unix_ms: 0 });
    await nodes[B]!.node.identity.createMachine(ids[B]!.zid, 'lost-book-three', made.body.genesis_svcond, false);
    await nodes[B]!.node.mesh.machines.confirmOwn('lost-book-three');
    expect(await store.get(store.sub(SLUG_OWED_SUB), 'lost-book-three')).toBeDefined();
    // A creation written, and the node stopped before its claim (its batch's marker is all there is): claimed at start.
    const two = (await nodes[B]!.node.chain.getMachine('lost-book-two'))!;
    await store.commit(nodes[B]!.node.chain.machineOps({ ...two, slug: 'unclaimed-book', key_digest: 'f'.repeat(64) }));
    expect(await nodes[B]!.node.mesh.machines.known('unclaimed-book')).toBeNull();
    nodes[B] = await nodes[B]!.restart();
    expect((await nodes[B]!.node.chain.getMachine('lost-book-two'))?.lost).toMatchObject({ lost_to: a, refund: { credits: 50 } });
    expect((await nodes[B]!.node.chain.getMachine('lost-book-three'))?.lost).toMatchObject({ lost_to: a, refund: { credits: 0 } });
    expect(await balance()).toBe(before);
    expect(await listed()).toMatchObject({ status: 'lost' });
    const restarted = nodes[B]!.node.store;
    const b = nodes[B]!.node.nodeId;
    // The claim is stored at B by the pass at start (then gossiped, as at creation); the others find B its home.
    expect(await nodes[B]!.node.mesh.machines.known('unclaimed-book')).toBe(b);
    for (const n of nodes) expect(await n.node.mesh.machines.homeOf('unclaimed-book')).toBe(b);
    expect(await restarted.range(restarted.sub(SLUG_OWED_SUB))).toEqual([]);
  });

  it('a machine made by a genesis document is claimed mesh-wide too; a genesis document cannot take a slug another node holds', async () => {
    const [a] = nodes;
    const genesis = (i: number, slug: string) =>
      call(nodes[i]!.url, 'POST', '/api/genesis/execute', { document: { slug, is_public: true, events: [{ type: 'note', payload: i }] } }, bearer(ids[i]!.key));
    // Made at A by genesis: every node learns A holds it, and refuses it to others (plain creation or genesis).
    const made = await genesis(0, 'genesis-wide-book');
    expect(made.status, made.text).toBe(201);
    await waitUntil(async () => (await knownEverywhere('genesis-wide-book')).every((h) => h === a!.node.nodeId), 'the genesis claim on every node');
    expect(expectError((await create(1, 'genesis-wide-book')) as never, 409, 'SVC_CONFLICT').field).toBe('slug');
    expectError((await genesis(2, 'genesis-wide-book')) as never, 409, 'SVC_CONFLICT');
    // Made at A by plain creation: a genesis document at B cannot take it.
    expect((await create(0, 'plain-wide-book')).status).toBe(201);
    await waitUntil(async () => (await knownEverywhere('plain-wide-book')).every((h) => h === a!.node.nodeId), 'the claim on every node');
    expect(expectError((await genesis(1, 'plain-wide-book')) as never, 409, 'SVC_CONFLICT').field).toBe('slug');
    // Read at C (B was restarted by the test before, and may not have A's address yet).
    const read = await call(nodes[2]!.url, 'GET', '/api/chain/plain-wide-book/explore');
    expect(read.status, read.text).toBe(200);
    expect(read.headers.get('x-svc-served-by')).toBe(a!.node.nodeId);
  });
});

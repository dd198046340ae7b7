// Per-identity caches bounded (limits.identityCacheMax): with a bound of 3 and many more identities acting
// (computes, a solver run, folder moves, a machine creation, a failed batch), the wallets, identity counters, chain
// heads and key records in memory stay within the bound, and every balance, envelope count, folder count and chain
// head read after eviction — and after a restart — is exactly what the identity's own actions add up to.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { failNextBatch } from '../helpers/fail-batch.js';

const BOUND = 3;
const IDENTITIES = 14;
const kinetic = (mass: number) => ({ domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: mass, velocity_m_s: 3 } });

interface Expected {
  zid: string;
  key: string;
  slug: string;
  spent: number;
  envelopes: number;
  folders: Record<string, number>;
  /** Rows of the identity's default chain: its genesis row (registration) plus one per sealed result. */
  rows: number;
}

let t: TestNode;
let initial: number;
const ids: Expected[] = [];

function cachesWithinBound(n: TestNode): void {
  expect(n.node.ledger.walletsCached).toBeLessThanOrEqual(BOUND);
  expect(n.node.counters.identitiesCached).toBeLessThanOrEqual(BOUND);
  expect(n.node.chain.headsCached).toBeLessThanOrEqual(BOUND);
}

async function compute(id: Expected, mass: number): Promise<void> {
  const r = await call(t.url, 'POST', '/api/svc/compute', kinetic(mass), bearer(id.key));
  expect(r.status).toBe(200);
  expect(r.body.value).toBeCloseTo(0.5 * mass * 9, 9);
  id.spent += r.body.tally_charge.cost as number;
  id.envelopes++;
  id.folders.inbox = (id.folders.inbox ?? 0) + 1;
  id.rows++;
}

/** What the node answers for an identity, read through its routes. */
async function observed(n: TestNode, id: Expected): Promise<{ total: number; envelopes: number; folders: Record<string, number>; head: number }> {
  const bal = await call(n.url, 'GET', '/api/tally/balance', undefined, bearer(id.key));
  const list = await call(n.url, 'GET', `/api/tally/envelopes/${id.zid}?limit=1`, undefined, bearer(id.key));
  const folders = await call(n.url, 'GET', `/api/tally/envelopes/${id.zid}/folders`, undefined, bearer(id.key));
  const valid = await call(n.url, 'GET', `/api/chain/${id.slug}/pohc/validate`, undefined, bearer(id.key));
  expect(valid.body.valid).toBe(true);
  // The head the node appends to (memory, or read again after eviction) is the chain's last row as stored.
  const head = (await call(n.url, 'GET', `/api/chain/${id.slug}/explore`, undefined, bearer(id.key))).body.head;
  expect(head).toEqual({ seq: valid.body.rows, hash: valid.body.head });
  return {
    total: bal.body.total,
    envelopes: list.body.total,
    folders: Object.fromEntries((folders.body.folders as { folder: string; count: number }[]).map((f) => [f.folder, f.count])),
    head: valid.body.rows,
  };
}

async function expectExact(n: TestNode): Promise<void> {
  for (const id of ids) {
    const o = await observed(n, id);
    expect({ zid: id.zid, ...o }).toEqual({
      zid: id.zid,
      total: initial - id.spent,
      envelopes: id.envelopes,
      folders: Object.fromEntries(Object.entries(id.folders).filter(([, c]) => c > 0)),
      head: id.rows,
    });
  }
}

beforeAll(async () => {
  t = await startTestNode({ limits: { identityCacheMax: BOUND } });
  initial = t.node.config.limits.initialCredits;
  for (let i = 0; i < IDENTITIES; i++) {
    const z = await zkIdentity(t.url, `bounded-caches-${i}`);
    const explore = await call(t.url, 'GET', `/api/chain/${z.slug}/pohc/validate`, undefined, bearer(z.key));
    ids.push({ ...z, spent: 0, envelopes: 0, folders: {}, rows: explore.body.rows });
  }
}, 120_000);
afterAll(async () => t?.destroy());

describe('bounded per-identity caches', () => {
  it('keeps at most the bound in memory while many more identities compute, and every figure is exact', async () => {
    for (let round = 0; round < 2; round++) {
      for (const [i, id] of ids.entries()) {
        await compute(id, 1 + i + round / 10);
        cachesWithinBound(t);
      }
    }
    await expectExact(t);
    cachesWithinBound(t);
  }, 120_000);

  it('stays exact under concurrency: computes of all identities at once, a solver run whose wallet is evicted while it runs', async () => {
    const solverOwner = ids[0]!;
    const solver = call(t.url, 'POST', '/api/svc/heat', {}, bearer(solverOwner.key));
    await Promise.all(ids.flatMap((id, i) => [compute(id, 100 + i), compute(id, 200 + i)]));
    const s = await solver;
    expect(s.status).toBe(200);
    solverOwner.spent += s.body.tally_charge.cost as number;
    solverOwner.envelopes++;
    solverOwner.folders.inbox = (solverOwner.folders.inbox ?? 0) + 1;
    solverOwner.rows++;
    await expectExact(t);
    cachesWithinBound(t);
  }, 120_000);

  it('moves folders and charges a machine creation of evicted identities exactly', async () => {
    for (const [i, id] of ids.entries()) {
      const moved = await call(t.url, 'POST', '/api/tally/envelopes/folder', { folder: 'kept', count: 1 + (i % 2) }, bearer(id.key));
      expect(moved.status).toBe(200);
      expect(moved.body.moved).toBe(1 + (i % 2));
      id.folders.inbox! -= moved.body.moved;
      id.folders.kept = (id.folders.kept ?? 0) + moved.body.moved;
    }
    const owner = ids[5]!;
    const created = await call(t.url, 'POST', '/api/chain/state-machines', { slug: 'bounded-cache-extra' }, bearer(owner.key));
    expect(created.status).toBe(201);
    owner.spent += created.body.tally_charge.cost as number;
    await expectExact(t);
    cachesWithinBound(t);
  }, 120_000);

  it('a failed batch leaves nothing behind and nothing of it is read back after its identity is evicted', async () => {
    const victim = ids[3]!;
    const digest = t.node.chain.headsDigest();
    failNextBatch(t, 50);
    const r = await call(t.url, 'POST', '/api/svc/compute', kinetic(777), bearer(victim.key));
    expect(r.status).toBe(503);
    expect(t.node.chain.headsDigest()).toBe(digest);
    // Other identities load after it (pushing the victim out of the bound): what is read again has no trace of it.
    for (const [i, id] of ids.filter((x) => x !== victim).entries()) await compute(id, 300 + i);
    cachesWithinBound(t);
    await expectExact(t);
  }, 120_000);

  it('every figure is exact after a restart, and the heads digest is the same', async () => {
    const digest = t.node.chain.headsDigest();
    t = await t.restart();
    expect(t.node.chain.headsDigest()).toBe(digest);
    await expectExact(t);
    cachesWithinBound(t);
    await compute(ids[7]!, 9);
    expect(t.node.chain.headsDigest()).not.toBe(digest);
    await expectExact(t);
  }, 120_000);
});

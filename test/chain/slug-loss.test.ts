// The losing home of a slug race, in process (chain/slug-loss.ts): one batch marks the machine lost, refunds the
// creation charge and revokes its admin key — exactly once, under concurrency and after a failed batch.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { failNextBatch } from '../helpers/fail-batch.js';
import { SLUG_OWED_SUB, SlugLosses, slugReclaim, type SlugLossDeps } from '../../src/chain/slug-loss.js';
import type { MachineRecord } from '../../src/chain/service.js';
import { padNum } from '../../src/store/db.js';

let t: TestNode;
let owner: { zid: string; key: string; slug: string };
const winners = new Map<string, string>();

beforeAll(async () => {
  t = await startTestNode({}, { initialCredits: 1000 });
  owner = await zkIdentity(t.url, 'slug-loss-owner');
});
afterAll(async () => t.destroy());

const losses = (over: Partial<SlugLossDeps> = {}) =>
  new SlugLosses({
    store: t.node.store,
    chain: t.node.chain,
    ledger: t.node.ledger,
    identity: t.node.identity,
    nodeId: () => t.node.nodeId,
    nowMs: () => Date.now(),
    winnerOf: async (slug) => winners.get(slug) ?? null,
    ...over,
  });
const balance = async () => (await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(owner.key))).body.total as number;
const create = async (slug: string) => {
  const r = await call(t.url, 'POST', '/api/chain/state-machines', { slug, is_public: true }, bearer(owner.key));
  expect(r.status, r.text).toBe(201);
  return r.body.admin_key as string;
};

describe('slug losses', () => {
  it('nothing happens while this node holds the slug; a loss is settled once, however many settle at once', async () => {
    const before = await balance();
    const adminKey = await create('loss-once');
    expect(await losses().settle('loss-once')).toBeNull();
    winners.set('loss-once', t.node.nodeId);
    expect(await losses().settle('loss-once')).toBeNull();
    winners.set('loss-once', 'peer-winner');
    const settled = await Promise.all([losses().settle('loss-once'), losses().settle('loss-once'), losses().settle('loss-once')]);
    expect(settled.filter((l) => l !== null)).toHaveLength(1);
    expect(await balance()).toBe(before);
    expect((await t.node.chain.getMachine('loss-once'))?.lost).toMatchObject({ lost_to: 'peer-winner', refund: { credits: 50, to: 'free' } });
    expect(await losses().settle('loss-once')).toBeNull();
    expect(await balance()).toBe(before);
    expect(expectError((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(adminKey))) as never, 401, 'SVC_INVALID_KEY').reason).toBe('revoked');
    // No longer listed as public; the owner sees it, lost.
    const anon = await call(t.url, 'GET', '/api/chain/aggregate/list?limit=500');
    expect(anon.body.items.map((i: { slug: string }) => i.slug)).not.toContain('loss-once');
    const mine = await call(t.url, 'GET', '/api/chain/aggregate/list?limit=500', undefined, bearer(owner.key));
    expect(mine.body.items.find((i: { slug: string }) => i.slug === 'loss-once')).toMatchObject({ status: 'lost', role: 'owner' });
    expect(mine.body.items.find((i: { slug: string }) => i.slug === owner.slug)).toMatchObject({ status: 'active' });
  });

  it('a failed batch leaves the machine, the wallet and the key as they were; the next settle does it', async () => {
    const before = await balance();
    const adminKey = await create('loss-retry');
    winners.set('loss-retry', 'peer-winner');
    failNextBatch(t, 0);
    await expect(losses().settle('loss-retry')).rejects.toThrow(/injected/);
    expect((await t.node.chain.getMachine('loss-retry'))?.lost).toBeUndefined();
    expect(await balance()).toBe(before - 50);
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(adminKey))).status).toBe(200);
    // The marker of the loss (as the directory's batch writes it) stays after the failed settlement: read at start.
    await t.node.store.commit(await losses().owedOps('loss-retry'));
    expect(await losses().reconcile()).toMatchObject({ settled: 1 });
    expect(await balance()).toBe(before);
    expect(await losses().reconcile()).toEqual({ markers: 0, settled: 0 });
  });

  it('a lost machine is read at its node by its owner only, with ?lost=1, read-only (writes: 409 SVC_MACHINE_LOST)', async () => {
    const other = await zkIdentity(t.url, 'slug-loss-stranger');
    const own = bearer(owner.key);
    const explore = await call(t.url, 'GET', '/api/chain/loss-once/explore?lost=1&from=1', undefined, own);
    expect(explore.status, explore.text).toBe(200);
    expect(explore.body).toMatchObject({ slug: 'loss-once', head: { seq: 0 } });
    for (const path of ['settings', 'tally/summary', 'tally/charges?limit=5', 'tally/envelopes', 'pohc/validate', 'contracts']) {
      const sep = path.includes('?') ? '&' : '?';
      const r = await call(t.url, 'GET', `/api/chain/loss-once/${path}${sep}lost=1`, undefined, own);
      expect(r.status, `${path}: ${r.text}`).toBe(200);
    }
    const charges = await call(t.url, 'GET', '/api/chain/loss-once/tally/charges?lost=1', undefined, own);
    expect(charges.body.items[0]).toMatchObject({ seq: 0, action: 'state_machine_creation', charged: 50 });
    expectError((await call(t.url, 'GET', '/api/chain/loss-once/explore?lost=1')) as never, 401, 'SVC_NO_KEY');
    expectError((await call(t.url, 'GET', '/api/chain/loss-once/explore?lost=1', undefined, bearer(other.key))) as never, 403, 'SVC_FORBIDDEN');
    const write = expectError((await call(t.url, 'POST', '/api/chain/loss-once/events?lost=1', { payload: 1 }, own)) as never, 409, 'SVC_MACHINE_LOST');
    expect(write).toMatchObject({ slug: 'loss-once', lost_to: 'peer-winner' });
    expectError((await call(t.url, 'PATCH', '/api/chain/loss-once/settings?lost=1', { is_public: true }, own)) as never, 409, 'SVC_MACHINE_LOST');
    expectError((await call(t.url, 'GET', '/api/chain/loss-once/checkpoint?lost=1', undefined, own)) as never, 409, 'SVC_MACHINE_LOST');
    // A machine not lost is not read this way; `lost` takes 1 only.
    expectError((await call(t.url, 'GET', `/api/chain/${owner.slug}/explore?lost=1`, undefined, own)) as never, 404, 'SVC_NOT_FOUND');
    expectError((await call(t.url, 'GET', '/api/chain/loss-once/explore?lost=yes', undefined, own)) as never, 400, 'SVC_INVALID_INPUT');
  });

  it('a creation charge that took the last free credits and some paid ones is refunded to each part it came from', async () => {
    const mixed = await zkIdentity(t.url, 'slug-loss-mixed');
    const w = await t.node.ledger.wallet(mixed.zid);
    const set = t.node.ledger.creditOps(mixed.zid, 10 - w.free, 100 - w.paid);
    await t.node.store.commit(set.ops);
    const wallet = async () => (await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(mixed.key))).body as { free: number; paid: number };
    expect(await wallet()).toMatchObject({ free: 10, paid: 100 });
    const made = await call(t.url, 'POST', '/api/chain/state-machines', { slug: 'loss-mixed', is_public: false }, bearer(mixed.key));
    expect(made.status, made.text).toBe(201);
    expect(await wallet()).toMatchObject({ free: 0, paid: 60 });
    expect(await t.node.chain.creationCharge('loss-mixed')).toMatchObject({ charged: 50, funded_by: 'paid', split: { free: 10, paid: 40 } });
    winners.set('loss-mixed', 'peer-winner');
    expect(await losses().settle('loss-mixed')).toMatchObject({ refund: { credits: 50, to: 'both', free: 10, paid: 40 } });
    expect(await wallet()).toMatchObject({ free: 10, paid: 100 });
    // A charge recorded before the split was kept (no `split`): refunded to its funded_by part, as before.
    const legacy = await call(t.url, 'POST', '/api/chain/state-machines', { slug: 'loss-mixed-old', is_public: false }, bearer(mixed.key));
    expect(legacy.status, legacy.text).toBe(201);
    const charges = t.node.store.sub('chain_charges');
    const key = `loss-mixed-old!${padNum(0)}`;
    const { split: _split, ...old } = (await t.node.store.get<Record<string, unknown>>(charges, key))!;
    await t.node.store.commit([{ type: 'put', sub: charges, key, value: old }]);
    winners.set('loss-mixed-old', 'peer-winner');
    expect(await losses().settle('loss-mixed-old')).toMatchObject({ refund: { credits: 50, to: 'paid' } });
    expect(await wallet()).toMatchObject({ free: 0, paid: 110 });
  });

  it('at start only the owed markers are read: many machines and no marker, no lookup; a marker is settled once', async () => {
    const owed = t.node.store.sub(SLUG_OWED_SUB);
    // Many machines held here (written as a creation writes them), none owed.
    const base = (await t.node.chain.getMachine(owner.slug))!;
    const many: MachineRecord[] = Array.from({ length: 300 }, (_, i) => ({ ...base, slug: `held-${i}`, key_digest: `d${i}` }));
    await t.node.store.commit(many.flatMap((m) => t.node.chain.machineOps(m)));
    for (const m of many) winners.set(m.slug, t.node.nodeId);
    await losses().reconcile(); // the one-time pass over machines held before markers existed (done already, or now)
    let lookups = 0;
    let reads = 0;
    const chain = Object.create(t.node.chain) as typeof t.node.chain;
    chain.getMachine = (slug: string) => {
      reads++;
      return t.node.chain.getMachine(slug);
    };
    const counted = () => losses({ chain, winnerOf: async (slug) => (lookups++, winners.get(slug) ?? null) });
    expect(await counted().reconcile()).toEqual({ markers: 0, settled: 0 });
    expect({ lookups, reads }).toEqual({ lookups: 0, reads: 0 });
    // One loss recorded (the directory's batch with its marker) and the node stopped before the settlement batch.
    const before = await balance();
    await create('loss-at-start');
    winners.set('loss-at-start', 'peer-winner');
    await t.node.store.commit(await losses().owedOps('loss-at-start'));
    expect(await t.node.store.get(owed, 'loss-at-start')).toBeDefined();
    expect(await counted().reconcile()).toEqual({ markers: 1, settled: 1 });
    expect(lookups).toBe(2); // that slug only: the pass's check and the settlement's own
    expect(await balance()).toBe(before);
    expect(await t.node.store.get(owed, 'loss-at-start')).toBeUndefined();
    // A stale marker (the machine already lost) is deleted, never refunded again.
    await t.node.store.commit([losses().markOp('loss-at-start')]);
    expect(await counted().reconcile()).toEqual({ markers: 1, settled: 0 });
    expect(await balance()).toBe(before);
    expect(await t.node.store.get(owed, 'loss-at-start')).toBeUndefined();
    // A marker whose slug no other home holds goes to the directory's check (here: none, the marker clears).
    await t.node.store.commit([losses().markOp('held-0')]);
    expect(await counted().reconcile()).toEqual({ markers: 1, settled: 0 });
    expect(await t.node.store.get(owed, 'held-0')).toBeUndefined();
  });

  it('the first start of this version marks, once, the losses of machines held before markers existed', async () => {
    const before = await balance();
    await create('loss-legacy');
    winners.set('loss-legacy', 'peer-winner');
    const meta = t.node.store.sub('chain_meta');
    await t.node.store.commit([{ type: 'del', sub: meta, key: 'slug-owed-v1' }]);
    let lookups = 0;
    const counted = () => losses({ winnerOf: async (slug) => (lookups++, winners.get(slug) ?? null) });
    expect(await counted().reconcile()).toMatchObject({ settled: 1 });
    expect(await balance()).toBe(before);
    expect(lookups).toBeGreaterThan(1);
    lookups = 0;
    expect(await counted().reconcile()).toEqual({ markers: 0, settled: 0 });
    expect(lookups).toBe(0);
  });
});

describe('the slug reclaim', () => {
  const machine = (slug: string) => ({ slug, genesis_svcond: 77, created_unix_ms: 1_700_000_000_000 }) as MachineRecord;
  const reclaimer = () => {
    const held: unknown[] = [];
    const announced: unknown[] = [];
    const reclaim = slugReclaim({
      defaultSlugPrefix: 'm-',
      nodeId: () => 'self-node',
      claimOwn: async (c) => held.push(c),
      announce: async (c) => {
        announced.push(c);
        throw new Error('no peers');
      },
    });
    return { reclaim, held, announced };
  };

  it('claims a named machine again with its genesis tick and creation time, held here and announced', async () => {
    const { reclaim, held, announced } = reclaimer();
    expect(await reclaim(machine('my-sim'))).toBe(true);
    const claim = { slug: 'my-sim', home: 'self-node', svcond: 77, created_unix_ms: 1_700_000_000_000 };
    expect(held).toEqual([claim]);
    expect(announced).toEqual([claim]);
  });

  it('never claims an identity’s default machine that way', async () => {
    const { reclaim, held, announced } = reclaimer();
    expect(await reclaim(machine('m-0123abcd'))).toBe(false);
    expect(held).toEqual([]);
    expect(announced).toEqual([]);
  });
});

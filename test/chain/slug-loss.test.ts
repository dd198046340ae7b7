// The losing home of a slug race, in process (chain/slug-loss.ts): one batch marks the machine lost, refunds the
// creation charge and revokes its admin key — exactly once, under concurrency and after a failed batch.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { failNextBatch } from '../helpers/fail-batch.js';
import { SlugLosses } from '../../src/chain/slug-loss.js';

let t: TestNode;
let owner: { zid: string; key: string; slug: string };
const winners = new Map<string, string>();

beforeAll(async () => {
  t = await startTestNode({}, { initialCredits: 1000 });
  owner = await zkIdentity(t.url, 'slug-loss-owner');
});
afterAll(async () => t.destroy());

const losses = () =>
  new SlugLosses({
    chain: t.node.chain,
    ledger: t.node.ledger,
    identity: t.node.identity,
    nodeId: () => t.node.nodeId,
    nowMs: () => Date.now(),
    winnerOf: async (slug) => winners.get(slug) ?? null,
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
    expect(await losses().reconcile()).toBe(1);
    expect(await balance()).toBe(before);
    expect(await losses().reconcile()).toBe(0);
  });
});

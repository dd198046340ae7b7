// A machine's tally: the envelopes sealed with rows on it (an index written in each sealing batch) and the running
// totals of its charges and envelopes (stored with each index entry, kept in memory with the chain head), role-gated.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { failNextBatch } from '../helpers/fail-batch.js';
import { machineEnvelopesResponse } from '../../src/http/responses.js';
import type { MachineCharge } from '../../src/chain/service.js';

let t: TestNode;
let owner: { zid: string; key: string; slug: string };
let viewer: { zid: string; key: string; slug: string };
let stranger: { zid: string; key: string; slug: string };
let adminKey: string;
const SLUG = 'tally-book';
const compute = { domain: 'thermodynamics', operators: ['KO42', 'THERMO_CARNOT_EFFICIENCY'], inputs: {} };

beforeAll(async () => {
  t = await startTestNode({}, { initialCredits: 1000 });
  owner = await zkIdentity(t.url, 'tally-owner');
  viewer = await zkIdentity(t.url, 'tally-viewer');
  stranger = await zkIdentity(t.url, 'tally-stranger');
  const made = await call(t.url, 'POST', '/api/chain/state-machines', { slug: SLUG }, bearer(owner.key));
  expect(made.status, made.text).toBe(201);
  adminKey = made.body.admin_key;
  const r = await call(t.url, 'PATCH', `/api/chain/${SLUG}/settings`, { roles: { [viewer.zid]: 'viewer' } }, bearer(owner.key));
  expect(r.status, r.text).toBe(200);
});
afterAll(async () => t.destroy());

const seal = async (key: string): Promise<string> => {
  const r = await call(t.url, 'POST', '/api/svc/compute', compute, bearer(key));
  expect(r.status, r.text).toBe(200);
  return r.body.envelope.token_id as string;
};
const envelopes = (query = '', key = owner.key) => call(t.url, 'GET', `/api/chain/${SLUG}/tally/envelopes${query}`, undefined, bearer(key));
const summary = () => call(t.url, 'GET', `/api/chain/${SLUG}/tally/summary`, undefined, bearer(owner.key));

describe('tally/envelopes', () => {
  it('lists the envelopes sealed with rows on the machine, newest first, paged with a real total; others are not in it', async () => {
    const tokens = [await seal(adminKey), await seal(adminKey), await seal(adminKey)];
    await seal(owner.key); // sealed on the owner's default machine: not this one's
    const all = await envelopes();
    expect(all.status, all.text).toBe(200);
    machineEnvelopesResponse.parse(all.body);
    expect(all.body.total).toBe(3);
    expect(all.body.items.map((e: { token_id: string }) => e.token_id)).toEqual([...tokens].reverse());
    expect(all.body.items[0].envelope).toMatchObject({ token_id: tokens[2], owner: owner.zid, folder: 'inbox' });
    // The row each envelope was sealed with is the machine's compute_sealed row of that seq.
    const rows = await call(t.url, 'GET', `/api/chain/${SLUG}/explore`, undefined, bearer(owner.key));
    const sealedSeqs = rows.body.rows.filter((r: { transitionType: string }) => r.transitionType === 'compute_sealed').map((r: { seq: number }) => r.seq);
    expect(all.body.items.map((e: { seq: number }) => e.seq)).toEqual([...sealedSeqs].reverse());
    const page = await envelopes('?limit=2&offset=2');
    expect(page.body).toMatchObject({ total: 3, limit: 2, offset: 2 });
    expect(page.body.items.map((e: { token_id: string }) => e.token_id)).toEqual([tokens[0]]);
  });

  it('is the tally role’s (admin, owner): a viewer and a stranger are 403, no key 401', async () => {
    expect(expectError((await envelopes('', viewer.key)) as never, 403, 'SVC_FORBIDDEN')).toMatchObject({ action: 'tally', role: 'viewer' });
    expectError((await envelopes('', stranger.key)) as never, 403, 'SVC_FORBIDDEN');
    expectError((await call(t.url, 'GET', `/api/chain/${SLUG}/tally/envelopes`)) as never, 401, 'SVC_NO_KEY');
  });
});

describe('running totals', () => {
  it('charges and envelopes are counted in their batches (each record carries the totals), not by a scan', async () => {
    const c = await call(
      t.url,
      'POST',
      `/api/chain/${SLUG}/contracts`,
      { name: 'loop', initial: 's', states: ['s'], transitions: [{ from: 's', on: 'go', to: 's' }] },
      bearer(owner.key),
    );
    expect(c.status, c.text).toBe(201);
    for (let i = 0; i < 2; i++) {
      const r = await call(t.url, 'POST', `/api/chain/${SLUG}/contracts/${c.body.contract_id}/transition`, { event: { type: 'go' } }, bearer(owner.key));
      expect(r.status, r.text).toBe(200);
    }
    const s = await summary();
    expect(s.status, s.text).toBe(200);
    expect(s.body).toMatchObject({ charges: 3, credits_charged: 60, envelopes: 3 });
    // The newest charge record holds the totals the summary answers.
    const stored = await t.node.store.range<MachineCharge>(t.node.store.sub('chain_charges'), { gte: `${SLUG}!`, lt: `${SLUG}!~` });
    expect(stored.map((e) => [e.value.charges_total, e.value.credits_total])).toEqual([
      [1, 50],
      [2, 55],
      [3, 60],
    ]);
    const charges = await call(t.url, 'GET', `/api/chain/${SLUG}/tally/charges?limit=1`, undefined, bearer(owner.key));
    expect(charges.body).toMatchObject({ total: 3, credits_charged: 60 });
    expect(charges.body.items).toHaveLength(1);
  });

  it('a seal whose batch fails counts nothing; the totals survive a restart and go on from there', async () => {
    failNextBatch(t, 0);
    const failed = await call(t.url, 'POST', '/api/svc/compute', compute, bearer(adminKey));
    expect(failed.status).toBeGreaterThanOrEqual(500);
    expect((await summary()).body.envelopes).toBe(3);
    t = await t.restart();
    expect((await summary()).body).toMatchObject({ charges: 3, credits_charged: 60, envelopes: 3 });
    const token = await seal(adminKey);
    const after = await envelopes('?limit=1');
    expect(after.body.total).toBe(4);
    expect(after.body.items[0].token_id).toBe(token);
  });

  it('envelopes sealed before the machine envelope index existed are indexed once, at the next start, with their totals', async () => {
    await seal(adminKey);
    await seal(adminKey);
    const before = await envelopes('?limit=500');
    expect(before.body.total).toBe(6);
    // As an older node left it: no entry for the envelopes sealed before the index, the later ones counted from 1.
    const index = t.node.store.sub('chain_envelopes');
    const entries = await t.node.store.range<{ token_id: string; envelopes_total: number }>(index, { gte: `${SLUG}!`, lt: `${SLUG}!~` });
    expect(entries).toHaveLength(6);
    await t.node.store.commit([
      ...entries.slice(0, 4).map((e) => ({ type: 'del' as const, sub: index, key: e.key })),
      ...entries.slice(4).map((e, i) => ({ type: 'put' as const, sub: index, key: e.key, value: { ...e.value, envelopes_total: i + 1 } })),
      { type: 'del', sub: t.node.store.sub('chain_meta'), key: 'machine-envelopes-v1' },
    ]);
    t = await t.restart();
    const after = await envelopes('?limit=500');
    expect(after.status, after.text).toBe(200);
    expect(after.body.total).toBe(6);
    expect(after.body.items).toEqual(before.body.items);
    expect((await summary()).body.envelopes).toBe(6);
    const rewritten = await t.node.store.range<{ envelopes_total: number }>(t.node.store.sub('chain_envelopes'), { gte: `${SLUG}!`, lt: `${SLUG}!~` });
    expect(rewritten.map((e) => e.value.envelopes_total)).toEqual([1, 2, 3, 4, 5, 6]);
    // Once: the pass is marked done, and the count goes on from there.
    expect(await t.node.store.get(t.node.store.sub('chain_meta'), 'machine-envelopes-v1')).toBe(1);
    const token = await seal(adminKey);
    const next = await envelopes('?limit=1');
    expect(next.body).toMatchObject({ total: 7, items: [{ token_id: token }] });
  });
});

// The economy over HTTP on real nodes: the exact 80/20 split and the cost table (issue 18 item 5).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

// KO42 plus one domain operator: cost 1 (part 8, 1 per domain operator).
const cost1 = { domain: 'thermodynamics', operators: ['KO42', 'THERMO_CARNOT_EFFICIENCY'], inputs: {} };

describe('exact split', () => {
  let t: TestNode;
  beforeAll(async () => {
    t = await startTestNode({}, { initialCredits: 2000 });
  });
  afterAll(async () => t.destroy());

  it('1,000 cost-1 charges give the foundation exactly 200, and revenue agrees with the charges', async () => {
    const a = await zkIdentity(t.url, 'split-a');
    let foundation = 0;
    let burned = 0;
    for (let i = 0; i < 1000; i += 25) {
      const batch = await Promise.all(Array.from({ length: 25 }, () => call(t.url, 'POST', '/api/svc/compute', cost1, bearer(a.key))));
      for (const r of batch) {
        expect(r.status).toBe(200);
        expect(r.body.tally_charge.cost).toBe(1);
        expect(r.body.tally_charge.burned + r.body.tally_charge.foundation).toBe(1);
        expect(r.body.envelope.face_value).toBe(r.body.tally_charge.burned);
        foundation += r.body.tally_charge.foundation;
        burned += r.body.tally_charge.burned;
      }
    }
    // Before the carry, each cost-1 charge gave ⌊0.2⌋ = 0: the foundation got nothing, ever.
    expect(foundation).toBe(200);
    expect(burned).toBe(800);
    const rev = await call(t.url, 'GET', '/api/transparency/revenue');
    expect(rev.status).toBe(200);
    expect(rev.body).toMatchObject({ burned: 800, foundation: 200, total: 1000, foundationShare: 0.2, pooledCarry: 0 });
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(a.key))).body).toMatchObject({ free: 1000, paid: 0, total: 1000 });
  }, 300_000);

  let b: { key: string };
  it("identities carry their own fractions; the node's total takes the whole credits they add up to", async () => {
    b = await zkIdentity(t.url, 'split-b');
    const c = await zkIdentity(t.url, 'split-c');
    const charges = [];
    for (let i = 0; i < 3; i++) charges.push(await call(t.url, 'POST', '/api/svc/compute', cost1, bearer(b.key)));
    for (let i = 0; i < 2; i++) charges.push(await call(t.url, 'POST', '/api/svc/compute', cost1, bearer(c.key)));
    // b has been charged 3 (⌊0.6⌋ = 0), c 2 (⌊0.4⌋ = 0): neither owes the foundation a whole credit yet …
    expect(charges.map((r) => r.body.tally_charge.foundation)).toEqual([0, 0, 0, 0, 0]);
    // … but together with the 1,000 before, the node has been charged 1,005: ⌊201⌋ to the foundation.
    const rev = await call(t.url, 'GET', '/api/transparency/revenue');
    expect(rev.body).toMatchObject({ burned: 804, foundation: 201, total: 1005, pooledCarry: 1 });
    // b's next two charges (total 5) complete its own credit: ⌊1.0⌋ − ⌊0.8⌋ = 1 on the fifth.
    const b4 = await call(t.url, 'POST', '/api/svc/compute', cost1, bearer(b.key));
    const b5 = await call(t.url, 'POST', '/api/svc/compute', cost1, bearer(b.key));
    expect([b4.body.tally_charge.foundation, b5.body.tally_charge.foundation]).toEqual([0, 1]);
    const rev2 = await call(t.url, 'GET', '/api/transparency/revenue');
    // 1,007 charged: ⌊201.4⌋ = 201; b's own credit is now paid, so only c's 0.4 and a's 0 are pooled: 0 whole.
    expect(rev2.body).toMatchObject({ burned: 806, foundation: 201, total: 1007, pooledCarry: 0 });
  }, 60_000);

  it('the totals and the identities\' running totals survive a restart', async () => {
    t = await t.restart();
    // b was charged 5 (carry 0 now); 5 more cost-1 charges complete the next credit on the fifth.
    const got = [];
    for (let i = 0; i < 5; i++) got.push((await call(t.url, 'POST', '/api/svc/compute', cost1, bearer(b.key))).body.tally_charge.foundation);
    expect(got).toEqual([0, 0, 0, 0, 1]);
    expect((await call(t.url, 'GET', '/api/transparency/revenue')).body).toMatchObject({ foundation: 202, total: 1012 });
  }, 120_000);
});

describe('costs', () => {
  let t: TestNode;
  beforeAll(async () => {
    t = await startTestNode({}, { initialCredits: 60 });
  });
  afterAll(async () => t.destroy());

  it('GET /api/tally/costs and discovery show every part-8 cost from one table', async () => {
    const r = await call(t.url, 'GET', '/api/tally/costs');
    expect(r.status).toBe(200);
    const byAction = Object.fromEntries(r.body.costs.map((c: { action: string; credits: number }) => [c.action, c.credits]));
    expect(byAction).toEqual({
      compute: 1,
      solver: 10,
      auto: 10,
      state_machine_creation: 50,
      contract_transition: 5,
      page_chat: 25,
      skill_creation: 50,
      operator_creation: 50,
      source_audit_creation: 50,
      agent_spawn: 75,
      page_generation: 100,
    });
    expect(r.body.split).toMatchObject({ burned_percent: 80, foundation_percent: 20 });
    const d = await call(t.url, 'GET', '/api');
    expect(d.body.costs).toEqual(r.body);
    expect(d.body.endpoints).toContainEqual({ method: 'GET', path: '/api/tally/costs' });
  });

  it('creating a state machine costs 50; a wallet that cannot pay gets 402 and nothing is created', async () => {
    const id = await zkIdentity(t.url, 'costs-machine');
    const ok = await call(t.url, 'POST', '/api/chain/state-machines', { slug: 'paid-machine-one' }, bearer(id.key));
    expect(ok.status).toBe(201);
    expect(ok.body.tally_charge).toMatchObject({ action: 'state_machine_creation', cost: 50, charged: 50, burned: 40, foundation: 10, funded_by: 'free', balance_after: { free: 10, paid: 0 } });
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(id.key))).body.total).toBe(10);
    const refused = await call(t.url, 'POST', '/api/chain/state-machines', { slug: 'paid-machine-two' }, bearer(id.key));
    expectError(refused, 402, 'INSUFFICIENT_BALANCE');
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(id.key))).body.total).toBe(10);
    expectError(await call(t.url, 'GET', '/api/chain/paid-machine-two/explore', undefined, bearer(id.key)), 404, 'SVC_NOT_FOUND');
    // The first one exists and its admin key works.
    expect((await call(t.url, 'GET', '/api/chain/paid-machine-one/explore', undefined, bearer(ok.body.admin_key))).status).toBe(200);
    expect((await call(t.url, 'GET', '/api/transparency/revenue')).body).toMatchObject({ burned: 40, foundation: 10 });
    // After a restart the charge is still there (written in the creation's batch).
    t = await t.restart();
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(id.key))).body.total).toBe(10);
  }, 60_000);
});

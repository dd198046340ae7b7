// JSON contracts end to end: the two examples of docs/chain.md (taken from the document itself), every kind of
// refusal, the charge of 5, the rebuild after a restart, and the same answers on two nodes.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

const DOC = readFileSync(new URL('../../docs/chain.md', import.meta.url), 'utf8');
function block(tag: string): any {
  const m = new RegExp('```json ' + tag + '\\n([\\s\\S]*?)```').exec(DOC);
  if (!m) throw new Error(`docs/chain.md has no block ${tag}`);
  return JSON.parse(m[1]!);
}
type Step = { event: Record<string, unknown>; state?: string; refused?: string; vars?: Record<string, unknown> };
const EXAMPLES = ['escrow', 'custody'].map((name) => ({ name, contract: block(`contract:${name}`), steps: block(`events:${name}`) as Step[] }));

let a: TestNode;
let b: TestNode;
const SEED = 'contracts-owner';

async function run(t: TestNode, key: string, slug: string, contract: unknown, steps: Step[]): Promise<unknown[]> {
  const d = await call(t.url, 'POST', `/api/chain/${slug}/contracts`, contract, bearer(key));
  expect(d.status, d.text).toBe(201);
  expect(d.body.state).toBe((contract as { initial: string }).initial);
  const id = d.body.contract_id as string;
  const out: unknown[] = [id];
  for (const s of steps) {
    const r = await call(t.url, 'POST', `/api/chain/${slug}/contracts/${id}/transition`, { event: s.event }, bearer(key));
    if (s.refused) {
      const e = expectError(r as never, 409, 'SVC_ILLEGAL_TRANSITION');
      expect(e).toMatchObject({ contract_id: id, event: s.event.type, reason: s.refused });
      expect(typeof e.state).toBe('string');
      expect(e.message).toContain(e.state);
      out.push(['refused', e.state, e.reason, e.guard ?? null]);
    } else {
      expect(r.status, r.text).toBe(200);
      expect(r.body.state).toBe(s.state);
      expect(r.body.tally_charge).toMatchObject({ action: 'contract_transition', cost: 5 });
      expect(r.body.row.transitionType).toBe('contract_transition');
      if (s.vars) expect(r.body.vars).toMatchObject(s.vars);
      out.push([r.body.from, r.body.state, r.body.vars, r.body.row.payload_sha256]);
    }
  }
  return out;
}

beforeAll(async () => {
  [a, b] = await Promise.all([startTestNode({}, { initialCredits: 1000 }), startTestNode({}, { initialCredits: 1000 })]);
}, 30_000);
afterAll(async () => Promise.all([a?.destroy(), b?.destroy()]));

describe('the documented examples', () => {
  it('run end to end on two nodes with the same answers (states, variables, committed digests), charging 5 per transition', async () => {
    const onA = await zkIdentity(a.url, SEED);
    const onB = await zkIdentity(b.url, SEED);
    expect(onB.slug).toBe(onA.slug);
    const before = (await call(a.url, 'GET', '/api/tally/balance', undefined, bearer(onA.key))).body.total;
    for (const ex of EXAMPLES) {
      const ra = await run(a, onA.key, onA.slug, ex.contract, ex.steps);
      const rb = await run(b, onB.key, onB.slug, ex.contract, ex.steps);
      expect(rb).toEqual(ra);
    }
    const accepted = EXAMPLES.reduce((n, ex) => n + ex.steps.filter((s) => !s.refused).length, 0);
    const after = (await call(a.url, 'GET', '/api/tally/balance', undefined, bearer(onA.key))).body.total;
    expect(before - after).toBe(5 * accepted);
    const tally = await call(a.url, 'GET', `/api/chain/${onA.slug}/tally/charges?limit=500`, undefined, bearer(onA.key));
    expect(tally.body.total).toBe(accepted);
    expect(tally.body.credits_charged).toBe(5 * accepted);
  });

  it('a contract is rebuilt from the log after a restart, identically, and goes on from there', async () => {
    const owner = await zkIdentity(a.url, 'contracts-restart');
    const ex = EXAMPLES[1]!;
    const d = await call(a.url, 'POST', `/api/chain/${owner.slug}/contracts`, ex.contract, bearer(owner.key));
    const id = d.body.contract_id;
    for (const s of ex.steps.slice(0, 4))
      await call(a.url, 'POST', `/api/chain/${owner.slug}/contracts/${id}/transition`, { event: s.event }, bearer(owner.key));
    const before = await call(a.url, 'GET', `/api/chain/${owner.slug}/contracts/${id}`, undefined, bearer(owner.key));
    expect(before.body.state).toBe('received');
    a = await a.restart();
    const after = await call(a.url, 'GET', `/api/chain/${owner.slug}/contracts/${id}`, undefined, bearer(owner.key));
    expect(after.status, after.text).toBe(200);
    expect(after.body).toEqual(before.body);
    const next = await call(a.url, 'POST', `/api/chain/${owner.slug}/contracts/${id}/transition`, { event: ex.steps[4]!.event }, bearer(owner.key));
    expect(next.body.state).toBe('analysed');
    const list = await call(a.url, 'GET', `/api/chain/${owner.slug}/contracts`, undefined, bearer(owner.key));
    expect(list.body.contracts.map((c: { contract_id: string }) => c.contract_id)).toEqual([id]);
  }, 30_000);
});

describe('refusals', () => {
  const base = () => structuredClone(EXAMPLES[0]!.contract);
  it('an invalid contract is 400 whose field is the offending path', async () => {
    const owner = await zkIdentity(a.url, 'contracts-refusals');
    const deploy = (c: unknown) => call(a.url, 'POST', `/api/chain/${owner.slug}/contracts`, c, bearer(owner.key));
    const cases: [(c: any) => void, string][] = [
      [(c) => (c.transitions[2].to = 'nowhere'), 'contract.transitions.2.to'],
      [(c) => (c.initial = 'limbo'), 'contract.initial'],
      [(c) => (c.transitions[0].guards[1].right = { var: 'undeclared' }), 'contract.transitions.0.guards.1.right.var'],
      [(c) => (c.transitions[0].effects = [{ add: 'buyer', by: { value: 1 } }]), 'contract.transitions.0.effects.0.add'],
      [(c) => (c.transitions[1].guards[0].op = '=~'), 'contract.transitions.1.guards.0.op'],
      [(c) => (c.transitions[3].extra = 1), 'contract.transitions.3.extra'],
      [(c) => c.states.push('funded'), 'contract.states.5'],
      [(c) => delete c.transitions, 'contract.transitions'],
    ];
    for (const [breakIt, field] of cases) {
      const c = base();
      breakIt(c);
      expect(expectError((await deploy(c)) as never, 400, 'SVC_INVALID_INPUT').field).toBe(field);
    }
    expect((await call(a.url, 'GET', `/api/chain/${owner.slug}/contracts`, undefined, bearer(owner.key))).body.contracts).toEqual([]);
  });

  it('a bad event is 400 naming event.*, an unknown contract 404, and a wallet that cannot pay 402 with nothing applied', async () => {
    const owner = await zkIdentity(a.url, 'contracts-poor');
    const d = await call(a.url, 'POST', `/api/chain/${owner.slug}/contracts`, base(), bearer(owner.key));
    const path = `/api/chain/${owner.slug}/contracts/${d.body.contract_id}/transition`;
    expect(expectError((await call(a.url, 'POST', path, { event: { amount: 1 } }, bearer(owner.key))) as never, 400, 'SVC_INVALID_INPUT').field).toBe(
      'event.type',
    );
    expect(
      expectError((await call(a.url, 'POST', path, { event: { type: 'deposit', nested: {} } }, bearer(owner.key))) as never, 400, 'SVC_INVALID_INPUT').field,
    ).toBe('event.nested');
    expectError(
      (await call(a.url, 'POST', `/api/chain/${owner.slug}/contracts/ctr_${'0'.repeat(24)}/transition`, { event: { type: 'x' } }, bearer(owner.key))) as never,
      404,
      'SVC_NOT_FOUND',
    );
    // Drain the wallet to 4 credits (the ledger's own charge path), then a legal transition is 402 and changes nothing.
    const w = await a.node.ledger.wallet(owner.zid);
    const drain = a.node.ledger.chargeOps(owner.zid, 'test_drain', w.free + w.paid - 4);
    await a.node.store.commit(drain.ops);
    const r = await call(a.url, 'POST', path, { event: { type: 'deposit', by: 'alice', amount: 100 } }, bearer(owner.key));
    expectError(r as never, 402, 'INSUFFICIENT_BALANCE');
    const now = await call(a.url, 'GET', `/api/chain/${owner.slug}/contracts/${d.body.contract_id}`, undefined, bearer(owner.key));
    expect(now.body).toMatchObject({ state: 'awaiting_deposit', transitions_applied: 0 });
    expect((await call(a.url, 'GET', `/api/chain/${owner.slug}/pohc/validate`, undefined, bearer(owner.key))).body).toMatchObject({ valid: true, rows: 1 });
  });
});

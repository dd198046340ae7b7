// JSON contracts end to end: the two examples of docs/chain.md (taken from the document itself), every kind of
// refusal, the charge of 5, the rebuild after a restart, and the same answers on two nodes. The caller: a guard on
// `{"caller": "zid"}` is the key's identity, whatever the event's fields claim; the row commits it.
import { readFileSync } from 'node:fs';
import { sha256Hex } from '../../src/kernel/bytes.js';
import { canonicalJson } from '../../src/kernel/canonical.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

const DOC = readFileSync(new URL('../../docs/chain.md', import.meta.url), 'utf8');
function block(tag: string): any {
  const m = new RegExp('```json ' + tag + '\\n([\\s\\S]*?)```').exec(DOC);
  if (!m) throw new Error(`docs/chain.md has no block ${tag}`);
  return JSON.parse(m[1]!);
}
/** A documented step: the event, whose key sends it (`as`, a party; the owner's when absent), and its outcome. */
type Step = { as?: string; event: Record<string, unknown>; state?: string; refused?: string; vars?: Record<string, unknown> };
const EXAMPLES = ['escrow', 'custody'].map((name) => ({ name, contract: block(`contract:${name}`), steps: block(`events:${name}`) as Step[] }));

let a: TestNode;
let b: TestNode;
const SEED = 'contracts-owner';

/** The parties a documented run names, each an identity (the same zid on every node) with the operator role on the machine. */
async function parties(t: TestNode, ownerKey: string, slug: string, steps: Step[]): Promise<Record<string, { key: string; zid: string }>> {
  const out: Record<string, { key: string; zid: string }> = {};
  for (const name of new Set(steps.flatMap((s) => (s.as ? [s.as] : [])))) {
    out[name] = await zkIdentity(t.url, `contracts-party-${name}`);
    const r = await call(t.url, 'PATCH', `/api/chain/${slug}/settings`, { roles: { [out[name]!.zid]: 'operator' } }, bearer(ownerKey));
    expect(r.status, r.text).toBe(200);
  }
  return out;
}

async function run(t: TestNode, key: string, slug: string, contract: unknown, steps: Step[]): Promise<unknown[]> {
  const d = await call(t.url, 'POST', `/api/chain/${slug}/contracts`, contract, bearer(key));
  expect(d.status, d.text).toBe(201);
  expect(d.body.state).toBe((contract as { initial: string }).initial);
  const id = d.body.contract_id as string;
  const out: unknown[] = [id];
  const who = await parties(t, key, slug, steps);
  for (const s of steps) {
    // A field naming a party stands for its zid (the document's `"by": "buyer"`).
    const event = Object.fromEntries(Object.entries(s.event).map(([k, v]) => [k, k !== 'type' && typeof v === 'string' && who[v] ? who[v].zid : v]));
    const sender = s.as ? who[s.as]!.key : key;
    const r = await call(t.url, 'POST', `/api/chain/${slug}/contracts/${id}/transition`, { event }, bearer(sender));
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
      expect(r.body.caller).toBe(s.as ? who[s.as]!.zid : await whoami(t, key));
      if (s.vars) expect(r.body.vars).toMatchObject(s.vars);
      out.push([r.body.from, r.body.state, r.body.vars, r.body.row.payload_sha256]);
    }
  }
  return out;
}

async function whoami(t: TestNode, key: string): Promise<string> {
  const r = await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(key));
  return r.body.zid as string;
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
    // Each transition is charged to its caller: the owner pays for the steps it sends.
    const ownSteps = EXAMPLES.reduce((n, ex) => n + ex.steps.filter((s) => !s.refused && !s.as).length, 0);
    const after = (await call(a.url, 'GET', '/api/tally/balance', undefined, bearer(onA.key))).body.total;
    expect(before - after).toBe(5 * ownSteps);
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
      [(c) => (c.transitions[1].guards[1].right = { var: 'undeclared' }), 'contract.transitions.1.guards.1.right.var'],
      [(c) => (c.transitions[1].guards[0].left = { caller: 'key' }), 'contract.transitions.1.guards.0.left'],
      [(c) => (c.transitions[0].effects = [{ add: 'buyer', by: { value: 1 } }]), 'contract.transitions.0.effects.0.add'],
      [(c) => (c.transitions[1].guards[0].op = '=~'), 'contract.transitions.1.guards.0.op'],
      [(c) => (c.transitions[3].extra = 1), 'contract.transitions.3.extra'],
      [(c) => c.states.push('funded'), 'contract.states.6'],
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
    const r = await call(a.url, 'POST', path, { event: { type: 'offer' } }, bearer(owner.key));
    expectError(r as never, 402, 'INSUFFICIENT_BALANCE');
    const now = await call(a.url, 'GET', `/api/chain/${owner.slug}/contracts/${d.body.contract_id}`, undefined, bearer(owner.key));
    expect(now.body).toMatchObject({ state: 'open', transitions_applied: 0 });
    expect((await call(a.url, 'GET', `/api/chain/${owner.slug}/pohc/validate`, undefined, bearer(owner.key))).body).toMatchObject({ valid: true, rows: 1 });
  });
});

describe('the caller', () => {
  it('a third identity with the operator role cannot release an escrow the buyer funded, whatever it writes; the row and a replay name the caller', async () => {
    const owner = await zkIdentity(a.url, 'contracts-caller-owner');
    const seller = await zkIdentity(a.url, 'contracts-caller-seller');
    const buyer = await zkIdentity(a.url, 'contracts-caller-buyer');
    const mallory = await zkIdentity(a.url, 'contracts-caller-mallory');
    const roles = { [seller.zid]: 'operator', [buyer.zid]: 'operator', [mallory.zid]: 'operator' };
    expect((await call(a.url, 'PATCH', `/api/chain/${owner.slug}/settings`, { roles }, bearer(owner.key))).status).toBe(200);
    const d = await call(a.url, 'POST', `/api/chain/${owner.slug}/contracts`, EXAMPLES[0]!.contract, bearer(owner.key));
    const id = d.body.contract_id as string;
    const send = (key: string, event: Record<string, unknown>) =>
      call(a.url, 'POST', `/api/chain/${owner.slug}/contracts/${id}/transition`, { event }, bearer(key));
    const applied: { seq: number; event: Record<string, unknown>; from: string; to: string; caller: string }[] = [];
    for (const [who, event] of [
      [seller, { type: 'offer' }],
      [buyer, { type: 'deposit', amount: 120 }],
      [seller, { type: 'ship' }],
    ] as const) {
      const r = await send(who.key, event);
      expect(r.status, r.text).toBe(200);
      expect(r.body.caller).toBe(who.zid);
      applied.push({ seq: r.body.row.seq, event, from: r.body.from, to: r.body.state, caller: who.zid });
    }
    // An operator that is not the buyer: refused however it names the buyer, and nothing is appended.
    for (const event of [{ type: 'confirm' }, { type: 'confirm', by: buyer.zid }, { type: 'confirm', caller: buyer.zid, buyer: buyer.zid }]) {
      const e = expectError((await send(mallory.key, event)) as never, 409, 'SVC_ILLEGAL_TRANSITION');
      expect(e).toMatchObject({ state: 'shipped', reason: 'guard failed', guard: 'transitions.4.guards.0' });
    }
    const released = await send(buyer.key, { type: 'confirm' });
    expect(released.body).toMatchObject({ state: 'released', caller: buyer.zid, vars: { buyer: buyer.zid, seller: seller.zid } });
    applied.push({ seq: released.body.row.seq, event: { type: 'confirm' }, from: 'shipped', to: 'released', caller: buyer.zid });

    // The export's rows commit each transition with its caller: the payload recomputed with the caller is the row's,
    // with another identity (or none) it is not.
    const exported = await call(a.url, 'GET', `/api/chain/${owner.slug}/export`, undefined, bearer(owner.key));
    expect(exported.status, exported.text).toBe(200);
    const rows = new Map<number, { transitionType: string; payload_sha256: string }>(exported.body.rows.map((r: any) => [r.seq, r]));
    const digest = (x: unknown) => sha256Hex(canonicalJson(x));
    for (const t of applied) {
      const row = rows.get(t.seq)!;
      expect(row.transitionType).toBe('contract_transition');
      const base = { contract_id: id, event: t.event, from: t.from, to: t.to };
      expect(row.payload_sha256).toBe(digest({ ...base, caller: t.caller }));
      expect(row.payload_sha256).not.toBe(digest({ ...base, caller: mallory.zid }));
      expect(row.payload_sha256).not.toBe(digest(base));
    }

    // Replay (a restart forgets every live state) reads the recorded callers: the same state and variables.
    const before = await call(a.url, 'GET', `/api/chain/${owner.slug}/contracts/${id}`, undefined, bearer(mallory.key));
    a.node.chain.contracts.forget();
    const after = await call(a.url, 'GET', `/api/chain/${owner.slug}/contracts/${id}`, undefined, bearer(mallory.key));
    expect(after.status, after.text).toBe(200);
    expect(after.body).toEqual(before.body);
    expect(after.body).toMatchObject({ state: 'released', transitions_applied: 4, vars: { buyer: buyer.zid, seller: seller.zid, paid: 120 } });
  }, 60_000);
});

describe('bounds: contracts per identity and the live-state cache', () => {
  const CAP = 4;
  const CACHE_BYTES = 65_536;
  let t: TestNode;
  beforeAll(async () => {
    t = await startTestNode({ limits: { contractsPerIdentity: CAP, contractCacheBytes: CACHE_BYTES } }, { initialCredits: 1000 });
  }, 30_000);
  afterAll(async () => t?.destroy());

  /** The custody example with unused padding variables: about 6 KB of JSON, so a few fill the cache's bytes. */
  const padded = () => {
    const c = structuredClone(EXAMPLES[1]!.contract);
    for (let i = 0; i < 24; i++) c.variables[`pad_${i}`] = 'p'.repeat(256);
    return c;
  };
  const list = async (key: string, slug: string) =>
    (await call(t.url, 'GET', `/api/chain/${slug}/contracts`, undefined, bearer(key))).body.contracts as unknown[];

  it('keeps the cache within its bytes, and a contract evicted from it transitions as one that stayed', async () => {
    const owner = await zkIdentity(t.url, 'contracts-cache');
    const deploy = async () => {
      const d = await call(t.url, 'POST', `/api/chain/${owner.slug}/contracts`, padded(), bearer(owner.key));
      expect(d.status, d.text).toBe(201);
      const { entries, bytes } = t.node.chain.contracts.cached;
      expect(bytes).toBeLessThanOrEqual(CACHE_BYTES);
      expect(bytes).toBeGreaterThan(0);
      expect(entries).toBeLessThanOrEqual(Math.floor(CACHE_BYTES / (bytes / entries)));
      return d.body.contract_id as string;
    };
    const send = async (id: string, s: Step) => {
      const r = await call(t.url, 'POST', `/api/chain/${owner.slug}/contracts/${id}/transition`, { event: s.event }, bearer(owner.key));
      return r.status === 200 ? [r.status, r.body.from, r.body.state, r.body.vars] : [r.status, r.body.error.code, r.body.error.state, r.body.error.reason];
    };
    const steps = EXAMPLES[1]!.steps;
    const first = await deploy();
    const firstOutcomes = [];
    for (const s of steps.slice(0, 3)) firstOutcomes.push(await send(first, s));
    for (let n = 1; n < CAP; n++) await deploy();
    // Four padded contracts weigh more than the cache holds: the least recently used, the first, went.
    expect(t.node.chain.contracts.cached.entries).toBeLessThan(CAP);
    for (const s of steps.slice(3)) firstOutcomes.push(await send(first, s));

    const control = (await list(owner.key, owner.slug)).at(-1) as { contract_id: string };
    const controlOutcomes = [];
    for (const s of steps) controlOutcomes.push(await send(control.contract_id, s));
    expect(firstOutcomes).toEqual(controlOutcomes);
    expect(firstOutcomes.at(-1)).toEqual([200, 'analysed', 'disposed', expect.objectContaining({ custodian: 'lab-2', handoffs: 2, result: 'negative' })]);
    const a = (await call(t.url, 'GET', `/api/chain/${owner.slug}/contracts/${first}`, undefined, bearer(owner.key))).body;
    const b = (await call(t.url, 'GET', `/api/chain/${owner.slug}/contracts/${control.contract_id}`, undefined, bearer(owner.key))).body;
    expect({ state: a.state, vars: a.vars, applied: a.transitions_applied }).toEqual({ state: b.state, vars: b.vars, applied: b.transitions_applied });
    expect(t.node.chain.contracts.cached.bytes).toBeLessThanOrEqual(CACHE_BYTES);
  }, 60_000);

  it('refuses a deploy past the cap with 409 naming the limit and count, writing nothing; parallel deploys cannot pass it', async () => {
    const owner = await zkIdentity(t.url, 'contracts-cap');
    const deploy = () => call(t.url, 'POST', `/api/chain/${owner.slug}/contracts`, EXAMPLES[0]!.contract, bearer(owner.key));
    for (let i = 0; i < CAP - 2; i++) expect((await deploy()).status).toBe(201);
    // Three at once with two slots left: two pass, one is refused.
    const raced = await Promise.all([deploy(), deploy(), deploy()]);
    expect(raced.map((r) => r.status).sort()).toEqual([201, 201, 409]);
    expect(await list(owner.key, owner.slug)).toHaveLength(CAP);
    const head = (await call(t.url, 'GET', `/api/chain/${owner.slug}/export`, undefined, bearer(owner.key))).body.rows.length;

    const refused = await deploy();
    const e = expectError(refused as never, 409, 'SVC_CONFLICT');
    expect(e).toMatchObject({ limit: CAP, count: CAP, resource: 'contracts' });
    expect(e.message).toBe(
      `an identity holds at most ${CAP} contracts on this node (it holds ${CAP}); a deployed contract stays on its machine, so none frees a slot`,
    );
    expect(await list(owner.key, owner.slug)).toHaveLength(CAP);
    expect((await call(t.url, 'GET', `/api/chain/${owner.slug}/export`, undefined, bearer(owner.key))).body.rows.length).toBe(head);

    // The count is the store's: a restart keeps it.
    t = await t.restart();
    expectError((await deploy()) as never, 409, 'SVC_CONFLICT');
    // Another identity has its own slots.
    const other = await zkIdentity(t.url, 'contracts-cap-other');
    expect((await call(t.url, 'POST', `/api/chain/${other.slug}/contracts`, EXAMPLES[0]!.contract, bearer(other.key))).status).toBe(201);
  }, 60_000);
});

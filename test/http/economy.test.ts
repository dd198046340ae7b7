// The economy over HTTP on real nodes: the exact 80/20 split and the cost table.
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/kernel/clock.js';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { runCliAsync } from '../helpers/cli.js';

const cli = runCliAsync;

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

  it("the totals and the identities' running totals survive a restart", async () => {
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
      agent_append: 1,
      genesis: 50,
      agent_refused_transition: 1,
    });
    expect(r.body.split).toMatchObject({ burned_percent: 80, foundation_percent: 20 });
    // Stream ticks, batch items and reactor steps are priced as the compute or solver run they seal; the rest is free.
    const notes = Object.fromEntries(r.body.costs.map((c: { action: string; note?: string }) => [c.action, c.note ?? '']));
    for (const action of ['compute', 'solver']) for (const what of ['stream', 'batch', 'reactor']) expect(notes[action]).toContain(what);
    for (const what of ['chain events', 'contract deployment', 'webhooks', 'daily claim']) expect(r.body.free.join('; ')).toContain(what);
    const d = await call(t.url, 'GET', '/api');
    expect(d.body.costs).toEqual(r.body);
    expect(d.body.endpoints).toContainEqual({ method: 'GET', path: '/api/tally/costs' });
  });

  it('creating a state machine costs 50; a wallet that cannot pay gets 402 and nothing is created', async () => {
    const id = await zkIdentity(t.url, 'costs-machine');
    const ok = await call(t.url, 'POST', '/api/chain/state-machines', { slug: 'paid-machine-one' }, bearer(id.key));
    expect(ok.status).toBe(201);
    expect(ok.body.tally_charge).toMatchObject({
      action: 'state_machine_creation',
      cost: 50,
      charged: 50,
      burned: 40,
      foundation: 10,
      funded_by: 'free',
      balance_after: { free: 10, paid: 0 },
    });
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(id.key))).body.total).toBe(10);
    const refused = await call(t.url, 'POST', '/api/chain/state-machines', { slug: 'paid-machine-two' }, bearer(id.key));
    expectError(refused, 402, 'INSUFFICIENT_BALANCE');
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(id.key))).body.total).toBe(10);
    expectError(await call(t.url, 'GET', '/api/chain/paid-machine-two/explore', undefined, bearer(id.key)), 404, 'SVC_NOT_FOUND');
    // The first one exists and its admin key works.
    expect((await call(t.url, 'GET', '/api/chain/paid-machine-one/explore', undefined, bearer(ok.body.admin_key))).status).toBe(200);
    expect((await call(t.url, 'GET', '/api/transparency/revenue')).body).toMatchObject({ burned: 40, foundation: 10 });
    // Concurrent creations never overdraw: with 60 credits, one of five at once is made.
    const rich = await zkIdentity(t.url, 'costs-machine-race');
    const tries = await Promise.all(
      [1, 2, 3, 4, 5].map((i) => call(t.url, 'POST', '/api/chain/state-machines', { slug: `race-machine-${i}` }, bearer(rich.key))),
    );
    expect(tries.filter((r) => r.status === 201)).toHaveLength(1);
    for (const r of tries.filter((x) => x.status !== 201)) expectError(r, 402, 'INSUFFICIENT_BALANCE');
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(rich.key))).body.total).toBe(10);
    expect((await call(t.url, 'GET', '/api/transparency/revenue')).body).toMatchObject({ burned: 80, foundation: 20 });
    // After a restart the charge is still there (written in the creation's batch).
    t = await t.restart();
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(id.key))).body.total).toBe(10);
  }, 60_000);
});

describe('operator grants', () => {
  let t: TestNode;
  let token: string;
  beforeAll(async () => {
    t = await startTestNode({}, { initialCredits: 5 });
    token = (await readFile(join(t.dataDir, 'operator-token'), 'utf8')).trim();
  });
  afterAll(async () => t.destroy());

  it('the operator token is made once, 0600, and kept across restarts', async () => {
    expect(token).toMatch(/^op_[0-9a-f]{64}$/);
    expect((await stat(join(t.dataDir, 'operator-token'))).mode & 0o777).toBe(0o600);
    t = await t.restart();
    expect((await readFile(join(t.dataDir, 'operator-token'), 'utf8')).trim()).toBe(token);
  }, 60_000);

  it('grants paid credits and a tier with the operator token only; paid-funded envelopes are movable', async () => {
    const id = await zkIdentity(t.url, 'grant-one');
    const other = await zkIdentity(t.url, 'grant-other');
    const body = { zid: id.zid, credits: 100, tier: 'standard' };
    expectError(await call(t.url, 'POST', '/api/tally/grants', body), 401, 'SVC_NO_KEY');
    expectError(await call(t.url, 'POST', '/api/tally/grants', body, bearer(`op_${'0'.repeat(64)}`)), 401, 'SVC_INVALID_KEY');
    // An identity's own key is not the operator's.
    expectError(await call(t.url, 'POST', '/api/tally/grants', body, bearer(id.key)), 401, 'SVC_INVALID_KEY');
    expectError(await call(t.url, 'POST', '/api/tally/grants', { ...body, credits: -1 }, bearer(token)), 400, 'SVC_INVALID_INPUT');
    expectError(await call(t.url, 'POST', '/api/tally/grants', { ...body, tier: 'gold' }, bearer(token)), 400, 'SVC_INVALID_INPUT');
    expectError(await call(t.url, 'POST', '/api/tally/grants', { zid: id.zid, credits: 0 }, bearer(token)), 400, 'SVC_INVALID_INPUT');
    expectError(await call(t.url, 'POST', '/api/tally/grants', { ...body, zid: `zid_${'a'.repeat(32)}` }, bearer(token)), 404, 'SVC_NOT_FOUND');
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(id.key))).body).toMatchObject({ free: 5, paid: 0 });

    const g = await call(t.url, 'POST', '/api/tally/grants', body, bearer(token));
    expect(g.status).toBe(201);
    expect(g.body).toMatchObject({ zid: id.zid, credits: 100, tier: 'standard', balance: { free: 5, paid: 100, total: 105 } });
    expect(g.body.grant_id).toMatch(/^grant_[0-9a-f]{32}$/);
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(id.key))).body).toMatchObject({ free: 5, paid: 100, total: 105 });
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(other.key))).body).toMatchObject({ free: 5, paid: 0 });
    // The grant is a row of the identity's audit chain, and the chain still validates.
    const rows = (await call(t.url, 'GET', `/api/chain/${id.slug}/explore?from=1`, undefined, bearer(id.key))).body.rows;
    expect(rows.at(-1)).toMatchObject({ transitionType: 'credit_grant', seq: g.body.audit.seq, hash: g.body.audit.hash });
    expect((await call(t.url, 'GET', `/api/chain/${id.slug}/pohc/validate`, undefined, bearer(id.key))).body.valid).toBe(true);

    // Free credits are spent first: a cost-1 charge from free is soulbound; a charge that needs paid credits is movable.
    const free = await call(t.url, 'POST', '/api/svc/compute', cost1, bearer(id.key));
    expect(free.body.tally_charge.funded_by).toBe('free');
    expect(free.body.envelope).toMatchObject({ funding: 'free', soulbound: true });
    const paid = await call(t.url, 'POST', '/api/svc/heat', {}, bearer(id.key));
    expect(paid.status).toBe(200);
    expect(paid.body.tally_charge).toMatchObject({ cost: 10, funded_by: 'paid', balance_after: { free: 0, paid: 94 } });
    expect(paid.body.envelope).toMatchObject({ funding: 'paid', soulbound: false });

    // The grant and the tier survive a restart.
    t = await t.restart();
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(id.key))).body).toMatchObject({ free: 0, paid: 94 });
    expect(t.node.tiers.of(id.zid)).toBe('standard');
    expect(t.node.tiers.of(other.zid)).toBe('free');
  }, 120_000);

  it('50 grants at once all land, each once', async () => {
    const id = await zkIdentity(t.url, 'grant-many');
    const rs = await Promise.all(Array.from({ length: 50 }, () => call(t.url, 'POST', '/api/tally/grants', { zid: id.zid, credits: 3 }, bearer(token))));
    for (const r of rs) expect(r.status).toBe(201);
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(id.key))).body).toMatchObject({ free: 5, paid: 150 });
    const rows = (await call(t.url, 'GET', `/api/chain/${id.slug}/explore?from=1&to=100`, undefined, bearer(id.key))).body.rows;
    expect(rows.filter((r: { transitionType: string }) => r.transitionType === 'credit_grant')).toHaveLength(50);
    expect((await call(t.url, 'GET', `/api/chain/${id.slug}/pohc/validate`, undefined, bearer(id.key))).body.valid).toBe(true);
  }, 60_000);

  it('a grant for an identity homed on another node is refused, naming the home; nothing is written here', async () => {
    // A remote identity as this node knows it from a peer's signed assertion: a stub with its home.
    const zid = `zid_${'b'.repeat(32)}`;
    const home = '12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo';
    await t.node.store.commit([
      { type: 'put', sub: t.node.store.sub('identities'), key: zid, value: { zid, kind: 'remote', home, salt: '', created_unix_ms: 0 } },
    ]);
    t.node.identity.identityRecordWritten(zid);
    const e = expectError(await call(t.url, 'POST', '/api/tally/grants', { zid, credits: 10 }, bearer(token)), 409, 'SVC_CONFLICT');
    expect(e).toMatchObject({ home, home_url: null });
    expect(e.message).toContain(home);
    expect(await t.node.ledger.wallet(zid)).toMatchObject({ paid: 0 });
  });

  it('svc-node grant calls the route with the token from the data dir or --token, and keys shows the token', async () => {
    const id = await zkIdentity(t.url, 'grant-cli');
    const r = await cli(['grant', '--url', t.url, '--zid', id.zid, '--credits', '40', '--data-dir', t.dataDir]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ zid: id.zid, credits: 40, tier: 'free', balance: { paid: 40 } });
    const r2 = await cli(['grant', '--url', t.url, '--zid', id.zid, '--credits', '2', '--tier', 'professional', '--token', token]);
    expect(r2.status).toBe(0);
    expect(JSON.parse(r2.stdout)).toMatchObject({ credits: 2, tier: 'professional', balance: { paid: 42 } });
    const bad = await cli(['grant', '--url', t.url, '--zid', id.zid, '--credits', '2', '--token', `op_${'1'.repeat(64)}`]);
    expect(bad.status).toBe(1);
    expect(JSON.parse(bad.stdout).error.code).toBe('SVC_INVALID_KEY');
    const keys = await cli(['keys', '--data-dir', t.dataDir]);
    expect(JSON.parse(keys.stdout).operatorToken).toBe(token);
  }, 120_000);
});

describe('daily claim', () => {
  let t: TestNode;
  // A fixed hour, so the address's hourly count cannot roll over mid-test.
  const start = BigInt(Date.parse('2026-11-25T10:05:00Z')) * 1_000_000n;
  const clock = new ManualClock(start);
  const overrides = { limits: { claimThreshold: 10, claimDifficultyBits: 4 } };
  let a: { zid: string; key: string; slug: string };
  beforeAll(async () => {
    t = await startTestNode(overrides, { initialCredits: 0, clock });
    a = await zkIdentity(t.url, 'claim-a');
  });
  afterAll(async () => t.destroy());

  /** SHA-256(challenge:nonce)'s leading zero bits, counted here independently of the node's code. */
  const zeroBits = (challenge: string, nonce: string): number => {
    const hex = createHash('sha256').update(`${challenge}:${nonce}`).digest('hex');
    const bin = [...hex].map((h) => parseInt(h, 16).toString(2).padStart(4, '0')).join('');
    return bin.indexOf('1') < 0 ? 256 : bin.indexOf('1');
  };
  const solve = (challenge: string, difficulty: number, wantPass = true): string => {
    for (let n = 0; ; n++) if (zeroBits(challenge, `n${n}`) >= difficulty === wantPass) return `n${n}`;
  };

  it('offers a challenge below the threshold; wrong, altered, foreign and stale proofs are 400; a good one lands 128 free credits with its audit row', async () => {
    const st = await call(t.url, 'GET', '/api/tally/claim', undefined, bearer(a.key));
    expect(st.status).toBe(200);
    expect(st.body).toMatchObject({ claimable: true, reason: 'claimable', amount: 128, threshold: 10, difficulty: 4, balance: { free: 0, paid: 0, total: 0 } });
    const challenge: string = st.body.challenge;
    expect(challenge).toMatch(/^c1\.2026-11-25T10\.4\.\d{13}\.[0-9a-f]{32}$/);
    const claimWith = (body: unknown, key = a.key) => call(t.url, 'POST', '/api/tally/claim', body, bearer(key));

    expect(expectError(await claimWith({ challenge, nonce: solve(challenge, 4, false) }), 400, 'SVC_BAD_REQUEST').reason).toBe('insufficient_work');
    // An easier difficulty written into the challenge breaks its mac.
    const easier = challenge.replace('T10.4.', 'T10.0.');
    expect(expectError(await claimWith({ challenge: easier, nonce: '0' }), 400, 'SVC_BAD_REQUEST').reason).toBe('invalid_challenge');
    // A challenge made for another identity does not work for this one.
    const b = await zkIdentity(t.url, 'claim-b');
    const forB: string = (await call(t.url, 'GET', '/api/tally/claim', undefined, bearer(b.key))).body.challenge;
    expect(expectError(await claimWith({ challenge: forB, nonce: solve(forB, 4) }), 400, 'SVC_BAD_REQUEST').reason).toBe('invalid_challenge');
    expectError(await claimWith({ challenge, nonce: '' }), 400, 'SVC_INVALID_INPUT');
    // Ten minutes later the challenge is stale.
    clock.set(start + 11n * 60_000_000_000n);
    expect(expectError(await claimWith({ challenge, nonce: solve(challenge, 4) }), 400, 'SVC_BAD_REQUEST').reason).toBe('stale_challenge');
    clock.set(start);
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(a.key))).body.total).toBe(0);

    const nonce = solve(challenge, 4);
    const ok = await claimWith({ challenge, nonce });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ zid: a.zid, amount: 128, day: '2026-11-25', balance: { free: 128, paid: 0, total: 128 } });
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(a.key))).body).toMatchObject({ free: 128, paid: 0 });
    const rows = (await call(t.url, 'GET', `/api/chain/${a.slug}/explore?from=1`, undefined, bearer(a.key))).body.rows;
    expect(rows.at(-1)).toMatchObject({ transitionType: 'daily_claim', hash: ok.body.audit.hash });
    // Reusing the proof (or any second claim today) is refused.
    expect(expectError(await claimWith({ challenge, nonce }), 400, 'SVC_BAD_REQUEST').reason).toBe('already_claimed_today');
    expect((await call(t.url, 'GET', '/api/tally/claim', undefined, bearer(a.key))).body).toMatchObject({
      claimable: false,
      reason: 'already_claimed_today',
      challenge: null,
    });
  }, 120_000);

  it('claims sent at once for one identity land once', async () => {
    const id = await zkIdentity(t.url, 'claim-race');
    const sts = await Promise.all(Array.from({ length: 6 }, () => call(t.url, 'GET', '/api/tally/claim', undefined, bearer(id.key))));
    const rs = await Promise.all(
      sts.map((st) =>
        call(t.url, 'POST', '/api/tally/claim', { challenge: st.body.challenge, nonce: solve(st.body.challenge, st.body.difficulty) }, bearer(id.key)),
      ),
    );
    expect(rs.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of rs.filter((x) => x.status !== 200)) expect(expectError(r, 400, 'SVC_BAD_REQUEST').reason).toBe('already_claimed_today');
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(id.key))).body.total).toBe(128);
  }, 60_000);

  it('is refused above the threshold, and once a day survives a restart', async () => {
    const rich = await zkIdentity(t.url, 'claim-rich');
    const before: string = (await call(t.url, 'GET', '/api/tally/claim', undefined, bearer(rich.key))).body.challenge;
    const token = (await readFile(join(t.dataDir, 'operator-token'), 'utf8')).trim();
    expect((await call(t.url, 'POST', '/api/tally/grants', { zid: rich.zid, credits: 10 }, bearer(token))).status).toBe(201);
    expect((await call(t.url, 'GET', '/api/tally/claim', undefined, bearer(rich.key))).body).toMatchObject({
      claimable: false,
      reason: 'balance_not_low',
      challenge: null,
    });
    expect(
      expectError(await call(t.url, 'POST', '/api/tally/claim', { challenge: before, nonce: solve(before, 4) }, bearer(rich.key)), 400, 'SVC_BAD_REQUEST')
        .reason,
    ).toBe('balance_not_low');

    t = await t.restart();
    expect((await call(t.url, 'GET', '/api/tally/claim', undefined, bearer(a.key))).body).toMatchObject({ claimable: false, reason: 'already_claimed_today' });
    // The next UTC day, once the balance is low again, a's claim opens.
    clock.set(start + 24n * 3_600_000_000_000n);
    for (let i = 0; i < 12; i++) expect((await call(t.url, 'POST', '/api/svc/heat', {}, bearer(a.key))).status).toBe(200);
    const st = await call(t.url, 'GET', '/api/tally/claim', undefined, bearer(a.key));
    expect(st.body).toMatchObject({ claimable: true, balance: { total: 8 } });
    expect(
      (await call(t.url, 'POST', '/api/tally/claim', { challenge: st.body.challenge, nonce: solve(st.body.challenge, st.body.difficulty) }, bearer(a.key))).body
        .balance.total,
    ).toBe(136);
    clock.set(start);
  }, 180_000);

  it('per address: base difficulty for 32 claims an hour, harder beyond, 429 with Retry-After past 64; the count survives a restart', async () => {
    clock.set(start + 2n * 24n * 3_600_000_000_000n); // a fresh day and hour for this address
    const difficulties: number[] = [];
    for (let i = 1; i <= 65; i++) {
      const id = await zkIdentity(t.url, `claim-many-${i}`);
      const st = await call(t.url, 'GET', '/api/tally/claim', undefined, bearer(id.key));
      if (i === 65) {
        expect(st.body).toMatchObject({ claimable: false, reason: 'hourly_cap', challenge: null });
        const forged = await call(
          t.url,
          'POST',
          '/api/tally/claim',
          { challenge: 'c1.2026-11-27T10.4.1795000000000.' + '0'.repeat(32), nonce: '1' },
          bearer(id.key),
        );
        const e = expectError(forged, 429, 'SVC_RATE_LIMIT');
        expect(e).toMatchObject({ limit: 64, window_seconds: 3600, retry_after_seconds: 55 * 60 });
        expect(forged.headers.get('retry-after')).toBe(String(55 * 60));
        break;
      }
      expect(st.body.claimable).toBe(true);
      difficulties.push(st.body.difficulty);
      const r = await call(
        t.url,
        'POST',
        '/api/tally/claim',
        { challenge: st.body.challenge, nonce: solve(st.body.challenge, st.body.difficulty) },
        bearer(id.key),
      );
      expect(r.status).toBe(200);
      if (i === 40) {
        // The hour's count is a counter written with each claim: a restart keeps it.
        t = await t.restart();
      }
    }
    expect(difficulties.slice(0, 32)).toEqual(Array(32).fill(4));
    // One more bit per 4 claims past 32: the 33rd … 36th need 5 bits, the 61st … 64th 12.
    expect(difficulties.slice(32)).toEqual(Array.from({ length: 32 }, (_, k) => 4 + Math.ceil((k + 1) / 4)));
  }, 300_000);

  it('svc-node claim solves the proof for a terminal user', async () => {
    clock.set(start + 3n * 24n * 3_600_000_000_000n);
    const id = await zkIdentity(t.url, 'claim-cli');
    const r = await cli(['claim', '--url', t.url, '--key', id.key]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ zid: id.zid, amount: 128, balance: { free: 128 } });
    const again = await cli(['claim', '--url', t.url, '--key', id.key]);
    expect(again.status).toBe(1);
    expect(JSON.parse(again.stdout)).toMatchObject({ claimable: false, reason: 'already_claimed_today' });
  }, 120_000);
});

describe('folder moves', () => {
  let t: TestNode;
  let id: { zid: string; key: string; slug: string };
  const tokens: string[] = [];
  beforeAll(async () => {
    t = await startTestNode({}, { initialCredits: 2000 });
    id = await zkIdentity(t.url, 'folders-one');
    for (let i = 0; i < 30; i++) tokens.push((await call(t.url, 'POST', '/api/svc/compute', cost1, bearer(id.key))).body.envelope.token_id);
  }, 120_000);
  afterAll(async () => t.destroy());

  const move = (body: unknown, key = id.key) => call(t.url, 'POST', '/api/tally/envelopes/folder', body, bearer(key));
  const folders = async (): Promise<Record<string, number>> =>
    Object.fromEntries(
      (await call(t.url, 'GET', `/api/tally/envelopes/${id.zid}/folders`, undefined, bearer(id.key))).body.folders.map(
        (f: { folder: string; count: number }) => [f.folder, f.count],
      ),
    );
  /** Each folder's envelopes as listed (the records themselves, not the counters). */
  const listed = async (folder: string): Promise<{ total: number; items: { token_id: string; folder: string; soulbound: boolean }[] }> =>
    (await call(t.url, 'GET', `/api/tally/envelopes/${id.zid}?folder=${encodeURIComponent(folder)}&limit=500`, undefined, bearer(id.key))).body;
  /** Counters agree with the records: every folder's count is the number of envelopes listed in it, and all 30 are somewhere. */
  const expectExact = async (expected: Record<string, number>) => {
    expect(await folders()).toEqual(expected);
    let sum = 0;
    for (const [folder, count] of Object.entries(expected)) {
      const l = await listed(folder);
      expect(l.total).toBe(count);
      expect(l.items).toHaveLength(count);
      for (const e of l.items) expect(e.folder).toBe(folder);
      sum += count;
    }
    expect(sum).toBe(30);
  };

  it('moves by count, by token id, from a folder and by q, soulbound envelopes included', async () => {
    const r = await move({ folder: 'vault', count: 10 });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ zid: id.zid, folder: 'vault', moved: 10 });
    await expectExact({ inbox: 20, vault: 10 });
    // Oldest first; free-funded envelopes are soulbound and move all the same.
    const vault = await listed('vault');
    expect(new Set(vault.items.map((e) => e.token_id))).toEqual(new Set(tokens.slice(0, 10)));
    expect(vault.items.every((e) => e.soulbound)).toBe(true);

    expect((await move({ folder: 'my archive', token_ids: [tokens[0], tokens[1], tokens[29]] })).body.moved).toBe(3);
    await expectExact({ inbox: 19, vault: 8, 'my archive': 3 });
    // Already there: nothing to move.
    expect((await move({ folder: 'my archive', token_ids: [tokens[0]] })).body.moved).toBe(0);
    expect((await move({ folder: 'inbox', from_folder: 'vault', count: 1000 })).body.moved).toBe(8);
    await expectExact({ inbox: 27, 'my archive': 3 });
    expect((await move({ folder: 'x', count: 1, q: tokens[5] })).body.moved).toBe(1);
    expect((await listed('x')).items.map((e) => e.token_id)).toEqual([tokens[5]]);
    await expectExact({ inbox: 26, 'my archive': 3, x: 1 });
  }, 60_000);

  it('bad folder names, unknown and foreign token ids are 400 naming them; nothing moves', async () => {
    const other = await zkIdentity(t.url, 'folders-other');
    const foreign = (await call(t.url, 'POST', '/api/svc/compute', cost1, bearer(other.key))).body.envelope.token_id;
    const before = await folders();
    let e = expectError(await move({ folder: 'a!b', count: 1 }), 400, 'SVC_INVALID_INPUT');
    expect(e.field).toBe('folder');
    expect(e.message).toContain('a!b');
    e = expectError(await move({ folder: 'ok', from_folder: '', count: 1 }), 400, 'SVC_INVALID_INPUT');
    expect(e.field).toBe('from_folder');
    const unknown = `env_${'0'.repeat(24)}`;
    e = expectError(await move({ folder: 'ok', token_ids: [tokens[3], unknown] }), 400, 'SVC_INVALID_INPUT');
    expect(e).toMatchObject({ field: 'token_ids', token_id: unknown });
    expect(e.message).toContain(unknown);
    e = expectError(await move({ folder: 'ok', token_ids: [foreign] }), 400, 'SVC_INVALID_INPUT');
    expect(e).toMatchObject({ field: 'token_ids', token_id: foreign });
    e = expectError(await move({ folder: 'ok', token_ids: ['nope'] }), 400, 'SVC_INVALID_INPUT');
    expect(e.token_id).toBe('nope');
    expectError(await move({ folder: 'ok', token_ids: [tokens[3]], count: 1 }), 400, 'SVC_INVALID_INPUT');
    expectError(await move({ folder: 'ok' }), 400, 'SVC_INVALID_INPUT');
    // The other identity cannot move these envelopes either.
    expectError(await move({ folder: 'mine', token_ids: [tokens[3]] }, other.key), 400, 'SVC_INVALID_INPUT');
    expect(await folders()).toEqual(before);
  }, 60_000);

  it('concurrent moves keep the counts exact, and they survive a restart', async () => {
    const names = ['a', 'b', 'c', 'inbox'];
    const rs = await Promise.all(Array.from({ length: 16 }, (_, i) => move({ folder: names[i % 4], count: 1 + (i % 7) })));
    for (const r of rs) expect(r.status).toBe(200);
    const after = await folders();
    await expectExact(after);
    t = await t.restart();
    await expectExact(after);
    expect((await move({ folder: 'inbox', count: 30 })).status).toBe(200);
    await expectExact({ inbox: 30 });
  }, 120_000);
});

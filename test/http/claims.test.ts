// Unique names under concurrency: a slug, an email, an equation digest is claimed by exactly one
// of many parallel callers; the others get 409 SVC_CONFLICT in the part-7 shape. The default-slug space (m-…) is not
// open to callers, so no registration can be handed a machine someone else made.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type Reply, type TestNode } from '../helpers/node.js';
import { failNextBatch } from '../helpers/fail-batch.js';
import { keyDigest } from '../../src/identity/keys.js';
import type { MachineRecord } from '../../src/chain/service.js';

const PARALLEL = 100;
let t: TestNode;
beforeAll(async () => {
  t = await startTestNode();
});
afterAll(async () => t.destroy());

/** Exactly one 201; every other reply a part-7 409 SVC_CONFLICT naming `field`. Returns the winner. */
function oneWinner(replies: Reply[], field: string): Reply {
  const won = replies.filter((r) => r.status === 201);
  expect(won.length, replies.map((r) => r.status).join(',')).toBe(1);
  for (const r of replies) {
    if (r.status === 201) continue;
    const e = expectError(r, 409, 'SVC_CONFLICT');
    expect(e.field).toBe(field);
  }
  return won[0]!;
}

const equation = (seed: string) => createHash('sha256').update(`equation:${seed}`).digest('hex');

describe(`${PARALLEL} parallel claims of one name`, () => {
  it('one slug, 100 keys of 10 identities: one 201, 99 × 409; only the winner owns and reads the machine', async () => {
    // 10 identities with 10 sk_ keys each (registration runs scrypt: 100 of them would take the test's time).
    const owners = await Promise.all(Array.from({ length: 10 }, (_, i) => zkIdentity(t.url, `slug-race-${i}`)));
    const ids: { zid: string; key: string }[] = [];
    for (const o of owners)
      for (let k = 0; k < PARALLEL / owners.length; k++) ids.push({ zid: o.zid, key: (await t.node.identity.mintKeyFor(o.zid, 'sk', null)).key });
    const replies = await Promise.all(ids.map((id) => call(t.url, 'POST', '/api/chain/state-machines', { slug: 'contested' }, bearer(id.key))));
    const won = oneWinner(replies, 'slug');
    const winner = ids[replies.indexOf(won)]!;
    const m = (await t.node.chain.getMachine('contested'))!;
    expect(m.owner).toBe(winner.zid);
    expect(Object.keys(m.roles)).toEqual([winner.zid]);
    expect(m.key_digest).toBe(keyDigest(won.body.admin_key));
    expect((await call(t.url, 'GET', '/api/chain/contested/pohc/validate', undefined, bearer(won.body.admin_key))).status).toBe(200);
    const loser = ids.find((id) => id.zid !== winner.zid)!;
    expectError(await call(t.url, 'GET', '/api/chain/contested/pohc/validate', undefined, bearer(loser.key)), 403, 'SVC_FORBIDDEN');
  }, 60_000);

  it('one equation digest on register-v3: one 201 and one admin key; 99 × 409', async () => {
    const digest = equation('v3-race');
    const replies = await Promise.all(Array.from({ length: PARALLEL }, () => call(t.url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: digest })));
    const won = oneWinner(replies, 'equation_sha256');
    const zid = `zid_${digest.slice(0, 32)}`;
    expect(won.body.zid).toBe(zid);
    const keys = (await t.node.store.range<{ zid: string; kind: string }>(t.node.store.sub('keys'))).filter((k) => k.value.zid === zid);
    expect(keys.map((k) => k.key)).toEqual([keyDigest(won.body.admin_key)]);
    expect((await t.node.chain.getMachine(won.body.state_machine.slug))!.key_digest).toBe(keyDigest(won.body.admin_key));
  }, 60_000);

  it('one email on /api/auth/register: one 201 and one ZID; 99 × 409', async () => {
    const replies = await Promise.all(
      Array.from({ length: PARALLEL }, (_, i) => call(t.url, 'POST', '/api/auth/register', { email: 'Race@Example.org', password: `password number ${i}` })),
    );
    const won = oneWinner(replies, 'email');
    const all = await t.node.store.range<{ email?: string; zid: string }>(t.node.store.sub('identities'));
    expect(all.filter((r) => r.value.email === 'race@example.org').map((r) => r.value.zid)).toEqual([won.body.zid]);
    // The password that won is the one that logs in.
    const i = replies.indexOf(won);
    expect((await call(t.url, 'POST', '/api/auth/login', { email: 'race@example.org', password: `password number ${i}` })).status).toBe(200);
  }, 60_000);
});

describe('the default-slug space', () => {
  it('m-… slugs cannot be chosen: 400 naming slug, so no registration is handed a machine made by another identity', async () => {
    const squatter = await zkIdentity(t.url, 'squatter');
    const victimDigest = equation('victim');
    const victimSlug = `m-${victimDigest.slice(0, 16)}`;
    const e = expectError(await call(t.url, 'POST', '/api/chain/state-machines', { slug: victimSlug }, bearer(squatter.key)), 400, 'SVC_INVALID_INPUT');
    expect(e.field).toBe('slug');
    expectError(await call(t.url, 'POST', '/api/chain/state-machines', { slug: 'm-anything' }, bearer(squatter.key)), 400, 'SVC_INVALID_INPUT');
    expect(await t.node.chain.getMachine(victimSlug)).toBeUndefined();

    const victim = await call(t.url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: victimDigest });
    expect(victim.status).toBe(201);
    expect(victim.body.state_machine.slug).toBe(victimSlug);
    expect(await t.node.chain.getMachine(victimSlug)).toMatchObject({ owner: victim.body.zid, roles: { [victim.body.zid]: 'owner' } });
    expectError(await call(t.url, 'GET', `/api/chain/${victimSlug}/pohc/validate`, undefined, bearer(squatter.key)), 403, 'SVC_FORBIDDEN');
    // Ordinary slugs still work.
    expect((await call(t.url, 'POST', '/api/chain/state-machines', { slug: 'my-own-machine' }, bearer(squatter.key))).status).toBe(201);
  });

  it('a machine already stored under a default slug (data from before the rule) is not taken over: the registration gets another slug', async () => {
    const squatter = await zkIdentity(t.url, 'legacy-squatter');
    const digest = equation('legacy-victim');
    const slug = `m-${digest.slice(0, 16)}`;
    const legacy: MachineRecord = {
      slug,
      owner: squatter.zid,
      genesis_svcond: 1,
      is_public: false,
      key_digest: 'f'.repeat(64),
      roles: { [squatter.zid]: 'owner' },
      inject_agent_rail: false,
      inject_pulse_orb: false,
      home: t.node.nodeId,
      created_unix_ms: 1,
    };
    await t.node.store.commit(t.node.chain.machineOps(legacy));
    const r = await call(t.url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: digest });
    expect(r.status, r.text).toBe(201);
    expect(r.body.state_machine.slug).not.toBe(slug);
    expect(r.body.state_machine.slug).toMatch(/^m-/);
    expect(await t.node.chain.getMachine(slug)).toEqual(legacy);
    expect(await t.node.chain.getMachine(r.body.state_machine.slug)).toMatchObject({ owner: r.body.zid });
    const who = await call(t.url, 'GET', '/api/auth/whoami', undefined, bearer(r.body.admin_key));
    expect(who.body.machine).toBe(r.body.state_machine.slug);
  });
});

describe('a claim whose batch fails is let go', () => {
  it('slug, email and equation can be claimed again after a failed write', async () => {
    const n = await startTestNode();
    try {
      const id = await zkIdentity(n.url, 'failing-claims');
      failNextBatch(n, 0);
      expect((await call(n.url, 'POST', '/api/chain/state-machines', { slug: 'second-try' }, bearer(id.key))).status).toBe(503);
      expect((await call(n.url, 'POST', '/api/chain/state-machines', { slug: 'second-try' }, bearer(id.key))).status).toBe(201);
      failNextBatch(n, 0);
      expect((await call(n.url, 'POST', '/api/auth/register', { email: 'again@example.org', password: 'long enough pw' })).status).toBe(503);
      expect((await call(n.url, 'POST', '/api/auth/register', { email: 'again@example.org', password: 'long enough pw' })).status).toBe(201);
      failNextBatch(n, 0);
      const digest = equation('failing-v3');
      expect((await call(n.url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: digest })).status).toBe(503);
      expect((await call(n.url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: digest })).status).toBe(201);
      expectError(await call(n.url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: digest }), 409, 'SVC_CONFLICT');
    } finally {
      await n.destroy();
    }
  });
});

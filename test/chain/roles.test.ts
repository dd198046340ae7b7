// The role matrix over HTTP: every role (and a stranger) × every action, allowed or refused with the right code.
// The expected outcome comes from ROLE_MATRIX itself (the single source of truth); each action is a real request.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { CHAIN_ACTIONS, ROLE_MATRIX, ROLES, type ChainAction, type Role } from '../../src/chain/roles.js';

let t: TestNode;
const ids: Record<string, { zid: string; key: string }> = {};
const SLUG = 'roles-book';

/** Actions whose routes are not served yet. */
const PENDING = new Set<ChainAction>([]);
type Who = Role | 'stranger';
const WHO: Who[] = [...ROLES, 'stranger'];

/** One request per action; `n` makes each call distinct. */
const ACTIONS: Record<ChainAction, (key: string, n: number) => Promise<{ status: number; text: string; body: any }>> = {
  read: (key) => call(t.url, 'GET', `/api/chain/${SLUG}/explore`, undefined, bearer(key)),
  append: (key, n) => call(t.url, 'POST', `/api/chain/${SLUG}/events`, { payload: { n } }, bearer(key)),
  deploy: (key, n) =>
    call(
      t.url,
      'POST',
      `/api/chain/${SLUG}/contracts`,
      { name: `c${n}`, initial: 'a', states: ['a', 'b'], transitions: [{ from: 'a', on: 'go', to: 'b' }] },
      bearer(key),
    ),
  transition: (key) => call(t.url, 'POST', `/api/chain/${SLUG}/contracts/${ids.contract!.key}/transition`, { event: { type: 'noop' } }, bearer(key)),
  settings: (key) => call(t.url, 'PATCH', `/api/chain/${SLUG}/settings`, { inject_pulse_orb: false }, bearer(key)),
  grant_member: (key) => call(t.url, 'PATCH', `/api/chain/${SLUG}/settings`, { roles: { [ids.extra!.zid]: 'viewer' } }, bearer(key)),
  grant_admin: (key) => call(t.url, 'PATCH', `/api/chain/${SLUG}/settings`, { roles: { [ids.extra!.zid]: 'admin' } }, bearer(key)),
  embed_keys: (key) => call(t.url, 'POST', `/api/chain/${SLUG}/embed-keys`, {}, bearer(key)),
  tally: (key) => call(t.url, 'GET', `/api/chain/${SLUG}/tally/charges`, undefined, bearer(key)),
};

beforeAll(async () => {
  t = await startTestNode({}, { initialCredits: 1000 });
  for (const who of [...WHO, 'extra']) ids[who] = await zkIdentity(t.url, `roles-${who}`);
  const made = await call(t.url, 'POST', '/api/chain/state-machines', { slug: SLUG }, bearer(ids.owner!.key));
  expect(made.status, made.text).toBe(201);
  const roles = { [ids.viewer!.zid]: 'viewer', [ids.operator!.zid]: 'operator', [ids.admin!.zid]: 'admin' };
  const r = await call(t.url, 'PATCH', `/api/chain/${SLUG}/settings`, { roles }, bearer(ids.owner!.key));
  expect(r.status, r.text).toBe(200);
  expect(r.body.roles).toEqual({ ...roles, [ids.owner!.zid]: 'owner' });
  if (PENDING.has('deploy')) return;
  const c = await call(
    t.url,
    'POST',
    `/api/chain/${SLUG}/contracts`,
    { name: 'loop', initial: 's', states: ['s'], transitions: [{ from: 's', on: 'noop', to: 's' }] },
    bearer(ids.owner!.key),
  );
  expect(c.status, c.text).toBe(201);
  ids.contract = { zid: '', key: c.body.contract_id };
}, 60_000);
afterAll(async () => t.destroy());

describe('role matrix', () => {
  let n = 0;
  for (const action of CHAIN_ACTIONS.filter((a) => !PENDING.has(a))) {
    it(`${action}: allowed to ${ROLE_MATRIX[action].join(', ')}; refused to the others with 403`, async () => {
      for (const who of WHO) {
        const r = await ACTIONS[action](ids[who]!.key, n++);
        const ok = who !== 'stranger' && ROLE_MATRIX[action].includes(who);
        if (ok) expect(r.status, `${who} ${action}: ${r.text}`).toBeLessThan(300);
        else expectError(r as never, 403, 'SVC_FORBIDDEN');
        // Put the grantee back, so each role's grant starts from the same state.
        if (action.startsWith('grant_'))
          await call(t.url, 'PATCH', `/api/chain/${SLUG}/settings`, { roles: { [ids.extra!.zid]: null } }, bearer(ids.owner!.key));
      }
    });
  }

  it('a refusal names the action, the role and the roles allowed', async () => {
    const r = await ACTIONS.settings(ids.viewer!.key, 0);
    const e = expectError(r as never, 403, 'SVC_FORBIDDEN');
    expect(e).toMatchObject({ action: 'settings', role: 'viewer', allowed_roles: ['admin', 'owner'] });
  });
});

describe('settings', () => {
  it('the owner role is never granted or taken; a bad zid or role points at its path; no key is 401', async () => {
    const owner = bearer(ids.owner!.key);
    const r1 = await call(t.url, 'PATCH', `/api/chain/${SLUG}/settings`, { roles: { [ids.owner!.zid]: null } }, owner);
    expect(expectError(r1 as never, 400, 'SVC_INVALID_INPUT').field).toBe(`roles.${ids.owner!.zid}`);
    const r2 = await call(t.url, 'PATCH', `/api/chain/${SLUG}/settings`, { roles: { [ids.extra!.zid]: 'owner' } }, owner);
    expectError(r2 as never, 400, 'SVC_INVALID_INPUT');
    const r3 = await call(t.url, 'PATCH', `/api/chain/${SLUG}/settings`, { is_public: 'yes' }, owner);
    expect(expectError(r3 as never, 400, 'SVC_INVALID_INPUT').field).toBe('is_public');
    expectError((await call(t.url, 'PATCH', `/api/chain/${SLUG}/settings`, { is_public: true })) as never, 401, 'SVC_NO_KEY');
    // inject_pulse_orb has no behaviour here: turning it on is refused, naming the field and why; nothing applies.
    const orb = await call(t.url, 'PATCH', `/api/chain/${SLUG}/settings`, { inject_pulse_orb: true, is_public: false }, owner);
    const e = expectError(orb as never, 400, 'SVC_INVALID_INPUT');
    expect(e.field).toBe('inject_pulse_orb');
    expect(e.reason).toContain('the spec does not say what it does');
    expect((await call(t.url, 'GET', `/api/chain/${SLUG}/settings`, undefined, owner)).body.inject_pulse_orb).toBe(false);
    // An admin cannot take another admin's role (grant_admin is the owner's), and nothing of the patch applies.
    const r4 = await call(
      t.url,
      'PATCH',
      `/api/chain/${SLUG}/settings`,
      { inject_agent_rail: true, roles: { [ids.admin!.zid]: 'viewer' } },
      bearer(ids.admin!.key),
    );
    expectError(r4 as never, 403, 'SVC_FORBIDDEN');
    const now = await call(t.url, 'GET', `/api/chain/${SLUG}/settings`, undefined, owner);
    expect(now.body.inject_agent_rail).toBe(false);
    expect(now.body.roles[ids.admin!.zid]).toBe('admin');
  });

  it('is_public opens the machine to anyone and lists it; a revoked role loses read', async () => {
    const owner = bearer(ids.owner!.key);
    expect((await call(t.url, 'GET', `/api/chain/${SLUG}/explore`)).status).toBe(401);
    expect((await call(t.url, 'PATCH', `/api/chain/${SLUG}/settings`, { is_public: true }, owner)).status).toBe(200);
    expect((await call(t.url, 'GET', `/api/chain/${SLUG}/explore`)).status).toBe(200);
    const anon = await call(t.url, 'GET', '/api/chain/aggregate/list');
    expect(anon.body.items.map((i: { slug: string }) => i.slug)).toContain(SLUG);
    expect((await call(t.url, 'PATCH', `/api/chain/${SLUG}/settings`, { is_public: false }, owner)).status).toBe(200);
    expect((await call(t.url, 'GET', '/api/chain/aggregate/list')).body.items.map((i: { slug: string }) => i.slug)).not.toContain(SLUG);
    const temp = await zkIdentity(t.url, 'roles-temp');
    expect((await call(t.url, 'PATCH', `/api/chain/${SLUG}/settings`, { roles: { [temp.zid]: 'viewer' } }, owner)).status).toBe(200);
    expect((await call(t.url, 'GET', `/api/chain/${SLUG}/explore`, undefined, bearer(temp.key))).status).toBe(200);
    expect((await call(t.url, 'PATCH', `/api/chain/${SLUG}/settings`, { roles: { [temp.zid]: null } }, owner)).status).toBe(200);
    expectError((await call(t.url, 'GET', `/api/chain/${SLUG}/explore`, undefined, bearer(temp.key))) as never, 403, 'SVC_FORBIDDEN');
  });
});

describe('aggregate list and tally', () => {
  it("lists the caller's machines (with its role) and the public ones, paged with a real total", async () => {
    const owner = bearer(ids.owner!.key);
    for (const slug of ['agg-b', 'agg-a'])
      expect((await call(t.url, 'POST', '/api/chain/state-machines', { slug, is_public: slug === 'agg-a' }, owner)).status).toBe(201);
    const mine = await call(t.url, 'GET', '/api/chain/aggregate/list?limit=2', undefined, owner);
    expect(mine.status, mine.text).toBe(200);
    expect(mine.body.total).toBe(4); // agg-a, agg-b, roles-book and the default machine
    expect(mine.body.items.map((i: { slug: string }) => i.slug)).toEqual(['agg-a', 'agg-b']);
    expect(mine.body.items[0]).toMatchObject({ role: 'owner', is_public: true });
    const next = await call(t.url, 'GET', '/api/chain/aggregate/list?limit=2&offset=2', undefined, owner);
    expect(next.body.items).toHaveLength(2);
    const viewer = await call(t.url, 'GET', '/api/chain/aggregate/list', undefined, bearer(ids.viewer!.key));
    expect(viewer.body.items.map((i: { slug: string; role: string }) => [i.slug, i.role])).toEqual(
      expect.arrayContaining([
        ['agg-a', null],
        [SLUG, 'viewer'],
      ]),
    );
  });

  it("the machine's tally shows its creation charge (50)", async () => {
    const r = await call(t.url, 'GET', `/api/chain/${SLUG}/tally/charges`, undefined, bearer(ids.owner!.key));
    expect(r.status, r.text).toBe(200);
    const creation = r.body.items.find((c: { action: string }) => c.action === 'state_machine_creation');
    expect(creation).toMatchObject({ seq: 0, cost: 50, zid: ids.owner!.zid });
  });
});

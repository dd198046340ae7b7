// zsm_pub_ embed keys: minted by an admin or the owner, accepted on the machine's embed ingest only (rate-limited
// per key), 401 anywhere else.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { canonicalJson } from '../../src/kernel/canonical.js';
import { EMBED_PER_MINUTE } from '../../src/http/routes/chain.js';
import { embedKeyResponse, embedKeysResponse } from '../../src/http/responses.js';

let t: TestNode;
let owner: { zid: string; key: string; slug: string };
let other: { zid: string; key: string; slug: string };

beforeAll(async () => {
  t = await startTestNode();
  owner = await zkIdentity(t.url, 'embed-owner');
  other = await zkIdentity(t.url, 'embed-other');
});
afterAll(async () => t.destroy());

const mint = async (who: { key: string; slug: string }) => {
  const r = await call(t.url, 'POST', `/api/chain/${who.slug}/embed-keys`, {}, bearer(who.key));
  expect(r.status, r.text).toBe(201);
  expect(r.body.embed_key).toMatch(/^zsm_pub_/);
  return r.body.embed_key as string;
};

describe('embed keys', () => {
  it('ingest appends embed rows committing the payload digest; by header or ?key=', async () => {
    const key = await mint(owner);
    const payload = { page: '/pricing', clicks: 3 };
    const r = await call(t.url, 'POST', `/api/chain/${owner.slug}/embed`, { payload }, bearer(key));
    expect(r.status, r.text).toBe(201);
    expect(r.body.row).toMatchObject({ transitionType: 'embed', payload_sha256: createHash('sha256').update(canonicalJson(payload)).digest('hex') });
    const q = await call(t.url, 'POST', `/api/chain/${owner.slug}/embed?key=${key}`, { payload: 1 });
    expect(q.status, q.text).toBe(201);
  });

  it('only this machine’s embed keys are accepted on the ingest; an embed key anywhere else is 401', async () => {
    const key = await mint(owner);
    const otherKey = await mint(other);
    const ingest = (headers: Record<string, string>) => call(t.url, 'POST', `/api/chain/${owner.slug}/embed`, { payload: 1 }, headers);
    expectError((await ingest({})) as never, 401, 'SVC_NO_KEY');
    expect(expectError((await ingest(bearer(owner.key))) as never, 401, 'SVC_INVALID_KEY').reason).toBe('not an embed key');
    expect(expectError((await ingest(bearer(otherKey))) as never, 401, 'SVC_INVALID_KEY').reason).toBe('embed key of another machine');
    expectError((await ingest(bearer(`zsm_pub_${'Q'.repeat(32)}`))) as never, 401, 'SVC_INVALID_KEY');
    for (const [method, path, body] of [
      ['GET', `/api/chain/${owner.slug}/explore`, undefined],
      ['POST', `/api/chain/${owner.slug}/events`, { payload: 1 }],
      ['POST', `/api/chain/${owner.slug}/embed-keys`, {}],
      ['PATCH', `/api/chain/${owner.slug}/settings`, { is_public: true }],
      ['GET', '/api/tally/balance', undefined],
      ['POST', '/api/svc/compute', { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 1, velocity_m_s: 1 } }],
    ] as const) {
      expectError((await call(t.url, method, path, body, bearer(key))) as never, 401, 'SVC_INVALID_KEY');
    }
  });

  it(`is rate-limited to ${EMBED_PER_MINUTE} rows per minute per key (429 with Retry-After); another key is not affected`, async () => {
    const key = await mint(owner);
    const statuses: number[] = [];
    for (let i = 0; i <= EMBED_PER_MINUTE; i++)
      statuses.push((await call(t.url, 'POST', `/api/chain/${owner.slug}/embed`, { payload: i }, bearer(key))).status);
    expect(statuses.slice(0, EMBED_PER_MINUTE).every((s) => s === 201)).toBe(true);
    const last = await call(t.url, 'POST', `/api/chain/${owner.slug}/embed`, { payload: 'x' }, bearer(key));
    const e = expectError(last as never, 429, 'SVC_RATE_LIMIT');
    expect(e.limit).toBe(EMBED_PER_MINUTE);
    expect(last.headers.get('retry-after')).toBeTruthy();
    const fresh = await mint(owner);
    expect((await call(t.url, 'POST', `/api/chain/${owner.slug}/embed`, { payload: 'y' }, bearer(fresh))).status).toBe(201);
  });

  it('lists a machine’s embed keys (ids only, never the key) and revokes one: 401 on the ingest at once and after a restart', async () => {
    const kept = await mint(owner);
    const gone = await mint(owner);
    const ingest = (key: string) => call(t.url, 'POST', `/api/chain/${owner.slug}/embed`, { payload: 'r' }, bearer(key));
    const list = await call(t.url, 'GET', `/api/chain/${owner.slug}/embed-keys?limit=500`, undefined, bearer(owner.key));
    expect(list.status, list.text).toBe(200);
    expect(list.text).not.toContain(gone.slice(8, 20));
    const idOf = (key: string) => `zsm_pub_${createHash('sha256').update(key).digest('hex').slice(0, 8)}`;
    const listed = (list.body.items as { key_id: string; revoked_at: string | null; minted_by: string }[]).find((k) => k.key_id === idOf(gone));
    expect(listed).toMatchObject({ revoked_at: null, minted_by: owner.zid, kind: 'zsm_pub' });
    expect(list.body.total).toBe(list.body.items.length);
    embedKeysResponse.parse(list.body);
    // A stranger may neither list nor revoke; an unknown id is 404.
    expectError((await call(t.url, 'GET', `/api/chain/${owner.slug}/embed-keys`, undefined, bearer(other.key))) as never, 403, 'SVC_FORBIDDEN');
    expectError(
      (await call(t.url, 'DELETE', `/api/chain/${owner.slug}/embed-keys/${idOf(gone)}`, undefined, bearer(other.key))) as never,
      403,
      'SVC_FORBIDDEN',
    );
    expectError(
      (await call(t.url, 'DELETE', `/api/chain/${owner.slug}/embed-keys/zsm_pub_00000000`, undefined, bearer(owner.key))) as never,
      404,
      'SVC_NOT_FOUND',
    );
    // Another machine's key is not revoked through this one.
    expectError(
      (await call(t.url, 'DELETE', `/api/chain/${other.slug}/embed-keys/${idOf(gone)}`, undefined, bearer(other.key))) as never,
      404,
      'SVC_NOT_FOUND',
    );
    expect((await ingest(gone)).status).toBe(201);
    const revoked = await call(t.url, 'DELETE', `/api/chain/${owner.slug}/embed-keys/${idOf(gone)}`, undefined, bearer(owner.key));
    expect(revoked.status, revoked.text).toBe(200);
    embedKeyResponse.parse(revoked.body);
    expect(revoked.body).toMatchObject({ slug: owner.slug, key_id: idOf(gone), revoked_at: expect.any(String) });
    expect(expectError((await ingest(gone)) as never, 401, 'SVC_INVALID_KEY').reason).toBe('revoked');
    expect((await ingest(kept)).status).toBe(201);
    t = await t.restart();
    expect(expectError((await ingest(gone)) as never, 401, 'SVC_INVALID_KEY').reason).toBe('revoked');
    expect((await ingest(kept)).status).toBe(201);
    const after = await call(t.url, 'GET', `/api/chain/${owner.slug}/embed-keys?limit=500`, undefined, bearer(owner.key));
    expect((after.body.items as { key_id: string; revoked_at: string | null }[]).find((k) => k.key_id === idOf(gone))?.revoked_at).toBe(
      revoked.body.revoked_at,
    );
  });
});

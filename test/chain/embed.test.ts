// zsm_pub_ embed keys: minted by an admin or the owner, accepted on the machine's embed ingest only (rate-limited
// per key), 401 anywhere else.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { canonicalJson } from '../../src/kernel/canonical.js';
import { EMBED_PER_MINUTE } from '../../src/http/routes/chain.js';

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
      ['POST', '/api/svc/compute', { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { m: 1, v: 1 } }],
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
});

// An identity's envelope listing (GET /api/tally/envelopes/:zid) lists the envelopes it owns, whatever its index
// holds: a key left by a copy of a ledger a failover moved (docs/decisions.md "Custody") may point at another
// identity's envelope or at none, and the listing neither shows it nor ends a page early because of it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { padNum } from '../../src/store/db.js';
import { ENVELOPE_SUBS, type EnvelopeRecord } from '../../src/tally/ledger.js';

const kinetic = (mass: number) => ({ domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: mass, velocity_m_s: 3 } });

let t: TestNode;
let a: { zid: string; key: string };
let b: { zid: string; key: string };
const sealed = new Map<string, string[]>();

async function seal(id: { zid: string; key: string }, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const r = await call(t.url, 'POST', '/api/svc/compute', kinetic(1 + i), bearer(id.key));
    expect(r.status).toBe(200);
    sealed.set(id.zid, [...(sealed.get(id.zid) ?? []), r.body.envelope.token_id as string]);
  }
}

async function listed(id: { zid: string; key: string }, query: string): Promise<{ total: number; tokens: string[]; owners: string[] }> {
  const r = await call(t.url, 'GET', `/api/tally/envelopes/${id.zid}?${query}`, undefined, bearer(id.key));
  expect(r.status).toBe(200);
  const items = r.body.items as EnvelopeRecord[];
  return { total: r.body.total, tokens: items.map((e) => e.token_id), owners: [...new Set(items.map((e) => e.owner))] };
}

beforeAll(async () => {
  t = await startTestNode();
  a = await zkIdentity(t.url, 'envelope-listing-a');
  b = await zkIdentity(t.url, 'envelope-listing-b');
  await seal(a, 3);
  await seal(b, 2);
  // Stale keys of A, newest of all (seqs above every envelope's): one at B's envelope, one at an envelope no node holds.
  const store = t.node.store;
  const [bToken] = sealed.get(b.zid)!;
  const top = t.node.counters.get('envelope_seq');
  await store.commit([
    { type: 'put', sub: store.sub(ENVELOPE_SUBS.byOwner), key: `${a.zid}!${padNum(top + 1)}`, value: bToken! },
    { type: 'put', sub: store.sub(ENVELOPE_SUBS.byOwner), key: `${a.zid}!${padNum(top + 2)}`, value: 'env_000000000000000000000000' },
    { type: 'put', sub: store.sub(ENVELOPE_SUBS.byFolder), key: `${a.zid}!inbox!${padNum(top + 1)}`, value: bToken! },
  ]);
}, 60_000);
afterAll(async () => t?.destroy());

describe('envelope listing', () => {
  it('lists only the owner’s envelopes, newest first, pages filled past stale index keys', async () => {
    const own = [...sealed.get(a.zid)!].reverse();
    expect(await listed(a, 'limit=10')).toEqual({ total: 3, tokens: own, owners: [a.zid] });
    // The two stale keys come first in the index: the first page still holds two of A's envelopes, the second the last.
    expect(await listed(a, 'limit=2')).toEqual({ total: 3, tokens: own.slice(0, 2), owners: [a.zid] });
    expect(await listed(a, 'limit=2&offset=2')).toEqual({ total: 3, tokens: own.slice(2), owners: [a.zid] });
    expect(await listed(a, 'limit=1&offset=1')).toEqual({ total: 3, tokens: own.slice(1, 2), owners: [a.zid] });
  });

  it('lists a folder’s envelopes of the owner only', async () => {
    const own = [...sealed.get(a.zid)!].reverse();
    expect(await listed(a, 'folder=inbox&limit=2')).toEqual({ total: 3, tokens: own.slice(0, 2), owners: [a.zid] });
  });

  it('leaves the other identity’s listing as it is', async () => {
    expect(await listed(b, 'limit=10')).toEqual({ total: 2, tokens: [...sealed.get(b.zid)!].reverse(), owners: [b.zid] });
  });
});

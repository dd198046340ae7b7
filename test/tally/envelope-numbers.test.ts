// An envelope's number (its seq, the end of its owner's and folder's index keys) is handed out once per node: a seal
// whose batch fails does not give its number back while a later write holds the next one, and an envelope a same-node
// transfer moves is numbered again for its receiver (its own seq may be another node's, one the receiver's index holds
// already: a failover brings chains numbered elsewhere). Either way, two envelopes of one owner never share an
// index key, and the owner's listing holds every envelope it was given.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { ServiceError } from '../../src/kernel/errors.js';
import { padNum } from '../../src/store/db.js';
import { ENVELOPE_SUBS, type EnvelopeRecord } from '../../src/tally/ledger.js';

const cost1 = { domain: 'thermodynamics', operators: ['KO42', 'THERMO_CARNOT_EFFICIENCY'], inputs: {} };

let t: TestNode;
let operator: string;

beforeAll(async () => {
  t = await startTestNode({}, { initialCredits: 0 });
  operator = (await readFile(join(t.dataDir, 'operator-token'), 'utf8')).trim();
});
afterAll(async () => t?.destroy());

async function identity(seed: string): Promise<{ zid: string; key: string }> {
  const id = await zkIdentity(t.url, seed);
  const r = await call(t.url, 'POST', '/api/tally/grants', { zid: id.zid, credits: 20 }, bearer(operator));
  expect(r.status).toBe(201);
  return id;
}

const compute = (key: string) => call(t.url, 'POST', '/api/svc/compute', cost1, bearer(key));

async function held(who: { zid: string; key: string }): Promise<{ total: number; tokens: string[]; seqs: number[] }> {
  const r = await call(t.url, 'GET', `/api/tally/envelopes/${who.zid}?limit=100`, undefined, bearer(who.key));
  expect(r.status).toBe(200);
  const items = r.body.items as EnvelopeRecord[];
  return { total: r.body.total, tokens: items.map((e) => e.token_id).sort(), seqs: items.map((e) => e.seq) };
}

describe('envelope numbers', () => {
  it('a failed seal keeps its number: the seal after it does not take the number of one written meanwhile', async () => {
    const a = await identity('numbers-a');
    const b = await identity('numbers-b');
    // Each has sealed once: what a seal reads is in memory, so B's seal below needs no store read (which would wait
    // for A's held write).
    const warm = [await compute(a.key), await compute(b.key)];
    expect(warm.map((r) => r.status)).toEqual([200, 200]);
    // A’s seal is held 1.5 s and refused, as custody refuses a write its custodians do not certify (a test gate in
    // the replicator's place); B's, made meanwhile, takes the next number and is written once A's is settled.
    const store = t.node.store;
    const custody = store.gate;
    store.gate = {
      hold: (ops) =>
        ops.some((op) => op.key === a.zid)
          ? new Promise((_, reject) => setTimeout(() => reject(new ServiceError(503, 'SVC_CUSTODY_UNAVAILABLE', 'no majority (test gate)')), 1500))
          : (custody?.hold(ops) ?? null),
    };
    let first: Awaited<ReturnType<typeof compute>>;
    try {
      const failing = compute(a.key);
      await new Promise((r) => setTimeout(r, 100));
      first = await compute(b.key);
      expect((await failing).status).toBe(503);
    } finally {
      store.gate = custody;
    }
    expect(first.status).toBe(200);
    const second = await compute(b.key);
    expect(second.status).toBe(200);
    const tokens = [warm[1]!, first, second].map((r) => r.body.envelope.token_id as string).sort();
    const listing = await held(b);
    expect({ total: listing.total, tokens: listing.tokens }).toEqual({ total: 3, tokens });
    expect(new Set(listing.seqs).size).toBe(3);
    expect((await held(a)).tokens).toEqual([warm[0]!.body.envelope.token_id]);
  });

  it('a same-node transfer numbers the envelope again for its receiver', async () => {
    const x = await identity('numbers-x');
    const y = await identity('numbers-y');
    const sent = await compute(x.key);
    const kept = await compute(y.key);
    expect([sent.status, kept.status]).toEqual([200, 200]);
    const token = sent.body.envelope.token_id as string;
    // X's envelope as a chain numbered at another node brings it: the seq of Y's envelope here.
    const store = t.node.store;
    const envelopes = store.sub(ENVELOPE_SUBS.envelopes);
    const record = (await store.get<EnvelopeRecord>(envelopes, token))!;
    const ySeq = (await held(y)).seqs[0]!;
    await store.commit([
      { type: 'put', sub: envelopes, key: token, value: { ...record, seq: ySeq } },
      { type: 'del', sub: store.sub(ENVELOPE_SUBS.byOwner), key: `${x.zid}!${padNum(record.seq)}` },
      { type: 'del', sub: store.sub(ENVELOPE_SUBS.byFolder), key: `${x.zid}!inbox!${padNum(record.seq)}` },
      { type: 'put', sub: store.sub(ENVELOPE_SUBS.byOwner), key: `${x.zid}!${padNum(ySeq)}`, value: token },
      { type: 'put', sub: store.sub(ENVELOPE_SUBS.byFolder), key: `${x.zid}!inbox!${padNum(ySeq)}`, value: token },
    ]);
    const moved = await call(t.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: y.zid, token_ids: [token] }, bearer(x.key));
    expect(moved.status).toBe(200);
    const listing = await held(y);
    expect({ total: listing.total, tokens: listing.tokens }).toEqual({ total: 2, tokens: [token, kept.body.envelope.token_id as string].sort() });
    expect(new Set(listing.seqs).size).toBe(2);
    const inbox = await call(t.url, 'GET', `/api/tally/envelopes/${y.zid}?folder=inbox&limit=100`, undefined, bearer(y.key));
    expect((inbox.body.items as EnvelopeRecord[]).map((e) => e.token_id).sort()).toEqual(listing.tokens);
    expect(await held(x)).toEqual({ total: 0, tokens: [], seqs: [] });
  });
});

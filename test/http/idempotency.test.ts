// Writes sent with an Idempotency-Key over real HTTP: applied once, the kept answer sent again (also after a restart,
// and, for the writes that keep it in their own batch, when the node stopped before the answer's own record), a key
// reused for another request refused, concurrent sends applied once, errors not kept, scopes per caller's key, a replay
// refused once the key that sent the write is revoked.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitUntil } from '../helpers/wait.js';
import { parseIdempotencyKey } from '../../src/http/idempotency.js';

let t: TestNode;
let owner: { zid: string; key: string; slug: string };
let other: { zid: string; key: string; slug: string };

const append = (who: { key: string; slug: string }, payload: unknown, idempotencyKey?: string, slug = who.slug) =>
  call(t.url, 'POST', `/api/chain/${slug}/events`, { payload }, { ...bearer(who.key), ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}) });
const rows = async (who: { key: string; slug: string }) =>
  (await call(t.url, 'GET', `/api/chain/${who.slug}/explore?from=1&to=1000`, undefined, bearer(who.key))).body.rows as { seq: number }[];

beforeAll(async () => {
  t = await startTestNode();
  owner = await zkIdentity(t.url, 'idem-owner');
  other = await zkIdentity(t.url, 'idem-other');
});
afterAll(async () => {
  await t.destroy();
});

describe('Idempotency-Key on writes', () => {
  it('the same write sent twice is applied once; the second gets the first answer, marked replayed', async () => {
    const before = (await rows(owner)).length;
    const first = await append(owner, { n: 1 }, 'k-one');
    expect(first.status, first.text).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const second = await append(owner, { n: 1 }, 'k-one');
    expect(second.status).toBe(201);
    expect(second.text).toBe(first.text);
    expect(second.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    // Its own trace id: the replay is a new exchange.
    expect(second.headers.get('x-trace-id')).not.toBe(first.headers.get('x-trace-id'));
    expect((await rows(owner)).length).toBe(before + 1);
    // The structured-field form ("…") names the same key.
    const quoted = await append(owner, { n: 1 }, '"k-one"');
    expect(quoted.headers.get('idempotent-replayed')).toBe('true');
    expect(quoted.text).toBe(first.text);
    expect((await rows(owner)).length).toBe(before + 1);
  });

  it('a key sent again with another body is 409 SVC_IDEMPOTENCY_KEY_REUSED and writes nothing', async () => {
    const before = (await rows(owner)).length;
    const e = expectError(await append(owner, { n: 2 }, 'k-one'), 409, 'SVC_IDEMPOTENCY_KEY_REUSED');
    expect(e).toMatchObject({ idempotency_key: 'k-one', kept_for_seconds: 86_400 });
    expect((await rows(owner)).length).toBe(before);
  });

  it("another caller's same idempotency key is its own: applied", async () => {
    const before = (await rows(other)).length;
    const r = await append(other, { n: 1 }, 'k-one');
    expect(r.status, r.text).toBe(201);
    expect(r.headers.get('idempotent-replayed')).toBeNull();
    expect((await rows(other)).length).toBe(before + 1);
  });

  it('an error is not kept: the corrected request under the same key is applied', async () => {
    const before = (await rows(owner)).length;
    const bad = await append(owner, { n: 3 }, 'k-fix', 'no-such-book');
    expect(bad.status).toBeGreaterThanOrEqual(400);
    const good = await append(owner, { n: 3 }, 'k-fix');
    // Another path, so another request: a kept error would have been 409 here.
    expect(good.status, good.text).toBe(201);
    expect((await rows(owner)).length).toBe(before + 1);
  });

  it('concurrent sends of one write are applied once: the others are 409 while it runs, or its replay', async () => {
    const before = (await rows(owner)).length;
    const answers = await Promise.all(Array.from({ length: 6 }, () => append(owner, { n: 4 }, 'k-race')));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses.every((s) => s === 201 || s === 409)).toBe(true);
    const applied = answers.filter((a) => a.status === 201 && a.headers.get('idempotent-replayed') === null);
    expect(applied).toHaveLength(1);
    for (const busy of answers.filter((a) => a.status === 409)) {
      expect(expectError(busy, 409, 'SVC_CONFLICT')).toMatchObject({ idempotency_key: 'k-race', in_progress: true });
      expect(busy.headers.get('retry-after')).toBe('1');
    }
    expect((await rows(owner)).length).toBe(before + 1);
  });

  it('a malformed key is 400 and writes nothing', async () => {
    const before = (await rows(owner)).length;
    for (const bad of ['x'.repeat(256), 'has space', '""']) {
      expect(expectError(await append(owner, { n: 5 }, bad), 400, 'SVC_BAD_REQUEST')).toMatchObject({ header: 'Idempotency-Key' });
    }
    expect((await rows(owner)).length).toBe(before);
  });

  it('reads ignore the header', async () => {
    const a = await call(t.url, 'GET', `/api/chain/${owner.slug}/explore?from=1`, undefined, { ...bearer(owner.key), 'idempotency-key': 'k-read' });
    expect(a.status).toBe(200);
    expect(a.headers.get('idempotent-replayed')).toBeNull();
  });

  it('a replay is authorised again: once the key that sent the write is revoked, 401, and the kept answer is not sent', async () => {
    const minted = await call(t.url, 'POST', '/api/auth/keys', {}, bearer(owner.key));
    expect(minted.status, minted.text).toBe(201);
    const k = minted.body as { key: string; key_id: string };
    // The write's answer holds a secret: a key minted with k.
    const mint = () => call(t.url, 'POST', '/api/auth/keys', {}, { ...bearer(k.key), 'idempotency-key': 'k-mint' });
    const first = await mint();
    expect(first.status, first.text).toBe(201);
    const secret = (first.body as { key: string }).key;
    const again = await mint();
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(first.text);
    expect((await call(t.url, 'DELETE', `/api/auth/keys/${k.key_id}`, undefined, bearer(owner.key))).status).toBe(200);
    const refused = await mint();
    expect(expectError(refused, 401, 'SVC_INVALID_KEY')).toMatchObject({ key_id: k.key_id, reason: 'revoked' });
    expect(refused.headers.get('idempotent-replayed')).toBeNull();
    expect(refused.text).not.toContain(secret);
  });

  it('the kept answer survives a restart of the node', async () => {
    const before = (await rows(owner)).length;
    const first = await append(owner, { n: 6 }, 'k-restart');
    expect(first.status).toBe(201);
    t = await t.restart();
    const again = await append(owner, { n: 6 }, 'k-restart');
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect((await rows(owner)).length).toBe(before + 1);
  });

  it("a seal's answer is kept in the seal's batch: stopped before the answer's own record, the retry replays the result, charged once", async () => {
    const balance = async () => (await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(owner.key))).body.total as number;
    const seal = (path: string, body: unknown, idempotencyKey: string) =>
      call(t.url, 'POST', path, body, { ...bearer(owner.key), 'idempotency-key': idempotencyKey });
    const writes = [
      { path: '/api/svc/compute', body: { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 7, velocity_m_s: 2 } }, cost: 1 },
      { path: '/api/svc/heat', body: { t_end_s: 3 }, cost: 10 },
      { path: '/api/svc/solve', body: { solver: 'heat', inputs: { t_end_s: 4 } }, cost: 10 },
    ];
    const first: { text: string; resultId: string }[] = [];
    const before = { balance: await balance(), sealed: t.node.counters.get('sealed_total') };
    // The node stops after each seal's batch and before the answer's own record: that record is never written.
    const store = t.node.store;
    const answers = store.sub('idempotent_answers');
    const commit = store.commit.bind(store);
    store.commit = (ops) =>
      ops.some((op) => op.type === 'put' && op.sub === answers && (op.value as { body: unknown }).body !== null)
        ? Promise.reject(new Error('the node stopped (injected)'))
        : commit(ops);
    try {
      for (const [i, w] of writes.entries()) {
        const r = await seal(w.path, w.body, `k-sealed-${i}`);
        expect(r.status, r.text).toBe(200);
        first.push({ text: r.text, resultId: r.body.result_id });
      }
    } finally {
      store.commit = commit;
    }
    const charged = writes.reduce((sum, w) => sum + w.cost, 0);
    expect(await balance()).toBe(before.balance - charged);
    t = await t.restart();
    for (const [i, w] of writes.entries()) {
      const again = await seal(w.path, w.body, `k-sealed-${i}`);
      expect(again.status, again.text).toBe(200);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(again.text).toBe(first[i]!.text);
      expect(again.body.result_id).toBe(first[i]!.resultId);
    }
    // Nothing sealed or charged twice.
    expect(await balance()).toBe(before.balance - charged);
    expect(t.node.counters.get('sealed_total')).toBe(before.sealed + writes.length);
    // Another body under the same key is still refused.
    expectError(await seal(writes[0]!.path, { ...writes[0]!.body, inputs: { mass_kg: 8, velocity_m_s: 2 } }, 'k-sealed-0'), 409, 'SVC_IDEMPOTENCY_KEY_REUSED');
  });
});

describe("a write's answer kept in its own batch", () => {
  let u: TestNode;
  let sender: { zid: string; key: string; slug: string };
  let receiver: { zid: string; key: string; slug: string };
  // KO42 plus one domain operator: cost 1 (part 8).
  const cost1 = { domain: 'thermodynamics', operators: ['KO42', 'THERMO_CARNOT_EFFICIENCY'], inputs: {} };

  beforeAll(async () => {
    // No free credits: every envelope is paid-funded, so movable.
    u = await startTestNode({}, { initialCredits: 0 });
    sender = await zkIdentity(u.url, 'idem-sender');
    receiver = await zkIdentity(u.url, 'idem-receiver');
    const operator = (await readFile(join(u.dataDir, 'operator-token'), 'utf8')).trim();
    const granted = await call(u.url, 'POST', '/api/tally/grants', { zid: sender.zid, credits: 20 }, bearer(operator));
    expect(granted.status, granted.text).toBe(201);
    for (let i = 0; i < 3; i++) expect((await call(u.url, 'POST', '/api/svc/compute', cost1, bearer(sender.key))).status).toBe(200);
  });
  afterAll(async () => {
    await u?.destroy();
  });

  it("a transfer, a batch and chain events: stopped before the answer's own record, the retry replays the answer and applies nothing again", async () => {
    const send = (path: string, body: unknown, idempotencyKey: string) =>
      call(u.url, 'POST', path, body, { ...bearer(sender.key), 'idempotency-key': idempotencyKey });
    const held = async (who: { zid: string; key: string }) =>
      (await call(u.url, 'GET', `/api/tally/envelopes/${who.zid}?limit=100`, undefined, bearer(who.key))).body.total as number;
    const chainRows = async () =>
      (await call(u.url, 'GET', `/api/chain/${sender.slug}/explore?from=1&to=1000`, undefined, bearer(sender.key))).body.rows.length as number;
    const balance = async () => (await call(u.url, 'GET', '/api/tally/balance', undefined, bearer(sender.key))).body.total as number;
    const inKept = async () =>
      (
        (await call(u.url, 'GET', `/api/tally/envelopes/${sender.zid}/folders`, undefined, bearer(sender.key))).body.folders as {
          folder: string;
          count: number;
        }[]
      ).find((f) => f.folder === 'kept')?.count ?? 0;
    const writes = [
      { key: 'k-transfer', path: '/api/tally/envelopes/transfer-bulk', body: { to: receiver.zid, count: 2 }, status: 200 },
      { key: 'k-folder', path: '/api/tally/envelopes/folder', body: { folder: 'kept', count: 1 }, status: 200 },
      { key: 'k-batch', path: '/api/svc/batch', body: { items: [cost1] }, status: 202 },
      { key: 'k-event', path: `/api/chain/${sender.slug}/events`, body: { payload: { n: 1 } }, status: 201 },
      { key: 'k-sealed-event', path: `/api/chain/${sender.slug}/events`, body: { payload: { n: 2 }, sealed: true }, status: 201 },
    ];
    const before = { sent: await held(sender), received: await held(receiver), rows: await chainRows() };

    // The node stops after each write's batch and before the answer's own record (a batch of the answers alone).
    const store = u.node.store;
    const answers = [store.sub('idempotent_answers'), store.sub('idempotent_answers_by_expiry')];
    const commit = store.commit.bind(store);
    let refused = 0;
    store.commit = (ops) => {
      if (ops.length > 0 && ops.every((op) => answers.includes(op.sub))) {
        refused++;
        return Promise.reject(new Error('the node stopped (injected)'));
      }
      return commit(ops);
    };
    const first: { status: number; text: string }[] = [];
    try {
      for (const w of writes) {
        const r = await send(w.path, w.body, w.key);
        expect(r.status, r.text).toBe(w.status);
        first.push({ status: r.status, text: r.text });
      }
    } finally {
      store.commit = commit;
    }
    expect(refused).toBe(writes.length);
    const batchUrl = JSON.parse(first[2]!.text).status_url as string;
    await waitUntil(async () => (await call(u.url, 'GET', new URL(batchUrl).pathname, undefined, bearer(sender.key))).body.status === 'complete', 'the batch');
    const applied = { sent: await held(sender), received: await held(receiver), rows: await chainRows(), balance: await balance(), kept: await inKept() };
    // The transfer moved two envelopes, the move one, the batch sealed one (an envelope and a row), the events added two rows.
    expect(applied.received).toBe(before.received + 2);
    expect(applied.sent).toBe(before.sent - 2 + 1);
    expect(applied.kept).toBe(1);

    u = await u.restart();
    for (const [i, w] of writes.entries()) {
      const again = await send(w.path, w.body, w.key);
      expect(again.status, again.text).toBe(w.status);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(again.text).toBe(first[i]!.text);
    }
    // Applied once: nothing moved, sealed, charged or appended by the retries.
    expect({ sent: await held(sender), received: await held(receiver), rows: await chainRows(), balance: await balance(), kept: await inKept() }).toEqual(
      applied,
    );
    // The same key with another body is still refused.
    expectError(await send(writes[0]!.path, { to: receiver.zid, count: 1 }, 'k-transfer'), 409, 'SVC_IDEMPOTENCY_KEY_REUSED');
  });
});

describe('parseIdempotencyKey', () => {
  it('takes 1 to 255 visible ASCII characters, bare or in double quotes', () => {
    expect(parseIdempotencyKey('8e03978e-40d5-43e8-bc93-6894a57f9324')).toBe('8e03978e-40d5-43e8-bc93-6894a57f9324');
    expect(parseIdempotencyKey('"abc"')).toBe('abc');
    expect(parseIdempotencyKey('k'.repeat(255))).toBe('k'.repeat(255));
    for (const bad of ['', '""', 'k'.repeat(256), 'a b', 'é', 'a"b', '"a"b"']) expect(parseIdempotencyKey(bad)).toBeNull();
  });
});

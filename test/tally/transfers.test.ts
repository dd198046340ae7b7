// Transfers on one real node: POST /api/tally/envelopes/transfer-bulk between identities homed on
// the same node, GET /api/tally/transfers/:id, the refusals (soulbound, bonded, not enough movable, self, unknown), and
// 100 concurrent transfers and spends of one identity that neither overdraw nor duplicate (conservation checked), and
// the record both parties homed here share (a chain written over the other side's record).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, operatorBond, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { pickAtRandom } from '../../src/tally/transfers.js';

// KO42 plus one domain operator: cost 1 (part 8).
const cost1 = { domain: 'thermodynamics', operators: ['KO42', 'THERMO_CARNOT_EFFICIENCY'], inputs: {} };
const FREE = 4;
const contribution = { bondEnvelopes: 3, committeeSize: 3, settleTicks: 4, deadlineTicks: 12, challengeStake: 20, bondTermDays: 30, offload: 'never' };

interface Env {
  token_id: string;
  owner: string;
  seq: number;
  folder: string;
  funding: string;
  soulbound: boolean;
}

let t: TestNode;
let operator: string;

beforeAll(async () => {
  t = await startTestNode({ contribution }, { initialCredits: FREE });
  operator = (await readFile(join(t.dataDir, 'operator-token'), 'utf8')).trim();
});
afterAll(async () => t?.destroy());

async function grant(zid: string, credits: number): Promise<void> {
  const r = await call(t.url, 'POST', '/api/tally/grants', { zid, credits }, bearer(operator));
  expect(r.status, r.text).toBe(201);
}

/** `n` cost-1 computes: the first FREE are free-funded (soulbound), the rest paid-funded (movable). */
async function seal(key: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await call(t.url, 'POST', '/api/svc/compute', cost1, bearer(key));
    expect(r.status, r.text).toBe(200);
    ids.push(r.body.envelope.token_id);
  }
  return ids;
}

async function envelopes(who: { zid: string; key: string }): Promise<{ total: number; items: Env[] }> {
  const r = await call(t.url, 'GET', `/api/tally/envelopes/${who.zid}?limit=500`, undefined, bearer(who.key));
  expect(r.status, r.text).toBe(200);
  return r.body;
}

async function folders(who: { zid: string; key: string }): Promise<Record<string, number>> {
  const r = await call(t.url, 'GET', `/api/tally/envelopes/${who.zid}/folders`, undefined, bearer(who.key));
  return Object.fromEntries((r.body.folders as { folder: string; count: number }[]).map((f) => [f.folder, f.count]));
}

describe('same-node transfers', () => {
  it('moves `count` movable envelopes chosen at random (reproducibly), with exact counts on both sides', async () => {
    const x = await zkIdentity(t.url, 'xfer-x');
    const y = await zkIdentity(t.url, 'xfer-y');
    await grant(x.zid, 100);
    const minted = await seal(x.key, FREE + 20);
    // Kept apart by a folder move, so the counters of two folders of X change.
    const moved = await call(t.url, 'POST', '/api/tally/envelopes/folder', { folder: 'kept', token_ids: minted.slice(FREE, FREE + 10) }, bearer(x.key));
    expect(moved.status, moved.text).toBe(200);
    const before = (await envelopes(x)).items.sort((a, b) => a.seq - b.seq);
    expect(before).toHaveLength(FREE + 20);
    expect(before.filter((e) => e.soulbound)).toHaveLength(FREE);
    const balanceBefore = (await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(x.key))).body;
    const chainRows = async (who: { slug: string; key: string }) =>
      (await call(t.url, 'GET', `/api/chain/${who.slug}/pohc/validate`, undefined, bearer(who.key))).body.rows as number;
    const rowsX = await chainRows(x);
    const rowsY = await chainRows(y);

    const r = await call(t.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: y.zid, count: 7 }, bearer(x.key));
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ state: 'delivered', from: x.zid, to: y.zid, count: 7, picked_by: 'count', attempts: 0 });
    expect(r.body.transfer_id).toMatch(/^xfer_[0-9a-f]{24}$/);
    expect(r.body.from_home).toBe(t.node.nodeId);
    expect(r.body.to_home).toBe(t.node.nodeId);
    expect(r.body.delivered_svcond).toBe(r.body.created_svcond);
    const sent: string[] = r.body.token_ids;
    expect(new Set(sent).size).toBe(7);
    // Only movable ones, and exactly the pick the recorded seed reproduces over X's movable envelopes in seal order.
    const movable = before.filter((e) => !e.soulbound);
    expect(sent).toEqual(pickAtRandom(movable, 7, r.body.seed).map((e) => e.token_id));
    expect(sent.every((id) => movable.some((e) => e.token_id === id))).toBe(true);

    const afterX = await envelopes(x);
    const afterY = await envelopes(y);
    expect(afterX.total).toBe(FREE + 20 - 7);
    expect(afterX.items).toHaveLength(FREE + 20 - 7);
    expect(afterY.total).toBe(7);
    expect(afterY.items.map((e) => e.token_id).sort()).toEqual([...sent].sort());
    expect(afterY.items.every((e) => e.owner === y.zid && e.folder === 'inbox' && e.funding === 'paid')).toBe(true);
    expect(afterX.items.some((e) => sent.includes(e.token_id))).toBe(false);
    // Folder counters: Y's inbox holds 7; X's two folders lost exactly what left each.
    expect(await folders(y)).toEqual({ inbox: 7 });
    const fx = await folders(x);
    const leftKept = sent.filter((id) => minted.slice(FREE, FREE + 10).includes(id)).length;
    expect(fx).toEqual({ inbox: FREE + 10 - (7 - leftKept), kept: 10 - leftKept });
    // No credits move: the wallet is as it was.
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(x.key))).body).toEqual(balanceBefore);
    // An audit row on each chain, and both chains still validate.
    expect(await chainRows(x)).toBe(rowsX + 1);
    expect(await chainRows(y)).toBe(rowsY + 1);

    // The state, to sender and receiver; 403 to a third identity, 404 for an unknown id.
    for (const who of [x, y]) {
      const g = await call(t.url, 'GET', `/api/tally/transfers/${r.body.transfer_id}`, undefined, bearer(who.key));
      expect(g.status, g.text).toBe(200);
      expect(g.body).toEqual(r.body);
    }
    const z = await zkIdentity(t.url, 'xfer-z');
    expectError(await call(t.url, 'GET', `/api/tally/transfers/${r.body.transfer_id}`, undefined, bearer(z.key)), 403, 'SVC_FORBIDDEN');
    expectError(await call(t.url, 'GET', `/api/tally/transfers/xfer_${'0'.repeat(24)}`, undefined, bearer(x.key)), 404, 'SVC_NOT_FOUND');

    // The receiver may pass them on by id (they are movable there too), and the counts follow.
    const back = await call(t.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: z.zid, token_ids: sent.slice(0, 2) }, bearer(y.key));
    expect(back.status, back.text).toBe(200);
    expect(back.body).toMatchObject({ count: 2, picked_by: 'token_ids', seed: null, token_ids: sent.slice(0, 2) });
    expect((await envelopes(y)).total).toBe(5);
    expect((await envelopes(z)).total).toBe(2);
  });

  it('refuses soulbound and bonded envelopes by id, too few movable ones, oneself and unknown receivers; nothing moves', async () => {
    const x = await zkIdentity(t.url, 'xfer-refuse-x');
    const y = await zkIdentity(t.url, 'xfer-refuse-y');
    await grant(x.zid, 100);
    const minted = await seal(x.key, FREE + 6);
    const soulbound = minted[0]!;
    const send = (body: unknown) => call(t.url, 'POST', '/api/tally/envelopes/transfer-bulk', body, bearer(x.key));

    let e = expectError(await send({ to: y.zid, token_ids: [minted[FREE]!, soulbound] }), 400, 'SVC_ENVELOPE_NOT_MOVABLE');
    expect(e).toMatchObject({ token_id: soulbound, reason: 'soulbound', field: 'token_ids' });
    expect(e.message).toContain(soulbound);

    // A bond of 3 paid envelopes: each is refused by id, naming it and its bond.
    const bonded = minted.slice(FREE, FREE + 3);
    const bond = await call(t.url, 'POST', '/api/contribute/bond', { token_ids: bonded }, { ...bearer(x.key), ...operatorBond(t) });
    expect(bond.status, bond.text).toBe(201);
    e = expectError(await send({ to: y.zid, token_ids: [bonded[1]!] }), 400, 'SVC_ENVELOPE_NOT_MOVABLE');
    expect(e).toMatchObject({ token_id: bonded[1], reason: 'bonded', bond_id: bond.body.record.bond_id });

    // FREE + 6 held: FREE soulbound, 3 bonded, so 3 movable.
    e = expectError(await send({ to: y.zid, count: 4 }), 400, 'SVC_INSUFFICIENT_ENVELOPES');
    expect(e).toMatchObject({ requested: 4, movable: 3, held: FREE + 6 });
    expect(e.message).toContain('3 of the');

    expect(expectError(await send({ to: x.zid, count: 1 }), 400, 'SVC_INVALID_INPUT')).toMatchObject({ field: 'to' });
    expect(expectError(await send({ to: `zid_${'a'.repeat(32)}`, count: 1 }), 404, 'SVC_NOT_FOUND')).toMatchObject({ field: 'to' });
    expectError(await send({ to: y.zid }), 400, 'SVC_INVALID_INPUT');
    expectError(await send({ to: y.zid, count: 1, token_ids: [minted[FREE + 4]!] }), 400, 'SVC_INVALID_INPUT');
    expectError(await send({ to: y.zid, count: 0 }), 400, 'SVC_INVALID_INPUT');
    expectError(await send({ to: 'nobody', count: 1 }), 400, 'SVC_INVALID_INPUT');
    expectError(await send({ to: y.zid, count: 1, extra: true }), 400, 'SVC_INVALID_INPUT');
    // Another identity's envelope is unknown to the caller.
    const yMinted = await call(t.url, 'POST', '/api/svc/compute', cost1, bearer(y.key));
    expect(expectError(await send({ to: y.zid, token_ids: [yMinted.body.envelope.token_id] }), 400, 'SVC_INVALID_INPUT')).toMatchObject({
      reason: 'unknown',
      token_id: yMinted.body.envelope.token_id,
    });
    expectError(await call(t.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: y.zid, count: 1 }), 401, 'SVC_NO_KEY');

    // Nothing moved.
    expect((await envelopes(x)).total).toBe(FREE + 6);
    expect((await envelopes(y)).total).toBe(1);
    // After the release the bonded envelopes move.
    expect((await call(t.url, 'POST', '/api/contribute/release', {}, bearer(x.key))).status).toBe(200);
    const ok = await send({ to: y.zid, token_ids: bonded });
    expect(ok.status, ok.text).toBe(200);
    expect((await envelopes(y)).total).toBe(4);
  });

  it('a bond and a transfer of the same envelope at once: exactly one of them takes it, and no record contradicts its index', async () => {
    const y = await zkIdentity(t.url, 'xfer-race-y');
    let yHeld = 0;
    for (let i = 0; i < 10; i++) {
      const w = await zkIdentity(t.url, `xfer-race-w${i}`);
      await grant(w.zid, 4);
      const paid = (await seal(w.key, FREE + 4)).slice(FREE);
      // Without the shared lock the bond reads the three, the transfer moves the first to Y, and the bond then writes
      // that envelope back as W's (marked): both succeed, and Y's index points at a record owned by W.
      const [bond, sent] = await Promise.all([
        call(t.url, 'POST', '/api/contribute/bond', { token_ids: paid.slice(0, 3) }, { ...bearer(w.key), ...operatorBond(t) }),
        call(t.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: y.zid, token_ids: [paid[0]!] }, bearer(w.key)),
      ]);
      expect([bond.status, sent.status].sort(), `${bond.text} ${sent.text}`).toEqual(sent.status === 200 ? [200, 400] : [201, 400]);
      if (sent.status === 200) {
        yHeld++;
        expect(bond.body.error.token_id ?? bond.body.error.message).toContain(paid[0]);
      } else {
        expect(expectError(sent, 400, 'SVC_ENVELOPE_NOT_MOVABLE')).toMatchObject({ reason: 'bonded', token_id: paid[0] });
        const marked = await t.node.ledger.envelopesById(bond.body.token_ids);
        expect(marked.every((e) => e?.owner === w.zid && e.bond_id === bond.body.record.bond_id)).toBe(true);
        expect((await call(t.url, 'POST', '/api/contribute/release', {}, bearer(w.key))).status).toBe(200);
      }
      const ws = await envelopes(w);
      expect(ws.items.every((e) => e.owner === w.zid)).toBe(true);
      expect(ws.total).toBe(FREE + 4 - (sent.status === 200 ? 1 : 0));
      const ys = await envelopes(y);
      expect(ys.total).toBe(yHeld);
      expect(ys.items.every((e) => e.owner === y.zid)).toBe(true);
    }
  }, 120_000);

  it('100 concurrent transfers and spends of one identity never overdraw or duplicate; envelopes and credits are conserved', async () => {
    const s = await zkIdentity(t.url, 'xfer-storm-s');
    const receivers = await Promise.all([0, 1, 2].map((i) => zkIdentity(t.url, `xfer-storm-r${i}`)));
    const GRANT = 200;
    await grant(s.zid, GRANT);
    const START = 20;
    await seal(s.key, START); // FREE soulbound, START − FREE movable
    const walletBefore = (await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(s.key))).body.total;
    const chargedBefore = t.node.counters.get('charged_total');

    // 60 transfers of 1–3 envelopes (asking for more than there will ever be) mixed with 40 spends, all at once.
    const jobs = Array.from({ length: 100 }, (_, i) =>
      i % 5 < 3
        ? call(t.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: receivers[i % 3]!.zid, count: 1 + (i % 3) }, bearer(s.key))
        : call(t.url, 'POST', '/api/svc/compute', cost1, bearer(s.key)),
    );
    const answers = await Promise.all(jobs);
    let spent = 0;
    let movedCount = 0;
    const movedIds: string[] = [];
    let refused = 0;
    answers.forEach((r, i) => {
      if (i % 5 >= 3) {
        expect(r.status, r.text).toBe(200);
        spent += r.body.tally_charge.cost;
        return;
      }
      if (r.status === 400) {
        expect(r.body.error.code).toBe('SVC_INSUFFICIENT_ENVELOPES');
        expect(r.body.error.movable).toBeLessThan(r.body.error.requested);
        refused++;
        return;
      }
      expect(r.status, r.text).toBe(200);
      movedCount += r.body.count;
      movedIds.push(...r.body.token_ids);
    });
    expect(spent).toBe(40);
    expect(refused).toBeGreaterThan(0); // it asked for ~120 of at most 56
    // No envelope moved twice.
    expect(new Set(movedIds).size).toBe(movedIds.length);
    expect(movedIds).toHaveLength(movedCount);

    // Conservation: every envelope S ever held is held by exactly one of S and the receivers.
    const holdings = await Promise.all([s, ...receivers].map((w) => envelopes(w)));
    const all = holdings.flatMap((h) => h.items.map((e) => e.token_id));
    expect(new Set(all).size).toBe(all.length);
    expect(all).toHaveLength(START + 40);
    expect(holdings[0]!.total).toBe(START + 40 - movedCount);
    expect(holdings.slice(1).reduce((n, h) => n + h.total, 0)).toBe(movedCount);
    for (const h of holdings) expect(h.items).toHaveLength(h.total);
    // Only movable ones left S; the soulbound stay.
    expect(holdings[0]!.items.filter((e) => e.soulbound)).toHaveLength(FREE);
    expect(holdings.slice(1).every((h) => h.items.every((e) => !e.soulbound && e.funding === 'paid'))).toBe(true);
    // Credits: S paid exactly its 40 spends, and the node's charged total grew by as much.
    const walletAfter = (await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(s.key))).body.total;
    expect(walletAfter).toBe(walletBefore - 40);
    expect(t.node.counters.get('charged_total') - chargedBefore).toBe(40);
    // The folder counters agree with the listings (counters, not a scan).
    for (const [i, w] of [s, ...receivers].entries()) {
      const f = await folders(w);
      expect(Object.values(f).reduce((a, b) => a + b, 0)).toBe(holdings[i]!.total);
    }
  }, 120_000);

  it('both parties homed here share a record: the receiver credited reads delivered over the sender’s pending one; the outbox forgets a delivered one', async () => {
    const x = await zkIdentity(t.url, 'xfer-shared-x');
    const y = await zkIdentity(t.url, 'xfer-shared-y');
    await grant(x.zid, 20);
    await seal(x.key, FREE + 3);
    const r = await call(t.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: y.zid, count: 2 }, bearer(x.key));
    expect(r.status, r.text).toBe(200);
    const id = r.body.transfer_id as string;
    const store = t.node.store;
    const [records, credits, outbox] = [store.sub('transfers'), store.sub('transfer_credits'), store.sub('transfer_outbox')];
    const view = async (who: { key: string }) => {
      const g = await call(t.url, 'GET', `/api/tally/transfers/${id}`, undefined, bearer(who.key));
      expect(g.status, g.text).toBe(200);
      return g.body;
    };

    // The sender's pending record written over the receiver's (as a chain of the sender taken here writes it), with
    // the receiver's credit mark: the receiver reads its credit, the sender its own record until the loop settles it.
    const pending = { ...r.body, state: 'pending', attempts: 3, last_error: 'connection refused', delivered_svcond: null, delivered_unix_ms: null };
    await store.commit([{ type: 'put', sub: records, key: id, value: pending }]);
    expect(await view(y)).toMatchObject({ state: 'pending', attempts: 3 }); // no credit mark: nothing says it was credited
    const mark = { transfer_id: id, from: x.zid, delivered_svcond: r.body.created_svcond + 5, delivered_unix_ms: 1_700_000_000_000 };
    await store.commit([{ type: 'put', sub: credits, key: `${y.zid}!${id}`, value: mark }]);
    expect(await view(y)).toEqual({
      ...pending,
      state: 'delivered',
      last_error: null,
      delivered_svcond: mark.delivered_svcond,
      delivered_unix_ms: mark.delivered_unix_ms,
    });
    expect(await view(x)).toEqual(pending);
    // A mark of another sender under the same id says nothing of this transfer.
    await store.commit([{ type: 'put', sub: credits, key: `${y.zid}!${id}`, value: { ...mark, from: y.zid } }]);
    expect((await view(y)).state).toBe('pending');

    // The receiver's delivered record written over the sender's pending one (a chain of the receiver taken here): the
    // sender's outbox entry is left with nothing to deliver, and the loop's resume drops it.
    await store.commit([
      { type: 'put', sub: records, key: id, value: r.body },
      { type: 'put', sub: outbox, key: id, value: id },
    ]);
    expect((await t.node.transfers.pending()).map((p) => p.transfer_id)).not.toContain(id);
    expect((await store.range(outbox)).map((e) => e.key)).not.toContain(id);
    expect(await view(x)).toEqual(r.body);
  });
});

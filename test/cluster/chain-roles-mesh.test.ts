// A role on a private machine held by an identity homed on another node: read and append as the role allows from any
// node. The key travels to its own home only; the home vouches for the caller to the machine's home (chain-delegation.ts).
// A contract transition by such a caller is charged at its own home (tally/remote-charges.ts): debited once when the
// voucher is signed, refunded once when the machine's home did not apply it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { CHAIN_CALLER_HEADER } from '../../src/http/chain-delegation.js';
import { FORWARDED_HEADER } from '../../src/http/forward.js';
import { chainCallerResponse } from '../../src/http/responses.js';
import { waitUntil } from '../helpers/wait.js';
import { createHash } from 'node:crypto';
import { COSTS } from '../../src/tally/costs.js';
import type { RemoteChargeRecord } from '../../src/tally/remote-charges.js';

const MESH_SECRET = 'chain-roles-mesh-secret-0123456789';
const meshConfig = (bootstrap: string[]) => ({ mesh: { secret: MESH_SECRET, p2pPort: 0, bootstrap, tickEvery: 1 } });
const opts: { mesh: { redialMinMs: number; redialMaxMs: number }; initialCredits: number; chargeSettleAfterMs?: number } = {
  mesh: { redialMinMs: 100, redialMaxMs: 1000 },
  initialCredits: 1000,
};
const SLUG = 'shared-book';

let nodes: TestNode[] = [];
let owner: { zid: string; key: string };
let operator: { zid: string; key: string };
let stranger: { zid: string; key: string };

beforeAll(async () => {
  const a = await startTestNode(meshConfig([]), opts);
  const addrA = a.node.mesh.multiaddrs()[0]!;
  const b = await startTestNode(meshConfig([addrA]), opts);
  const c = await startTestNode(meshConfig([addrA, b.node.mesh.multiaddrs()[0]!]), opts);
  nodes = [a, b, c];
  await waitUntil(async () => nodes.every((n) => n.node.mesh.peers().filter((p) => p.url).length >= 2), 'tick events from every peer');
  owner = await zkIdentity(a.url, 'roles-mesh-owner');
  operator = await zkIdentity(b.url, 'roles-mesh-operator');
  stranger = await zkIdentity(b.url, 'roles-mesh-stranger');
  const made = await call(a.url, 'POST', '/api/chain/state-machines', { slug: SLUG }, bearer(owner.key));
  expect(made.status, made.text).toBe(201);
  // The machine's home knows the operator's identity (and its home) from identity gossip.
  await waitUntil(async () => (await a.node.identity.getIdentity(operator.zid))?.home === b.node.nodeId, 'the operator known at A');
  const r = await call(a.url, 'PATCH', `/api/chain/${SLUG}/settings`, { roles: { [operator.zid]: 'operator' } }, bearer(owner.key));
  expect(r.status, r.text).toBe(200);
}, 60_000);
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.destroy()));
});

describe('a role held by an identity homed on another node', () => {
  it('reads and appends from any node (served by the machine’s home); what the role does not allow stays 403', async () => {
    const [a, b, c] = nodes as [TestNode, TestNode, TestNode];
    // By header from C, B and A; by ?key= from C.
    const byQuery = await call(c.url, 'GET', `/api/chain/${SLUG}/explore?key=${operator.key}`);
    expect(byQuery.status, byQuery.text).toBe(200);
    for (const n of [c, b, a]) {
      const read = await call(n.url, 'GET', `/api/chain/${SLUG}/explore`, undefined, bearer(operator.key));
      expect(read.status, `${n === a ? 'A' : n === b ? 'B' : 'C'}: ${read.text}`).toBe(200);
      if (n !== a) expect(read.headers.get('x-svc-served-by')).toBe(a.node.nodeId);
      const appended = await call(n.url, 'POST', `/api/chain/${SLUG}/events`, { payload: { from: n.url } }, bearer(operator.key));
      expect(appended.status, appended.text).toBe(201);
    }
    const rows = await call(a.url, 'GET', `/api/chain/${SLUG}/explore`, undefined, bearer(owner.key));
    expect(rows.body.rows.filter((r: { transitionType: string }) => r.transitionType === 'event')).toHaveLength(3);
    const settings = await call(c.url, 'PATCH', `/api/chain/${SLUG}/settings`, { is_public: true }, bearer(operator.key));
    expect(expectError(settings as never, 403, 'SVC_FORBIDDEN')).toMatchObject({ action: 'settings', role: 'operator' });
    // No role, asked anywhere: 403, as at the home.
    for (const n of [c, b])
      expectError((await call(n.url, 'GET', `/api/chain/${SLUG}/explore`, undefined, bearer(stranger.key))) as never, 403, 'SVC_FORBIDDEN');
  });

  it('a voucher is good for its one request: replayed, or for another request, it is refused', async () => {
    const [a, b] = nodes as [TestNode, TestNode];
    const path = `/api/chain/${SLUG}/explore`;
    const v = await call(
      b.url,
      'POST',
      '/api/mesh/chain-caller',
      { method: 'GET', path, body_sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' },
      bearer(operator.key),
    );
    expect(v.status, v.text).toBe(200);
    chainCallerResponse.parse(v.body);
    const voucher = Buffer.from(JSON.stringify(v.body)).toString('base64url');
    const vouched = (p: string) => call(a.url, 'GET', p, undefined, { [FORWARDED_HEADER]: b.node.nodeId, [CHAIN_CALLER_HEADER]: voucher });
    expect(expectError((await vouched(`/api/chain/${SLUG}/settings`)) as never, 401, 'SVC_INVALID_KEY').reason).toBe('for another request');
    expect((await vouched(path)).status).toBe(200);
    expect(expectError((await vouched(path)) as never, 401, 'SVC_INVALID_KEY').reason).toBe('used before');
    // A node vouches only for its own identities.
    expect((await call(a.url, 'POST', '/api/mesh/chain-caller', { method: 'GET', path, body_sha256: '0'.repeat(64) }, bearer(operator.key))).status).toBe(403);
  });
});

describe('a contract transition by a caller homed on another node than the machine', () => {
  // Here the machine is homed on A, the operator (the caller) on B: B keeps the wallet and charges it; C only forwards.
  const CONTRACT = {
    name: 'toggle',
    initial: 'off',
    states: ['off', 'on'],
    variables: {},
    transitions: [
      { from: 'off', on: 'flip', to: 'on' },
      { from: 'on', on: 'flip', to: 'off' },
    ],
  };
  let id = '';
  const path = () => `/api/chain/${SLUG}/contracts/${id}/transition`;
  const flip = { event: { type: 'flip' } };
  const total = async (t: TestNode, zid: string) => {
    const w = await t.node.ledger.wallet(zid);
    return w.free + w.paid;
  };
  const state = async (t: TestNode) => (await call(t.url, 'GET', `/api/chain/${SLUG}/contracts/${id}`, undefined, bearer(owner.key))).body.state as string;
  const charges = async (t: TestNode) =>
    (await call(t.url, 'GET', `/api/chain/${SLUG}/tally/charges?limit=500`, undefined, bearer(owner.key))).body.total as number;
  const records = async (t: TestNode, zid: string) =>
    (await t.node.store.range<RemoteChargeRecord>(t.node.store.sub('remote_charges'))).map((r) => r.value).filter((r) => r.zid === zid);
  const settled = async (t: TestNode, nonce: string) => {
    let r: RemoteChargeRecord | undefined;
    await waitUntil(async () => (r = await t.node.remoteCharges.load(nonce))?.state !== 'pending', `charge ${nonce} settled`);
    return r!;
  };
  /** The flip's raw body, and a voucher for it signed (and charged) by the caller's home `t`, as a forwarding node asks it. */
  const raw = JSON.stringify(flip);
  const voucherFrom = async (t: TestNode) => {
    const v = await call(
      t.url,
      'POST',
      '/api/mesh/chain-caller',
      { method: 'POST', path: path(), body_sha256: createHash('sha256').update(raw).digest('hex') },
      bearer(operator.key),
    );
    expect(v.status, v.text).toBe(200);
    return v;
  };

  beforeAll(async () => {
    const [a] = nodes as [TestNode];
    const d = await call(a.url, 'POST', `/api/chain/${SLUG}/contracts`, CONTRACT, bearer(owner.key));
    expect(d.status, d.text).toBe(201);
    id = d.body.contract_id;
  });

  it('asked at its own home: the wallet there pays 5 once, the machine advances, the charge settles as charged', async () => {
    const [a, b] = nodes as [TestNode, TestNode];
    const before = await total(b, operator.zid);
    const chargedHereBefore = a.node.counters.get('charged_total');
    const tallyBefore = await charges(a);
    const r = await call(b.url, 'POST', path(), flip, bearer(operator.key));
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({
      state: 'on',
      from: 'off',
      // The caller the row commits: the identity the voucher of its home names.
      caller: operator.zid,
      tally_charge: { action: 'contract_transition', charged: COSTS.contractTransition, balance_after: null },
    });
    expect(r.body.remote_charge.home).toBe(b.node.nodeId);
    expect(await state(a)).toBe('on');
    // Settled at once (B forwarded the request itself), as charged: no refund.
    const rec = await settled(b, r.body.remote_charge.nonce);
    expect(rec).toMatchObject({ state: 'charged', outcome: 'applied', credits: COSTS.contractTransition, machine_home: a.node.nodeId });
    expect(await total(b, operator.zid)).toBe(before - COSTS.contractTransition);
    // The machine's tally records who paid; the machine's home charged no wallet of its own.
    expect(await charges(a)).toBe(tallyBefore + 1);
    expect(a.node.counters.get('charged_total')).toBe(chargedHereBefore);
    expect((await a.node.chargeOutcomes.outcomeOf(b.node.nodeId, r.body.remote_charge.nonce))?.outcome).toBe('applied');
  });

  it('refused by the contract: the caller gets the refusal, and its home refunds the charge exactly once', async () => {
    const [a, b] = nodes as [TestNode, TestNode];
    const before = await total(b, operator.zid);
    const known = new Set((await records(b, operator.zid)).map((r) => r.nonce));
    const r = await call(b.url, 'POST', path(), { event: { type: 'nope' } }, bearer(operator.key));
    expectError(r as never, 409, 'SVC_ILLEGAL_TRANSITION');
    expect(await state(a)).toBe('on');
    const made = (await records(b, operator.zid)).filter((x) => !known.has(x.nonce));
    expect(made).toHaveLength(1);
    const rec = await settled(b, made[0]!.nonce);
    expect(rec).toMatchObject({ state: 'refunded', outcome: 'refused' });
    expect(await total(b, operator.zid)).toBe(before);
    // The same answer again (a repeated settlement) changes nothing: the refund was credited once.
    await b.node.remoteCharges.settle([{ id: rec.nonce, attempts: 9, ack: { nonce: rec.nonce, outcome: 'refused', seq: null } }]);
    expect(await total(b, operator.zid)).toBe(before);
    expect((await a.node.chargeOutcomes.outcomeOf(b.node.nodeId, rec.nonce))?.outcome).toBe('refused');
  });

  it('a charged voucher is applied once: replayed, it is refused; from C and at the machine’s home itself the caller pays at its home', async () => {
    const [a, b, c] = nodes as [TestNode, TestNode, TestNode];
    const before = await total(b, operator.zid);
    const v = await voucherFrom(b);
    expect(chainCallerResponse.parse(v.body).body.charge).toMatchObject({ charged: COSTS.contractTransition, machine_home: a.node.nodeId });
    expect(await total(b, operator.zid)).toBe(before - COSTS.contractTransition);
    const voucher = Buffer.from(JSON.stringify(v.body)).toString('base64url');
    const send = () => call(a.url, 'POST', path(), raw, { [FORWARDED_HEADER]: b.node.nodeId, [CHAIN_CALLER_HEADER]: voucher });
    const first = await send();
    expect(first.status, first.text).toBe(200);
    expect(first.body.state).toBe('off');
    expect(expectError((await send()) as never, 401, 'SVC_INVALID_KEY').reason).toBe('used before');
    // Past the in-memory replay window (a restart forgets it), the outcome recorded with the transition still refuses it.
    await expect(a.node.chargeOutcomes.claim(b.node.nodeId, v.body.body.nonce, operator.zid, SLUG)).rejects.toMatchObject({ status: 401 });
    expect(await state(a)).toBe('off');
    // Not forwarded by B: asked about after the voucher's expiry; asked now here.
    b.node.chargeSettlement.soon(v.body.body.nonce, a.node.nodeId);
    expect(await settled(b, v.body.body.nonce)).toMatchObject({ state: 'charged', outcome: 'applied' });
    expect(await total(b, operator.zid)).toBe(before - COSTS.contractTransition);
    // Through C, and with the key presented at A (the machine's home): each charged once at B.
    for (const n of [c, a]) {
      const r = await call(n.url, 'POST', path(), flip, bearer(operator.key));
      expect(r.status, r.text).toBe(200);
      expect(r.body.remote_charge.home).toBe(b.node.nodeId);
      b.node.chargeSettlement.soon(r.body.remote_charge.nonce, a.node.nodeId);
      expect(await settled(b, r.body.remote_charge.nonce)).toMatchObject({ state: 'charged' });
    }
    expect(await state(a)).toBe('off');
    expect(await total(b, operator.zid)).toBe(before - 3 * COSTS.contractTransition);
  });

  it('a voucher that never reaches the machine’s home is voided there when asked, and refunded; a late arrival is refused', async () => {
    const [a, b] = nodes as [TestNode, TestNode];
    const before = await total(b, operator.zid);
    const v = await voucherFrom(b);
    b.node.chargeSettlement.soon(v.body.body.nonce, a.node.nodeId);
    expect(await settled(b, v.body.body.nonce)).toMatchObject({ state: 'refunded', outcome: 'void' });
    expect(await total(b, operator.zid)).toBe(before);
    const voucher = Buffer.from(JSON.stringify(v.body)).toString('base64url');
    const late = await call(a.url, 'POST', path(), raw, { [FORWARDED_HEADER]: b.node.nodeId, [CHAIN_CALLER_HEADER]: voucher });
    expect(expectError(late as never, 401, 'SVC_INVALID_KEY').reason).toBe('used before');
    expect(await state(a)).toBe('off');
  });

  it('charges pending when the caller’s home stops are settled after its restart: the applied one kept, the unused one refunded', async () => {
    const [a, b] = nodes as [TestNode, TestNode];
    const before = await total(b, operator.zid);
    const used = (await voucherFrom(b)).body;
    const unused = (await voucherFrom(b)).body;
    const applied = await call(a.url, 'POST', path(), raw, {
      [FORWARDED_HEADER]: b.node.nodeId,
      [CHAIN_CALLER_HEADER]: Buffer.from(JSON.stringify(used)).toString('base64url'),
    });
    expect(applied.status, applied.text).toBe(200);
    expect(await total(b, operator.zid)).toBe(before - 2 * COSTS.contractTransition);
    // B stops with both pending (first asked after their vouchers' expiry) and starts again, asking soon.
    opts.chargeSettleAfterMs = 200;
    const restarted = await b.restart();
    nodes[1] = restarted;
    expect(await settled(restarted, used.body.nonce)).toMatchObject({ state: 'charged', outcome: 'applied' });
    expect(await settled(restarted, unused.body.nonce)).toMatchObject({ state: 'refunded', outcome: 'void' });
    expect(await total(restarted, operator.zid)).toBe(before - COSTS.contractTransition);
    const [, , c] = nodes as [TestNode, TestNode, TestNode];
    await waitUntil(async () => [a, c].every((n) => n.node.mesh.peerUrl(restarted.node.nodeId) === restarted.url), 'A and C know B again');
  });

  it('a wallet too short: 402 wherever asked, nothing charged, recorded or applied on any node', async () => {
    const [a, b, c] = nodes as [TestNode, TestNode, TestNode];
    const poor = await zkIdentity(b.url, 'roles-mesh-poor');
    await waitUntil(async () => (await a.node.identity.getIdentity(poor.zid))?.home === b.node.nodeId, 'the poor identity known at A');
    const g = await call(a.url, 'PATCH', `/api/chain/${SLUG}/settings`, { roles: { [poor.zid]: 'operator' } }, bearer(owner.key));
    expect(g.status, g.text).toBe(200);
    const w = await b.node.ledger.wallet(poor.zid);
    const drain = b.node.ledger.creditOps(poor.zid, -(w.free - 3), -w.paid);
    await b.node.store.commit(drain.ops);
    const tallyBefore = await charges(a);
    const stateBefore = await state(a);
    for (const n of [b, c, a]) {
      const r = await call(n.url, 'POST', path(), flip, bearer(poor.key));
      expect(expectError(r as never, 402, 'INSUFFICIENT_BALANCE')).toMatchObject({ cost: COSTS.contractTransition, balance: 3 });
    }
    expect(await total(b, poor.zid)).toBe(3);
    expect(await records(b, poor.zid)).toEqual([]);
    expect(await state(a)).toBe(stateBefore);
    expect(await charges(a)).toBe(tallyBefore);
  });

  it('one Idempotency-Key sent through B, C and the machine’s home: applied and charged once, every retry a replay', async () => {
    const [a, b, c] = nodes as [TestNode, TestNode, TestNode];
    const before = { wallet: await total(b, operator.zid), state: await state(a), charges: await charges(a) };
    const known = new Set((await records(b, operator.zid)).map((r) => r.nonce));
    const send = (n: TestNode) => call(n.url, 'POST', path(), flip, { ...bearer(operator.key), 'idempotency-key': 'flip-once' });
    const first = await send(b);
    expect(first.status, first.text).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const flipped = first.body.state as string;
    expect(flipped).not.toBe(before.state);
    // Through C (its voucher asked of B), at A itself (the key's scope there), and at B again (its own kept copy).
    for (const n of [c, a, b]) {
      const again = await send(n);
      expect(again.status, again.text).toBe(200);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body).toEqual(first.body);
    }
    expect(await state(a)).toBe(flipped);
    expect(await charges(a)).toBe(before.charges + 1);
    // A voucher asked for a retry charged B's wallet; A never applied it, so it is refunded when settled.
    for (const rec of (await records(b, operator.zid)).filter((r) => !known.has(r.nonce))) {
      b.node.chargeSettlement.soon(rec.nonce, a.node.nodeId);
      expect((await settled(b, rec.nonce)).state).toBe(rec.nonce === first.body.remote_charge.nonce ? 'charged' : 'refunded');
    }
    expect(await total(b, operator.zid)).toBe(before.wallet - COSTS.contractTransition);
    // The same for an appended event: one row, whichever node the retries come through.
    const rows = async () => (await call(a.url, 'GET', `/api/chain/${SLUG}/explore?from=1&to=1000`, undefined, bearer(owner.key))).body.rows.length as number;
    const rowsBefore = await rows();
    const appended: { status: number; text: string; replayed: string | null }[] = [];
    for (const n of [c, b, a]) {
      const r = await call(
        n.url,
        'POST',
        `/api/chain/${SLUG}/events`,
        { payload: { once: true } },
        { ...bearer(operator.key), 'idempotency-key': 'event-once' },
      );
      appended.push({ status: r.status, text: r.text, replayed: r.headers.get('idempotent-replayed') });
    }
    expect(appended.map((r) => r.status)).toEqual([201, 201, 201]);
    expect(appended.map((r) => r.replayed)).toEqual([null, 'true', 'true']);
    expect(appended[1]!.text).toBe(appended[0]!.text);
    expect(await rows()).toBe(rowsBefore + 1);
  });
});

// The publish setting, executed_by and the record of published results on one node: the setting is the
// identity's (default off); a result is listed only when its owner published at sealing time; a run executed while
// the node's operator is contributing carries executed_by (node, bond, Ed25519 signature over request and result
// digests) inside the signed body, which still verifies; the lookup gives what re-execution needs, and the sealed
// body a challenge carries.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, operatorBond, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { verifyExecution, executionText } from '../../src/consensus/executed-by.js';
import { verifyEventSignature, verifyText } from '../../src/mesh/wire.js';
import { solverRequestDigest } from '../../src/compute/result-digest.js';
import { RESULT_LOOKUP } from '../../src/consensus/result-lookup.js';

const BOND = 3;
const COMPUTE = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } };
const contribution = { bondEnvelopes: BOND, committeeSize: 3, settleTicks: 4, deadlineTicks: 12, challengeStake: 20, bondTermDays: 30, offload: 'never' };

let t: TestNode;

beforeAll(async () => {
  t = await startTestNode({ solverThreads: 0, sealWorker: false, contribution }, { initialCredits: 10_000 });
}, 60_000);

afterAll(async () => {
  await t?.destroy();
});

describe('publish setting', () => {
  it('defaults to off, is set per identity, and is validated', async () => {
    const id = await zkIdentity(t.url, 'publish-setting');
    const first = await call(t.url, 'GET', '/api/tally/settings/publish-default', undefined, bearer(id.key));
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({ zid: id.zid, publish_default: false, source: 'default', since_svcond: null });
    const set = await call(t.url, 'POST', '/api/tally/settings/publish-default', { publish_default: true }, bearer(id.key));
    expect(set.status, set.text).toBe(200);
    expect(set.body).toMatchObject({ zid: id.zid, publish_default: true, source: 'set' });
    expect(typeof set.body.since_svcond).toBe('number');
    const again = await call(t.url, 'GET', '/api/tally/settings/publish-default', undefined, bearer(id.key));
    expect(again.body.publish_default).toBe(true);
    // Another identity keeps the default.
    const other = await zkIdentity(t.url, 'publish-setting-other');
    expect((await call(t.url, 'GET', '/api/tally/settings/publish-default', undefined, bearer(other.key))).body.publish_default).toBe(false);
    expectError(await call(t.url, 'POST', '/api/tally/settings/publish-default', { publish_default: 'yes' }, bearer(id.key)), 400, 'SVC_INVALID_INPUT');
    expectError(
      await call(t.url, 'POST', '/api/tally/settings/publish-default', { publish_default: true, extra: 1 }, bearer(id.key)),
      400,
      'SVC_INVALID_INPUT',
    );
    expectError(await call(t.url, 'POST', '/api/tally/settings/publish-default', { publish_default: true }), 401, 'SVC_NO_KEY');
    expectError(await call(t.url, 'GET', '/api/tally/settings/publish-default'), 401, 'SVC_NO_KEY');
  });

  it('survives a restart', async () => {
    const id = await zkIdentity(t.url, 'publish-restart');
    await call(t.url, 'POST', '/api/tally/settings/publish-default', { publish_default: true }, bearer(id.key));
    t = await t.restart();
    expect((await call(t.url, 'GET', '/api/tally/settings/publish-default', undefined, bearer(id.key))).body.publish_default).toBe(true);
  }, 30_000);
});

describe('the record of published results', () => {
  it('lists a result only when its owner published at sealing time, newest first; the lookup says the rest', async () => {
    const id = await zkIdentity(t.url, 'record-owner');
    const before = (await call(t.url, 'GET', '/api/tally/record', undefined, bearer(id.key))).body.total as number;
    const privateRun = await call(t.url, 'POST', '/api/svc/compute', COMPUTE, bearer(id.key));
    expect(privateRun.status, privateRun.text).toBe(200);
    await call(t.url, 'POST', '/api/tally/settings/publish-default', { publish_default: true }, bearer(id.key));
    const first = await call(t.url, 'POST', '/api/svc/compute', COMPUTE, bearer(id.key));
    const second = await call(t.url, 'POST', '/api/svc/zeta', { n: 7 }, bearer(id.key));
    expect(second.status, second.text).toBe(200);
    const page = await call(t.url, 'GET', '/api/tally/record?limit=2', undefined, bearer(id.key));
    expect(page.status, page.text).toBe(200);
    expect(page.body.total).toBe(before + 2);
    expect(page.body.results.map((r: { result_id: string }) => r.result_id)).toEqual([second.body.result_id, first.body.result_id]);
    expect(page.body.results[0]).toEqual({
      result_id: second.body.result_id,
      kind: 'solver',
      solver: 'zeta',
      operators: null,
      executor: t.node.nodeId,
      bond_id: null,
      result_digest: second.body.result_digest,
      svcond: second.body.svcond,
      owner: id.zid,
      home: t.node.nodeId,
      executed_by: null,
      verdict: null,
      challenge_id: null,
    });
    expect(page.body.results[1]).toMatchObject({ kind: 'compute', solver: null, operators: ['KO42', 'MECH_KINETIC_ENERGY'], owner: id.zid });
    const next = await call(t.url, 'GET', '/api/tally/record?limit=1&offset=1', undefined, bearer(id.key));
    expect(next.body.results.map((r: { result_id: string }) => r.result_id)).toEqual([first.body.result_id]);
    const all = await call(t.url, 'GET', '/api/tally/record?limit=100', undefined, bearer(id.key));
    expect(all.body.results.some((r: { result_id: string }) => r.result_id === privateRun.body.result_id)).toBe(false);

    expect(await t.node.lookupResult(privateRun.body.result_id)).toEqual({ status: 'unpublished', result_id: privateRun.body.result_id, home: t.node.nodeId });
    expect(await t.node.lookupResult('res_1_0123456789abcdef')).toEqual({ status: 'unknown', result_id: 'res_1_0123456789abcdef' });
    expect(await t.node.lookupResult(second.body.result_id)).toEqual({
      status: 'found',
      result_id: second.body.result_id,
      home: t.node.nodeId,
      owner: id.zid,
      published: true,
      kind: 'solver',
      request: { kind: 'solver', solver: 'zeta', inputs: second.body.inputs },
      svcond: second.body.svcond,
      result_digest: second.body.result_digest,
      executed_by: null,
      // The sealed body as it was sent: a challenge carries it on (consensus/challenge-wire.ts).
      result: second.body,
    });
    expect((await t.node.lookupResult(first.body.result_id)).status === 'found' && (await t.node.lookupResult(first.body.result_id))).toMatchObject({
      request: { kind: 'compute', domain: 'mechanics', operators: COMPUTE.operators, inputs: COMPUTE.inputs },
    });
  });

  it('results published before the by-owner index existed are listed by owner after the next start, once indexed', async () => {
    const id = await zkIdentity(t.url, 'record-legacy');
    await call(t.url, 'POST', '/api/tally/settings/publish-default', { publish_default: true }, bearer(id.key));
    const made: string[] = [];
    for (let i = 0; i < 2; i++) {
      const r = await call(t.url, 'POST', '/api/svc/compute', COMPUTE, bearer(id.key));
      expect(r.status, r.text).toBe(200);
      made.unshift(r.body.result_id as string);
    }
    const byOwner = async () => (await call(t.url, 'GET', `/api/tally/record?owner=${id.zid}`, undefined, bearer(id.key))).body;
    const listed = await byOwner();
    expect(listed.results.map((r: { result_id: string }) => r.result_id)).toEqual(made);
    // The total is the owner's count, kept in the sealing batch (not a count of the index's keys): after publishing…
    expect(listed.total).toBe(2);
    const page = (await call(t.url, 'GET', `/api/tally/record?owner=${id.zid}&limit=1&offset=1`, undefined, bearer(id.key))).body;
    expect(page).toMatchObject({ total: 2, results: [{ result_id: made[1] }] });
    // …and after a restart.
    t = await t.restart();
    expect(await byOwner()).toEqual(listed);
    // As a node before the index left them: published rows, no by-owner entry, no count.
    const store = t.node.store;
    const index = store.sub('record_by_owner');
    const entries = await store.range(index, { gte: `${id.zid}!`, lt: `${id.zid}!\uffff` });
    expect(entries).toHaveLength(2);
    const counters = store.sub('counters', 'json', { rewritten: true });
    const { [`rec:${id.zid}`]: count, ...others } = (await store.get<Record<string, number>>(counters, `#id:${id.zid}`))!;
    expect(count).toBe(2);
    await store.commit([
      ...entries.map((e) => ({ type: 'del' as const, sub: index, key: e.key })),
      { type: 'put', sub: counters, key: `#id:${id.zid}`, value: others },
      { type: 'del', sub: store.sub('chain_meta'), key: 'record-by-owner-v1' },
      { type: 'del', sub: store.sub('chain_meta'), key: 'record-owner-count-v1' },
    ]);
    expect((await byOwner()).results).toEqual([]);
    t = await t.restart();
    // …and after the one-time passes (indexed, then counted); a new one counts on from there.
    expect(await byOwner()).toEqual(listed);
    expect(await t.node.store.get(t.node.store.sub('chain_meta'), 'record-by-owner-v1')).toBe(1);
    expect(await t.node.store.get(t.node.store.sub('chain_meta'), 'record-owner-count-v1')).toBe(1);
    expect((await call(t.url, 'POST', '/api/svc/compute', COMPUTE, bearer(id.key))).status).toBe(200);
    expect((await byOwner()).total).toBe(3);
  }, 30_000);

  it('is keyed and validates its query', async () => {
    const id = await zkIdentity(t.url, 'record-query');
    expectError(await call(t.url, 'GET', '/api/tally/record'), 401, 'SVC_NO_KEY');
    for (const q of ['limit=0', 'limit=101', 'offset=-1', 'limit=abc', 'color=red'])
      expectError(await call(t.url, 'GET', `/api/tally/record?${q}`, undefined, bearer(id.key)), 400, 'SVC_INVALID_INPUT');
    expect((await call(t.url, 'GET', `/api/tally/record?key=${id.key}`)).status).toBe(200);
  });

  it('answers other nodes with a signed lookup: found or unpublished, 404 unknown, 400 malformed', async () => {
    const id = await zkIdentity(t.url, 'record-mesh');
    const hidden = await call(t.url, 'POST', '/api/svc/zeta', { n: 11 }, bearer(id.key));
    await call(t.url, 'POST', '/api/tally/settings/publish-default', { publish_default: true }, bearer(id.key));
    const shown = await call(t.url, 'POST', '/api/svc/zeta', { n: 12 }, bearer(id.key));
    const found = await call(t.url, 'GET', `/api/mesh/results/${shown.body.result_id}`);
    expect(found.status, found.text).toBe(200);
    expect(found.body.type).toBe(RESULT_LOOKUP);
    expect(found.body.sender).toBe(t.node.nodeId);
    expect(await verifyEventSignature(found.body)).toBe(true);
    expect(found.body.body).toMatchObject({ status: 'found', result_digest: shown.body.result_digest, result: shown.body });
    const unpublished = await call(t.url, 'GET', `/api/mesh/results/${hidden.body.result_id}`);
    expect(unpublished.body.body).toEqual({ status: 'unpublished', result_id: hidden.body.result_id, home: t.node.nodeId });
    expectError(await call(t.url, 'GET', '/api/mesh/results/res_1_0123456789abcdef'), 404, 'SVC_NOT_FOUND');
    expectError(await call(t.url, 'GET', '/api/mesh/results/nope'), 400, 'SVC_INVALID_INPUT');
  });
});

describe('executed_by', () => {
  it('is null while the operator is not contributing, and names node and bond, signed, once it is', async () => {
    const op = await zkIdentity(t.url, 'operator');
    const idle = await call(t.url, 'POST', '/api/svc/zeta', { n: 3 }, bearer(op.key));
    expect(idle.status, idle.text).toBe(200);
    expect(idle.body.executed_by).toBeNull();
    for (let i = 0; i < BOND; i++) await call(t.url, 'POST', '/api/svc/compute', COMPUTE, bearer(op.key));
    const bond = await call(t.url, 'POST', '/api/contribute/bond', {}, { ...bearer(op.key), ...operatorBond(t) });
    expect(bond.status, bond.text).toBe(201);
    // Bonded but idle: nothing at stake yet.
    expect((await call(t.url, 'POST', '/api/svc/zeta', { n: 4 }, bearer(op.key))).body.executed_by).toBeNull();
    expect((await call(t.url, 'POST', '/api/contribute/mode', { mode: 'contributing' }, bearer(op.key))).status).toBe(200);
    // Any caller's run executed here now carries the operator's bond.
    const caller = await zkIdentity(t.url, 'caller-of-contributing');
    await call(t.url, 'POST', '/api/tally/settings/publish-default', { publish_default: true }, bearer(caller.key));
    const run = await call(t.url, 'POST', '/api/svc/zeta', { n: 5 }, bearer(caller.key));
    expect(run.status, run.text).toBe(200);
    const e = run.body.executed_by;
    expect(e).toMatchObject({ node: t.node.nodeId, bond_id: bond.body.bond_id });
    expect(e.request_digest).toBe(solverRequestDigest('zeta', run.body.inputs));
    expect(Number.isInteger(e.svcond) && e.svcond <= run.body.svcond).toBe(true);
    expect(verifyExecution(verifyText, e, run.body.result_digest)).toBe(true);
    // Bound to this result: another digest, bond or node does not verify.
    expect(verifyExecution(verifyText, e, 'ab'.repeat(32))).toBe(false);
    expect(verifyExecution(verifyText, { ...e, bond_id: 'bond_' + '0'.repeat(24) }, run.body.result_digest)).toBe(false);
    expect(verifyText(e.node, executionText(e, run.body.result_digest), e.signature)).toBe(true);
    // In the signed body: the proof still verifies, and a tampered executed_by breaks it.
    expect((await call(t.url, 'POST', '/api/svc/verify', run.body, bearer(caller.key))).body.valid).toBe(true);
    const forged = { ...run.body, executed_by: { ...e, bond_id: 'bond_' + '1'.repeat(24) } };
    expect((await call(t.url, 'POST', '/api/svc/verify', forged, bearer(caller.key))).body.valid).toBe(false);
    // A chain is a run too.
    const chain = await call(t.url, 'POST', '/api/svc/compute', COMPUTE, bearer(caller.key));
    expect(verifyExecution(verifyText, chain.body.executed_by, chain.body.result_digest)).toBe(true);
    // The record and the lookup show it.
    const row = (await call(t.url, 'GET', '/api/tally/record?limit=5', undefined, bearer(caller.key))).body.results.find(
      (r: { result_id: string }) => r.result_id === run.body.result_id,
    );
    expect(row).toMatchObject({ executor: t.node.nodeId, bond_id: bond.body.bond_id, executed_by: e });
    expect(await t.node.lookupResult(run.body.result_id)).toMatchObject({ status: 'found', executed_by: e });
  });
});

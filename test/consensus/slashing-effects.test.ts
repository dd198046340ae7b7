// The slashing's batch at the bond's home, on one real node (architecture.md §6, docs/protocol.md §16): an upheld
// verdict whose challenger is homed at the same node, told to the slashing as the challenge service tells it. The
// challenger's share moves to it on this ledger and the rest to the foundation account, in one batch with the record,
// the operator's return to idle and the registry's applied record; told again, and after a restart, nothing moves
// twice; a verdict whose claim was not the deciding digest sends every envelope to the foundation account.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChallengeEntry } from '../../src/consensus/challenges.js';
import { FOUNDATION_ACCOUNT } from '../../src/consensus/slashing.js';
import { envelopeCounter } from '../../src/store/counter-keys.js';
import { failNextBatch } from '../helpers/fail-batch.js';
import { bearer, call, expectError, operatorBond, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

const BOND = 4;
const COMPUTE = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: {} };
const overrides = {
  solverThreads: 0,
  sealWorker: false,
  contribution: { bondEnvelopes: BOND, committeeSize: 3, settleTicks: 4, deadlineTicks: 12, challengeStake: 20, bondTermDays: 30, offload: 'never' },
  slashing: { applyTicks: 64, cooldownDays: 30, challengerShare: 0.5 },
};
const TRUTH = '7'.repeat(64);
const WRONG = 'e'.repeat(64);

let n: TestNode;

beforeAll(async () => {
  n = await startTestNode(overrides, { initialCredits: 10_000 });
}, 60_000);
afterAll(async () => {
  await n?.destroy();
});

/** An identity with BOND envelopes, bonded and contributing. */
async function bondedOperator(seed: string): Promise<{ zid: string; key: string; bondId: string }> {
  const id = await zkIdentity(n.url, seed);
  for (let i = 0; i < BOND; i++) expect((await call(n.url, 'POST', '/api/svc/compute', COMPUTE, bearer(id.key))).status).toBe(200);
  const bond = await call(n.url, 'POST', '/api/contribute/bond', {}, { ...bearer(id.key), ...operatorBond(n) });
  expect(bond.status, bond.text).toBe(201);
  expect((await call(n.url, 'POST', '/api/contribute/mode', { mode: 'contributing' }, bearer(id.key))).status).toBe(200);
  return { ...id, bondId: bond.body.bond_id };
}

/** An upheld verdict of a challenge of this node's bond by `challenger` (homed here), deciding on `deciding`. */
function upheld(challengeId: string, bondId: string, challenger: string, claimed: string, deciding: string): ChallengeEntry {
  const now = n.node.mesh.nowSvcond();
  const challenge = {
    challenge_id: challengeId,
    result_id: 'res_1_0123456789abcdef',
    challenger,
    challenger_home: n.node.nodeId,
    claimed_digest: claimed,
    executor_digest: WRONG,
    executed_by: { node: n.node.nodeId, bond_id: bondId, svcond: now, request_digest: '0'.repeat(64), signature: 'x' },
    request: {},
    stamp_svcond: now,
    svcond: now,
    deadline_svcond: now + 12,
    committee_size: 3,
    quorum: 2,
    eligible: [],
    committee: [],
  };
  return {
    challenge: { challenge, signature: 'x' },
    state: 'upheld',
    votes: [],
    non_member_votes: 0,
    refused_votes: 0,
    verdict: {
      challenge_id: challengeId,
      outcome: 'upheld',
      deciding_digest: deciding,
      tally: { [deciding]: 2 },
      equivocators: [],
      non_member_votes: 0,
      late_votes: 0,
      decided_svcond: now,
      ticks_taken: 1,
      rests_on_votes: 2,
    },
    stake: null,
    received_svcond: now,
  } as unknown as ChallengeEntry;
}

const count = async (zid: string, key: string) =>
  (await call(n.url, 'GET', `/api/tally/envelopes/${zid}?limit=1`, undefined, bearer(key))).body.total as number;
/** Envelopes of the foundation account on this node (its counters read in first). */
async function foundation(): Promise<number> {
  await n.node.ledger.loadCounts(FOUNDATION_ACCOUNT);
  return n.node.counters.get(envelopeCounter(FOUNDATION_ACCOUNT));
}

describe('the slashing batch at the bond’s home', () => {
  it('a failed batch moves nothing; then the challenger’s share and the foundation’s, once, across a restart', async () => {
    const op = await bondedOperator('effects-operator');
    const ch = await zkIdentity(n.url, 'effects-challenger');
    const id = 'chl_' + '1'.repeat(32);
    const entry = upheld(id, op.bondId, ch.zid, TRUTH, TRUTH);
    const before = { op: await count(op.zid, op.key), ch: await count(ch.zid, ch.key), foundation: await foundation() };

    // The slashing's batch fails (the mark's before it does not): nothing of it is left, the bond marked all the same.
    failNextBatch(n, 10, /^!slashing!slash!/);
    await expect(n.node.slashing.onVerdict(entry)).rejects.toThrow();
    expect(await n.node.slashing.slashRecord(id)).toBeUndefined();
    expect(await count(ch.zid, ch.key)).toBe(before.ch);
    expect(await count(op.zid, op.key)).toBe(before.op);
    expect(await foundation()).toBe(before.foundation);
    expect(n.node.bonds.slashState(op.bondId, n.node.mesh.nowSvcond())).toBe('pending');
    expect(n.node.bonds.ofZid(op.zid)).toBeNull();

    await n.node.slashing.onVerdict(entry);
    const rec = (await n.node.slashing.slashRecord(id))!;
    expect(rec.token_ids).toHaveLength(BOND);
    expect(rec.reward).toEqual({ zid: ch.zid, home: n.node.nodeId, token_ids: rec.token_ids.slice(0, BOND / 2), transfer_id: null });
    const moved = await n.node.ledger.envelopesById(rec.token_ids);
    expect(moved.map((e) => [e!.owner, e!.folder, e!.immovable ?? false, e!.bond_id ?? null])).toEqual([
      [ch.zid, 'inbox', false, null],
      [ch.zid, 'inbox', false, null],
      ['foundation', 'slashed', false, null],
      ['foundation', 'slashed', false, null],
    ]);
    expect(await count(ch.zid, ch.key)).toBe(before.ch + BOND / 2);
    expect(await count(op.zid, op.key)).toBe(before.op - BOND);
    expect(await foundation()).toBe(before.foundation + BOND / 2);
    expect(n.node.bonds.slashState(op.bondId, n.node.mesh.nowSvcond())).toBe('applied');
    const status = (await call(n.url, 'GET', '/api/contribute/status', undefined, bearer(op.key))).body;
    expect(status).toMatchObject({ bonded: false, mode: 'idle', cooldown: { challenge_id: id } });
    expect(status.cooldown.until_svcond).toBe(entry.challenge.challenge.svcond + Math.floor((30 * 86_400) / 0.777000777));

    // Told again, and after a restart: nothing moves twice; the cooldown holds.
    await n.node.slashing.onVerdict(entry);
    n = await n.restart();
    await n.node.slashing.onVerdict(entry);
    expect(await count(ch.zid, ch.key)).toBe(before.ch + BOND / 2);
    expect(await count(op.zid, op.key)).toBe(before.op - BOND);
    expect(await foundation()).toBe(before.foundation + BOND / 2);
    expect(n.node.bonds.slashState(op.bondId, n.node.mesh.nowSvcond())).toBe('applied');
    expectError(await call(n.url, 'POST', '/api/contribute/bond', {}, { ...bearer(op.key), ...operatorBond(n) }), 403, 'SVC_BOND_COOLDOWN');
  });

  it('a claim that was not the deciding digest: every envelope to the foundation, no reward', async () => {
    const op = await bondedOperator('effects-operator-2');
    const ch = await zkIdentity(n.url, 'effects-challenger-2');
    const id = 'chl_' + '2'.repeat(32);
    const before = { ch: await count(ch.zid, ch.key), foundation: await foundation() };
    await n.node.slashing.onVerdict(upheld(id, op.bondId, ch.zid, 'ab'.repeat(32), TRUTH));
    const rec = (await n.node.slashing.slashRecord(id))!;
    expect(rec.reward).toBeNull();
    expect(rec.token_ids).toHaveLength(BOND);
    expect(await count(ch.zid, ch.key)).toBe(before.ch);
    expect(await foundation()).toBe(before.foundation + BOND);
  });
});

describe('a verdict naming this node’s bond under another executor', () => {
  it('marks and moves nothing: a bond id counts only for the node that holds it; a bond marked before its home moved it shows idle', async () => {
    const op = await bondedOperator('effects-framed');
    const ch = await zkIdentity(n.url, 'effects-framer');
    const before = await count(op.zid, op.key);
    // A liar L sealed a wrong result whose executed_by is {node: L, bond_id: this node's bond}; the verdict is upheld.
    const framed = upheld('chl_' + '5'.repeat(32), op.bondId, ch.zid, TRUTH, TRUTH);
    (framed.challenge.challenge as { executed_by: { node: string } }).executed_by.node = '12D3KooWLiarLiarLiarLiarLiarLiarLiarLiarLiarLiarLiar';
    await n.node.slashing.onVerdict(framed);
    expect(n.node.bonds.get(op.bondId)?.slashed ?? null).toBeNull();
    expect(n.node.bonds.ofZid(op.zid)?.bond.bond_id).toBe(op.bondId);
    expect(n.node.bonds.slashState(op.bondId, n.node.mesh.nowSvcond())).toBeNull();
    expect(await n.node.slashing.slashRecord(framed.challenge.challenge.challenge_id)).toBeUndefined();
    expect(await count(op.zid, op.key)).toBe(before);
    const status = await call(n.url, 'GET', '/api/contribute/status', undefined, bearer(op.key));
    expect(status.body).toMatchObject({ bonded: true, mode: 'contributing' });

    // A verdict against it as its own executor, marked before the batch that moves its envelopes lands: the status
    // says what the identity is — bonded no more, so not contributing — until the slashing returns it to idle.
    const real = upheld('chl_' + '6'.repeat(32), op.bondId, ch.zid, TRUTH, TRUTH);
    failNextBatch(n, 10, /^!slashing!slash!/);
    await expect(n.node.slashing.onVerdict(real)).rejects.toThrow();
    const marked = await call(n.url, 'GET', '/api/contribute/status', undefined, bearer(op.key));
    expect(marked.body).toMatchObject({ bonded: false, mode: 'idle' });
    await n.node.slashing.onVerdict(real);
    expect((await call(n.url, 'GET', '/api/contribute/status', undefined, bearer(op.key))).body).toMatchObject({ bonded: false, mode: 'idle' });
  });
});

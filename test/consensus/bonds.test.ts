// Bonds on one real node over HTTP (spec 4.7, part 3; architecture.md §6): bond the oldest held envelopes or named
// ones, in one batch with the registry entry; 400 with held and needed; 409 when bonded or when the node already
// holds its operator's bond; release lifts the mark, refused while a challenge is open; the registry survives a restart.
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOND_HEARD_SLACK_TICKS, bondAttestationText, releaseAttestationText, type BondRecord } from '../../src/consensus/bonds.js';
import { committeeCandidates, eligibleNodes, type Candidate } from '../../src/consensus/committee.js';
import { signText, verifyText } from '../../src/mesh/wire.js';
import { key } from './helpers.js';
import { bearer, call, operatorBond, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { failNextBatch } from '../helpers/fail-batch.js';
import { identityAssertBody } from '../helpers/identity-assert.js';
import { mintKey } from '../../src/identity/keys.js';

const BOND = 5;
const COMPUTE = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: {} };
const overrides = {
  solverThreads: 0,
  sealWorker: false,
  contribution: { bondEnvelopes: BOND, committeeSize: 3, settleTicks: 4, deadlineTicks: 12, challengeStake: 20, bondTermDays: 30, offload: 'never' },
};

let n: TestNode;

/** An identity with `count` envelopes (each seal gives its caller one). */
async function withEnvelopes(seed: string, count: number): Promise<{ zid: string; key: string }> {
  const id = await zkIdentity(n.url, seed);
  for (let i = 0; i < count; i++) {
    const r = await call(n.url, 'POST', '/api/svc/compute', COMPUTE, bearer(id.key));
    if (r.status !== 200) throw new Error(`compute: ${r.status} ${r.text}`);
  }
  return id;
}

async function envelopes(id: { zid: string; key: string }): Promise<any[]> {
  const r = await call(n.url, 'GET', `/api/tally/envelopes/${id.zid}?limit=500`, undefined, bearer(id.key));
  expect(r.status, r.text).toBe(200);
  return r.body.items;
}

beforeAll(async () => {
  n = await startTestNode(overrides, { initialCredits: 10_000 });
}, 60_000);
afterAll(async () => {
  await n?.destroy();
});

describe('POST /api/contribute/bond and /release on one node', () => {
  let op: { zid: string; key: string };
  let bondId = '';

  it('too few envelopes: 400 with how many are held and needed', async () => {
    const poor = await withEnvelopes('bond-poor', 3);
    const e = expectError(
      await call(n.url, 'POST', '/api/contribute/bond', {}, { ...bearer(poor.key), ...operatorBond(n) }),
      400,
      'SVC_INSUFFICIENT_ENVELOPES',
    );
    expect(e.held).toBe(3);
    expect(e.needed).toBe(BOND);
    // Nothing was marked.
    expect((await envelopes(poor)).some((x) => x.immovable)).toBe(false);
  });

  it('a bond whose batch fails leaves nothing: no mark, no registry entry, and the node can bond afterwards', async () => {
    const unlucky = await withEnvelopes('bond-unlucky', BOND);
    failNextBatch(n, 20);
    expectError(await call(n.url, 'POST', '/api/contribute/bond', {}, { ...bearer(unlucky.key), ...operatorBond(n) }), 503, 'SVC_STORAGE_UNAVAILABLE');
    expect((await envelopes(unlucky)).some((x) => x.immovable)).toBe(false);
    expect(n.node.bonds.ofZid(unlucky.zid)).toBeNull();
    expect(n.node.bonds.ofNode(n.node.nodeId)).toBeNull();
    expect(n.node.bonds.active()).toEqual([]);
    const s = await call(n.url, 'GET', '/api/contribute/status', undefined, bearer(unlucky.key));
    expect(s.body.bonded).toBe(false);
  });

  it('the bond slot is the operator’s: without the operator token, or with another, a stranger holding enough envelopes gets 403 and nothing is marked', async () => {
    const stranger = await withEnvelopes('bond-squatter', BOND);
    const bare = expectError(await call(n.url, 'POST', '/api/contribute/bond', {}, bearer(stranger.key)), 403, 'SVC_FORBIDDEN');
    expect(bare).toMatchObject({ zid: stranger.zid, operator_named: false, header: 'x-svc-operator-token' });
    expect(bare.reason).toContain('operator token');
    const wrong = { 'x-svc-operator-token': `op_${'0'.repeat(64)}` };
    const forged = expectError(await call(n.url, 'POST', '/api/contribute/bond', {}, { ...bearer(stranger.key), ...wrong }), 403, 'SVC_FORBIDDEN');
    expect(forged.reason).toContain('not this node');
    expect((await envelopes(stranger)).some((x) => x.immovable)).toBe(false);
    expect(n.node.bonds.ofNode(n.node.nodeId)).toBeNull();
  });

  it('bonds the oldest held envelopes, marks exactly those immovable, keeps the folder counts, and signs the record', async () => {
    op = await withEnvelopes('bond-operator', BOND + 2);
    const before = await call(n.url, 'GET', `/api/tally/envelopes/${op.zid}/folders`, undefined, bearer(op.key));
    const r = await call(n.url, 'POST', '/api/contribute/bond', undefined, { ...bearer(op.key), ...operatorBond(n) });
    expect(r.status, r.text).toBe(201);
    bondId = r.body.bond_id;
    expect(bondId).toMatch(/^bond_[0-9a-f]{24}$/);
    expect(r.body).toMatchObject({ zid: op.zid, node: n.node.nodeId, token_ids_count: BOND, term_days: 30, days_remaining: 30 });
    const all = await envelopes(op);
    expect(all).toHaveLength(BOND + 2);
    // The listing is newest first: the oldest five are its last five.
    const oldest = all
      .slice(2)
      .map((x) => x.token_id)
      .sort();
    expect([...r.body.token_ids].sort()).toEqual(oldest);
    for (const x of all.slice(2)) expect(x).toMatchObject({ immovable: true, bond_id: bondId, folder: 'inbox', owner: op.zid });
    for (const x of all.slice(0, 2)) expect(x.immovable).toBeUndefined();
    const after = await call(n.url, 'GET', `/api/tally/envelopes/${op.zid}/folders`, undefined, bearer(op.key));
    expect(after.body.folders).toEqual(before.body.folders);
    expect(after.body.folders).toEqual([{ folder: 'inbox', count: BOND + 2 }]);
    // The record {bond_id, zid, node, token_ids, svcond} and its attestation by this node's key.
    const rec = r.body.record;
    expect(Object.keys(rec).sort()).toEqual(['bond_id', 'node', 'svcond', 'token_ids', 'zid']);
    expect(verifyText(n.node.nodeId, bondAttestationText(rec), r.body.attestation)).toBe(true);
    expect(verifyText(n.node.nodeId, bondAttestationText({ ...rec, token_ids: [...rec.token_ids].reverse() }), r.body.attestation)).toBe(false);
  });

  it('status shows the bond: id, token ids count, since, days remaining', async () => {
    const s = await call(n.url, 'GET', '/api/contribute/status', undefined, bearer(op.key));
    expect(s.status, s.text).toBe(200);
    expect(s.body).toMatchObject({ bonded: true, mode: 'idle', open_challenges: [], verdicts: [] });
    expect(s.body.bond).toMatchObject({ bond_id: bondId, token_ids_count: BOND, days_remaining: 30, node: n.node.nodeId });
    expect(Number.isInteger(s.body.bond.since_svcond)).toBe(true);
  });

  it("already bonded: 409; a second identity bonding on the same node: 409 (one bond per node, its operator's)", async () => {
    const again = expectError(await call(n.url, 'POST', '/api/contribute/bond', {}, { ...bearer(op.key), ...operatorBond(n) }), 409, 'SVC_CONFLICT');
    expect(again.bond_id).toBe(bondId);
    const other = await withEnvelopes('bond-second', BOND);
    const e = expectError(await call(n.url, 'POST', '/api/contribute/bond', {}, { ...bearer(other.key), ...operatorBond(n) }), 409, 'SVC_CONFLICT');
    expect(e.bond_id).toBe(bondId);
    expect(e.message).toContain('one bond');
    expect((await envelopes(other)).some((x) => x.immovable)).toBe(false);
  });

  it('release is refused (409) while a challenge against the bond is open', async () => {
    // Challenges come with their own service; the check is the bond service's openChallenges hook, set here.
    const bonds = n.node.bonds as unknown as { o: { openChallenges?: (id: string) => string[] } };
    bonds.o.openChallenges = (id) => (id === bondId ? ['ch_open_1'] : []);
    try {
      const e = expectError(await call(n.url, 'POST', '/api/contribute/release', {}, bearer(op.key)), 409, 'SVC_BOND_CHALLENGED');
      expect(e.open_challenges).toEqual(['ch_open_1']);
      const s = await call(n.url, 'GET', '/api/contribute/status', undefined, bearer(op.key));
      expect(s.body.open_challenges).toEqual(['ch_open_1']);
      expect((await envelopes(op)).filter((x) => x.immovable)).toHaveLength(BOND);
    } finally {
      bonds.o.openChallenges = undefined;
    }
  });

  it('the registry and the marks survive a restart', async () => {
    n = await n.restart();
    const s = await call(n.url, 'GET', '/api/contribute/status', undefined, bearer(op.key));
    expect(s.body.bond?.bond_id).toBe(bondId);
    expect(n.node.bonds.ofNode(n.node.nodeId)?.bond.bond_id).toBe(bondId);
    expect((await envelopes(op)).filter((x) => x.immovable)).toHaveLength(BOND);
  }, 60_000);

  it('release lifts the mark, keeps the envelopes owned, signs the release; a second release is 409', async () => {
    const r = await call(n.url, 'POST', '/api/contribute/release', {}, bearer(op.key));
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ zid: op.zid, bond_id: bondId, mode: 'idle' });
    expect(
      verifyText(
        n.node.nodeId,
        releaseAttestationText({ bond_id: bondId, zid: op.zid, node: n.node.nodeId, svcond: r.body.released_svcond }),
        r.body.attestation,
      ),
    ).toBe(true);
    const all = await envelopes(op);
    expect(all).toHaveLength(BOND + 2);
    expect(all.every((x) => x.immovable === undefined && x.bond_id === undefined && x.owner === op.zid)).toBe(true);
    const s = await call(n.url, 'GET', '/api/contribute/status', undefined, bearer(op.key));
    expect(s.body).toMatchObject({ bonded: false, bond: null });
    expect(n.node.bonds.get(bondId)?.release?.release.bond_id).toBe(bondId);
    expectError(await call(n.url, 'POST', '/api/contribute/release', {}, bearer(op.key)), 409, 'SVC_CONFLICT');
    // The registry still holds the released bond's node: a sealer known to the mesh (verify's sealer_known).
    expect(n.node.bonds.ofNode(n.node.nodeId)).toBeNull();
    expect(n.node.bonds.registers(n.node.nodeId)).toBe(true);
    expect(n.node.bonds.registers('12D3KooWNotARegisteredNode')).toBe(false);
  });

  it("token_ids: a token not the caller's is named (400), a repeat or a wrong count is 400, the right ones are bonded", async () => {
    const mine = (await envelopes(op)).map((x) => x.token_id);
    const theirs = (await envelopes(await withEnvelopes('bond-stranger', 1)))[0].token_id;
    const foreign = expectError(
      await call(n.url, 'POST', '/api/contribute/bond', { token_ids: [...mine.slice(0, BOND - 1), theirs] }, { ...bearer(op.key), ...operatorBond(n) }),
      400,
      'SVC_INVALID_INPUT',
    );
    expect(foreign.field).toBe('token_ids');
    expect(foreign.message).toContain(theirs);
    expectError(
      await call(n.url, 'POST', '/api/contribute/bond', { token_ids: [...mine.slice(0, BOND - 1), mine[0]] }, { ...bearer(op.key), ...operatorBond(n) }),
      400,
      'SVC_INVALID_INPUT',
    );
    const short = expectError(
      await call(n.url, 'POST', '/api/contribute/bond', { token_ids: mine.slice(0, 2) }, { ...bearer(op.key), ...operatorBond(n) }),
      400,
      'SVC_INSUFFICIENT_ENVELOPES',
    );
    expect(short).toMatchObject({ needed: BOND, held: BOND + 2 });
    expectError(await call(n.url, 'POST', '/api/contribute/bond', { token_ids: 'all' }, { ...bearer(op.key), ...operatorBond(n) }), 400, 'SVC_INVALID_INPUT');
    expect((await envelopes(op)).some((x) => x.immovable)).toBe(false);
    // The five newest, by name, asked for twice at once: one bond is made, of exactly those.
    const chosen = mine.slice(0, BOND);
    const rs = await Promise.all(
      [1, 2].map(() => call(n.url, 'POST', '/api/contribute/bond', { token_ids: chosen }, { ...bearer(op.key), ...operatorBond(n) })),
    );
    expect(rs.map((r) => r.status).sort()).toEqual([201, 409]);
    const made = rs.find((r) => r.status === 201)!;
    expect([...made.body.token_ids].sort()).toEqual([...chosen].sort());
    const marked = (await envelopes(op)).filter((x) => x.immovable).map((x) => x.token_id);
    expect(marked.sort()).toEqual([...chosen].sort());
  });
});

describe('a node whose operator names its identity (contribution.operator)', () => {
  const zidOf = (seed: string) => `zid_${createHash('sha256').update(`equation:${seed}`).digest('hex').slice(0, 32)}`;
  let named: TestNode;
  beforeAll(async () => {
    named = await startTestNode({ ...overrides, contribution: { ...overrides.contribution, operator: zidOf('slot-owner') } }, { initialCredits: 10_000 });
  }, 60_000);
  afterAll(async () => {
    await named?.destroy();
  });

  it('anyone else is refused with the reason; the named identity bonds without a token', async () => {
    const bondWith = async (seed: string, headers: Record<string, string> = {}) => {
      const id = await zkIdentity(named.url, seed);
      for (let i = 0; i < BOND; i++) expect((await call(named.url, 'POST', '/api/svc/compute', COMPUTE, bearer(id.key))).status).toBe(200);
      return { id, r: await call(named.url, 'POST', '/api/contribute/bond', {}, { ...bearer(id.key), ...headers }) };
    };
    const squatter = await bondWith('slot-squatter');
    const e = expectError(squatter.r, 403, 'SVC_FORBIDDEN');
    expect(e).toMatchObject({ zid: squatter.id.zid, operator_named: true });
    expect(e.reason).toContain('contribution.operator');
    expect(named.node.bonds.ofZid(squatter.id.zid)).toBeNull();
    const owner = await bondWith('slot-owner');
    expect(owner.r.status, owner.r.text).toBe(201);
    expect(owner.r.body).toMatchObject({ zid: zidOf('slot-owner'), node: named.node.nodeId, token_ids_count: BOND });
    expect(named.node.bonds.ofNode(named.node.nodeId)?.bond.zid).toBe(owner.id.zid);
  }, 60_000);
});

describe('a bond record dated before it was heard (a seat bought by back-dating)', () => {
  it('counts from the tick this node first heard it, less the slack; a prompt one from its own tick; a late honest one is kept', async () => {
    const now = n.node.mesh.nowSvcond();
    const attested = async (svcond: number) => {
      const k = await key();
      const bond: BondRecord = {
        bond_id: `bond_${randomBytes(12).toString('hex')}`,
        zid: `zid_${k.id.slice(-8)}`,
        node: k.id,
        token_ids: ['x1', 'x2', 'x3', 'x4', 'x5'],
        svcond,
      };
      // A bond stands only for an identity homed at its node: the stranger's identity, as its assertion says.
      expect(await n.node.identity.applyAssertion(identityAssertBody(mintKey('sk'), bond.zid, k.id, Date.now()), k.id)).toBe(true);
      return { k, body: { bond, attestation: signText(k.priv, bondAttestationText(bond)) } };
    };
    // Dated 500 ticks back, heard now: it is kept (an old bond re-announced to a late joiner looks the same), but
    // counts as made BOND_HEARD_SLACK_TICKS before now, so it does not skip the settle time.
    const backdated = await attested(now - 500);
    await n.node.bonds.applyBond(backdated.body, { sender: backdated.k.id });
    expect(n.node.bonds.get(backdated.body.bond.bond_id)?.bond).toEqual(backdated.body);
    const from = n.node.bonds.settledFrom(backdated.body.bond.bond_id)!;
    expect(from).toBeGreaterThanOrEqual(now - BOND_HEARD_SLACK_TICKS);
    // Heard as it was made: its own tick.
    const prompt = await attested(now - 2);
    await n.node.bonds.applyBond(prompt.body, { sender: prompt.k.id });
    expect(n.node.bonds.settledFrom(prompt.body.bond.bond_id)).toBe(now - 2);
    // The committee reads it so: at a challenge 3 ticks after that (settleTicks 4) it has not settled, though its
    // record says it was made 500 ticks before; a tick later it has.
    const heard = () => [{ svcond: now, mode: 'contributing', bondId: backdated.body.bond.bond_id }];
    const rule = { svcond: from + 3, settleTicks: 4, live: { from: now - 32, to: now + 32 }, executor: 'x', challengerHome: 'y' };
    const settled = (candidates: Candidate[], svcond: number) => eligibleNodes(candidates, { ...rule, svcond });
    const read = committeeCandidates([{ bond: backdated.body.bond }], heard, (id) => n.node.bonds.settledFrom(id));
    expect(settled(read, from + 3)).toEqual([]);
    expect(settled(read, from + 4)).toEqual([backdated.k.id]);
    // By its record's tick alone it would have held a seat at once.
    expect(settled(committeeCandidates([{ bond: backdated.body.bond }], heard), from + 3)).toEqual([backdated.k.id]);
    // The tick it was heard is kept through a restart of the registry (a slashing mark does not drop it either).
    await n.node.bonds.markSlashed(backdated.body.bond.bond_id, { challenge_id: 'chl_' + '0'.repeat(32), challenge_svcond: now, due_svcond: now + 1 });
    expect(n.node.bonds.settledFrom(backdated.body.bond.bond_id)).toBe(from);
  });
});

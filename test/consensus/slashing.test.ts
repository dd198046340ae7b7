// Slashing as every node's fact (architecture.md §6, docs/protocol.md §16), on four real nodes on 127.0.0.1 (real
// libp2p, real HTTP): M and L are liars composed in the test — their zeta solver seals a wrong result (an extra output
// member, still through the gate) — C is honest and contributing (the committee of one), B is where challengers live.
//   1. M's wrong result challenged with the true digest: upheld; M is stopped between the verdict and its payment,
//      started again, and the challenger's share arrives exactly once (a second restart pays nothing more); M's
//      operator cannot bond again inside its cooldown; the result is marked upheld in M's record and B's verify answer.
//   2. L's wrong result challenged with a random digest: upheld all the same, and L — which skips its own slashing —
//      is slashed at once in B's and C's registries; once their clocks pass the due tick (driven, not slept), the
//      bond is in default there and a bond attestation of L's is ignored.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bondedOperator } from '../helpers/contributing.js';
import { bearer, call, expectError, operatorBond, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitFor } from '../mesh/helpers.js';
import { defaultRegistry } from '../../src/solvers/registry.js';
import { systemClock, TICK_NS, type Clock } from '../../src/kernel/clock.js';
import { bondAttestationText, slashedAttestationText, type BondRecord } from '../../src/consensus/bonds.js';
import { rewardTransferId } from '../../src/consensus/slashing.js';
import { signText } from '../../src/mesh/wire.js';
import { GossipError } from '../../src/mesh/gossip-error.js';

const BOND = 2;
const STAKE = 20;
const DEADLINE = 6;
const APPLY = 10;
const RANDOM_DIGEST = 'ab'.repeat(32);
const config = (bootstrap: string[], p2pPort = 0) => ({
  solverThreads: 0,
  sealWorker: false,
  receiptSecret: 'ef'.repeat(32),
  contribution: { bondEnvelopes: BOND, committeeSize: 1, settleTicks: 1, deadlineTicks: DEADLINE, challengeStake: STAKE, bondTermDays: 30, offload: 'never' },
  slashing: { applyTicks: APPLY, cooldownDays: 30, challengerShare: 0.5 },
  mesh: { secret: 'slashing-test-mesh-secret-0123456789', p2pPort, bootstrap, tickEvery: 1 },
});
const opts = { initialCredits: 10_000, reannounceTicks: 2, mesh: { redialMinMs: 100, redialMaxMs: 1000 } };

/** The liars' solver set: zeta's outputs carry one extra member, so its digest is not an honest node's. */
function tamperedRegistry() {
  const registry = defaultRegistry();
  const zeta = registry.list().find((s) => s.id === 'zeta')!;
  return registry.with([
    {
      ...zeta,
      run: (inputs: never, state: never) => {
        const out = zeta.run(inputs, state);
        return { ...out, outputs: { ...out.outputs, tampered: 1 } };
      },
    },
  ]);
}

/** The system clock moved forward by whole ticks when the test drives it. */
class DrivenClock implements Clock {
  private offset = 0n;
  nowNs(): bigint {
    return systemClock.nowNs() + this.offset;
  }
  drive(ticks: number): void {
    this.offset += TICK_NS * BigInt(ticks);
  }
}

interface Operator {
  zid: string;
  key: string;
  bondId: string;
}

let b: TestNode;
let c: TestNode;
let m: TestNode;
let l: TestNode;
const clocks = { b: new DrivenClock(), c: new DrivenClock() };
const ops: Record<string, Operator> = {};
let bootAddr: string;
const nodes = () => ({ b, c, l });
const COMPUTE = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: {} };

/** The TCP port of a node's libp2p host (a node started again on it keeps its address, B's the others' bootstrap). */
function p2pPortOf(t: TestNode): number {
  return Number(/\/tcp\/(\d+)/.exec(t.node.mesh.multiaddrs()[0]!)![1]);
}

async function envelopes(t: TestNode, key: string, zid: string): Promise<number> {
  return (await call(t.url, 'GET', `/api/tally/envelopes/${zid}?limit=1`, undefined, bearer(key))).body.total;
}

async function verdictAt(t: TestNode, id: string): Promise<any> {
  return waitFor(
    async () => {
      const r = await call(t.url, 'GET', `/api/tally/consensus/${id}`);
      return r.status === 200 && r.body.verdict ? r.body : null;
    },
    30_000,
    `the verdict of ${id} at ${t.url}`,
  );
}

/**
 * Until `at` hears `member` contributing with `op`'s bond, settled by `at`'s clock: what a challenge opened at `at`
 * needs of the committee's one member (B hearing C's mode alone is not it: the tick event must carry the bond).
 */
async function eligibleAt(at: TestNode, member: TestNode, op: Operator): Promise<void> {
  await waitFor(
    () => {
      const bond = at.node.bonds.get(op.bondId)?.bond?.bond;
      const heard = at.node.mesh.peers().find((p) => p.peerId === member.node.nodeId);
      if (!bond || !heard || heard.mode !== 'contributing' || heard.bondId !== op.bondId || heard.lastTick === null) return false;
      const now = at.node.mesh.nowSvcond();
      return now - bond.svcond >= 1 && heard.lastTick >= now - 8;
    },
    30_000,
    `${member.url} heard contributing with its bond at ${at.url}`,
  );
}

beforeAll(async () => {
  b = await startTestNode(config([]), { ...opts, clock: clocks.b });
  bootAddr = b.node.mesh.multiaddrs()[0]!;
  const boot = [bootAddr];
  [c, m, l] = await Promise.all([
    startTestNode(config(boot), { ...opts, clock: clocks.c }),
    startTestNode(config(boot), { ...opts, registry: tamperedRegistry() }),
    startTestNode(config(boot), { ...opts, registry: tamperedRegistry() }),
  ]);
  await waitFor(() => [b, c, m, l].every((n) => n.node.mesh.peers().filter((p) => p.url).length >= 3), 40_000, 'tick events from every peer');
  // L stays idle until its own test: the committee of M's challenge is C alone.
  [ops.c, ops.m, ops.l] = await Promise.all([bondedOperator(c, 'op-c', BOND), bondedOperator(m, 'op-m', BOND), bondedOperator(l, 'op-l', BOND, false)]);
  await waitFor(() => [b, c, m, l].every((n) => n.node.bonds.active().length === 3), 30_000, 'every bond at every node');
  await waitFor(() => b.node.mesh.peers().filter((p) => p.mode === 'contributing').length === 2, 30_000, 'C and M contributing, as B hears it');
}, 120_000);

afterAll(async () => {
  await Promise.all([b, c, m, l].map((n) => n?.destroy()));
});

describe('slashing is every node’s fact', () => {
  it('a challenger whose claim decided is paid its share once, across restarts of the bond’s home; the slashed operator cannot bond again', async () => {
    const result = (await call(m.url, 'POST', '/api/svc/zeta', { n: 5, count: 1 }, bearer(ops.m!.key))).body;
    expect(result.executed_by?.bond_id).toBe(ops.m!.bondId);
    const truth = await call(c.url, 'POST', '/api/svc/zeta', { n: 5, count: 1 }, bearer(ops.c!.key));
    expect(truth.body.result_digest).not.toBe(result.result_digest);
    const ch = await zkIdentity(b.url, 'challenger-rewarded');
    await eligibleAt(b, c, ops.c!);
    const before = await envelopes(b, ch.key, ch.zid);
    const bondEnvelopesBefore = await envelopes(m, ops.m!.key, ops.m!.zid);
    // M records the verdict but applies nothing before it stops (its effects stay owed).
    m.node.slashing.onVerdict = async () => undefined;
    const opened = await call(
      b.url,
      'POST',
      '/api/tally/consensus/challenges',
      { result_id: result.result_id, claimed_digest: truth.body.result_digest },
      bearer(ch.key),
    );
    expect(opened.status, opened.text).toBe(201);
    expect(opened.body.committee).toEqual([c.node.nodeId]);
    const id = opened.body.challenge_id as string;
    for (const t of [b, c]) expect((await verdictAt(t, id)).verdict).toMatchObject({ outcome: 'upheld', deciding_digest: truth.body.result_digest });
    await waitFor(() => m.node.challenges.get(id)?.verdict, 30_000, 'the verdict at M');
    expect(await m.node.slashing.slashRecord(id)).toBeUndefined();
    expect(await envelopes(b, ch.key, ch.zid)).toBe(before);

    // M starts again while the two custodians of its operator's identity are stopped: its custody view (kept across
    // the restart) still names them, so a write answers 503 and the owed slashing fails, rather than either being
    // certified by M alone; once they are back the slashing lands, attempted again on M's timer.
    const custodians = m.node.custody.replicator.setOf(ops.m!.zid).custodians.filter((n) => n !== m.node.nodeId);
    expect(custodians).toHaveLength(2);
    const away = (['b', 'c', 'l'] as const).filter((k) => custodians.includes(nodes()[k].node.nodeId));
    const ports = away.map((k) => p2pPortOf(nodes()[k]));
    await Promise.all(away.map((k) => nodes()[k].stop()));
    m = await m.restart();
    const unavailable = await call(m.url, 'POST', '/api/svc/compute', COMPUTE, bearer(ops.m!.key));
    expect(expectError(unavailable, 503, 'SVC_CUSTODY_UNAVAILABLE').custodians).toEqual(expect.arrayContaining(custodians));
    await waitFor(() => (m.node.challenges.stats().owed_effect_failures ?? 0) > 0, 20_000, 'a failed attempt at the owed slashing');
    expect(await m.node.slashing.slashRecord(id)).toBeUndefined();
    for (const [i, k] of away.entries()) {
      const back = await startTestNode(
        config([bootAddr], ports[i]),
        { ...opts, ...(k === 'l' ? { registry: tamperedRegistry() } : { clock: clocks[k] }) },
        nodes()[k].dataDir,
      );
      if (k === 'b') b = back;
      else if (k === 'c') c = back;
      else l = back;
    }
    const slashed = await waitFor(() => m.node.slashing.slashRecord(id), 20_000, 'the slashing at M once its custodians are back');
    expect(slashed.token_ids).toHaveLength(BOND);
    expect(slashed.reward).toEqual({ zid: ch.zid, home: b.node.nodeId, token_ids: slashed.token_ids.slice(0, 1), transfer_id: rewardTransferId(id) });
    await waitFor(async () => (await envelopes(b, ch.key, ch.zid)) === before + 1, 20_000, 'the reward at the challenger’s home');
    // M, restarted, serves its operator once the custodians confirm it is still the home (a 503 until then).
    await waitFor(async () => (await envelopes(m, ops.m!.key, ops.m!.zid)) === bondEnvelopesBefore - BOND, 20_000, 'the bond gone at M');
    const foundation = await m.node.ledger.envelopesById(slashed.token_ids);
    expect(foundation.map((e) => e?.owner ?? null)).toEqual([null, 'foundation']);
    // Started again: nothing is paid twice.
    m = await m.restart();
    await waitFor(() => m.node.mesh.peers().filter((p) => p.url).length >= 3, 20_000, 'M back in the mesh');
    expect((await m.node.slashing.slashRecord(id))!.reward).toEqual(slashed.reward);
    expect(await envelopes(b, ch.key, ch.zid)).toBe(before + 1);
    const transfer = await call(b.url, 'GET', `/api/tally/transfers/${rewardTransferId(id)}`, undefined, bearer(ch.key));
    expect(transfer.body).toMatchObject({ state: 'delivered', to: ch.zid, count: 1 });

    // Every node marks the bond; the result shows the verdict in its record and in a verify answer.
    await waitFor(
      () => [b, c, l].every((t) => t.node.bonds.slashState(ops.m!.bondId, t.node.mesh.nowSvcond()) === 'applied'),
      20_000,
      'consensus.slashed everywhere',
    );
    const record = await call(m.url, 'GET', `/api/tally/record?owner=${ops.m!.zid}`, undefined, bearer(ops.m!.key));
    expect(record.body.results.find((r: any) => r.result_id === result.result_id)).toMatchObject({ verdict: 'upheld', challenge_id: id });
    const verified = await call(b.url, 'POST', '/api/svc/verify', { result }, bearer(ch.key));
    expect(verified.body).toMatchObject({ verdict: 'upheld', challenge_id: id });
    const honest = await call(b.url, 'POST', '/api/svc/verify', { result: truth.body }, bearer(ch.key));
    expect(honest.body).toMatchObject({ verdict: null, challenge_id: null });

    // The slashed operator: idle, and refused a new bond until the cooldown ends.
    const status = await call(m.url, 'GET', '/api/contribute/status', undefined, bearer(ops.m!.key));
    expect(status.body).toMatchObject({ bonded: false, mode: 'idle' });
    const refused = expectError(await call(m.url, 'POST', '/api/contribute/bond', {}, { ...bearer(ops.m!.key), ...operatorBond(m) }), 403, 'SVC_BOND_COOLDOWN');
    expect(refused.challenge_id).toBe(id);
    expect(refused.cooldown_until_svcond).toBe(opened.body.svcond + Math.floor((30 * 86_400) / 0.777000777));
    expect(Date.parse(refused.cooldown_until)).toBeGreaterThan(Date.now() + 29 * 86_400_000);
  }, 120_000);

  it('a random-digest challenge of a wrong result slashes its executor; one that skips its own slashing is slashed by every other node, and in default past the due tick', async () => {
    expect((await call(l.url, 'POST', '/api/contribute/mode', { mode: 'contributing' }, bearer(ops.l!.key))).status).toBe(200);
    const result = (await call(l.url, 'POST', '/api/svc/zeta', { n: 7, count: 1 }, bearer(ops.l!.key))).body;
    expect(result.executed_by?.bond_id).toBe(ops.l!.bondId);
    // The liar: it records the verdict and never applies it.
    l.node.slashing.onVerdict = async () => undefined;
    const ch = await zkIdentity(b.url, 'challenger-random');
    await eligibleAt(b, c, ops.c!);
    const opened = await call(b.url, 'POST', '/api/tally/consensus/challenges', { result_id: result.result_id, claimed_digest: RANDOM_DIGEST }, bearer(ch.key));
    expect(opened.status, opened.text).toBe(201);
    expect(opened.body.committee).toEqual([c.node.nodeId]);
    const id = opened.body.challenge_id as string;
    for (const t of [b, c]) {
      const v = (await verdictAt(t, id)).verdict;
      expect(v.outcome).toBe('upheld');
      expect(v.deciding_digest).not.toBe(RANDOM_DIGEST);
      expect(v.deciding_digest).not.toBe(result.result_digest);
    }
    // At once, before the due tick: slashed in B's and C's registries, no longer active there; the liar still holds it.
    const due = opened.body.deadline_svcond + APPLY;
    for (const t of [b, c]) {
      await waitFor(() => t.node.bonds.slashState(ops.l!.bondId, t.node.mesh.nowSvcond()) === 'pending', 10_000, 'the mark');
      expect(t.node.bonds.ofNode(l.node.nodeId)).toBeNull();
      expect(t.node.bonds.get(ops.l!.bondId)!.slashed).toMatchObject({ challenge_id: id, due_svcond: due });
    }
    expect(l.node.bonds.ofNode(l.node.nodeId)?.bond.bond_id).toBe(ops.l!.bondId);
    const verified = await call(c.url, 'POST', '/api/svc/verify', { result }, bearer(ops.c!.key));
    expect(verified.body).toMatchObject({ verdict: 'upheld', challenge_id: id });
    // The stake is returned: the executor was wrong, though the claim was not the truth; no reward.
    await waitFor(async () => (await b.node.slashing.stakeRecord(id))?.effect === 'returned', 10_000, 'stake returned');

    // A new bond of the slashed identity is ignored inside its cooldown; past the due tick the liar's node itself is
    // in default and bonds no one (another identity's bond, signed by it, is ignored too).
    const fresh: BondRecord = {
      bond_id: 'bond_' + 'f'.repeat(24),
      zid: 'zid_' + '0'.repeat(32),
      node: l.node.nodeId,
      token_ids: ['env_a', 'env_b'],
      svcond: b.node.mesh.nowSvcond(),
    };
    const attested = { bond: fresh, attestation: signText(l.node.nodeIdentity.privateKey, bondAttestationText(fresh)) };
    const sameOperator = { bond: { ...fresh, zid: ops.l!.zid }, attestation: '' };
    sameOperator.attestation = signText(l.node.nodeIdentity.privateKey, bondAttestationText(sameOperator.bond));
    await expect(b.node.bonds.applyBond(sameOperator, { sender: l.node.nodeId })).rejects.toMatchObject({ code: 'SVC_BOND_COOLDOWN', action: 'ignore' });
    for (const t of [b, c]) {
      const now = t.node.mesh.nowSvcond();
      (t === b ? clocks.b : clocks.c).drive(due + 1 - now);
      expect(t.node.bonds.slashState(ops.l!.bondId, t.node.mesh.nowSvcond())).toBe('defaulted');
      const refused = await t.node.bonds.applyBond(attested, { sender: l.node.nodeId }).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(GossipError);
      expect(refused).toMatchObject({ code: 'SVC_BOND_COOLDOWN', action: 'ignore' });
      expect(t.node.bonds.get(fresh.bond_id)).toBeNull();
    }
    // Only the bond's node can say it applied the slashing; once it does, late, its node is no longer in default.
    const claim = { bond_id: ops.l!.bondId, challenge_id: id, node: l.node.nodeId, token_ids: [], svcond: b.node.mesh.nowSvcond() };
    const byC = { slashed: claim, attestation: signText(c.node.nodeIdentity.privateKey, slashedAttestationText(claim)) };
    await expect(b.node.bonds.applySlashed(byC, { sender: c.node.nodeId })).rejects.toMatchObject({ code: 'INVALID_ATTESTATION', action: 'reject' });
    await expect(b.node.bonds.applySlashed(byC, { sender: l.node.nodeId })).rejects.toMatchObject({ code: 'INVALID_ATTESTATION', action: 'reject' });
    expect(b.node.bonds.slashState(ops.l!.bondId, b.node.mesh.nowSvcond())).toBe('defaulted');
    const late = { slashed: claim, attestation: signText(l.node.nodeIdentity.privateKey, slashedAttestationText(claim)) };
    await b.node.bonds.applySlashed(late, { sender: l.node.nodeId });
    expect(b.node.bonds.slashState(ops.l!.bondId, b.node.mesh.nowSvcond())).toBe('applied');
    expect(b.node.bonds.defaultedOf(l.node.nodeId, b.node.mesh.nowSvcond())).toBeNull();
    expect(b.node.bonds.ofNode(l.node.nodeId)).toBeNull();
  }, 120_000);
});

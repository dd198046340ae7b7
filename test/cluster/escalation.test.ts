// A committee with a dead member escalates instead of returning a false challenger's stake (architecture.md §6,
// docs/protocol.md §15), on six real nodes on 127.0.0.1: A (the executor, and the challenger's home: one node
// excluded, so five are eligible), and B…F, every operator bonded and contributing. The liar is composed here: L runs
// a tampered zeta (its digest is neither the executor's nor the claim). D is stopped before the challenge (still
// eligible: heard within liveTicks). The committee is drawn after the challenge's tick, so nobody picks it: A's
// results are challenged one by one until a round-0 committee holds D (3 seats of 5: about 1.7 tries). H, a live
// round-0 member other than L, is restarted over its data dir between its commit and its reveal (its salt is a row).
//   round 0: D never commits → no round-0 reveal is made or counts → escalates to the 5 eligible;
//   round 1: H and the two others vote the executor's digest, 3 of 5 → rejected, the stake burned; round 0's votes,
//   H's from its salt row after its restart, are revealed only once round 1's commit window has passed.
// Every wait is on state, bounded; the windows (DEADLINE) leave a loaded machine room to commit in time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bondedOperator, contributingConfig, CONTRIBUTING_NODE_OPTIONS, openChallenge } from '../helpers/contributing.js';
import { bearer, call, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitFor } from '../mesh/helpers.js';
import { commitDeadlineOf, escalationOf, roundOf } from '../../src/consensus/challenge-wire.js';
import { defaultRegistry } from '../../src/solvers/registry.js';

const MESH_SECRET = 'escalation-cluster-secret-0123456789';
const BOND = 2;
const STAKE = 20;
const DEADLINE = 14;
const SETTLE = 1;
/** D stays eligible through every draw, and a live node starved of CPU for a while stays eligible too. */
const LIVE_TICKS = 240;
const config = contributingConfig({
  secret: MESH_SECRET,
  receiptSecret: 'e5'.repeat(32),
  contribution: { bondEnvelopes: BOND, committeeSize: 3, settleTicks: SETTLE, deadlineTicks: DEADLINE, liveTicks: LIVE_TICKS, challengeStake: STAKE },
});
const RANDOM_DIGEST = 'ab'.repeat(32);

/** L's solvers: zeta's outputs carry one extra member, so its result digest is not the honest one. */
function tamperedRegistry() {
  const zeta = defaultRegistry().get('zeta')!;
  const run: typeof zeta.run = (inputs, state) => {
    const out = zeta.run(inputs, state);
    return { ...out, outputs: { ...out.outputs, tampered: 1 } };
  };
  return defaultRegistry().with([{ ...zeta, run }]);
}

let a: TestNode;
let liar: TestNode;
let others: TestNode[] = [];
const all = () => [a, liar, ...others];

let opA: { zid: string; key: string; bondId: string };

beforeAll(async () => {
  a = await startTestNode(config([]), CONTRIBUTING_NODE_OPTIONS);
  const boot = [a.node.mesh.multiaddrs()[0]!];
  [liar, ...others] = await Promise.all([
    startTestNode(config(boot), { ...CONTRIBUTING_NODE_OPTIONS, registry: tamperedRegistry() }),
    ...[0, 1, 2, 3].map(() => startTestNode(config(boot), CONTRIBUTING_NODE_OPTIONS)),
  ]);
  await waitFor(() => all().every((n) => n.node.mesh.peers().filter((p) => p.url).length >= 5), 60_000, 'tick events from every peer');
  // One node at a time: six nodes' setup at once on two loaded cores drops connections.
  opA = await bondedOperator(a, 'op-a', BOND);
  for (const [i, t] of [liar, ...others].entries()) await bondedOperator(t, `op-${i}`, BOND);
  await waitFor(() => all().every((n) => n.node.bonds.active().length === 6), 40_000, 'every bond at every node');
  // What A's eligible set needs of each of the five: a bond settled at A's tick, and a tick event heard at A since then
  // advertising contributing with that very bond.
  const eligibleAtA = () => {
    const now = a.node.mesh.nowSvcond();
    const bonds = new Map(a.node.bonds.active().map((b) => [b.bond.node, b.bond]));
    return a.node.mesh
      .peers()
      .filter((p) => {
        const bond = bonds.get(p.peerId);
        return bond !== undefined && p.mode === 'contributing' && p.bondId === bond.bond_id && now - bond.svcond >= SETTLE && (p.lastTick ?? 0) > bond.svcond;
      })
      .map((p) => p.peerId);
  };
  await waitFor(() => eligibleAtA().length === 5, 40_000, 'five contributing, settled peers at A');
}, 400_000);

afterAll(async () => {
  await Promise.all(all().map((n) => n?.destroy()));
});

describe('escalation on six nodes', () => {
  it("a committee with a dead member escalates instead of returning a false challenger's stake; a member restarted between commit and reveal still counts", async () => {
    const challenger = await zkIdentity(a.url, 'challenger-escalation');
    const eligible = [liar, ...others].map((t) => t.node.nodeId).sort();
    const dead = others[0]!;
    const deadId = dead.node.nodeId;
    await dead.stop();

    // Challenge A's fresh results until a drawn round-0 committee holds D (a committee without it decides at once).
    const burned = a.node.counters.get('burned_total');
    let result: { result_id: string; result_digest: string } | null = null;
    let opened: { status: number; body: any; text: string } | null = null;
    let tries = 0;
    for (let n = 200; result === null; n++) {
      expect(++tries, 'a committee holding D within 16 draws (each 3 of 5)').toBeLessThanOrEqual(16);
      const r = await call(a.url, 'POST', '/api/svc/zeta', { n, count: 1 }, bearer(opA.key));
      expect(r.status, r.text).toBe(200);
      const o = await openChallenge(a.url, challenger.key, { result_id: r.body.result_id, claimed_digest: RANDOM_DIGEST });
      expect(o.status, o.text).toBe(201);
      expect(o.body.eligible).toEqual(eligible);
      if (o.body.committee.includes(deadId)) [result, opened] = [r.body, o];
    }
    const id = opened!.body.challenge_id as string;
    const committee = opened!.body.committee as string[];
    const restartedId = committee.find((m) => m !== deadId && m !== liar.node.nodeId)!;
    let restarted = others.find((t) => t.node.nodeId === restartedId)!;

    // H commits, and is restarted over its data dir before it reveals (D never commits: round 0 reveals nothing).
    const heardCommit = (t: TestNode, voter: string, round: 0 | 1) =>
      (t.node.challenges.get(id)?.commits ?? []).some((k) => k.commit.voter === voter && roundOf(k.commit) === round);
    await waitFor(() => heardCommit(a, restartedId, 0), 120_000, "H's commit at the opener");
    expect((restarted.node.challenges.get(id)?.votes ?? []).some((v) => v.vote.voter === restartedId)).toBe(false);
    restarted = await restarted.restart();
    others = others.map((t) => (t.node.nodeId === restartedId ? restarted : t));

    const live = all().filter((t) => t !== dead);
    const decided = await Promise.all(live.map((t) => waitFor(() => t.node.challenges.get(id)?.verdict ?? null, 120_000, `the verdict at ${t.url}`)));
    for (const v of decided) expect(v).toMatchObject({ outcome: 'rejected', deciding_digest: result.result_digest, round: 1 });

    const c = a.node.challenges.get(id)!.challenge.challenge;
    const round1 = escalationOf(c)!;
    expect(round1.committee_size).toBe(5);
    expect([...round1.committee].sort()).toEqual(eligible);
    // Round 0's votes come once round 1's commit window has passed: H's from its salt row after its restart. Heard
    // past round 0's deadline, they are evidence: kept apart while round 1 is open, beside the votes once it decided.
    const round0Votes = () => {
      const e = a.node.challenges.get(id);
      return [...(e?.votes ?? []), ...(e?.heard_late ?? [])].filter((v) => roundOf(v.vote) === 0);
    };
    await waitFor(() => round0Votes().some((v) => v.vote.voter === restartedId), 60_000, "H's round-0 vote at the opener");
    const entry = a.node.challenges.get(id)!;
    const h0 = round0Votes().find((v) => v.vote.voter === restartedId)!;
    expect(h0.vote.digest).toBe(result.result_digest);
    const firstReveal0 = Math.min(...round0Votes().map((v) => v.vote.svcond));
    expect(firstReveal0).toBeGreaterThan(commitDeadlineOf(round1));
    const commits1 = (entry.commits ?? []).filter((k) => roundOf(k.commit) === 1);
    expect(commits1.length).toBeGreaterThanOrEqual(3);
    for (const k of commits1) expect(k.commit.svcond).toBeLessThan(firstReveal0);
    const liarVote0 = round0Votes().find((v) => v.vote.voter === liar.node.nodeId);
    if (committee.includes(liar.node.nodeId) && liarVote0) expect(liarVote0.vote.digest).not.toBe(result.result_digest);
    expect(entry.votes.some((v) => v.vote.voter === deadId)).toBe(false);
    // Round 1 decided on the executor's digest by at least three members.
    expect(entry.verdict!.tally[result.result_digest]).toBeGreaterThanOrEqual(3);
    // The restarted member's salt rows are gone once it revealed both rounds.
    await waitFor(async () => (await restarted.node.store.range(restarted.node.store.sub('commit-salts'))).length === 0, 60_000, "H's salt rows deleted");

    // The stake is burned at the challenger's home; the executor's bond is kept.
    await waitFor(async () => (await call(a.url, 'GET', `/api/tally/consensus/${id}`)).body.stake?.effect === 'burned', 60_000, 'stake burned');
    // Each false challenge's stake is burned (the zeta runs' charges burn their share too: at least the stakes).
    await waitFor(() => a.node.counters.get('burned_total') >= burned + tries * STAKE, 60_000, 'every false challenge burned');
    expect((await a.node.slashing.slashRecord(id)) ?? null).toBeNull();

    // Every node checks the round-1 document; the same document claiming round 0 is refused.
    const doc = (await call(a.url, 'GET', `/api/tally/consensus/${id}`)).body.document;
    expect(doc.verdict.round).toBe(1);
    const checker = live.find((t) => t !== a)!;
    const ok = await call(checker.url, 'POST', '/api/protocol/pohc/verify', doc);
    expect(ok.body).toMatchObject({ valid: true, folded_outcome: 'rejected' });
    const round0 = await call(checker.url, 'POST', '/api/protocol/pohc/verify', { ...doc, verdict: { ...doc.verdict, round: 0 } });
    expect(round0.body.valid).toBe(false);
  }, 400_000);
});

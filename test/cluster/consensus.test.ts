// Re-execution consensus on a real 5-node cluster on 127.0.0.1 (architecture.md §6): four
// nodes in this process (A, B, C, D) and E, a separate `svc-node start` process composed with a tampered zeta solver
// (test/helpers/tampered-zeta.mjs) and a slow disk (slow-disk.mjs: a SIGKILL lands during its slashing batch). Every
// operator bonds and contributes; challengers live on B, so a challenge of A's result goes to the committee {C, D, E} and one of E's
// to {A, C, D}.
//   1. a false challenge of an honest result → rejected on every node, E (lying member) outvoted, stake burned;
//   2. C and D offline → no_quorum, and A's release refused while the challenge is open;
//   3. E's tampered result challenged with a random digest (through the CLI, which follows it to its verdict) →
//      upheld everywhere, the executor being wrong whatever the claim, the stake returned; E is SIGKILLed while it
//      slashes, is restarted, and its bond went to the foundation account exactly once. E hears no consensus gossip during it
//      (test/helpers/deaf-consensus.mjs: as a node outside the topic's mesh): the challenge and the verdict reach it
//      over the direct path (consensus/outbox.ts), as they must for a node that misses gossip.
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProcess } from '../../scripts/bench/lib.js';
import { bondedOperator, openChallenge } from '../helpers/contributing.js';
import { bearer, call, connectedIndexes, expectError, startMesh, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitFor } from '../mesh/helpers.js';
import { challengeIdOf } from '../../src/consensus/challenge-wire.js';
import { DIST_CLI, runCliAsync } from '../helpers/cli.js';

/** The CLI as a child process, awaited without blocking this process (whose nodes it talks to). */
const cliRun = (args: string[]) => runCliAsync(args).then((r) => ({ code: r.status, stdout: r.stdout, stderr: r.stderr }));

const ROOT = join(import.meta.dirname, '..', '..');
const MESH_SECRET = 'consensus-cluster-secret-0123456789';
const RECEIPT_SECRET = 'cd'.repeat(32);
const BOND = 2;
const STAKE = 20;
// Ticks a committee has to vote: enough that a member slowed by a loaded machine still votes in time (a late vote
// ends a challenge as no_quorum, and nothing is slashed); a verdict comes at quorum, so only the test that waits for
// no_quorum pays for it.
const DEADLINE = 12;
const contribution = {
  bondEnvelopes: BOND,
  committeeSize: 3,
  settleTicks: 1,
  deadlineTicks: DEADLINE,
  challengeStake: STAKE,
  bondTermDays: 30,
  offload: 'never',
};
const config = (bootstrap: string[]) => ({
  solverThreads: 0,
  sealWorker: false,
  receiptSecret: RECEIPT_SECRET,
  contribution,
  mesh: { secret: MESH_SECRET, p2pPort: 0, bootstrap, tickEvery: 1 },
  // Nodes of this mesh go offline while their peers write: each identity is held by its home alone here (custody,
  // where a write needs a majority of its custodians, is test/custody's).
  custody: { replicas: 1 },
});
const opts = { initialCredits: 10_000, reannounceTicks: 2, mesh: { redialMinMs: 100, redialMaxMs: 1000 } };
const RANDOM_DIGEST = 'ab'.repeat(32);

interface Member {
  url: string;
  node: string;
}
interface Operator {
  zid: string;
  key: string;
  bondId: string;
}

let a: TestNode;
let b: TestNode;
let c: TestNode;
let d: TestNode;
let e: { child: ChildProcess; url: string; node: string; log: string[] };
let eDir = '';
/** B's tick when C and D were started again (their tick events after it are fresh). */
let restartedAt = 0;
const ops: Record<string, Operator> = {};

async function startE(bootstrap: string[]): Promise<typeof e> {
  const env = {
    SVC_HOST: '127.0.0.1',
    SVC_PORT: '0',
    SVC_DATA_DIR: eDir,
    SVC_SOLVER_THREADS: '0',
    SVC_SEAL_WORKER: 'false',
    SVC_LOG_LEVEL: 'info',
    SVC_SYNC_WRITES: 'true',
    SVC_INITIAL_CREDITS: '10000',
    SVC_RECEIPT_SECRET: RECEIPT_SECRET,
    SVC_MESH_SECRET: MESH_SECRET,
    SVC_P2P_PORT: '0',
    SVC_BOOTSTRAP: bootstrap.join(','),
    SVC_MESH_TICK_EVERY: '1',
    SVC_CUSTODY_REPLICAS: '1',
    SVC_CONTRIBUTION_BOND_ENVELOPES: String(BOND),
    SVC_CONTRIBUTION_SETTLE_TICKS: '1',
    SVC_CONTRIBUTION_DEADLINE_TICKS: String(DEADLINE),
    SVC_CONTRIBUTION_CHALLENGE_STAKE: String(STAKE),
    SLOW_DISK_MS: '60',
  };
  const faults = ['tampered-zeta', 'slow-disk', 'deaf-consensus'].flatMap((h) => ['--import', join(ROOT, `test/helpers/${h}.mjs`)]);
  const started = await startProcess(process.execPath, [...faults, DIST_CLI, 'start'], env);
  const log: string[] = [];
  started.child.stdout!.on('data', (chunk: Buffer) => log.push(chunk.toString()));
  const status = await call(started.url, 'GET', '/api/mesh/status');
  return { child: started.child, url: started.url, node: status.body.nodeId, log };
}

const members = (): Member[] => [
  { url: a.url, node: a.node.nodeId },
  { url: b.url, node: b.node.nodeId },
  { url: c.url, node: c.node.nodeId },
  { url: d.url, node: d.node.nodeId },
  { url: e.url, node: e.node },
];

/** A zeta run by the operator on its own node: published, executed with its bond at stake. */
async function run(
  url: string,
  op: Operator,
  n: number,
): Promise<{ result_id: string; result_digest: string; executed_by: { node: string; bond_id: string } }> {
  const r = await call(url, 'POST', '/api/svc/zeta', { n, count: 1 }, bearer(op.key));
  expect(r.status, r.text).toBe(200);
  expect(r.body.executed_by?.bond_id).toBe(op.bondId);
  return r.body;
}

/** The challenge as every live node sees it, once each has a verdict. */
async function verdictEverywhere(id: string, nodes: Member[], timeoutMs = 40_000): Promise<any[]> {
  return Promise.all(
    nodes.map((m) =>
      waitFor(
        async () => {
          const r = await call(m.url, 'GET', `/api/tally/consensus/${id}`);
          return r.status === 200 && r.body.verdict ? r.body : null;
        },
        timeoutMs,
        `the verdict of ${id} at ${m.url}`,
      ),
    ),
  );
}

async function balance(url: string, key: string): Promise<number> {
  const r = await call(url, 'GET', '/api/tally/balance', undefined, bearer(key));
  return r.body.total;
}

beforeAll(async () => {
  eDir = await mkdtemp(join(tmpdir(), 'svc-consensus-e-'));
  a = await startTestNode(config([]), opts);
  const boot = [a.node.mesh.multiaddrs()[0]!];
  // E (a child process through tsx, the slowest to start) comes up while B, C and D do.
  [b, c, d, e] = await Promise.all([startTestNode(config(boot), opts), startTestNode(config(boot), opts), startTestNode(config(boot), opts), startE(boot)]);
  await waitFor(() => [a, b, c, d].every((n) => n.node.mesh.peers().filter((p) => p.url).length >= 4), 40_000, 'tick events from every peer');
  const [opA, opB, opC, opD, opE] = await Promise.all([
    bondedOperator(a, 'op-a', BOND),
    bondedOperator(b, 'op-b', BOND),
    bondedOperator(c, 'op-c', BOND),
    bondedOperator(d, 'op-d', BOND),
    bondedOperator({ url: e.url, dataDir: eDir }, 'op-e', BOND),
  ]);
  Object.assign(ops, { a: opA!, b: opB!, c: opC!, d: opD!, e: opE! });
  // Every node hears every bond, and B hears every operator contributing (its committees are drawn from that).
  await waitFor(() => [a, b, c, d].every((n) => n.node.bonds.active().length === 5), 30_000, 'every bond at every node');
  await waitFor(() => b.node.mesh.peers().filter((p) => p.mode === 'contributing').length === 4, 30_000, 'contributing peers at B');
}, 120_000);

afterAll(async () => {
  if (e?.child.exitCode === null && e.child.signalCode === null) e.child.kill('SIGKILL');
  await Promise.all([a, b, c, d].map((n) => n?.destroy()));
  await rm(eDir, { recursive: true, force: true });
});

describe('re-execution consensus on five nodes', () => {
  it("a false challenge of A's honest result is rejected on every node; E's lie is outvoted; the stake is burned", async () => {
    const result = await run(a.url, ops.a!, 3);
    const ch = await zkIdentity(b.url, 'challenger-1');
    const before = await balance(b.url, ch.key);
    const burned = b.node.counters.get('burned_total');
    const opened = await openChallenge(b.url, ch.key, { result_id: result.result_id, claimed_digest: RANDOM_DIGEST });
    expect(opened.status, opened.text).toBe(201);
    expect(opened.body.challenge_id).toBe(challengeIdOf(result.result_id, ch.zid));
    expect([...opened.body.committee].sort()).toEqual([c.node.nodeId, d.node.nodeId, e.node].sort());
    expect(await balance(b.url, ch.key)).toBe(before - STAKE);
    // The same identity cannot challenge the same result twice.
    expectError(
      await call(b.url, 'POST', '/api/tally/consensus/challenges', { result_id: result.result_id, claimed_digest: RANDOM_DIGEST }, bearer(ch.key)),
      409,
      'SVC_CONFLICT',
    );

    const seen = await verdictEverywhere(opened.body.challenge_id, members());
    for (const v of seen) {
      expect(v.verdict.outcome).toBe('rejected');
      expect(v.verdict.deciding_digest).toBe(result.result_digest);
    }
    const votes = seen[1].votes as { vote: { voter: string; digest: string } }[];
    const byVoter = new Map(votes.map((x) => [x.vote.voter, x.vote.digest]));
    expect(byVoter.get(c.node.nodeId)).toBe(result.result_digest);
    expect(byVoter.get(d.node.nodeId)).toBe(result.result_digest);
    // E re-executed with its tampered solver: its vote is neither digest, and 2 of 3 outvote it.
    await waitFor(async () => (await call(b.url, 'GET', `/api/tally/consensus/${opened.body.challenge_id}`)).body.votes.length === 3, 20_000, "E's vote");
    const all = (await call(b.url, 'GET', `/api/tally/consensus/${opened.body.challenge_id}`)).body;
    expect(all.votes_heard_late).toEqual([]);
    const eVote = all.votes.find((x: any) => x.vote.voter === e.node);
    expect(eVote.vote.digest).not.toBe(result.result_digest);
    expect(eVote.vote.digest).not.toBe(RANDOM_DIGEST);
    // The stake is burned at B, the bond untouched at A.
    await waitFor(
      async () => (await call(b.url, 'GET', `/api/tally/consensus/${opened.body.challenge_id}`)).body.stake?.effect === 'burned',
      20_000,
      'stake burned',
    );
    expect(await balance(b.url, ch.key)).toBe(before - STAKE);
    expect(b.node.counters.get('burned_total')).toBe(burned + STAKE);
    const status = await call(a.url, 'GET', '/api/contribute/status', undefined, bearer(ops.a!.key));
    expect(status.body).toMatchObject({ bonded: true, open_challenges: [] });
    expect(status.body.verdicts[0]).toMatchObject({ challenge_id: opened.body.challenge_id, outcome: 'rejected' });
    expect((await a.node.slashing.slashRecord(opened.body.challenge_id)) ?? null).toBeNull();
    // Anyone re-checks the verdict document offline; a doctored one fails.
    const doc = seen[0].document;
    const ok = await call(c.url, 'POST', '/api/protocol/pohc/verify', doc);
    expect(ok.body).toMatchObject({ valid: true, folded_outcome: 'rejected', bad_signatures: 0 });
    // The honest majority is counted; E's vote too when it was revealed in time (on a loaded machine it may not be).
    expect(ok.body.counted_votes).toBeGreaterThanOrEqual(2);
    expect(ok.body.counted_votes).toBeLessThanOrEqual(doc.votes.length);
    expect(doc.votes.length).toBeGreaterThanOrEqual(2);
    const bad = await call(c.url, 'POST', '/api/protocol/pohc/verify', {
      ...doc,
      verdict: { ...doc.verdict, outcome: 'upheld', deciding_digest: RANDOM_DIGEST },
    });
    expect(bad.body.valid).toBe(false);
    const listed = await call(d.url, 'GET', '/api/tally/consensus?state=rejected');
    expect(listed.body.items.map((i: any) => i.challenge_id)).toContain(opened.body.challenge_id);
  }, 90_000);

  it("intake refuses an unknown result, an unpublished one, a claim equal to the executor's digest, and a poor challenger", async () => {
    const ch = await zkIdentity(b.url, 'challenger-refusals');
    const post = (body: unknown, key = ch.key) => call(b.url, 'POST', '/api/tally/consensus/challenges', body, bearer(key));
    expectError(await post({ result_id: 'res_1_0123456789abcdef', claimed_digest: RANDOM_DIGEST }), 404, 'SVC_NOT_FOUND');
    const quiet = await zkIdentity(a.url, 'unpublished-owner');
    const r = await call(a.url, 'POST', '/api/svc/zeta', { n: 2, count: 1 }, bearer(quiet.key));
    expectError(await post({ result_id: r.body.result_id, claimed_digest: RANDOM_DIGEST }), 403, 'SVC_RESULT_UNPUBLISHED');
    const mine = await run(a.url, ops.a!, 4);
    const same = expectError(await post({ result_id: mine.result_id, claimed_digest: mine.result_digest }), 400, 'SVC_INVALID_INPUT');
    expect(same.field).toBe('claimed_digest');
    // The CLI prints a refusal as it came, and exits 1.
    const cliRefused = await cliRun(['challenge', mine.result_id, '--digest', mine.result_digest, '--url', b.url, '--key', ch.key]);
    expect(cliRefused.code).toBe(1);
    expect(JSON.parse(cliRefused.stdout).error.code).toBe('SVC_INVALID_INPUT');
    expectError(await post({ result_id: mine.result_id, claimed_digest: 'not-hex' }), 400, 'SVC_INVALID_INPUT');
    const poor = await startTestNode(config([a.node.mesh.multiaddrs()[0]!]), { ...opts, initialCredits: STAKE - 1 });
    try {
      // The newcomer knows the result's home and enough contributing bonds for a committee (B, C, D) before it is asked.
      await waitFor(
        () => poor.node.mesh.peers().filter((p) => p.url && p.mode === 'contributing' && poor.node.bonds.ofNode(p.peerId)).length >= 4,
        45_000,
        'the newcomer up to date',
      );
      const p = await zkIdentity(poor.url, 'poor-challenger');
      expectError(
        await call(poor.url, 'POST', '/api/tally/consensus/challenges', { result_id: mine.result_id, claimed_digest: RANDOM_DIGEST }, bearer(p.key)),
        402,
        'INSUFFICIENT_BALANCE',
      );
    } finally {
      await poor.destroy();
    }
  }, 90_000);

  it("C and D offline: no_quorum by the deadline; A's release is refused while the challenge is open", async () => {
    const result = await run(a.url, ops.a!, 7);
    await Promise.all([c.stop(), d.stop()]);
    const ch = await zkIdentity(b.url, 'challenger-3');
    const before = await balance(b.url, ch.key);
    const opened = await openChallenge(b.url, ch.key, { result_id: result.result_id, claimed_digest: RANDOM_DIGEST });
    expect(opened.status, opened.text).toBe(201);
    expect(opened.body.committee).toContain(c.node.nodeId);
    expect(opened.body.committee).toContain(d.node.nodeId);
    await waitFor(() => a.node.challenges.get(opened.body.challenge_id), 20_000, 'the challenge at A');
    const refused = expectError(await call(a.url, 'POST', '/api/contribute/release', {}, bearer(ops.a!.key)), 409, 'SVC_BOND_CHALLENGED');
    expect(refused.open_challenges).toContain(opened.body.challenge_id);
    const live = members().filter((m) => m.node !== c.node.nodeId && m.node !== d.node.nodeId);
    const seen = await verdictEverywhere(opened.body.challenge_id, live, 30_000);
    for (const v of seen) expect(v.verdict.outcome).toBe('no_quorum');
    await waitFor(async () => (await balance(b.url, ch.key)) === before, 20_000, 'stake returned');
    const boot = [a.node.mesh.multiaddrs()[0]!];
    restartedAt = b.node.mesh.nowSvcond();
    [c, d] = await Promise.all([startTestNode(config(boot), opts, c.dataDir), startTestNode(config(boot), opts, d.dataDir)]);
  }, 90_000);

  it("E's tampered result challenged with a random digest: upheld everywhere; E killed while slashing and restarted; its bond goes once", async () => {
    // C and D's fresh tick events (not the ones kept from before they stopped) say they contribute again, heard by
    // every node that checks this challenge's committee against its own record of tick events before it acts on it:
    // B (the opener), A, C and D (the committee: C and D, just restarted, hold no record of before) and E (the bond's
    // home, which applies the slashing). A node just restarted may stay outside a peer's gossip mesh for a while.
    const heardFresh = (n: TestNode, id: string) => {
      const p = n.node.mesh.peers().find((x) => x.peerId === id);
      return !!p && p.mode === 'contributing' && (p.receivedSvcond ?? 0) > restartedAt;
    };
    const freshAtE = async (ids: string[]) => {
      const peers: { peerId: string; lastTick: number | null }[] = (await call(e.url, 'GET', '/api/mesh/peers')).body.peers;
      return ids.every((id) => (peers.find((p) => p.peerId === id)?.lastTick ?? 0) > restartedAt);
    };
    const committee = [a, c, d];
    await waitFor(
      async () =>
        [b, ...committee].every((n) => committee.every((m) => m === n || heardFresh(n, m.node.nodeId))) && (await freshAtE([c.node.nodeId, d.node.nodeId])),
      45_000,
      'A, C and D contributing, heard by each other, at B and at E',
    );
    const result = await run(e.url, ops.e!, 9);
    const truth = await call(a.url, 'POST', '/api/svc/zeta', { n: 9, count: 1 }, bearer(ops.a!.key));
    expect(truth.body.result_digest).not.toBe(result.result_digest);
    const envelopesBefore = (await call(e.url, 'GET', `/api/tally/envelopes/${ops.e!.zid}?limit=1`, undefined, bearer(ops.e!.key))).body.total;
    const ch = await zkIdentity(b.url, 'challenger-4');
    const before = await balance(b.url, ch.key);
    // E stops hearing svc/consensus/1: what it learns of this challenge comes to it directly.
    let logged = e.log.length;
    e.child.kill('SIGUSR2');
    await waitFor(() => e.log.slice(logged).join('').includes('deaf to consensus gossip'), 20_000, 'E deaf to consensus gossip');
    logged = e.log.length;
    // Through the CLI, which follows the challenge to its verdict (--wait).
    const cli = cliRun(['challenge', result.result_id, '--digest', RANDOM_DIGEST, '--url', b.url, '--key', ch.key, '--wait', '--timeout', '120']);
    const id = challengeIdOf(result.result_id, ch.zid);
    // Killed the moment it logs the slashing, before its (slow) batch is on disk.
    const exited = new Promise((r) => e.child.once('exit', r));
    e.child.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('"msg":"slashing a bond"')) e.child.kill('SIGKILL');
    });
    const slashing = waitFor(() => e.log.slice(logged).join('').includes('"msg":"slashing a bond"'), 90_000, 'E slashing');
    // A challenge refused at intake ends the CLI at once, and its answer says why where waiting on E would not.
    const refused = cli.then((r) => (r.code === 0 ? slashing : Promise.reject(new Error(`the challenge CLI exited ${r.code}: ${r.stdout} ${r.stderr}`))));
    await Promise.race([slashing, refused]).catch(async (err: Error) => {
      // What B holds of the challenge and E's counts (a challenge E could not check is counted unverifiable there).
      const atB = (await call(b.url, 'GET', `/api/tally/consensus/${id}`)).body;
      const atE = (await call(e.url, 'GET', '/api/tally/consensus?limit=1').catch(() => ({ body: 'E not answering' }))).body;
      const counts = Object.fromEntries(committee.map((m, i) => ['ACD'[i], m.node.challenges.stats()]));
      throw new Error(
        `${err.message}; at B: ${JSON.stringify({ state: atB.state, verdict: atB.verdict })}; at E: ${JSON.stringify(atE.counts ?? atE)}; committee: ${JSON.stringify(counts)}`,
      );
    });
    await exited;
    const live = members().filter((m) => m.node !== e.node);
    const seen = await verdictEverywhere(id, live);
    for (const v of seen) expect(v.verdict).toMatchObject({ outcome: 'upheld', deciding_digest: truth.body.result_digest });
    await waitFor(async () => (await balance(b.url, ch.key)) === before, 20_000, 'stake returned');
    const done = await cli;
    expect(done.code, done.stderr).toBe(0);
    const [openedLine, verdictLine] = done.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(openedLine).toMatchObject({ challenge_id: id, claimed_digest: RANDOM_DIGEST });
    expect([...openedLine.committee].sort()).toEqual([a.node.nodeId, c.node.nodeId, d.node.nodeId].sort());
    expect(verdictLine).toMatchObject({ challenge_id: id, state: 'upheld', verdict: { outcome: 'upheld' } });

    e = await startE([a.node.mesh.multiaddrs()[0]!]);
    const atE = await waitFor(
      async () => {
        const r = await call(e.url, 'GET', `/api/tally/consensus/${id}`);
        return r.body.slashing ? r.body : null;
      },
      20_000,
      'the slashing record at E',
    );
    expect(atE.verdict.outcome).toBe('upheld');
    expect(atE.slashing.token_ids).toHaveLength(BOND);
    const after = async () => (await call(e.url, 'GET', `/api/tally/envelopes/${ops.e!.zid}?limit=1`, undefined, bearer(ops.e!.key))).body.total;
    expect(await after()).toBe(envelopesBefore - BOND);
    // Started once more: the effect is not applied again.
    e.child.removeAllListeners('exit');
    const stopped = new Promise((r) => e.child.once('exit', r));
    e.child.kill('SIGTERM');
    await stopped;
    e = await startE([a.node.mesh.multiaddrs()[0]!]);
    expect(await after()).toBe(envelopesBefore - BOND);
    const again = await call(e.url, 'GET', `/api/tally/consensus/${id}`);
    expect(again.body.slashing.token_ids).toEqual(atE.slashing.token_ids);
    const status = await call(e.url, 'GET', '/api/contribute/status', undefined, bearer(ops.e!.key));
    expect(status.body.verdicts.map((v: any) => v.outcome)).toContain('upheld');
    expect(status.body.bonded).toBe(false);
  }, 240_000);
});

// A challenge on a ring of five honest in-process nodes (no node bootstrapped to all): the executor's node and the
// challenger's are not neighbours, so the challenge, the votes and the verdict travel through the others.
describe('re-execution consensus on a ring of five', () => {
  let ring: TestNode[] = [];
  const ringOps: Operator[] = [];
  beforeAll(async () => {
    // Votes cross up to two hops of five nodes sharing one loaded process: a longer deadline than the cluster's (a
    // verdict comes at its quorum, not at the deadline) keeps a late vote from ending it as no_quorum.
    ring = await startMesh(5, (bootstrap) => ({ ...config(bootstrap), contribution: { ...contribution, deadlineTicks: 2 * DEADLINE } }), opts, 'ring');
    ringOps.push(...(await Promise.all(ring.map((n, i) => bondedOperator(n, `ring-op-${i}`, BOND)))));
    await waitFor(() => ring.every((n) => n.node.bonds.active().length === 5), 30_000, 'every bond at every ring node');
    await waitFor(() => ring[2]!.node.mesh.peers().filter((p) => p.mode === 'contributing').length === 4, 30_000, 'contributing peers at the challenger');
  }, 120_000);
  afterAll(async () => {
    await Promise.all(ring.map((n) => n.destroy()));
  });

  it('a false challenge of an honest result is rejected on every node of the ring, the stake burned', async () => {
    const [executor, , challenger] = ring as [TestNode, TestNode, TestNode];
    expect(connectedIndexes(challenger, ring)).toEqual([1, 3]);
    const result = await run(executor.url, ringOps[0]!, 3);
    const ch = await zkIdentity(challenger.url, 'ring-challenger');
    const before = await balance(challenger.url, ch.key);
    // Each member's tick event naming its bond crosses the ring in up to two hops: until the challenger has heard all
    // three it answers 409 SVC_NO_COMMITTEE, holding nothing, as it would answer any client.
    const opened = await openChallenge(challenger.url, ch.key, { result_id: result.result_id, claimed_digest: RANDOM_DIGEST });
    expect(opened.status, opened.text).toBe(201);
    expect([...opened.body.committee].sort()).toEqual([ring[1]!, ring[3]!, ring[4]!].map((n) => n.node.nodeId).sort());
    const seen = await verdictEverywhere(
      opened.body.challenge_id,
      ring.map((n) => ({ url: n.url, node: n.node.nodeId })),
    );
    for (const v of seen) {
      expect(v.verdict.outcome).toBe('rejected');
      expect(v.verdict.deciding_digest).toBe(result.result_digest);
    }
    await waitFor(
      async () => (await call(challenger.url, 'GET', `/api/tally/consensus/${opened.body.challenge_id}`)).body.stake?.effect === 'burned',
      20_000,
      'stake burned',
    );
    expect(await balance(challenger.url, ch.key)).toBe(before - STAKE);
  }, 90_000);
});

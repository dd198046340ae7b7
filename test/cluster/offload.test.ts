// Offloaded execution across four real nodes (HTTP + libp2p on 127.0.0.1): A places every solver run on a
// contributing peer (offload always); B is an honest contributing executor; C is a contributing executor whose
// answers the test rewrites (garbage, a forged signature, a hang: composed here, architecture.md §8); D never
// offloads. The sealed result names the executor and its bond and the signature verifies; the record lists it only
// when published; every failure of the peer ends in a local run and a 200; a mode switch preempts a run held for a
// peer and the home re-places it here; a caller that leaves stops a run still waiting at the peer (nothing sealed or
// charged), not one on the peer's worker (sealed and charged).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, operatorBond, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitFor } from '../mesh/helpers.js';
import { verifyExecution } from '../../src/consensus/executed-by.js';
import { verifyText } from '../../src/mesh/wire.js';
import { solverRequestDigest } from '../../src/compute/result-digest.js';
import type { ExecAnswer } from '../../src/consensus/exec-protocol.js';
import type { SolverExecutor } from '../../src/compute/executor.js';
import { COSTS } from '../../src/tally/costs.js';

const MESH_SECRET = 'offload-cluster-secret-0123456789abcdef';
const RECEIPT_SECRET = 'cd'.repeat(32);
const BOND = 3;
const COMPUTE = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: {} };
const contribution = (offload: string) => ({
  bondEnvelopes: BOND,
  committeeSize: 3,
  settleTicks: 4,
  deadlineTicks: 12,
  challengeStake: 20,
  bondTermDays: 30,
  offload,
});
const config = (offload: string, bootstrap: string[], solverThreads = 0) => ({
  solverThreads,
  sealWorker: false,
  receiptSecret: RECEIPT_SECRET,
  contribution: contribution(offload),
  mesh: { secret: MESH_SECRET, p2pPort: 0, bootstrap, tickEvery: 1 },
});
const opts = { initialCredits: 10_000, reannounceTicks: 2, mesh: { redialMinMs: 100, redialMaxMs: 1000 } };

type Tamper = 'none' | 'garbage' | 'bad-signature' | 'hang';
let tamper: Tamper = 'none';
const hung: (() => void)[] = [];

/** C's answers, rewritten per the current scenario. */
function rewrite(answer: ExecAnswer): unknown {
  if (tamper === 'garbage') return { ok: true, output: { value: 'forty-two' }, result_digest: 'zz', executed_by: null };
  if (tamper === 'bad-signature' && answer.ok) {
    const sig = Buffer.from(answer.executed_by.signature, 'base64');
    sig[0] = sig[0]! ^ 0xff;
    return { ...answer, executed_by: { ...answer.executed_by, signature: sig.toString('base64') } };
  }
  if (tamper === 'hang') return new Promise((resolve) => hung.push(() => resolve(answer)));
  return answer;
}

let a: TestNode;
let b: TestNode;
let c: TestNode;
let d: TestNode;
const operators: Record<string, { zid: string; key: string; bondId: string }> = {};

async function bondAndContribute(n: TestNode, seed: string): Promise<{ zid: string; key: string; bondId: string }> {
  const id = await zkIdentity(n.url, seed);
  for (let i = 0; i < BOND; i++) expect((await call(n.url, 'POST', '/api/svc/compute', COMPUTE, bearer(id.key))).status).toBe(200);
  const r = await call(n.url, 'POST', '/api/contribute/bond', {}, { ...bearer(id.key), ...operatorBond(n) });
  expect(r.status, r.text).toBe(201);
  return { ...id, bondId: r.body.bond_id };
}

async function setMode(n: TestNode, who: { key: string }, mode: string): Promise<void> {
  const r = await call(n.url, 'POST', '/api/contribute/mode', { mode }, bearer(who.key));
  expect(r.status, r.text).toBe(200);
}

/** Wait until `at` sees `peer` advertising `mode` in its tick events and knows its bond. */
async function seen(at: TestNode, peer: TestNode, mode: string): Promise<void> {
  await waitFor(
    () => {
      const p = at.node.mesh.peers().find((x) => x.peerId === peer.node.nodeId);
      return p?.mode === mode && p.connected && (mode !== 'contributing' || (p.bondId !== null && at.node.bonds.ofNode(peer.node.nodeId) !== null));
    },
    30_000,
    `${mode} of a peer`,
  );
}

let seq = 0;
/** A cheap zeta run with fresh inputs. */
const zeta = () => ({ n: 100 + (seq++ % 9000), count: 1 });
/**
 * How long A skips a peer after a failure: each scenario after a failure waits it out first, so it is short; the
 * answer timeout (the hang scenario waits it) keeps a loaded machine's honest answer in time.
 */
const SKIP_MS = 1500;

beforeAll(async () => {
  a = await startTestNode(config('always', []), { ...opts, offloadAnswerTimeoutMs: 4000, offloadSkipMs: SKIP_MS });
  const addr = (n: TestNode) => n.node.mesh.multiaddrs()[0]!;
  b = await startTestNode(config('never', [addr(a)]), opts);
  c = await startTestNode(config('never', [addr(a), addr(b)], 1), { ...opts, execAnswer: rewrite });
  d = await startTestNode(config('never', [addr(a), addr(b), addr(c)]), opts);
  const all = [a, b, c, d];
  await waitFor(() => all.every((n) => n.node.mesh.peers().filter((p) => p.url && p.connected).length >= 3), 60_000, 'a full mesh');
  operators.b = await bondAndContribute(b, 'operator-b');
  operators.c = await bondAndContribute(c, 'operator-c');
}, 120_000);

afterAll(async () => {
  for (const release of hung) release();
  await Promise.all([a, b, c, d].map((n) => n?.destroy()));
});

describe('offloaded execution', () => {
  it('a run at a node that offloads always executes on the contributing peer, and the sealed result names it', async () => {
    await setMode(b, operators.b!, 'contributing');
    await seen(a, b, 'contributing');
    const caller = await zkIdentity(a.url, 'offload-caller');
    const servedBefore = b.node.execHandler.stats.served;
    const inputs = zeta();
    const r = await call(a.url, 'POST', '/api/svc/zeta', inputs, bearer(caller.key));
    expect(r.status, r.text).toBe(200);
    const e = r.body.executed_by;
    expect(e).toMatchObject({ node: b.node.nodeId, bond_id: operators.b!.bondId, request_digest: solverRequestDigest('zeta', r.body.inputs) });
    expect(verifyExecution(verifyText, e, r.body.result_digest)).toBe(true);
    expect(b.node.execHandler.stats.served).toBe(servedBefore + 1);
    // The home sealed it (A's node, A's receipt), and the proof covers executed_by.
    expect(r.body.node).toBe(a.node.nodeId);
    expect((await call(a.url, 'POST', '/api/svc/verify', r.body, bearer(caller.key))).body.valid).toBe(true);
    // The same request run here by a node that does not offload gives the same result digest (rule 5).
    const local = await call(d.url, 'POST', '/api/svc/zeta', inputs, bearer((await zkIdentity(d.url, 'offload-local')).key));
    expect(local.body.result_digest).toBe(r.body.result_digest);
    expect(local.body.executed_by).toBeNull();
  }, 60_000);

  it('the record lists an offloaded result when its owner publishes, not when not', async () => {
    const quiet = await zkIdentity(a.url, 'offload-quiet');
    const loud = await zkIdentity(a.url, 'offload-loud');
    expect((await call(a.url, 'POST', '/api/tally/settings/publish-default', { publish_default: true }, bearer(loud.key))).status).toBe(200);
    const hidden = await call(a.url, 'POST', '/api/svc/zeta', zeta(), bearer(quiet.key));
    const shown = await call(a.url, 'POST', '/api/svc/zeta', zeta(), bearer(loud.key));
    expect(hidden.body.executed_by?.node).toBe(b.node.nodeId);
    expect(shown.body.executed_by?.node).toBe(b.node.nodeId);
    const page = await call(a.url, 'GET', '/api/tally/record?limit=100', undefined, bearer(quiet.key));
    const ids = page.body.results.map((x: { result_id: string }) => x.result_id);
    expect(ids).toContain(shown.body.result_id);
    expect(ids).not.toContain(hidden.body.result_id);
    expect(page.body.results.find((x: { result_id: string }) => x.result_id === shown.body.result_id)).toMatchObject({
      executor: b.node.nodeId,
      bond_id: operators.b!.bondId,
      result_digest: shown.body.result_digest,
      svcond: shown.body.svcond,
      owner: loud.zid,
      home: a.node.nodeId,
    });
    // Another node finds it at its home through the signed mesh lookup.
    expect(await d.node.lookupResult(shown.body.result_id)).toMatchObject({ status: 'found', home: a.node.nodeId, executed_by: shown.body.executed_by });
    expect(await d.node.lookupResult(hidden.body.result_id)).toEqual({ status: 'unpublished', result_id: hidden.body.result_id, home: a.node.nodeId });
    // Asked anywhere, the record is read at a home: the caller's (forwarded once), or with ?owner= that identity's.
    const fromD = await call(d.url, 'GET', '/api/tally/record?limit=100', undefined, bearer(loud.key));
    expect(fromD.status, fromD.text).toBe(200);
    expect(fromD.headers.get('x-svc-served-by')).toBe(a.node.nodeId);
    expect(fromD.body.node).toBe(a.node.nodeId);
    expect(fromD.body.results.map((x: { result_id: string }) => x.result_id)).toContain(shown.body.result_id);
    const reader = await zkIdentity(d.url, 'record-reader-at-d');
    const ofLoud = await call(d.url, 'GET', `/api/tally/record?owner=${loud.zid}`, undefined, bearer(reader.key));
    expect(ofLoud.status, ofLoud.text).toBe(200);
    expect(ofLoud.headers.get('x-svc-served-by')).toBe(a.node.nodeId);
    expect(ofLoud.body).toMatchObject({ node: a.node.nodeId, owner: loud.zid, total: 1 });
    expect(ofLoud.body.results.map((x: { result_id: string }) => x.result_id)).toEqual([shown.body.result_id]);
    const ofQuiet = await call(d.url, `GET`, `/api/tally/record?owner=${quiet.zid}`, undefined, bearer(reader.key));
    expect(ofQuiet.body).toMatchObject({ owner: quiet.zid, total: 0, results: [] });
    // The reader's own record (D's, where it is homed) does not hold A's results.
    const atD = await call(d.url, 'GET', '/api/tally/record?limit=100', undefined, bearer(reader.key));
    expect(atD.body.node).toBe(d.node.nodeId);
    expect(atD.body.results.map((x: { result_id: string }) => x.result_id)).not.toContain(shown.body.result_id);
    const unknown = await call(d.url, 'GET', `/api/tally/record?owner=zid_${'0'.repeat(32)}`, undefined, bearer(reader.key));
    expect(unknown.status).toBe(404);
  }, 60_000);

  describe('a peer that fails is skipped and the run happens at home', () => {
    beforeAll(async () => {
      await setMode(b, operators.b!, 'idle');
      await setMode(c, operators.c!, 'contributing');
      await seen(a, b, 'idle');
      await seen(a, c, 'contributing');
    }, 60_000);

    const scenarios: [Tamper, 'garbage' | 'bad_signature' | 'timeout'][] = [
      ['garbage', 'garbage'],
      ['bad-signature', 'bad_signature'],
      ['hang', 'timeout'],
    ];
    for (const [how, outcome] of scenarios) {
      it(`${how}: the caller still gets a 200, executed here, nothing at stake`, async () => {
        // The peer is skipped for SKIP_MS after a failure: wait until it is eligible again.
        await waitFor(() => !a.node.offloader!.isSkipped(c.node.nodeId), 15_000, 'C eligible again');
        tamper = how;
        const before = { ...a.node.offloader!.stats };
        const sent = Date.now();
        const caller = await zkIdentity(a.url, `offload-${how}`);
        try {
          const r = await call(a.url, 'POST', '/api/svc/zeta', zeta(), bearer(caller.key));
          expect(r.status, r.text).toBe(200);
          expect(r.body.executed_by).toBeNull();
          expect(r.body.node).toBe(a.node.nodeId);
          expect(a.node.offloader!.stats[outcome]).toBe(before[outcome] + 1);
          expect(a.node.offloader!.stats.offloaded).toBe(before.offloaded);
          // Skipped from the failure on (a loaded machine may take longer than the skip to answer the caller).
          expect(a.node.offloader!.skippedUntil(c.node.nodeId)).toBeGreaterThanOrEqual(sent + SKIP_MS);
        } finally {
          tamper = 'none';
        }
      }, 30_000);
    }

    it('the same peer answering honestly is used again once its skip ends', async () => {
      await waitFor(() => !a.node.offloader!.isSkipped(c.node.nodeId), 15_000, 'C eligible again');
      const r = await call(a.url, 'POST', '/api/svc/zeta', zeta(), bearer((await zkIdentity(a.url, 'offload-again')).key));
      expect(r.status, r.text).toBe(200);
      expect(r.body.executed_by).toMatchObject({ node: c.node.nodeId, bond_id: operators.c!.bondId });
    }, 30_000);

    it('a mode switch preempts the run held for a peer: the home gets SVC_PREEMPTED and runs it here', async () => {
      await waitFor(() => !a.node.offloader!.isSkipped(c.node.nodeId), 15_000, 'C eligible again');
      const before = a.node.offloader!.stats.preempted;
      const caller = await zkIdentity(a.url, 'offload-preempted');
      // A run long enough (hundreds of ms on C's worker) to switch modes while it is on.
      const pending = call(a.url, 'POST', '/api/svc/zeta', { n: 9990, count: 20 }, bearer(caller.key));
      await waitFor(() => c.node.execHandler.running === 1, 10_000, 'the run held at C');
      await setMode(c, operators.c!, 'idle');
      const r = await pending;
      expect(r.status, r.text).toBe(200);
      expect(r.body.executed_by).toBeNull();
      expect(a.node.offloader!.stats.preempted).toBe(before + 1);
      expect(c.node.execHandler.stats.preempted).toBeGreaterThanOrEqual(1);
    }, 60_000);
  });

  describe('a caller that leaves while its run is at the peer', () => {
    /**
     * B's executor patched on the instance: each run waits for a worker until `start()`, then runs on B's own
     * executor. A waiting run whose signal aborts leaves the queue as the worker pool's does; with `onWorker`, the
     * run counts as already on a worker and finishes whatever its signal says.
     */
    function holdAtPeer(onWorker: boolean) {
      const executor = b.node.executor;
      // The class's own run: the node's executor is a proxy whose `run` calls whatever `run` the executor has now.
      const own = (Object.getPrototypeOf(executor) as SolverExecutor).run;
      const held = { started: 0, cancelled: [] as unknown[], start: () => undefined as void };
      const go = new Promise<void>((r) => (held.start = r));
      executor.run = ((solverId, inputs, state, limit, owner, tier, signal) => {
        held.started++;
        return new Promise((resolve, reject) => {
          signal?.addEventListener(
            'abort',
            () => {
              held.cancelled.push(signal.reason);
              if (!onWorker) reject(signal.reason as Error);
            },
            { once: true },
          );
          void go.then(() => own.call(executor, solverId, inputs, state, limit, owner, tier).then(resolve, reject));
        });
      }) as SolverExecutor['run'];
      return { held, restore: () => delete (executor as { run?: unknown }).run };
    }

    /** A zeta run asked of A by a fresh caller, who leaves once B holds it. */
    async function leaveWhileAtB(seed: string, held: { started: number; cancelled: unknown[] }) {
      const caller = await zkIdentity(a.url, seed);
      const balance = async () => (await call(a.url, 'GET', '/api/tally/balance', undefined, bearer(caller.key))).body.total as number;
      const before = { balance: await balance(), sealed: a.node.counters.get('sealed_total'), stats: { ...a.node.offloader!.stats } };
      const leaving = new AbortController();
      const pending = fetch(`${a.url}/api/svc/zeta`, {
        method: 'POST',
        headers: { ...bearer(caller.key), 'content-type': 'application/json' },
        body: JSON.stringify(zeta()),
        signal: leaving.signal,
      }).catch((err: unknown) => err);
      await waitFor(() => held.started === 1, 15_000, 'the run held at B');
      leaving.abort();
      expect(await pending).toMatchObject({ name: 'AbortError' });
      await waitFor(() => held.cancelled.length === 1, 10_000, 'B told that the caller left');
      return { balance, before };
    }

    beforeAll(async () => {
      // B the one contributing peer (C was switched away above).
      await setMode(b, operators.b!, 'contributing');
      await seen(a, b, 'contributing');
      await waitFor(() => !a.node.offloader!.isSkipped(b.node.nodeId), 15_000, 'B eligible');
    }, 60_000);

    it('still waiting for a worker at B: dropped there, not run at A, nothing sealed or charged, B not skipped', async () => {
      const { held, restore } = holdAtPeer(false);
      const served = b.node.execHandler.stats.served;
      const cancelled = b.node.execHandler.stats.cancelled;
      try {
        const { balance, before } = await leaveWhileAtB('offload-leaves-waiting', held);
        await waitFor(() => a.node.offloader!.stats.left === before.stats.left + 1, 10_000, 'A to hear the run was dropped');
        expect(held.cancelled[0]).toBeInstanceOf(Error);
        expect(b.node.execHandler.stats.cancelled).toBe(cancelled + 1);
        expect(b.node.execHandler.stats.served).toBe(served);
        expect(b.node.execHandler.running).toBe(0);
        // Not run at A instead, not sealed, not charged; B did nothing wrong.
        expect(a.node.counters.get('sealed_total')).toBe(before.sealed);
        expect(await balance()).toBe(before.balance);
        expect(a.node.offloader!.stats.offloaded).toBe(before.stats.offloaded);
        expect(a.node.offloader!.isSkipped(b.node.nodeId)).toBe(false);
      } finally {
        held.start();
        restore();
      }
    }, 60_000);

    it('already on a worker at B: it finishes, and A seals and charges it as asked', async () => {
      const { held, restore } = holdAtPeer(true);
      try {
        const { balance, before } = await leaveWhileAtB('offload-leaves-running', held);
        held.start();
        await waitFor(() => a.node.counters.get('sealed_total') === before.sealed + 1, 15_000, 'A to seal the run B finished');
        expect(a.node.offloader!.stats.offloaded).toBe(before.stats.offloaded + 1);
        expect(a.node.offloader!.stats.left).toBe(before.stats.left);
        expect(await balance()).toBe(before.balance - COSTS.solver);
      } finally {
        held.start();
        restore();
      }
    }, 60_000);
  });

  it('a node whose offload is never runs everything itself, contributing peers or not', async () => {
    await setMode(b, operators.b!, 'contributing');
    await seen(d, b, 'contributing');
    const served = b.node.execHandler.stats.served + c.node.execHandler.stats.served;
    const caller = await zkIdentity(d.url, 'offload-never');
    for (let i = 0; i < 3; i++) {
      const r = await call(d.url, 'POST', '/api/svc/zeta', zeta(), bearer(caller.key));
      expect(r.status, r.text).toBe(200);
      expect(r.body.executed_by).toBeNull();
    }
    expect(d.node.offloader).toBeNull();
    expect(b.node.execHandler.stats.served + c.node.execHandler.stats.served).toBe(served);
  }, 60_000);
});

// Escalation through the services (architecture.md §6): seven nodes' ChallengeService and Reexecutor over real
// stores with real Ed25519 keys, their gossip carried by a bus in this process and their clock one tick counter.
// keys[0] executed, keys[1] opened; keys[2..6] are eligible (five: round 1 is all of them). Of round 0's committee
// of 3, one is dead (no node runs for it), one lies (re-executes to another digest), one is restarted over its store
// between its commit and its reveal. Round 0 ends without a quorum and escalates; round 1 rejects the false claim.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/db.js';
import { ChallengeService } from '../../src/consensus/challenges.js';
import { Reexecutor } from '../../src/consensus/reexecutor.js';
import {
  CHALLENGE_OPENED_EVENT,
  COMMIT_EVENT,
  VERDICT_EVENT,
  VOTE_EVENT,
  challengeIdOf,
  challengeSigningText,
  commitDeadlineOf,
  escalationOf,
  roundOf,
  type ChallengeRecord,
  type SignedChallenge,
  type SignedCommit,
  type SignedVote,
  type VerdictDocument,
} from '../../src/consensus/challenge-wire.js';
import type { BondService } from '../../src/consensus/bonds.js';
import { signExecution } from '../../src/consensus/executed-by.js';
import { signText, verifyText } from '../../src/mesh/wire.js';
import { TEST_POLICY, drawEvent, drawnCommittee, key, type Key } from './helpers.js';

const CLAIM = 'c'.repeat(64);
const EXEC = 'e'.repeat(64);
const LIE = '1'.repeat(64);
const REQUEST_DIGEST = 'd'.repeat(64);
const policy = TEST_POLICY;

let keys: Key[] = [];
let now = 1_000;
const dirs: string[] = [];
const stores: Store[] = [];

interface Running {
  key: Key;
  store: Store;
  dir: string;
  svc: ChallengeService;
  rx: Reexecutor | null;
}
const running = new Map<string, Running>();

beforeAll(async () => {
  keys = await Promise.all([0, 1, 2, 3, 4, 5, 6].map(() => key()));
});
afterAll(async () => {
  for (const s of stores) await s.close().catch(() => undefined);
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** Carry an event from `from` to every other running node, as gossip would (refusals dropped). */
async function deliver(from: string, type: string, body: unknown): Promise<void> {
  for (const n of running.values()) {
    if (n.key.id === from) continue;
    const ev = { sender: from };
    const go =
      type === CHALLENGE_OPENED_EVENT
        ? n.svc.applyOpened(body as SignedChallenge, ev)
        : type === COMMIT_EVENT
          ? n.svc.applyCommit(body as SignedCommit, ev)
          : type === VOTE_EVENT
            ? n.svc.applyVote(body as SignedVote, ev)
            : type === VERDICT_EVENT
              ? n.svc.applyVerdict(body as VerdictDocument)
              : Promise.resolve();
    await go.catch(() => undefined);
  }
}

/** Node `k` over the store in `dir` (a new one when absent); `digest`: what its re-execution gives (null: no re-executor). */
async function startNode(k: Key, digest: string | null, dir?: string): Promise<Running> {
  const d = dir ?? (await mkdtemp(join(tmpdir(), 'svc-escalation-')));
  if (!dir) dirs.push(d);
  const store = await Store.open(join(d, 'db'), { sync: false });
  stores.push(store);
  const svc = new ChallengeService({
    store,
    policy,
    bonds: { ofNode: () => null, get: () => null, holderOf: () => keys[0]!.id } as unknown as BondService,
    nodeId: () => k.id,
    nowSvcond: () => now,
    sign: (t) => signText(k.priv, t),
    verify: verifyText,
    lookup: async () => null,
    tickEvents: () => [drawEvent(keys[2]!, now + 1)],
    candidates: () =>
      keys.map((c, i) => ({
        node: c.id,
        zid: `zid_${i}`,
        bondId: `bond_${i}`,
        bondSvcond: 0,
        heard: Array.from({ length: now - 899 }, (_, t) => ({ svcond: 900 + t, mode: 'contributing', bondId: `bond_${i}` })),
      })),
    holdStake: async () => {
      throw new Error('no intake here');
    },
    publish: (type, body) => deliver(k.id, type, body),
  });
  await svc.load();
  const rx =
    digest === null
      ? null
      : new Reexecutor({
          challenges: svc,
          store,
          nodeId: () => k.id,
          nowSvcond: () => now,
          sign: (t) => signText(k.priv, t),
          execute: async () => ({ requestDigest: REQUEST_DIGEST, resultDigest: digest }),
        });
  await rx?.load();
  const n = { key: k, store, dir: d, svc, rx };
  running.set(k.id, n);
  return n;
}

/** Let the fire-and-forget listeners (re-execution, commits, reveals) run. */
const settle = () => new Promise((r) => setTimeout(r, 50));

/** One tick on every running node: deadlines swept, reveals due. */
async function tick(to: number): Promise<void> {
  while (now < to) {
    now++;
    for (const n of running.values()) {
      await n.svc.sweepDeadlines();
      await n.rx?.revealDue();
    }
    await settle();
  }
}

function signedChallenge(): SignedChallenge {
  const id = challengeIdOf('res_escalation_service', 'zid_challenger');
  const eligible = keys
    .slice(2)
    .map((k) => k.id)
    .sort();
  const c: ChallengeRecord = {
    challenge_id: id,
    result_id: 'res_escalation_service',
    challenger: 'zid_challenger',
    challenger_home: keys[1]!.id,
    claimed_digest: CLAIM,
    executor_digest: EXEC,
    executed_by: signExecution(
      (t) => signText(keys[0]!.priv, t),
      { node: keys[0]!.id, bond_id: 'bond_' + 'a'.repeat(24), svcond: 900, request_digest: REQUEST_DIGEST },
      EXEC,
    ),
    request: { kind: 'solver', solver: 'zeta', inputs: {} },
    stamp_svcond: now - 5,
    svcond: now,
    deadline_svcond: now + 1 + policy.deadlineTicks, // the draw event's tick + deadlineTicks
    committee_size: 3,
    quorum: 2,
    eligible,
    committee: drawnCommittee('res_escalation_service', drawEvent(keys[2]!, now + 1), eligible, 3),
    draw: drawEvent(keys[2]!, now + 1),
  };
  return { challenge: c, signature: signText(keys[1]!.priv, challengeSigningText(c)) };
}

describe('escalation through the services', () => {
  it('a dead member and a liar in round 0: it escalates, round 1 rejects; a member restarted between commit and reveal still reveals', async () => {
    const sc = signedChallenge();
    const c = sc.challenge;
    const id = c.challenge_id;
    const [liarId, deadId, restartedId] = c.committee;
    const role = (k: Key) => (k.id === liarId ? LIE : EXEC);
    const opener = await startNode(keys[1]!, null);
    for (const k of keys.slice(2)) if (k.id !== deadId) await startNode(k, role(k));
    await opener.svc.applyOpened(sc, { sender: keys[1]!.id });
    await deliver(keys[1]!.id, CHALLENGE_OPENED_EVENT, sc);
    await settle();

    // Round 0: the liar and H committed; D never will, so reveals wait for the commit window.
    const commits0 = () => (opener.svc.get(id)?.commits ?? []).filter((k) => roundOf(k.commit) === 0).map((k) => k.commit.voter);
    expect(commits0().sort()).toEqual([liarId, restartedId].sort());
    expect(opener.svc.get(id)!.votes).toEqual([]);
    // H restarts over its store: its salt row survives, and it reveals once the window passes.
    const h = running.get(restartedId!)!;
    running.delete(restartedId!);
    await h.store.close();
    const h2 = await startNode(h.key, EXEC, h.dir);
    expect(await h2.store.range(h2.store.sub('commit-salts'))).toHaveLength(1);

    // Round 0 is short of D's commit and can escalate: nobody reveals in it, whatever the window.
    await tick(commitDeadlineOf(c) + 1);
    expect(opener.svc.get(id)!.votes).toEqual([]);
    expect(await h2.store.range(h2.store.sub('commit-salts'))).toHaveLength(1);

    // Round 0's deadline + grace: every node escalates; round 1 is all five, D still silent.
    await tick(c.deadline_svcond + 3);
    for (const n of running.values()) expect(n.svc.get(id)!.state, n.key.id).toBe('escalated');
    const r1 = escalationOf(c)!;
    await tick(commitDeadlineOf(r1) + 1);
    for (const n of running.values()) {
      const v = n.svc.get(id)!.verdict;
      expect(v, n.key.id).toMatchObject({ outcome: 'rejected', deciding_digest: EXEC, round: 1 });
    }
    const e = opener.svc.get(id)!;
    expect(e.verdict!.tally).toEqual({ [EXEC]: 3, [LIE]: 1 });
    // Every round-1 commit was signed before any round-0 digest was revealed: round 0's votes (H's after its
    // restart, from its salt row) come only once round 1's commit window has passed, as evidence: heard after round
    // 0's deadline, they are kept apart and never folded.
    await tick(commitDeadlineOf(r1) + 2);
    const all = opener.svc.get(id)!;
    expect(all.votes.filter((v) => roundOf(v.vote) === 0 && v.vote.svcond > commitDeadlineOf(r1))).toEqual([]);
    const votes0 = (all.heard_late ?? []).filter((v) => roundOf(v.vote) === 0);
    expect(new Map(votes0.map((v) => [v.vote.voter, v.vote.digest]))).toEqual(
      new Map([
        [liarId, LIE],
        [restartedId, EXEC],
      ]),
    );
    const firstReveal0 = Math.min(...votes0.map((v) => v.vote.svcond));
    expect(firstReveal0).toBeGreaterThan(commitDeadlineOf(r1));
    for (const k of (all.commits ?? []).filter((k) => roundOf(k.commit) === 1)) expect(k.commit.svcond).toBeLessThan(firstReveal0);
    expect(await h2.store.range(h2.store.sub('commit-salts'))).toEqual([]);
  });
});

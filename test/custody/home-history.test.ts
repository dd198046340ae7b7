// The home of an epoch whose change never reached a node (home-history.ts): it asks other nodes for the changes they
// keep (/svc/custody/1 `changes`, answered by a composed custodian), checks each from the highest epoch below whose
// home it knows, and keeps the homes it learns. A node answering with a change whose promises do not hold is passed
// over. Composed in-process: each node's own store and Ed25519 key.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { changesRequest, type FetchChanges } from '../../src/custody/client.js';
import { custodySetOf } from '../../src/custody/custody-set.js';
import type { Custodian } from '../../src/custody/custodian.js';
import { HomeChanges, type HomeChange } from '../../src/custody/home-change.js';
import { HomeHistory } from '../../src/custody/home-history.js';
import { promiseSigningText, type PromiseBody } from '../../src/custody/promise.js';
import { changesAnswerSchema } from '../../src/custody/protocol.js';
import { signText, verifyText } from '../../src/mesh/wire.js';
import { composedCustodian, composedNodes, type ComposedNode } from '../helpers/composed-custodian.js';

const SECRET = 'home-history-secret-0123456789abcdef';
const ZID = `zid_${'cd'.repeat(16)}`;
const OTHER_ZID = `zid_${'ef'.repeat(16)}`;
const NOW = 500;
const R = 3;

let dir = '';
let nodes: ComposedNode[] = [];
const members = () => nodes.map((n) => n.id);
const byId = (id: string) => nodes.find((n) => n.id === id)!;

/** The change making the second custodian of `home`'s set the home of `epoch`, promised by that set's last two. */
function changeAfter(home: string, epoch: number, zid = ZID): HomeChange {
  const set = custodySetOf(zid, home, members(), R);
  const candidate = set.custodians[1]!;
  const promises = set.custodians.slice(1).map((node) => {
    const promise: PromiseBody = { zid, epoch, candidate, head: null };
    return { promise, node, signature: signText(byId(node).key, promiseSigningText(promise)) };
  });
  return { zid, epoch, home: candidate, promises };
}

/** Apply `c`, which replaced `previous`, as HomeMoves does. */
async function apply(changes: HomeChanges, n: ComposedNode, c: HomeChange, previous: string): Promise<void> {
  await changes.latest(c.zid);
  await n.store.commit(changes.putOps(c, previous));
  changes.applied(c, previous);
}

let origin: string;
let chain: HomeChange[];
let keeper: ComposedNode;
let keeperCustodian: Custodian;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-home-history-'));
  nodes = await composedNodes(dir, 6);
  origin = nodes[0]!.id;
  const c2 = changeAfter(origin, 2);
  const c3 = changeAfter(c2.home, 3);
  const c4 = changeAfter(c3.home, 4);
  chain = [c2, c3, c4];
  // The keeper applied every change; it answers `changes` from its history.
  keeper = nodes[5]!;
  const kept = new HomeChanges(keeper.store);
  let previous = origin;
  for (const c of chain) {
    await apply(kept, keeper, c, previous);
    previous = c.home;
  }
  keeperCustodian = composedCustodian(keeper, {
    home: () => c4.home,
    members,
    secret: SECRET,
    now: NOW,
    changesAfter: (zid, after, limit) => kept.changesAfter(zid, after, limit),
  });
});

afterAll(async () => {
  await Promise.all(nodes.map((n) => n.store.close()));
  await rm(dir, { recursive: true, force: true });
});

/** A learner on its own store that applied epoch 4's change only (it missed 2 and 3), asking `sources` in order. */
async function learnerAsking(
  n: ComposedNode,
  answers: Record<string, (after: number) => unknown>,
): Promise<{ changes: HomeChanges; history: HomeHistory; asked: string[] }> {
  const changes = new HomeChanges(n.store);
  await apply(changes, n, chain[2]!, origin);
  const asked: string[] = [];
  const fetch: FetchChanges = async (peer, zid, after) => {
    asked.push(peer);
    const raw = answers[peer] ? answers[peer]!(after) : await keeperCustodian.answerChanges(changesRequest(SECRET, n.id, NOW, zid, after), n.id);
    return changesAnswerSchema.parse(raw);
  };
  const history = new HomeHistory({
    homeChanges: changes,
    members,
    replicas: R,
    verify: verifyText,
    fetch,
    sources: async () => [...new Set([...Object.keys(answers), keeper.id])],
    nowMs: () => 0,
    timeoutMs: 1000,
  });
  return { changes, history, asked };
}

/** A learner's history asking `other` alone, which answers from the changes it keeps. */
function historyAsking(changes: HomeChanges, other: ComposedNode, kept: HomeChanges): HomeHistory {
  return new HomeHistory({
    homeChanges: changes,
    members,
    replicas: R,
    verify: verifyText,
    fetch: async (_peer, z, after) => changesAnswerSchema.parse({ v: 1, changes: await kept.changesAfter(z, after, 64), more: false }),
    sources: async () => [other.id],
    nowMs: () => 0,
    timeoutMs: 1000,
  });
}

describe('the home of an epoch a node missed', () => {
  it('is learned from a change made by a candidate behind the epoch before it, checked from the epoch it names', async () => {
    // Another history of the same kind: 5 was promised by the set of epoch 2's home (its candidate knew no later
    // epoch), 6 by the set of 3's. Checked one after the other, 5 would not follow 3.
    const c2 = changeAfter(origin, 2, OTHER_ZID);
    const c3 = changeAfter(c2.home, 3, OTHER_ZID);
    const c5 = { ...changeAfter(c2.home, 5, OTHER_ZID), after: 2 };
    const c6 = { ...changeAfter(c3.home, 6, OTHER_ZID), after: 3 };
    const other = nodes[5]!;
    const kept = new HomeChanges(other.store);
    const zid = OTHER_ZID;
    for (const [c, previous] of [
      [c2, origin],
      [c3, c2.home],
      [c5, c3.home],
      [c6, c5.home],
    ] as const)
      await other.store.commit(kept.putOps(c, previous));
    const learner = nodes[1]!;
    const changes = new HomeChanges(learner.store);
    await changes.latest(zid);
    await learner.store.commit(changes.putOps(c6, origin));
    changes.applied(c6, origin);
    const history = historyAsking(changes, other, kept);
    expect(await history.learnHomeAt(zid, 5)).toEqual({ home: c5.home });
    expect(await Promise.all([2, 3, 4, 5].map((e) => changes.configAt(zid, e).then((c) => c?.home ?? null)))).toEqual([c2.home, c3.home, null, c5.home]);
  });

  it('is learned from a change whose epoch before never completed, from the home its promises name for that epoch', async () => {
    const zid = `zid_${'ab'.repeat(16)}`;
    const c2 = changeAfter(origin, 2, zid);
    // Epoch 3's candidate certified its epoch entry and stopped: no change of 3 exists. Epoch 4's promisers, of its set,
    // each signed that they knew epoch 3 and its home.
    const home3 = custodySetOf(zid, c2.home, members(), R).custodians[1]!;
    const set3 = custodySetOf(zid, home3, members(), R);
    const candidate = set3.custodians[1]!;
    const promises = set3.custodians.slice(1).map((node) => {
      const promise: PromiseBody = { zid, epoch: 4, candidate, head: null, latest: { epoch: 3, home: home3 } };
      return { promise, node, signature: signText(byId(node).key, promiseSigningText(promise)) };
    });
    const c4: HomeChange = { zid, epoch: 4, home: candidate, promises };
    const c5 = changeAfter(c4.home, 5, zid);
    const other = nodes[5]!;
    const kept = new HomeChanges(other.store);
    await other.store.commit([...kept.putOps(c2, origin), ...kept.putOps(c4, c2.home)]);
    const learner = nodes[2]!;
    const changes = new HomeChanges(learner.store);
    await apply(changes, learner, c5, origin);
    const history = historyAsking(changes, other, kept);
    expect(await history.learnHomeAt(zid, 4)).toEqual({ home: c4.home });
    expect(await Promise.all([2, 3, 4].map((e) => changes.configAt(zid, e).then((c) => c?.home ?? null)))).toEqual([c2.home, null, c4.home]);
  });

  it('is learned from the changes another node keeps, each checked from the epoch known, and kept', async () => {
    const { changes, history, asked } = await learnerAsking(nodes[1]!, {});
    expect(await Promise.all([1, 2, 3].map((e) => changes.configAt(ZID, e).then((c) => c?.home ?? null)))).toEqual([origin, null, null]);
    expect(await history.learnHomeAt(ZID, 3)).toEqual({ home: chain[1]!.home });
    expect(asked).toEqual([keeper.id]);
    // Both epochs between are kept, with their changes (this node answers for them from now on).
    expect(await Promise.all([1, 2, 3].map((e) => changes.configAt(ZID, e).then((c) => c?.home ?? null)))).toEqual([origin, chain[0]!.home, chain[1]!.home]);
    expect((await changes.changesAfter(ZID, 1, 10)).map((c) => [c.epoch, c.home])).toEqual(chain.map((c) => [c.epoch, c.home]));
    // Known now: nobody is asked again.
    expect(await history.learnHomeAt(ZID, 2)).toEqual({ home: chain[0]!.home });
    expect(asked).toEqual([keeper.id]);
  });

  it('passes over a node whose change does not hold (its own promise alone), and keeps nothing of it', async () => {
    const liar = nodes[2]!;
    const promise: PromiseBody = { zid: ZID, epoch: 2, candidate: liar.id, head: null };
    const forged: HomeChange = {
      zid: ZID,
      epoch: 2,
      home: liar.id,
      promises: [{ promise, node: liar.id, signature: signText(liar.key, promiseSigningText(promise)) }],
    };
    const { changes, history, asked } = await learnerAsking(nodes[3]!, { [liar.id]: () => ({ v: 1, changes: [forged], more: false }) });
    expect(await history.learnHomeAt(ZID, 2)).toEqual({ home: chain[0]!.home });
    expect(asked).toEqual([liar.id, keeper.id]);
    expect(await changes.configAt(ZID, 2).then((c) => c?.home ?? null)).toBe(chain[0]!.home);
  });

  it('is not found when no node answers one that holds, and not looked for again at once', async () => {
    const mute = nodes[4]!;
    const { history, asked } = await learnerAsking(nodes[4]!, {
      [mute.id]: () => ({ v: 1, changes: [], more: false }),
      [keeper.id]: () => {
        throw new Error('the keeper is down');
      },
    });
    // Not below the latest change known: nothing to learn, nobody asked.
    expect(await history.learnHomeAt(ZID, 5)).toBeNull();
    expect(asked).toEqual([]);
    expect(await history.learnHomeAt(ZID, 3)).toBeNull();
    expect(asked).toEqual([mute.id, keeper.id]);
    expect(await history.learnHomeAt(ZID, 3)).toBeNull();
    expect(asked).toEqual([mute.id, keeper.id]);
  });
});

// A custodian that missed a home change (an old home back from a crash: its directory still names itself the home)
// is asked for a promise by a candidate of the next epoch. The request carries the latest change the candidate knows;
// the custodian checks it, applies it, and then decides as a node that heard it: it promises, and the candidate has
// the majority of the newest set that the stale custodian's refusal (`home`) used to deny it. Composed in-process:
// three nodes, every one a member, the identity's set all three.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { changesRequest, promiseRequest } from '../../src/custody/client.js';
import { setOfConfig } from '../../src/custody/custody-set.js';
import type { Custodian } from '../../src/custody/custodian.js';
import { FIRST_EPOCH } from '../../src/custody/entry.js';
import { standingOf, type HomeChange } from '../../src/custody/home-change.js';
import { promisesFault, type SignedPromise } from '../../src/custody/promise.js';
import { verifyText } from '../../src/mesh/wire.js';
import { composedCustodian, composedSet, type ComposedNode } from '../helpers/composed-custodian.js';

const ZID = 'zid_0123456789abcdef0123456789abcdef';
const SECRET = 'stale-custodian-secret-0123456789';
const NOW = 500;

let dir = '';
let nodes: ComposedNode[] = [];
/** The epoch-1 home (the stale custodian), the epoch-2 home (down from now on), the candidate of epoch 3. */
let h: ComposedNode;
let n1: ComposedNode;
let n2: ComposedNode;
let change2: HomeChange;
const members = () => nodes.map((n) => n.id);

/** A promise the answer carries, else the answer thrown. */
function promiseOf(answer: Awaited<ReturnType<Custodian['promiseTo']>>): SignedPromise {
  if (!('promise' in answer)) throw new Error(`refused: ${JSON.stringify(answer)}`);
  return answer.promise;
}

/**
 * H's custodian as it is after its restart: its directory names itself the home at epoch 1 until it applies a change
 * that checks from there (home-change.ts standingOf, as home-moves.ts applies one).
 */
function staleCustodian(): { custodian: Custodian; home: () => string; known: () => HomeChange | null } {
  let home = h.id;
  let known: HomeChange | null = null;
  const custodian = composedCustodian(h, {
    home: () => home,
    members,
    secret: SECRET,
    now: NOW,
    homeChange: () => Promise.resolve(known),
    learnChange: async (change) => {
      const standing = standingOf(change, { epoch: known?.epoch ?? FIRST_EPOCH, home }, members(), 3, verifyText);
      if (!standing.apply) return;
      known = change;
      home = change.home;
    },
  });
  return { custodian, home: () => home, known: () => known };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-stale-custodian-'));
  const composed = await composedSet(dir, ZID);
  nodes = composed.nodes;
  [h, n1, n2] = composed.inSetOrder;
  // H is down: N1 takes the identity over in epoch 2 with its own promise and N2's (a majority of H's set).
  const c1 = composedCustodian(n1, { home: () => h.id, members, secret: SECRET, now: NOW });
  const c2 = composedCustodian(n2, { home: () => h.id, members, secret: SECRET, now: NOW });
  const p1 = promiseOf(await c1.promiseTo(ZID, 2, n1.id));
  const p2 = promiseOf(await c2.answerPromise(promiseRequest(SECRET, n1.id, NOW, ZID, 2), n1.id));
  change2 = { zid: ZID, epoch: 2, home: n1.id, promises: [p1, p2] };
  expect(standingOf(change2, { epoch: FIRST_EPOCH, home: h.id }, members(), 3, verifyText)).toEqual({ apply: true });
});

afterAll(async () => {
  await Promise.all(nodes.map((n) => n.store.close()));
  await rm(dir, { recursive: true, force: true });
});

describe('a custodian that missed a home change, asked for a promise', () => {
  it('refuses as the home when the request shows no change, and when the change it shows does not verify', async () => {
    const stale = staleCustodian();
    expect(await stale.custodian.answerPromise(promiseRequest(SECRET, n2.id, NOW, ZID, 3), n2.id)).toMatchObject({ refused: { code: 'home' } });
    const [first, second] = change2.promises as [SignedPromise, SignedPromise];
    const forged: HomeChange = { ...change2, promises: [first, { ...second, signature: first.signature }] };
    expect(await stale.custodian.answerPromise(promiseRequest(SECRET, n2.id, NOW, ZID, 3, undefined, forged), n2.id)).toMatchObject({
      refused: { code: 'home' },
    });
    expect(stale.home()).toBe(h.id);
  });

  it('applies the change the request shows, then promises: with the candidate its own, a majority of the newest set', async () => {
    const stale = staleCustodian();
    const answer = await stale.custodian.answerPromise(promiseRequest(SECRET, n2.id, NOW, ZID, 3, undefined, change2), n2.id);
    const fromH = promiseOf(answer);
    expect(stale.home()).toBe(n1.id);
    expect(stale.known()?.epoch).toBe(2);
    // It names the epoch it learned, with its home: the candidate counts the set of epoch 2's home.
    expect(fromH.promise).toMatchObject({ epoch: 3, candidate: n2.id, latest: { epoch: 2, home: n1.id } });
    const own = composedCustodian(n2, { home: () => n1.id, members, secret: SECRET, now: NOW, homeChange: () => Promise.resolve(change2) });
    const fromN2 = promiseOf(await own.promiseTo(ZID, 3, n2.id));
    const view = { epoch: 2, home: n1.id };
    const setOf = (at: { epoch: number; home: string; excluded?: string[] }) => setOfConfig(ZID, at, members(), 3);
    expect(setOf(view).custodians).toContain(h.id);
    expect(promisesFault([fromN2, fromH], ZID, 3, { home: n2.id }, view, setOf, verifyText)).toBeNull();
    // Without H's promise, N1 down: one of the two needed (the takeover the old home blocked).
    expect(promisesFault([fromN2], ZID, 3, { home: n2.id }, view, setOf, verifyText)).toMatch(/promises of 1 distinct custodians .* 2 needed/);
  });

  it('shows a candidate behind it the later change with its refusal', async () => {
    const c2 = composedCustodian(n2, { home: () => n1.id, members, secret: SECRET, now: NOW, homeChange: () => Promise.resolve(change2) });
    // N2 promised epoch 2 to N1 (beforeAll, on its store): H, asking for epoch 2 without the change, is refused with it.
    const refused = await c2.answerPromise(promiseRequest(SECRET, h.id, NOW, ZID, 2), h.id);
    expect(refused).toMatchObject({ refused: { code: 'promised', home: { epoch: 2, home: n1.id } } });
    // Asked for the changes it keeps (a home back from a stop checks with them: home-check.ts), it names the latest
    // epoch it promised (3, to itself, in the test before), with no change of it kept here.
    expect(await c2.answerChanges(changesRequest(SECRET, h.id, NOW, ZID, 1), h.id)).toMatchObject({ changes: [], fenced: 3 });
    // A candidate that showed that change is not shown it again.
    const again = await c2.answerPromise(promiseRequest(SECRET, h.id, NOW, ZID, 2, undefined, change2), h.id);
    expect('refused' in again && again.refused.home).toBeUndefined();
  });
});

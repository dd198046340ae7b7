// The home changes a node missed, applied from the ones a later change carries or other nodes keep (custody/home-moves.ts
// apply): each is checked in order from the epoch the one before reached, as a change heard is (home-change.ts
// standingOf). On a composed node view: five members, sets of three, promises signed by a test key per node.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HomeChanges, type HomeChange } from '../../src/custody/home-change.js';
import { EnvelopeLocks } from '../../src/tally/folders.js';
import { HomeMoves } from '../../src/custody/home-moves.js';
import { promiseSigningText, type PromiseBody } from '../../src/custody/promise.js';
import type { IdentityRecord } from '../../src/identity/service.js';
import { Store } from '../../src/store/db.js';
import { waitFor } from '../mesh/helpers.js';

const ZID = `zid_${'cd'.repeat(16)}`;
const MEMBERS = ['node-a', 'node-b', 'node-c', 'node-d', 'node-e'];
// The sets of three every node computes for this zid (custody-set.ts): the home, then node-d and node-b by weight.
//   node-a {a, d, b}   node-b {b, d, a}   node-c {c, d, b}   node-d {d, b, a}   node-e {e, d, b}
/** A node's signature in this test: its name over the text (what `verify` below accepts, and nothing else). */
const sign = (node: string, text: string) => `${node}:${text}`;
const verify = (node: string, text: string, signature: string) => signature === sign(node, text);

/** The change making `home` the home from `epoch`, promised by `promisers` (naming `named`); `after` as the candidate sets it. */
function change(epoch: number, home: string, promisers: string[], after?: number, named?: PromiseBody['latest']): HomeChange {
  const promises = promisers.map((node) => {
    const promise: PromiseBody = { zid: ZID, epoch, candidate: home, head: null, ...(named === undefined ? {} : { latest: named }) };
    return { promise, node, signature: sign(node, promiseSigningText(promise)) };
  });
  return { zid: ZID, epoch, home, promises, ...(after === undefined ? {} : { after }) };
}

let dir = '';
let store: Store;
let moves: HomeMoves;
let changes: HomeChanges;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-missed-changes-'));
  store = await Store.open(join(dir, 'db'), { sync: false });
  changes = new HomeChanges(store);
  const identities = store.sub('test_identities');
  await store.commit([{ type: 'put', sub: identities, key: ZID, value: { zid: ZID, home: 'node-c' } }]);
  moves = movesAsking();
});

/** The node's HomeMoves; `missedChanges`: what other nodes answer for the changes between (absent: none asked). */
function movesAsking(missedChanges?: (after: number, epoch: number) => HomeChange[]): HomeMoves {
  const identities = store.sub('test_identities');
  return new HomeMoves({
    store,
    nodeId: () => 'node-x',
    replicas: 3,
    members: () => MEMBERS,
    verify,
    homeChanges: changes,
    envelopeLocks: new EnvelopeLocks(),
    identity: {
      getIdentity: async (zid) => store.get<IdentityRecord>(identities, zid),
      homeMoveOps: async (ident, home) => [{ type: 'put', sub: identities, key: ident.zid, value: { ...ident, home } }],
    },
    forget: () => undefined,
    ...(missedChanges === undefined ? {} : { missedChanges: async (_zid: string, after: number, epoch: number) => missedChanges(after, epoch) }),
    fetch: null,
    timeoutMs: 1000,
  });
}

afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

// The identity was registered on node-c (epoch 1). Epoch 2 is node-b's, promised by node-b and node-c.
const SECOND = () => change(2, 'node-b', ['node-b', 'node-c']);

describe('changes a node missed', () => {
  it('are applied in order from a later change, one skipping epochs never completed, and the homes of their epochs kept', async () => {
    expect(await moves.apply(SECOND())).toEqual({ apply: true });
    // Epochs 3 and 4 were promised and never completed: the change of 5 rests on epoch 2's set (node-b's).
    const fifth = change(5, 'node-a', ['node-a', 'node-d'], 2);
    const latest: HomeChange = { ...change(6, 'node-b', ['node-b', 'node-a']), earlier: [SECOND(), fifth] };
    expect(await moves.apply(latest)).toEqual({ apply: true });
    expect((await changes.latest(ZID))?.epoch).toBe(6);
    expect(await Promise.all([1, 2, 3, 5, 6].map((e) => changes.configAt(ZID, e).then((c) => c?.home ?? null)))).toEqual([
      'node-c',
      'node-b',
      null,
      'node-a',
      null,
    ]);
    expect((await store.get<IdentityRecord>(store.sub('test_identities'), ZID))?.home).toBe('node-b');
  });

  it('are read from other nodes when a change shown follows more than it carries, then applied in order, and it', async () => {
    const asked: [number, number][] = [];
    // Kept elsewhere: 2, 3 (its candidate knew 2), 5 (promised from 3's set; 4 never completed), 6. Epoch 6's and 7's
    // promisers include node-a, outside node-c's set: neither holds from epoch 1.
    const kept = [SECOND(), change(3, 'node-d', ['node-d', 'node-a']), change(5, 'node-a', ['node-a', 'node-b'], 3), change(6, 'node-b', ['node-b', 'node-a'])];
    moves = movesAsking((after, epoch) => {
      asked.push([after, epoch]);
      return kept.filter((c) => c.epoch > after && c.epoch <= epoch);
    });
    const shown: HomeChange = { ...change(7, 'node-d', ['node-d', 'node-a']), earlier: [kept[3]!] };
    expect(await moves.apply(shown)).toMatchObject({ apply: false, why: 'gap' });
    await waitFor(async () => (await changes.latest(ZID))?.epoch === 7, 5_000, 'the missed changes applied');
    expect(asked).toEqual([[1, 7]]);
    expect(await Promise.all([2, 3, 5, 6].map((e) => changes.configAt(ZID, e).then((c) => c?.home ?? null)))).toEqual(['node-b', 'node-d', 'node-a', 'node-b']);
    expect((await store.get<IdentityRecord>(store.sub('test_identities'), ZID))?.home).toBe('node-d');
  });

  it('are passed over by a change resting on an epoch no node keeps a change of, whose promises hold from the epoch known', async () => {
    expect(await moves.apply(SECOND())).toEqual({ apply: true });
    // Epoch 5's candidate certified its epoch entry and stopped; epoch 6's rests on it (its promisers held that entry),
    // and its promisers are a majority of node-b's set, which certified every entry of epoch 2.
    expect(await moves.apply(change(6, 'node-d', ['node-d', 'node-a']))).toEqual({ apply: true });
    expect((await store.get<IdentityRecord>(store.sub('test_identities'), ZID))?.home).toBe('node-d');
  });

  it('are passed over by a change made from an epoch below the one known here when its promises name that one', async () => {
    expect(await moves.apply(SECOND())).toEqual({ apply: true });
    // Epoch 4's candidate knew epoch 1 (node-c's); node-c is outside node-b's set, so its promises hold from epoch 1
    // only, and only when they name epoch 2 and its home (the candidate then asked node-b's set too).
    const blind = change(4, 'node-d', ['node-d', 'node-c', 'node-b'], 1);
    expect(await moves.apply(blind)).toMatchObject({ apply: false, why: 'gap', reason: /do not name the known 2/ });
    expect(await moves.apply(change(4, 'node-d', ['node-d', 'node-c', 'node-b'], 1, { epoch: 2, home: 'node-b' }))).toEqual({ apply: true });
    expect((await changes.latest(ZID))?.epoch).toBe(4);
    expect(await Promise.all([1, 2, 3].map((e) => changes.configAt(ZID, e).then((c) => c?.home ?? null)))).toEqual(['node-c', 'node-b', null]);
    expect((await store.get<IdentityRecord>(store.sub('test_identities'), ZID))?.home).toBe('node-d');
  });

  it('are not applied when none of those carried holds from the epoch known here', async () => {
    expect(await moves.apply(SECOND())).toEqual({ apply: true });
    // Epoch 5 rests on epoch 4, not known here; 5's and 6's promisers include node-c, outside node-b's set.
    const latest: HomeChange = { ...change(6, 'node-d', ['node-d', 'node-c']), earlier: [change(5, 'node-c', ['node-c', 'node-d'], 4)] };
    expect(await moves.apply(latest)).toMatchObject({ apply: false, why: 'gap' });
    expect((await changes.latest(ZID))?.epoch).toBe(2);
    expect((await store.get<IdentityRecord>(store.sub('test_identities'), ZID))?.home).toBe('node-b');
  });
});

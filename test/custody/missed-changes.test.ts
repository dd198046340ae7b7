// The home changes a node missed, applied from the ones a later change carries (custody/home-moves.ts apply): each is
// checked in order against the home the one before gave, and a carried change that skips epochs promised and never
// completed (its `after` names the epoch its promises came from) bridges from that epoch as well as from the one below
// it. On a composed node view: three members, every set all three, promises signed by a test key per node.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HomeChanges, type HomeChange } from '../../src/custody/home-change.js';
import { HomeMoves } from '../../src/custody/home-moves.js';
import { promiseSigningText, type PromiseBody } from '../../src/custody/promise.js';
import type { IdentityRecord } from '../../src/identity/service.js';
import { Store } from '../../src/store/db.js';
import { waitFor } from '../mesh/helpers.js';

const ZID = `zid_${'cd'.repeat(16)}`;
const MEMBERS = ['node-a', 'node-b', 'node-c'];
/** A node's signature in this test: its name over the text (what `verify` below accepts, and nothing else). */
const sign = (node: string, text: string) => `${node}:${text}`;
const verify = (node: string, text: string, signature: string) => signature === sign(node, text);

/** The change making `home` the home from `epoch`, promised by `home` and one other member; `after` as the candidate sets it. */
function change(epoch: number, home: string, after?: number): HomeChange {
  const promisers = [home, MEMBERS.find((m) => m !== home)!];
  const promises = promisers.map((node) => {
    const promise: PromiseBody = { zid: ZID, epoch, candidate: home, head: null };
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
  await store.commit([{ type: 'put', sub: identities, key: ZID, value: { zid: ZID, home: 'node-a' } }]);
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

describe('changes a node missed', () => {
  it('are applied from a later change when the first it carries skips epochs never completed', async () => {
    expect(await moves.apply(change(2, 'node-b'))).toEqual({ apply: true });
    // Epochs 3 and 4 were promised and never completed: the change of 5 rests on epoch 2's set (node-b's).
    const latest: HomeChange = { ...change(6, 'node-a'), earlier: [change(2, 'node-b'), change(5, 'node-c', 2)] };
    expect(await moves.apply(latest)).toEqual({ apply: true });
    expect((await changes.latest(ZID))?.epoch).toBe(6);
    expect(await Promise.all([1, 2, 3, 5, 6].map((e) => changes.homeAt(ZID, e)))).toEqual(['node-a', 'node-b', null, 'node-c', null]);
    expect((await store.get<IdentityRecord>(store.sub('test_identities'), ZID))?.home).toBe('node-a');
  });

  it('are read from other nodes when a change shown follows more than it carries, then applied in order, and it', async () => {
    const asked: [number, number][] = [];
    // Kept elsewhere: 2, 3 (its candidate knew 2), 5 (promised from 3's set; 4 never completed), 6.
    const kept = [change(2, 'node-b'), change(3, 'node-c'), change(5, 'node-a', 3), change(6, 'node-b')];
    moves = movesAsking((after, epoch) => {
      asked.push([after, epoch]);
      return kept.filter((c) => c.epoch > after && c.epoch <= epoch);
    });
    // The change shown carries only 6: it follows an epoch not known here.
    const shown: HomeChange = { ...change(7, 'node-c'), earlier: [change(6, 'node-b')] };
    expect(await moves.apply(shown)).toMatchObject({ apply: false, why: 'gap' });
    await waitFor(async () => (await changes.latest(ZID))?.epoch === 7, 5_000, 'the missed changes applied');
    expect(asked).toEqual([[1, 7]]);
    expect(await Promise.all([2, 3, 5, 6].map((e) => changes.homeAt(ZID, e)))).toEqual(['node-b', 'node-c', 'node-a', 'node-b']);
    expect((await store.get<IdentityRecord>(store.sub('test_identities'), ZID))?.home).toBe('node-c');
  });

  it('are passed over by a later change made from an epoch below the one known here whose promises hold from it', async () => {
    // This node applied epoch 2 (an old home that made it, say); the mesh went on from epoch 1: epoch 4's candidate
    // never heard of 2, and its promises come from a majority of the set that certified epoch 2's entries too.
    expect(await moves.apply(change(2, 'node-b'))).toEqual({ apply: true });
    expect(await moves.apply(change(4, 'node-c', 1))).toEqual({ apply: true });
    expect((await changes.latest(ZID))?.epoch).toBe(4);
    expect(await Promise.all([1, 2, 3].map((e) => changes.homeAt(ZID, e)))).toEqual(['node-a', 'node-b', null]);
    expect((await store.get<IdentityRecord>(store.sub('test_identities'), ZID))?.home).toBe('node-c');
  });

  it('are not applied when the first one carried neither follows nor names the epoch known here', async () => {
    expect(await moves.apply(change(2, 'node-b'))).toEqual({ apply: true });
    const latest: HomeChange = { ...change(6, 'node-a'), earlier: [change(5, 'node-c', 4)] };
    expect(await moves.apply(latest)).toMatchObject({ apply: false, why: 'gap' });
    expect((await changes.latest(ZID))?.epoch).toBe(2);
    expect((await store.get<IdentityRecord>(store.sub('test_identities'), ZID))?.home).toBe('node-b');
  });
});

// The homes of an identity's earlier epochs, as a node keeps them with the home changes it applies (home-change.ts):
// a debit certified two failovers ago is checked under the set of its own epoch, so its home must still be known here,
// after a restart too.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/db.js';
import { HomeChanges, homeChangeSchema, type HomeChange } from '../../src/custody/home-change.js';

const ZID = `zid_${'ab'.repeat(16)}`;
const change = (epoch: number, home: string): HomeChange => ({
  zid: ZID,
  epoch,
  home,
  promises: [{ node: home, promise: { zid: ZID, epoch, candidate: home, head: null }, signature: 'x' }],
});

let dir = '';
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Apply `c`, which replaced `previous`, as HomeMoves does: read the latest first, then write and note it. */
async function apply(changes: HomeChanges, store: Store, c: HomeChange, previous: string): Promise<void> {
  await changes.latest(c.zid);
  await store.commit(changes.putOps(c, previous));
  changes.applied(c, previous);
}

describe('the homes of earlier epochs', () => {
  it('take the homes of the epochs between that the change’s promises name (a change made by a candidate behind them)', async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-home-epochs-'));
    const store = await Store.open(join(dir, 'db'), { sync: false });
    const changes = new HomeChanges(store);
    // Epoch 4's candidate knew epoch 1 (`after`); a promiser named epoch 3 and its home, node-c, so it asked node-c's set.
    const skipping: HomeChange = {
      ...change(4, 'node-d'),
      after: 1,
      promises: [
        { node: 'node-d', promise: { zid: ZID, epoch: 4, candidate: 'node-d', head: null }, signature: 'x' },
        { node: 'node-e', promise: { zid: ZID, epoch: 4, candidate: 'node-d', head: null, latest: { epoch: 3, home: 'node-c' } }, signature: 'x' },
      ],
    };
    await apply(changes, store, skipping, 'node-a');
    expect(await Promise.all([1, 2, 3, 4].map((e) => changes.configAt(ZID, e).then((c) => c?.home ?? null)))).toEqual(['node-a', null, 'node-c', null]);
    // node-c was promised epoch 3 and is named its home, but it opened no epoch: the charges of epoch 3 a chain holds
    // are not node-c's to count (another candidate of epoch 3 may have certified it). node-d opened epoch 4.
    expect(await changes.opened(ZID, 3, 'node-c')).toBe(false);
    expect(await changes.opened(ZID, 4, 'node-d')).toBe(true);
    expect(await changes.opened(ZID, 4, 'node-e')).toBe(false);
    await store.close();
  });

  it('are kept across three changes and a restart, and an epoch not passed yet has none', async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-home-epochs-'));
    let store = await Store.open(join(dir, 'db'), { sync: false });
    let changes = new HomeChanges(store);
    await apply(changes, store, change(2, 'node-b'), 'node-a');
    await apply(changes, store, change(3, 'node-c'), 'node-b');
    await apply(changes, store, change(4, 'node-a'), 'node-c');
    const homes = async () => Promise.all([1, 2, 3, 4, 5].map((e) => changes.configAt(ZID, e).then((c) => c?.home ?? null)));
    expect(await homes()).toEqual(['node-a', 'node-b', 'node-c', null, null]);
    expect(await changes.previousHome(ZID)).toBe('node-c');

    await store.close();
    store = await Store.open(join(dir, 'db'), { sync: false });
    changes = new HomeChanges(store);
    expect(await homes()).toEqual(['node-a', 'node-b', 'node-c', null, null]);
    expect((await changes.latest(ZID))?.home).toBe('node-a');
    await store.close();
  });

  it('travel with the latest change: the changes before it, oldest first, each without its own', async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-home-epochs-'));
    const store = await Store.open(join(dir, 'db'), { sync: false });
    const changes = new HomeChanges(store);
    await apply(changes, store, change(2, 'node-b'), 'node-a');
    expect((await changes.latest(ZID))?.earlier).toBeUndefined();
    await apply(changes, store, change(3, 'node-c'), 'node-b');
    // A change applied as it travelled (with its earlier ones) is kept bare.
    await apply(changes, store, { ...change(4, 'node-a'), earlier: [change(2, 'node-b'), change(3, 'node-c')] }, 'node-c');
    const latest = (await changes.latest(ZID))!;
    expect(latest.epoch).toBe(4);
    expect(latest.earlier).toEqual([change(2, 'node-b'), change(3, 'node-c')]);
    expect(homeChangeSchema.safeParse(latest).success).toBe(true);
    await store.close();
  });

  it('skip an epoch that was promised and never completed: the home it replaced is the one of the epoch before', async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-home-epochs-'));
    const store = await Store.open(join(dir, 'db'), { sync: false });
    const changes = new HomeChanges(store);
    await apply(changes, store, change(3, 'node-c'), 'node-a');
    expect(await Promise.all([1, 2, 3].map((e) => changes.configAt(ZID, e).then((c) => c?.home ?? null)))).toEqual(['node-a', null, null]);
    await store.close();
  });
});

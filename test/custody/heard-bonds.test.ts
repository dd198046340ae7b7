// The custody view's record (heard-bonds.ts): the bonds heard advertised survive a reopen of the store, a node no
// longer in the peer table keeps its last advert, and an entry goes once its bond is no longer active.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HeardBonds } from '../../src/custody/heard-bonds.js';
import { Store } from '../../src/store/db.js';

let dir: string;
let store: Store;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-heard-'));
  store = await Store.open(dir, { sync: false });
});

afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const active = new Map([
  ['node-b', 'bond_b'],
  ['node-c', 'bond_c'],
]);

describe('the bonds a node heard advertised', () => {
  it('are read again after a restart, kept while their node is unheard, and dropped when their bond ends', async () => {
    const heard = new HeardBonds(store);
    await heard.load();
    expect([...heard.update([], active)]).toEqual([]);
    heard.update(
      [
        { node: 'node-b', bondId: 'bond_b' },
        { node: 'node-c', bondId: 'bond_c' },
        { node: 'node-x', bondId: 'bond_unknown' },
      ],
      active,
    );
    await heard.flushed();
    await store.close();

    store = await Store.open(dir, { sync: false });
    const again = new HeardBonds(store);
    await again.load();
    // Started again with an empty peer table: the view is the one before the stop (an advert of no active bond is none).
    expect(Object.fromEntries(again.update([], active))).toEqual({ 'node-b': 'bond_b', 'node-c': 'bond_c' });
    // C advertises no bond any more; B's bond ends in the registry.
    expect(Object.fromEntries(again.update([{ node: 'node-c', bondId: null }], new Map([['node-c', 'bond_c']])))).toEqual({});
    await again.flushed();
    const third = new HeardBonds(store);
    await third.load();
    expect([...third.update([], active)]).toEqual([]);
  });
});

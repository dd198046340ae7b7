// The Merkle log in the store: only subtrees of 2^STORED_FROM_LEVEL rows and up are written; the smaller ones are
// hashed from the rows, so roots, leaves and proofs are those of the whole tree, also after the store is reopened
// with the frontier's small peaks read back from rows.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChainService, rowText } from '../../src/chain/service.js';
import { STORED_FROM_LEVEL } from '../../src/chain/merkle-log.js';
import { consistencyPath, inclusionPath, leafHash, MemoryTree, verifyConsistency, verifyInclusion } from '../../src/chain/merkle.js';
import { Store } from '../../src/store/db.js';

const slug = 'm-tree';
let dir: string;
let store: Store;
let chain: ChainService;

const append = async (n: number) => {
  for (let i = 0; i < n; i++) await chain.append(slug, 1, 'event', { i: Math.random() });
};
/** The reference tree over the stored rows' leaf hashes. */
const reference = async () => new MemoryTree((await chain.explore(slug, 1, 1000)).map((r) => leafHash(rowText(r))));

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-merkle-log-'));
  store = await Store.open(dir, { sync: false });
  chain = new ChainService(store);
});
afterAll(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe('the stored Merkle log', () => {
  it('writes only subtrees of 16 rows and up; its root, leaves and proofs are the whole tree’s', async () => {
    await append(100);
    const { size, root } = await chain.merkle.catchUp(slug);
    const tree = await reference();
    expect(size).toBe(100);
    expect(root.equals(await tree.root())).toBe(true);
    const levels: number[] = [];
    for await (const key of store.sub('chain_merkle', 'utf8').keys()) levels.push(Number((key as string).split('!')[1]));
    expect(STORED_FROM_LEVEL).toBe(4);
    // 100 rows: six subtrees of 16, three of 32, one of 64.
    expect(levels.sort((a, b) => a - b)).toEqual([4, 4, 4, 4, 4, 4, 5, 5, 5, 6]);
    for (const seq of [1, 2, 15, 16, 17, 64, 97, 100]) {
      expect((await chain.merkle.leaf(slug, seq)).equals(tree.levels[0]![seq - 1]!)).toBe(true);
      const path = await chain.merkle.inclusion(slug, seq - 1, 100);
      expect(path.map((p) => p.toString('hex'))).toEqual((await inclusionPath(tree.hasher(), seq - 1, 100)).map((p) => p.toString('hex')));
      expect(verifyInclusion(seq - 1, 100, tree.levels[0]![seq - 1]!, path, root)).toBe(true);
    }
    for (const from of [1, 7, 37, 64, 99]) {
      const path = await chain.merkle.consistency(slug, from, 100);
      expect(path.map((p) => p.toString('hex'))).toEqual((await consistencyPath(tree.hasher(), from, 100)).map((p) => p.toString('hex')));
      expect(verifyConsistency(from, 100, await tree.root(from), root, path)).toBe(true);
      expect((await chain.merkle.root(slug, from)).equals(await tree.root(from))).toBe(true);
    }
  });

  it('reopened, it reads its small peaks back from the rows and carries on', async () => {
    await store.close();
    store = await Store.open(dir, { sync: false });
    chain = new ChainService(store);
    await append(5);
    const { size, root } = await chain.merkle.catchUp(slug);
    expect(size).toBe(105);
    expect(root.equals(await (await reference()).root())).toBe(true);
  });

  it('a subtree whose rows are missing is an error, not a hash of fewer rows', async () => {
    await expect(chain.merkle.subtree(slug, 3, 20)).rejects.toThrow(/rows are not stored/);
  });
});

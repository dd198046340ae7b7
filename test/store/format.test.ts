// The store's format version (store/format.ts): written on a new store, taken as the first format on a store that has
// records but no version, migrated in one resumable pass (the version bumped in the batch of the migration's last
// write), refused when no migration reaches it or when it is newer; a node refuses to start on such a store and
// migrates on start through a format given in its composition (a fake migration of this test, never a flag).
import { describe, expect, it } from 'vitest';
import { Store, padNum, type Op } from '../../src/store/db.js';
import {
  FIRST_FORMAT,
  FORMAT_KEY,
  STORAGE_FORMAT,
  STORE_META,
  StorageFormatError,
  settleStorageFormat,
  storedFormat,
  type Migration,
  type StorageFormat,
} from '../../src/store/format.js';
import { join } from 'node:path';
import { runCli, tempDirs } from '../helpers/cli.js';
import { startTestNode } from '../helpers/node.js';

const tempDir = tempDirs('svc-format-');

/** A fake migration 1 → 2: every record of `records` gets `v2: true` (idempotent); stops before `stopAt` when set. */
function addV2(stop: { at: number | null }): Migration {
  return {
    from: 1,
    what: 'records carry v2',
    source: (store) => store.sub('records'),
    opsFor: (key, value, store) => {
      const v = value as { n: number };
      if (v.n === stop.at) throw new Error('stopped');
      return [{ type: 'put', sub: recordsOf(store), key, value: { ...v, v2: true } }];
    },
  };
}
let current: Store | null = null;
const recordsOf = (store: Store) => store.sub('records');

async function version(store: Store): Promise<unknown> {
  return store.get(store.sub(STORE_META), FORMAT_KEY);
}

describe('storage format', () => {
  it('writes the version on a new store, and on a store of records without one (the first format)', async () => {
    const fresh = await Store.open(await tempDir(), { sync: false });
    expect(await storedFormat(fresh)).toBe(null);
    expect(await settleStorageFormat(fresh, STORAGE_FORMAT)).toEqual({ found: null, version: STORAGE_FORMAT.version, migrated: [] });
    expect(await version(fresh)).toBe(STORAGE_FORMAT.version);
    await fresh.close();

    const old = await Store.open(await tempDir(), { sync: false });
    await old.commit([{ type: 'put', sub: recordsOf(old), key: 'a', value: { n: 0 } }]);
    expect(await storedFormat(old)).toBe(FIRST_FORMAT);
    expect(await settleStorageFormat(old, { version: 1, migrations: [] })).toEqual({ found: 1, version: 1, migrated: [] });
    expect(await version(old)).toBe(1);
    await old.close();
  });

  it('migrates an older store in one pass that resumes after a stop, bumping the version with its last write', async () => {
    const dir = await tempDir();
    current = await Store.open(dir, { sync: false });
    const s = current;
    await s.commit([
      { type: 'put', sub: s.sub(STORE_META), key: FORMAT_KEY, value: 1 },
      ...Array.from({ length: 25 }, (_, i): Op => ({ type: 'put', sub: recordsOf(s), key: padNum(i), value: { n: i } })),
    ]);
    // 25 records are one chunk (1000): stopped at record 15, nothing of the pass is written.
    const stop = { at: 15 as number | null };
    const format: StorageFormat = { version: 2, migrations: [addV2(stop)] };
    const logged: string[] = [];
    await expect(settleStorageFormat(s, format, (m) => logged.push(m))).rejects.toThrow('stopped');
    expect(logged).toEqual(['migrating the store from storage format 1 to 2: records carry v2']);
    expect(await version(s)).toBe(1);
    await s.close();

    current = await Store.open(dir, { sync: false });
    stop.at = null;
    expect(await settleStorageFormat(current, format)).toEqual({ found: 1, version: 2, migrated: [1] });
    expect(await version(current)).toBe(2);
    const records = await current.range<{ n: number; v2?: boolean }>(recordsOf(current));
    expect(records).toHaveLength(25);
    expect(records.every((r) => r.value.v2 === true)).toBe(true);
    // Done: a later start runs nothing.
    expect(await settleStorageFormat(current, format)).toEqual({ found: 2, version: 2, migrated: [] });
    await current.close();
  });

  it('resumes a migration stopped between two chunks after the last chunk written', async () => {
    const dir = await tempDir();
    current = await Store.open(dir, { sync: false });
    const s = current;
    await s.commit(Array.from({ length: 2500 }, (_, i): Op => ({ type: 'put', sub: recordsOf(s), key: padNum(i), value: { n: i } })));
    const stop = { at: 1500 as number | null };
    const format: StorageFormat = { version: 2, migrations: [addV2(stop)] };
    await expect(settleStorageFormat(s, format)).rejects.toThrow('stopped');
    // The first chunk (records 0 … 999) is written, the version is not bumped.
    const part = await s.range<{ n: number; v2?: boolean }>(recordsOf(s));
    expect(part.filter((r) => r.value.v2).map((r) => r.value.n)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    expect(await version(s)).toBe(undefined);
    stop.at = null;
    expect(await settleStorageFormat(s, format)).toEqual({ found: 1, version: 2, migrated: [1] });
    expect((await s.range<{ v2?: boolean }>(recordsOf(s))).every((r) => r.value.v2)).toBe(true);
    expect(await version(s)).toBe(2);
    await s.close();
  });

  it('refuses a store no migration reaches and a store newer than the code, naming the versions', async () => {
    const s = await Store.open(await tempDir(), { sync: false });
    await s.commit([{ type: 'put', sub: s.sub(STORE_META), key: FORMAT_KEY, value: 1 }]);
    const gap = settleStorageFormat(s, { version: 3, migrations: [{ ...addV2({ at: null }), from: 2 }] });
    await expect(gap).rejects.toBeInstanceOf(StorageFormatError);
    await expect(gap).rejects.toThrow(/storage format 1 and this svc-node \(format 3\) has no migration from it: start a release that migrates format 1 first/);
    await s.commit([{ type: 'put', sub: s.sub(STORE_META), key: FORMAT_KEY, value: 5 }]);
    await expect(settleStorageFormat(s, STORAGE_FORMAT)).rejects.toThrow(
      `the data dir's store is in storage format 5, newer than this svc-node reads (${STORAGE_FORMAT.version})`,
    );
    // Nothing was changed by a refusal.
    expect(await version(s)).toBe(5);
    await s.close();
  });

  it('a node migrates on start through the format of its composition, and `svc-node start` refuses a newer store (exit 2)', async () => {
    // A store of format 1 with a record the fake migration rewrites, as an older release left it.
    const dir = await tempDir();
    current = await Store.open(join(dir, 'db'), { sync: false });
    await current.commit([
      { type: 'put', sub: current.sub(STORE_META), key: FORMAT_KEY, value: 1 },
      { type: 'put', sub: recordsOf(current), key: 'r', value: { n: 7 } },
    ]);
    await current.close();
    const t2 = await startTestNode({}, { storageFormat: { version: 2, migrations: [addV2({ at: null })] } }, dir);
    await t2.stop();
    const after = await Store.open(join(dir, 'db'), { sync: false });
    expect(await after.get(recordsOf(after), 'r')).toEqual({ n: 7, v2: true });
    expect(await version(after)).toBe(2);
    await after.close();
    // This code reads format 1: the CLI refuses the store of format 2 with the message, exit 2, and changes nothing.
    const r = runCli(['start', '--data-dir', dir, '--port', '0', '--p2p-port', '0', '--log-level', 'silent']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`storage format 2, newer than this svc-node reads (${STORAGE_FORMAT.version})`);
    const again = await Store.open(join(dir, 'db'), { sync: false });
    expect(await version(again)).toBe(2);
    await again.close();
  }, 120_000);
});

// One-time passes at start (store/backfill.ts): a pass stopped mid-way resumes after its last committed chunk, redoes
// nothing before it, and once done never runs again.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Store, padNum, type Op } from '../../src/store/db.js';
import { backfillDone, backfillOnce } from '../../src/store/backfill.js';

let dir = '';
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('backfillOnce', () => {
  it('resumes after a stop mid-pass, indexes every record once, and is skipped once done', async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-backfill-'));
    let store = await Store.open(dir, { sync: false });
    const source = () => store.sub('records');
    const index = () => store.sub('records_by_value');
    await store.commit(Array.from({ length: 25 }, (_, i): Op => ({ type: 'put', sub: source(), key: padNum(i), value: { v: i } })));
    const seen: number[] = [];
    const pass = (stopAt: number | null) =>
      backfillOnce<{ v: number }>(store, {
        key: 'test-index-v1',
        source: source(),
        chunk: 10,
        opsFor: (key, value) => {
          if (value.v === stopAt) throw new Error('stopped');
          seen.push(value.v);
          return value.v % 2 === 0 ? [{ type: 'put', sub: index(), key: padNum(value.v), value: key }] : [];
        },
      });
    await expect(pass(15)).rejects.toThrow('stopped');
    expect(await backfillDone(store, 'test-index-v1')).toBe(false);
    // The process stops: what the first chunk committed is on disk, with the cursor; nothing after it.
    await store.close();
    store = await Store.open(dir, { sync: false });
    expect((await store.range(index())).length).toBe(5);
    seen.length = 0;
    expect(await pass(null)).toBe(8); // 10, 12 … 24
    expect(seen).toEqual(Array.from({ length: 15 }, (_, i) => i + 10));
    expect((await store.range(index())).map((e) => e.key)).toEqual(Array.from({ length: 13 }, (_, i) => padNum(i * 2)));
    expect(await backfillDone(store, 'test-index-v1')).toBe(true);
    seen.length = 0;
    expect(await pass(null)).toBe(0);
    expect(seen).toEqual([]);
    await store.close();
  });
});

// Store.commit writes the same bytes as abstract-level's sublevel put (so data dirs of either layout read the
// same), keeps each caller's ops atomic under group commit, round-trips json and utf8 sublevels, and counts a
// sublevel's keys up to a bound; a range with an undefined bound reads as one without it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { JsonText, Store } from '../../src/store/db.js';

const dirs: string[] = [];
async function open(): Promise<Store> {
  const d = await mkdtemp(join(tmpdir(), 'svc-store-'));
  dirs.push(d);
  return Store.open(d, { sync: false });
}
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function raw(store: Store): Promise<[string, string][]> {
  const out: [string, string][] = [];
  for await (const [k, v] of store.db.iterator({ keyEncoding: 'utf8', valueEncoding: 'utf8' })) out.push([k as string, v as string]);
  return out;
}

const records: { sub: string; enc: 'json' | 'utf8'; key: string; value: unknown }[] = [
  { sub: 'wallets', enc: 'json', key: 'zid_1', value: { free: 3, paid: 0 } },
  { sub: 'counters', enc: 'json', key: '#totals', value: { sealed_total: 2, envelope_seq: 1 } },
  { sub: 'counters', enc: 'json', key: 'used:2026-01-01:zid_1', value: 7 },
  { sub: 'env_owner', enc: 'json', key: 'zid_1!0000000000000001', value: 'env_é·∘→😀' },
  { sub: 'results', enc: 'utf8', key: 'res_1', value: '{"a":"π · ∘","b":[1,2.5e-7,null]}' },
  { sub: 'chain_rows', enc: 'json', key: 'm-1!0000000000000001', value: { seq: 1, hash: 'ab', nested: [{ x: null }, 'q"\\'] } },
];

describe('Store', () => {
  it('commit writes the bytes a sublevel put writes', async () => {
    const a = await open();
    const b = await open();
    await a.commit(records.map((r) => ({ type: 'put', sub: a.sub(r.sub, r.enc), key: r.key, value: r.value })));
    for (const r of records) await b.sub(r.sub, r.enc).put(r.key, r.value);
    expect(await raw(a)).toEqual(await raw(b));
    for (const r of records) expect(await a.get(a.sub(r.sub, r.enc), r.key)).toEqual(r.value);
    await a.commit([{ type: 'del', sub: a.sub('wallets'), key: 'zid_1' }]);
    expect(await a.get(a.sub('wallets'), 'zid_1')).toBeUndefined();
    await a.close();
    await b.close();
  });

  it('range reads [gte, lt), an undefined bound as none (Level would read it as the text "undefined")', async () => {
    const s = await open();
    const sub = s.sub('ranged');
    await s.commit(['0a', '7f', 'ab', 'zz'].map((key, i) => ({ type: 'put', sub, key, value: i })));
    const keys = async (opts: Parameters<Store['range']>[1]) => (await s.range(sub, opts)).map((e) => e.key);
    expect(await keys({ gte: undefined, lt: undefined })).toEqual(['0a', '7f', 'ab', 'zz']);
    expect(await keys({ gte: '7f', lt: 'zz' })).toEqual(['7f', 'ab']);
    expect(await keys({ gte: undefined, limit: 2 })).toEqual(['0a', '7f']);
    expect(await keys({ lt: undefined, reverse: true, limit: 3 })).toEqual(['zz', 'ab', '7f']);
    await s.close();
  });

  it('groups concurrent commits into batches; every caller resolves after its batch', async () => {
    const s = await open();
    const sub = s.sub('counters', 'json', { rewritten: true });
    const commits = Array.from({ length: 40 }, (_, i) =>
      s.commit([
        { type: 'put', sub, key: `k${String(i).padStart(2, '0')}`, value: i },
        { type: 'put', sub, key: 'last', value: i },
      ]),
    );
    await Promise.all(commits);
    expect(s.stats.batches).toBeLessThan(40);
    // 'last' is rewritten by every commit, in a sublevel declared rewritten: once per batch on disk.
    expect(s.stats.ops).toBe(40 + s.stats.batches);
    expect(await s.get(sub, 'last')).toBe(39);
    expect((await s.range(sub)).length).toBe(41);
    await s.close();
  });

  it('a key repeated in a sublevel not declared rewritten is written every time and ends with its last value', async () => {
    const s = await open();
    const sub = s.sub('plain');
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        s.commit([
          { type: 'put', sub, key: 'same', value: i },
          { type: 'put', sub, key: `own${i}`, value: i },
        ]),
      ),
    );
    expect(s.stats.batches).toBeLessThan(20);
    expect(s.stats.ops).toBe(40);
    expect(await s.get(sub, 'same')).toBe(19);
    await s.close();
  });

  it('refuses a non-string value in a utf8 sublevel without writing the batch', async () => {
    const s = await open();
    await expect(
      s.commit([
        { type: 'put', sub: s.sub('counters'), key: 'x', value: 1 },
        { type: 'put', sub: s.sub('results', 'utf8'), key: 'r', value: { not: 'text' } },
      ]),
    ).rejects.toThrow(TypeError);
    expect(await s.get(s.sub('counters'), 'x')).toBeUndefined();
    await s.close();
  });

  it('a commit refused for a bad value leaves none of its ops, rewritten records included', async () => {
    const s = await open();
    const counters = s.sub('counters', 'json', { rewritten: true });
    await s.commit([{ type: 'put', sub: counters, key: 'total', value: 1 }]);
    const good = s.commit([{ type: 'put', sub: counters, key: 'total', value: 2 }]);
    const bad = s.commit([
      { type: 'put', sub: counters, key: 'total', value: 99 },
      { type: 'put', sub: s.sub('results', 'bytes'), key: 'r', value: 'not bytes' },
    ]);
    await expect(bad).rejects.toThrow(TypeError);
    await good;
    expect(await s.get(counters, 'total')).toBe(2);
    // A bad value for a rewritten record itself is refused at commit too.
    await expect(s.commit([{ type: 'put', sub: s.sub('tmpl', 'utf8', { rewritten: true }), key: 'x', value: 5 }])).rejects.toThrow(TypeError);
    expect(await s.get(s.sub('tmpl', 'utf8'), 'x')).toBeUndefined();
    await s.close();
  });

  it('a JSON sublevel takes a value given as its JSON text, and reads it back parsed', async () => {
    const s = await open();
    const sub = s.sub('chain_rows');
    await s.commit([{ type: 'put', sub, key: 'a', value: new JsonText('{"seq":1,"hash":"ab","n":[1,null]}') }]);
    expect(await s.get(sub, 'a')).toEqual({ seq: 1, hash: 'ab', n: [1, null] });
    await s.close();
  });

  it.each([true, false])(
    'within one batch the last op on a key wins (put after del, del after put), as LevelDB applies them (rewritten %s)',
    async (rewritten) => {
      const s = await open();
      const sub = s.sub('counters', 'json', { rewritten });
      await s.commit([{ type: 'put', sub, key: 'gone', value: 1 }]);
      const writes = [
        s.commit([
          { type: 'put', sub, key: 'a', value: 1 },
          { type: 'del', sub, key: 'gone' },
        ]),
        s.commit([
          { type: 'del', sub, key: 'a' },
          { type: 'put', sub, key: 'gone', value: 2 },
        ]),
        s.commit([
          { type: 'put', sub, key: 'a', value: 3 },
          { type: 'put', sub, key: 'b', value: 4 },
        ]),
        s.commit([{ type: 'del', sub, key: 'b' }]),
      ];
      await Promise.all(writes);
      expect(await s.get(sub, 'a')).toBe(3);
      expect(await s.get(sub, 'gone')).toBe(2);
      expect(await s.get(sub, 'b')).toBeUndefined();
      await s.close();
    },
  );

  it('bytes sublevels store the given bytes and read back a Buffer; other values are refused', async () => {
    const s = await open();
    const sub = s.sub('results', 'bytes');
    const bytes = Buffer.from('{"a":"π · ∘ 😀"}', 'utf8');
    await s.commit([{ type: 'put', sub, key: 'r', value: bytes }]);
    const back = await s.get<Buffer>(sub, 'r');
    expect(Buffer.isBuffer(back)).toBe(true);
    expect(back!.equals(bytes)).toBe(true);
    // The same bytes a utf8 sublevel holds for the same text (data dirs of either layout read the same).
    const t = await open();
    await t.commit([{ type: 'put', sub: t.sub('results', 'utf8'), key: 'r', value: bytes.toString('utf8') }]);
    expect(await raw(s)).toEqual(await raw(t));
    await expect(s.commit([{ type: 'put', sub, key: 'x', value: 'text' }])).rejects.toThrow(TypeError);
    await s.close();
    await t.close();
  });

  it('count: a sublevel’s keys only, up to the bound', async () => {
    const s = await open();
    const sub = s.sub('webhook_due', 'utf8');
    expect(await s.count(sub, 100)).toBe(0);
    await s.commit([
      ...Array.from({ length: 7 }, (_, i) => ({ type: 'put' as const, sub, key: `k${i}`, value: 'x' })),
      { type: 'put', sub: s.sub('other', 'utf8'), key: 'k', value: 'y' },
    ]);
    expect(await s.count(sub, 100)).toBe(7);
    expect(await s.count(sub, 5)).toBe(5);
    await s.close();
  });
});

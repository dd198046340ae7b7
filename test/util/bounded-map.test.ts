import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BoundedMap, BoundedSet, LruMap, PendingWrites } from '../../src/util/bounded-map.js';

describe('BoundedMap', () => {
  it('drops the oldest inserted entry when a new key would pass the limit', () => {
    const m = new BoundedMap<string, number>(3);
    for (const [i, k] of ['a', 'b', 'c', 'd', 'e'].entries()) m.set(k, i);
    expect([...m.entries()]).toEqual([
      ['c', 2],
      ['d', 3],
      ['e', 4],
    ]);
    expect(m.size).toBe(3);
  });

  it('setting a key already present changes its value in place: nothing is evicted, its place is kept', () => {
    const m = new BoundedMap<string, number>(2);
    m.set('a', 1).set('b', 2).set('a', 10);
    expect([...m.entries()]).toEqual([
      ['a', 10],
      ['b', 2],
    ]);
    m.set('c', 3);
    expect([...m.keys()]).toEqual(['b', 'c']);
  });

  it('a deleted entry frees its room', () => {
    const m = new BoundedMap<number, string>(2);
    m.set(1, 'x').set(2, 'y');
    m.delete(1);
    m.set(3, 'z');
    expect([...m.keys()]).toEqual([2, 3]);
  });

  it('refuses a limit below 1', () => {
    expect(() => new BoundedMap(0)).toThrow(RangeError);
    expect(() => new BoundedSet(1.5)).toThrow(RangeError);
  });
});

describe('BoundedSet', () => {
  it('keeps the newest `max` values, a repeated value neither moves nor evicts', () => {
    const s = new BoundedSet<number>(3);
    for (const v of [1, 2, 3, 1, 4, 5]) s.add(v);
    expect([...s]).toEqual([3, 4, 5]);
  });
});

describe('LruMap', () => {
  it('evicts the least recently used: get and set make an entry the newest', () => {
    const m = new LruMap<string, number>(3);
    m.set('a', 1).set('b', 2).set('c', 3);
    expect(m.get('a')).toBe(1);
    m.set('b', 20);
    m.set('d', 4);
    expect([...m.keys()]).toEqual(['a', 'b', 'd']);
    m.set('e', 5);
    expect([...m.entries()]).toEqual([
      ['b', 20],
      ['d', 4],
      ['e', 5],
    ]);
  });

  it('keeps the entries `keep` names past the bound, and trims them once they may go', () => {
    const held = new Set(['a', 'b']);
    const m = new LruMap<string, number>(2, (k) => held.has(k));
    for (const k of ['a', 'b', 'c', 'd']) m.set(k, 0);
    // a and b are held: each new key replaces the previous unheld one, and the map is over its bound only by them.
    expect([...m.keys()]).toEqual(['a', 'b', 'd']);
    held.clear();
    m.set('e', 0);
    expect([...m.keys()]).toEqual(['d', 'e']);
  });

  /** A read whose answer the test gives, and how many were made. */
  function gatedReads(): { read: () => Promise<number>; answer: (v: number) => void; made: () => number } {
    const pending: ((v: number) => void)[] = [];
    return {
      read: () => new Promise<number>((resolve) => pending.push(resolve)),
      answer: (v) => pending.shift()!(v),
      made: () => pending.length,
    };
  }

  it('load: misses of one key share one read; the value is kept and `landed` runs once', async () => {
    const m = new LruMap<string, number>(2);
    const reads = gatedReads();
    const landed: number[] = [];
    const first = m.load('a', reads.read, (v) => landed.push(v));
    const second = m.load('a', reads.read, (v) => landed.push(v));
    expect(reads.made()).toBe(1);
    reads.answer(7);
    expect(await first).toBe(7);
    expect(await second).toBe(7);
    expect(landed).toEqual([7]);
    expect(m.get('a')).toBe(7);
    // A hit reads nothing; after eviction, a miss reads again.
    expect(await m.load('a', reads.read)).toBe(7);
    expect(reads.made()).toBe(0);
    m.set('b', 1).set('c', 2);
    const again = m.load('a', reads.read);
    expect(reads.made()).toBe(1);
    reads.answer(8);
    expect(await again).toBe(8);
  });

  it('load: a read overtaken by forget() is made again, and only the second answer is kept', async () => {
    const m = new LruMap<string, number>(2);
    const reads = gatedReads();
    const loading = m.load('a', reads.read);
    m.forget('a');
    reads.answer(1); // read before the write that forget() announces
    await Promise.resolve();
    await Promise.resolve();
    expect(reads.made()).toBe(1);
    reads.answer(2);
    expect(await loading).toBe(2);
    expect(m.get('a')).toBe(2);
  });

  it('forgottenSince: a key forgotten after a mark is, others and earlier forgets are not', () => {
    const m = new LruMap<string, number>(4);
    m.set('a', 1).set('b', 2);
    m.forget('b');
    const mark = m.mark();
    expect(m.forgottenSince('b', mark)).toBe(false);
    m.forget('a');
    expect(m.has('a')).toBe(false);
    expect(m.forgottenSince('a', mark)).toBe(true);
    expect(m.forgottenSince('b', mark)).toBe(false);
    expect(m.forgottenSince('c', mark)).toBe(false);
  });

  it('load: a failed read is not kept, and the next miss reads again', async () => {
    const m = new LruMap<string, number>(2);
    await expect(m.load('a', () => Promise.reject(new Error('disk')))).rejects.toThrow('disk');
    expect(m.has('a')).toBe(false);
    expect(await m.load('a', () => Promise.resolve(3))).toBe(3);
  });
});

describe('LruMap with a weight bound', () => {
  const weighed = (max: number, keep: (k: string) => boolean = () => false) => new LruMap<string, string>(100, keep, { max, of: (v) => v.length });

  it('evicts least recently used entries until the summed weight is within the bound, and tracks deletes and clears', () => {
    const m = weighed(10);
    m.set('a', 'xxxx');
    m.set('b', 'xxxx');
    expect(m.weight).toBe(8);
    m.get('a');
    m.set('c', 'xxxx');
    expect([...m.keys()]).toEqual(['a', 'c']);
    expect(m.weight).toBe(8);
    m.set('a', 'x');
    expect(m.weight).toBe(5);
    m.delete('c');
    expect(m.weight).toBe(1);
    expect(m.forget('a')).toBe(true);
    expect(m.weight).toBe(0);
    m.set('d', 'xxxxxx');
    m.clear();
    expect([m.size, m.weight]).toEqual([0, 0]);
  });

  it('never evicts the entry just set nor a kept one, even when they alone pass the bound', () => {
    const kept = new Set(['k']);
    const m = weighed(10, (k) => kept.has(k));
    m.set('k', 'xxxxxxxx');
    m.set('big', 'xxxxxxxxxxxx');
    expect([...m.keys()]).toEqual(['k', 'big']);
    expect(m.weight).toBe(20);
    kept.clear();
    m.set('small', 'x');
    expect([...m.keys()]).toEqual(['small']);
    expect(m.weight).toBe(1);
  });
});

describe('PendingWrites', () => {
  it('a changed key is pending until the commits accepted by then have settled', () => {
    const progress = { commits: 5, settled: 5 };
    const p = new PendingWrites<string>(progress);
    expect(p.pending('x')).toBe(false);
    p.changed('x');
    expect(p.pending('x')).toBe(true);
    progress.commits = 7; // its commit and another of the same turn
    progress.settled = 5;
    expect(p.pending('x')).toBe(true);
    progress.settled = 7; // one batch: both settle together
    expect(p.pending('x')).toBe(false);
    expect(p.size).toBe(0);
  });
});

describe('one helper for "drop the oldest when full"', () => {
  it('no file of src evicts the oldest entry by hand, but those that must choose or evict from two maps', () => {
    const src = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src');
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
      );
    // mesh/peer-table.ts picks its victim (a peer not connected first); consensus/challenges.ts drops a settled entry from two maps.
    const chooses = new Set([join('mesh', 'peer-table.ts'), join('consensus', 'challenges.ts'), join('util', 'bounded-map.ts')]);
    const found: string[] = [];
    for (const file of files(src)) {
      const rel = relative(src, file);
      if (chooses.has(rel)) continue;
      if (/\.(keys|values)\(\)\.next\(\)\.value/.test(readFileSync(file, 'utf8'))) found.push(rel);
    }
    expect(found).toEqual([]);
  });
});

// A key space read a page at a time, round and round (range-cursor.ts), over a sorted list standing for a sublevel.
import { describe, expect, it } from 'vitest';
import { keyAfter, RangeCursor, type ReadKeys } from '../../src/util/range-cursor.js';

const readFrom =
  (keys: string[]): ReadKeys =>
  async (limit, from) =>
    keys.filter((k) => from === undefined || k >= from).slice(0, limit);

describe('RangeCursor', () => {
  it('reads each page after the last, then from the first key again after a short page', async () => {
    const cursor = new RangeCursor();
    const read = readFrom(['a', 'b', 'c', 'd', 'e']);
    const pages = [];
    for (let i = 0; i < 5; i++) pages.push(await cursor.next(read, 2));
    expect(pages).toEqual([['a', 'b'], ['c', 'd'], ['e'], ['a', 'b'], ['c', 'd']]);
  });

  it('wraps after an empty page when the keys fill the pages exactly', async () => {
    const cursor = new RangeCursor();
    const read = readFrom(['a', 'b', 'c', 'd']);
    const pages = [];
    for (let i = 0; i < 4; i++) pages.push(await cursor.next(read, 2));
    expect(pages).toEqual([['a', 'b'], ['c', 'd'], [], ['a', 'b']]);
  });

  it('reads a key added ahead of its place in this round', async () => {
    const cursor = new RangeCursor();
    const keys = ['a', 'b', 'c', 'd'];
    const read = readFrom(keys);
    expect(await cursor.next(read, 2)).toEqual(['a', 'b']);
    keys.push('bb');
    keys.sort();
    expect(await cursor.next(read, 2)).toEqual(['bb', 'c']);
    expect(await cursor.next(read, 2)).toEqual(['d']);
    expect(await cursor.next(read, 2)).toEqual(['a', 'b']);
  });

  it('keyAfter is the least key after a key: the key itself is not read again, its extensions are', () => {
    expect(keyAfter('zid_1') > 'zid_1').toBe(true);
    expect(keyAfter('zid_1') <= 'zid_1a').toBe(true);
  });
});

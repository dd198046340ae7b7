import { describe, expect, it } from 'vitest';
import { KeyedLock } from '../../src/util/keyed-lock.js';

const later = <T>(ms: number, v: T): Promise<T> => new Promise((r) => setTimeout(() => r(v), ms));

describe('KeyedLock', () => {
  it('runs the work of one key one at a time in arrival order, while another key does not wait', async () => {
    const lock = new KeyedLock();
    const log: string[] = [];
    const slow = lock.run('a', async () => (log.push('a1 start'), await later(30, null), log.push('a1 end')));
    const second = lock.run('a', async () => log.push('a2'));
    const other = lock.run('b', async () => log.push('b1'));
    await Promise.all([slow, second, other]);
    expect(log).toEqual(['a1 start', 'b1', 'a1 end', 'a2']);
  });

  it('a failed piece of work rejects its caller and releases the key', async () => {
    const lock = new KeyedLock();
    const failed = lock.run('k', async () => {
      throw new Error('boom');
    });
    const next = lock.run('k', async () => 42);
    await expect(failed).rejects.toThrow('boom');
    expect(await next).toBe(42);
  });

  it('runs work under several keys at once; two callers whose keys overlap in either order both finish, one after the other', async () => {
    const lock = new KeyedLock();
    const log: string[] = [];
    const first = lock.runAll(['b', 'a', 'a'], async () => (log.push('ab start'), await later(20, null), log.push('ab end')));
    const second = lock.runAll(['a', 'b'], async () => log.push('ba'));
    const third = lock.runAll(['c'], async () => log.push('c'));
    await Promise.race([Promise.all([first, second, third]), later(1000, null).then(() => Promise.reject(new Error('deadlocked')))]);
    expect(log.filter((l) => l !== 'c')).toEqual(['ab start', 'ab end', 'ba']);
    expect(log.indexOf('c')).toBeLessThan(log.indexOf('ab end'));
    expect(await lock.runAll([], async () => 7)).toBe(7);
  });
});

// Counters: grouped records (node totals, per-identity envelope counts) survive a restart, the earlier layout
// (one key per counter) is folded into group records at load, and day counters are pruned by prefix.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Counters, groupOf } from '../../src/store/counters.js';
import { Store } from '../../src/store/db.js';

const dirs: string[] = [];
async function open(dir?: string): Promise<{ store: Store; counters: Counters; dir: string }> {
  const d = dir ?? (await mkdtemp(join(tmpdir(), 'svc-counters-')));
  if (!dir) dirs.push(d);
  const store = await Store.open(d, { sync: false });
  const counters = new Counters(store);
  await counters.load();
  return { store, counters, dir: d };
}
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function rawCounters(store: Store): Promise<Record<string, unknown>> {
  return Object.fromEntries((await store.range(store.sub('counters'))).map((e) => [e.key, e.value]));
}

describe('Counters', () => {
  it('groups totals and per-identity counts; single keys for the rest', () => {
    expect(groupOf('sealed_total')).toBe('#totals');
    expect(groupOf('envelope_seq')).toBe('#totals');
    expect(groupOf('env:zid_ab')).toBe('#id:zid_ab');
    expect(groupOf('envf:zid_ab:inbox')).toBe('#id:zid_ab');
    expect(groupOf('used:2026-01-01:zid_ab')).toBeNull();
    expect(groupOf('anon:2026-01-01:::1')).toBeNull();
  });

  it('persists one op per record and survives a restart', async () => {
    const a = await open();
    const names = ['sealed_total', 'burned_total', 'envelope_seq', 'env:zid_a', 'envf:zid_a:inbox', 'used:2026-01-01:zid_a'];
    // An identity's counters are read on demand: using them unread is an error, never a silent 0.
    expect(() => a.counters.get('env:zid_a')).toThrow(/not loaded/);
    await a.counters.loadIdentity('zid_a');
    for (let i = 0; i < 3; i++) {
      for (const n of names) a.counters.bump(n, n === 'burned_total' ? 4 : 1);
      const ops = a.counters.persistOps(names);
      expect(ops).toHaveLength(3);
      await a.store.commit(ops);
    }
    a.counters.bump('envf:zid_a:archive', 2);
    await a.store.commit(a.counters.persistOps(['envf:zid_a:archive']));
    expect(await rawCounters(a.store)).toEqual({
      '#totals': { sealed_total: 3, burned_total: 12, envelope_seq: 3 },
      '#id:zid_a': { 'env:zid_a': 3, 'envf:zid_a:inbox': 3, 'envf:zid_a:archive': 2 },
      'used:2026-01-01:zid_a': 3,
    });
    await a.store.close();
    const b = await open(a.dir);
    await b.counters.loadIdentity('zid_a');
    expect(b.counters.get('sealed_total')).toBe(3);
    expect(b.counters.get('burned_total')).toBe(12);
    expect(b.counters.get('env:zid_a')).toBe(3);
    expect(b.counters.withPrefix('envf:zid_a:')).toEqual([
      ['envf:zid_a:archive', 2],
      ['envf:zid_a:inbox', 3],
    ]);
    expect(b.counters.get('used:2026-01-01:zid_a')).toBe(3);
    await b.store.close();
  });

  it('folds the earlier one-key-per-counter layout into group records once', async () => {
    const a = await open();
    const sub = a.store.sub('counters');
    await a.store.commit([
      { type: 'put', sub, key: 'sealed_total', value: 7 },
      { type: 'put', sub, key: 'foundation_total', value: 2 },
      { type: 'put', sub, key: 'env:zid_b', value: 5 },
      { type: 'put', sub, key: 'envf:zid_b:inbox', value: 5 },
      { type: 'put', sub, key: 'anon:2026-01-01:1.2.3.4', value: 4 },
    ]);
    await a.store.close();
    const b = await open(a.dir);
    expect(b.counters.get('sealed_total')).toBe(7);
    expect(b.counters.get('foundation_total')).toBe(2);
    expect(b.counters.get('env:zid_b')).toBe(5);
    expect(b.counters.get('anon:2026-01-01:1.2.3.4')).toBe(4);
    expect(await rawCounters(b.store)).toEqual({
      '#totals': { sealed_total: 7, foundation_total: 2 },
      '#id:zid_b': { 'env:zid_b': 5, 'envf:zid_b:inbox': 5 },
      'anon:2026-01-01:1.2.3.4': 4,
    });
    b.counters.bump('sealed_total', 1);
    await b.store.commit(b.counters.persistOps(['sealed_total']));
    await b.store.close();
    const c = await open(a.dir);
    expect(c.counters.get('sealed_total')).toBe(8);
    expect(c.counters.get('foundation_total')).toBe(2);
    await c.store.close();
  });

  it('reverts in memory and prunes day counters by prefix', async () => {
    const a = await open();
    a.counters.bump('used:2026-01-01:zid_c', 1);
    a.counters.bump('used:2026-01-02:zid_c', 1);
    a.counters.bump('sealed_total', 1);
    a.counters.revert('sealed_total', 1);
    expect(a.counters.get('sealed_total')).toBe(0);
    await a.store.commit(a.counters.persistOps(['used:2026-01-01:zid_c', 'used:2026-01-02:zid_c']));
    await a.store.commit(a.counters.pruneBefore('used:', 'used:2026-01-02'));
    expect(a.counters.get('used:2026-01-01:zid_c')).toBe(0);
    expect(await rawCounters(a.store)).toEqual({ 'used:2026-01-02:zid_c': 1 });
    await a.store.close();
  });

  it('counts a reservation in get but writes only settled counts: a batch (or a crash) never stores work in flight', async () => {
    const a = await open();
    const day = 'used:2026-01-01:zid_r';
    expect(a.counters.reserve(day)).toBe(1);
    expect(a.counters.reserve(day)).toBe(2); // two requests in flight
    a.counters.settle(day); // the first one's seal
    expect(a.counters.get(day)).toBe(2);
    await a.store.commit([a.counters.persistOp(day)]);
    expect(await rawCounters(a.store)).toEqual({ [day]: 1 });
    a.counters.unsettle(day); // a seal batch that failed holds its slot again
    expect(a.counters.get(day)).toBe(2);
    a.counters.unreserve(day);
    a.counters.unreserve(day); // both requests ended without a seal
    expect(a.counters.get(day)).toBe(0);
    expect(a.counters.persistOp(day)).toMatchObject({ key: day, value: 0 });
    await a.store.close();
    const b = await open(a.dir);
    expect(b.counters.get(day)).toBe(1); // the stored count: what was settled and written, nothing in flight
    await b.store.close();
  });
});

// The store's gate (store/db.ts CommitGate): a held commit and every commit made after it join the queue in the order
// they were made (a rewritten record ends with its last value); a refused commit writes nothing, settles in its turn
// (the write progress stays in order for the caches), and fails only its own caller; commitAside passes held commits.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Counters } from '../../src/store/counters.js';
import { Store, type Op } from '../../src/store/db.js';

const dirs: string[] = [];
async function open(): Promise<Store> {
  const d = await mkdtemp(join(tmpdir(), 'svc-gate-'));
  dirs.push(d);
  return Store.open(d, { sync: false });
}
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

/** A gate that holds commits naming a `held` key until the test lets them go (or refuses them). */
function manualGate(store: Store) {
  const waiting: { ops: readonly Op[]; release: (extra: Op[]) => void; refuse: (err: Error) => void }[] = [];
  store.gate = {
    hold: (ops) =>
      ops.some((o) => o.key.startsWith('held'))
        ? new Promise<Op[]>((release, refuse) => {
            waiting.push({ ops, release, refuse });
          })
        : null,
  };
  return waiting;
}

describe('the commit gate', () => {
  it('writes a held commit with its extra ops, and the commits made after it only after it, in order', async () => {
    const store = await open();
    const waiting = manualGate(store);
    const wallets = store.sub('wallets', 'json', { rewritten: true });
    const plain = store.sub('plain');
    const order: string[] = [];
    const first = store
      .commit([
        { type: 'put', sub: plain, key: 'held-1', value: 1 },
        { type: 'put', sub: wallets, key: 'w', value: { v: 1 } },
      ])
      .then(() => order.push('held-1'));
    const second = store.commit([{ type: 'put', sub: wallets, key: 'w', value: { v: 2 } }]).then(() => order.push('after'));
    await new Promise((r) => setTimeout(r, 30));
    expect(order).toEqual([]);
    expect(await store.get(plain, 'held-1')).toBeUndefined();
    expect(store.progress).toEqual({ commits: 2, settled: 0 });
    waiting[0]!.release([{ type: 'put', sub: plain, key: 'certificate', value: 'c' }]);
    await Promise.all([first, second]);
    expect(order).toEqual(['held-1', 'after']);
    expect(await store.get(plain, 'certificate')).toBe('c');
    // The later commit's value of the rewritten record is the one on disk.
    expect(await store.get(wallets, 'w')).toEqual({ v: 2 });
    expect(store.progress).toEqual({ commits: 2, settled: 2 });
  });

  it('a refused commit writes nothing and fails its caller only; commitAside passes a held commit', async () => {
    const store = await open();
    const waiting = manualGate(store);
    const plain = store.sub('plain');
    const refused = store.commit([{ type: 'put', sub: plain, key: 'held-2', value: 2 }]);
    const later = store.commit([{ type: 'put', sub: plain, key: 'later', value: 3 }]);
    await store.commitAside([{ type: 'put', sub: plain, key: 'aside', value: 4 }]);
    expect(await store.get(plain, 'aside')).toBe(4);
    expect(await store.get(plain, 'later')).toBeUndefined();
    expect(store.progress.commits).toBe(2);
    waiting[0]!.refuse(new Error('no majority'));
    await expect(refused).rejects.toThrow('no majority');
    await later;
    expect(await store.get(plain, 'held-2')).toBeUndefined();
    expect(await store.get(plain, 'later')).toBe(3);
    expect(store.progress).toEqual({ commits: 2, settled: 2 });
    await store.close();
  });

  it('tells the gate a refused commit settled when its caller is told, in its turn: after the held commits before it', async () => {
    const store = await open();
    const waiting = manualGate(store);
    const told: string[] = [];
    store.gate!.refusalSettled = (ops) => told.push(String(ops[0]!.key));
    const plain = store.sub('plain');
    const first = store.commit([{ type: 'put', sub: plain, key: 'held-first', value: 1 }]);
    const refused = store.commit([{ type: 'put', sub: plain, key: 'held-refused', value: 2 }]);
    let callerTold = false;
    const settled = refused.catch(() => {
      callerTold = true;
      return told.slice();
    });
    waiting[1]!.refuse(new Error('no majority'));
    await new Promise((r) => setTimeout(r, 30));
    expect(told).toEqual([]);
    expect(callerTold).toBe(false);
    waiting[0]!.release([]);
    await first;
    // The caller's handler runs after the gate was told, in the same turn: nothing else was read between.
    expect(await settled).toEqual(['held-refused']);
    expect(told).toEqual(['held-refused']);
    await store.close();
  });

  it("keeps a refused commit's node totals off the disk, also through a commit made after it; a number handed out stays taken", async () => {
    const store = await open();
    const waiting = manualGate(store);
    const counters = new Counters(store);
    await counters.load();
    const plain = store.sub('plain');
    const seal = (key: string) => {
      counters.bump('sealed_total', 1);
      counters.bump('charged_total', 3);
      counters.bump('envelope_seq', 1);
      return store.commit([{ type: 'put', sub: plain, key, value: 1 }, ...counters.persistOps(['sealed_total', 'charged_total', 'envelope_seq'])]);
    };
    const refused = seal('held-refused').catch((err: unknown) => {
      // The caller rolls back, as the ledger does (the number handed out is not given back).
      counters.revert('sealed_total', 1);
      counters.revert('charged_total', 3);
      return err;
    });
    const after = seal('after');
    waiting[0]!.refuse(new Error('no majority'));
    expect(await refused).toBeInstanceOf(Error);
    await after;
    const totals = store.sub('counters', 'json', { rewritten: true });
    // Without the refused commit: one seal of 3 credits; its envelope number is the second.
    expect(await store.get(totals, '#totals')).toEqual({ sealed_total: 1, charged_total: 3, envelope_seq: 2 });
    expect([counters.get('sealed_total'), counters.get('charged_total'), counters.get('envelope_seq')]).toEqual([1, 3, 2]);
    const restarted = new Counters(store);
    await restarted.load();
    expect([restarted.get('sealed_total'), restarted.get('charged_total'), restarted.get('envelope_seq')]).toEqual([1, 3, 2]);
    await store.close();
  });
});

// Chain heads in a bounded cache: two appends to a chain whose head is not in memory, the first one's read of the
// last row slow, while the head is loaded, appended to and evicted in between. Each append takes its own seq: a read
// made before a row was written never becomes the head the next row chains on. And a batch that fails after its chain
// was rewritten past the cache (a custody state transfer) undoes nothing of the rewrite; a rewrite of a chain whose
// head is not in memory, or with a machine new here, leaves the heads digest a restart computes. A real store in a
// temp dir.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Store, padNum, type Op } from '../../src/store/db.js';
import { ChainService, GENESIS_HASH, rowHash, type AuditRow, type MachineRecord } from '../../src/chain/service.js';

let dir: string;
let store: Store;
let chain: ChainService;

const machine = (slug: string): MachineRecord => ({
  slug,
  owner: 'zid_owner',
  genesis_svcond: 1,
  is_public: false,
  key_digest: `digest-${slug}`,
  roles: { zid_owner: 'owner' },
  inject_agent_rail: false,
  inject_pulse_orb: false,
  home: 'peer-here',
  created_unix_ms: 0,
});

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-bounded-heads-'));
  store = await Store.open(join(dir, 'db'), { sync: false });
  chain = new ChainService(store, 1);
  for (const slug of ['book-a', 'book-b']) {
    await chain.commit(chain.machineOps(machine(slug)));
    chain.created(slug);
  }
});

afterAll(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe('bounded chain heads', () => {
  it('a slow read of an evicted head does not overwrite the rows appended while it was in flight', async () => {
    await chain.append('book-a', 1, 'event', { n: 1 });
    await chain.prepare('book-b'); // bound 1: book-a's head leaves memory
    const realRange = store.range.bind(store);
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let slowed = false;
    // The first read of book-a's rows is made now and answered late (its snapshot is of now).
    store.range = (async (sub, opts) => {
      const rows = await realRange(sub, opts);
      if (!slowed && opts?.gte === 'book-a!') {
        slowed = true;
        await gate;
      }
      return rows;
    }) as typeof store.range;
    try {
      const slow = chain.append('book-a', 2, 'event', { n: 2 });
      await new Promise((r) => setTimeout(r, 20));
      const quick = chain.append('book-a', 3, 'event', { n: 3 });
      // While the slow read waits, book-b's head comes back (book-a's goes, unless its write is in flight).
      await Promise.race([quick, new Promise((r) => setTimeout(r, 100))]);
      await chain.prepare('book-b');
      release();
      const rows = [await slow, await quick].map((r) => r.seq).sort();
      expect(rows).toEqual([2, 3]);
    } finally {
      store.range = realRange;
    }
    const v = await chain.validate('book-a');
    expect(v).toMatchObject({ valid: true, rows: 3 });
    expect((await chain.explore('book-a')).map((r) => r.svcond)).toEqual([1, expect.any(Number), expect.any(Number)]);
    expect((await chain.headOf('book-a')).seq).toBe(3);
  });
});

describe('a chain rewritten past the cache', () => {
  it('a batch that fails after the rewrite leaves the rewritten head, and the digest is the one a restart computes', async () => {
    const own = await Store.open(join(dir, 'rewritten'), { sync: false });
    try {
      const c = new ChainService(own);
      await c.commit(c.machineOps(machine('book-c')));
      c.created('book-c');
      const first = await c.append('book-c', 1, 'event', { n: 1 });
      // A row built and not yet written (its batch in flight)...
      const inFlight = c.appendOps('book-c', 2, 'event', { n: 2 });
      // ...while a state transfer writes another chain's row 2 past the cache, and tells the chain service.
      const base = { seq: 2, svcond: 9, transitionType: 'event', payload_sha256: 'b'.repeat(64), prev_hash: first.hash };
      const taken: AuditRow = { ...base, hash: rowHash(base) };
      const ops: Op[] = [{ type: 'put', sub: own.sub('chain_rows'), key: `book-c!${padNum(2)}`, value: taken }];
      await c.rewrite(ops, () => own.commit(ops));
      inFlight.rollback(); // its batch failed
      expect(await c.headOf('book-c')).toEqual({ seq: 2, hash: taken.hash });
      const restarted = new ChainService(own);
      await restarted.loadHeads();
      expect(c.headsDigest()).toBe(restarted.headsDigest());
      const next = await c.append('book-c', 3, 'event', { n: 3 });
      expect(next).toMatchObject({ seq: 3, prev_hash: taken.hash });
    } finally {
      await own.close();
    }
  });

  it('a chain whose head is not in memory, and a machine the batch moves here, leave the digest a restart computes; a machine moved keeps its head', async () => {
    const own = await Store.open(join(dir, 'rewritten-cold'), { sync: false });
    try {
      const c = new ChainService(own, 1);
      for (const slug of ['book-d', 'book-e']) {
        await c.commit(c.machineOps(machine(slug)));
        c.created(slug);
      }
      const first = await c.append('book-d', 1, 'event', { n: 1 });
      await c.append('book-e', 1, 'event', { n: 1 }); // bound 1: book-d's head leaves memory
      expect(c.headsCached).toBe(1);
      const row = (slug: string, seq: number, prev: string): { op: Op; hash: string } => {
        const base = { seq, svcond: 9, transitionType: 'event', payload_sha256: 'c'.repeat(64), prev_hash: prev };
        const hash = rowHash(base);
        return { op: { type: 'put', sub: own.sub('chain_rows'), key: `${slug}!${padNum(seq)}`, value: { ...base, hash } }, hash };
      };
      const restartDigest = async () => {
        const restarted = new ChainService(own, 1);
        await restarted.loadHeads();
        return restarted.headsDigest();
      };
      // Rows 2 and 3 of book-d written past the cache, and a machine new here (book-f, an identity's machine moved
      // here with its chain) with its first row, in one batch.
      const second = row('book-d', 2, first.hash);
      const third = row('book-d', 3, second.hash);
      const ops = [second.op, third.op, ...c.machineMoveOps(null, machine('book-f')), row('book-f', 1, GENESIS_HASH).op];
      const before = c.headsDigest();
      await c.rewrite(ops, () => own.commit(ops));
      expect(c.headsDigest()).not.toBe(before);
      expect(c.headsDigest()).toBe(await restartDigest());
      expect((await c.headOf('book-d')).seq).toBe(3);
      // Appends after it chain on the rows written, and the digest keeps to the store's.
      expect(await c.append('book-d', 10, 'event', { n: 4 })).toMatchObject({ seq: 4, prev_hash: third.hash });
      expect(await c.append('book-f', 10, 'event', { n: 2 })).toMatchObject({ seq: 2 });
      expect(c.headsDigest()).toBe(await restartDigest());
      // A batch that fails changes neither the heads nor the digest.
      const digest = c.headsDigest();
      const failing = [row('book-e', 2, 'f'.repeat(64)).op];
      await expect(c.rewrite(failing, () => Promise.reject(new Error('disk full')))).rejects.toThrow('disk full');
      expect(c.headsDigest()).toBe(digest);
      expect((await c.headOf('book-e')).seq).toBe(1);
      // A machine record moved (its home) changes no head: an append in flight meanwhile lands, and the next chains on it.
      await c.prepare('book-e');
      const inFlight = c.appendOps('book-e', 20, 'event', { n: 2 });
      const move = c.machineMoveOps(machine('book-e'), { ...machine('book-e'), home: 'peer-elsewhere' });
      await c.rewrite(move, () => own.commit(move));
      await own.commit([inFlight.op]);
      expect(await c.append('book-e', 21, 'event', { n: 3 })).toMatchObject({ seq: 3, prev_hash: inFlight.row.hash });
      expect(c.headsDigest()).toBe(await restartDigest());
    } finally {
      await own.close();
    }
  });
});

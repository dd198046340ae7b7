// When checkpoints are signed: every CHECKPOINT_ROWS rows, or CHECKPOINT_TICKS ticks after the last (or after the
// first unsigned row), at most CHECKPOINTS_PER_SWEEP a sweep; and what a node keeps of the checkpoints other homes sign
// (SeenBounds). An injected tick; a store in a temp dir; no HTTP.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/db.js';
import { ChainService, type MachineRecord } from '../../src/chain/service.js';
import { CHECKPOINT_ROWS, CHECKPOINT_TICKS, CHECKPOINTS_PER_SWEEP, Checkpoints, type Checkpoint } from '../../src/chain/checkpoints.js';

let dir: string;
let store: Store;
let chain: ChainService;
let now = 1000;
const published: number[] = [];

async function machine(slug: string): Promise<void> {
  const m: MachineRecord = {
    slug,
    owner: 'zid_x',
    genesis_svcond: now,
    is_public: false,
    key_digest: '0'.repeat(64),
    roles: { zid_x: 'owner' },
    inject_agent_rail: false,
    inject_pulse_orb: false,
    home: 'peer-x',
    created_unix_ms: 0,
  };
  await store.commit(chain.machineOps(m));
  chain.created(slug);
}
const append = async (slug: string, n: number) => {
  for (let i = 0; i < n; i++) await chain.append(slug, now, 'event', { i });
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-cp-'));
  store = await Store.open(join(dir, 'db'), { sync: false });
  chain = new ChainService(store);
  chain.checkpoints.use({
    nodeId: () => 'peer-x',
    sign: (text) => `sig:${text.length}`,
    verify: () => true,
    nowSvcond: () => now,
    publish: async (cp) => void published.push(cp.tree_size),
  });
});
afterAll(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe('checkpoint sweeps', () => {
  it('signs after CHECKPOINT_TICKS ticks from the first unsigned row, then after CHECKPOINT_ROWS rows', async () => {
    await machine('cp-book');
    await append('cp-book', 10);
    expect(await chain.checkpoints.tick()).toBe(0);
    now += CHECKPOINT_TICKS - 1;
    expect(await chain.checkpoints.tick()).toBe(0);
    now += 1;
    expect(await chain.checkpoints.tick()).toBe(1);
    expect(await chain.checkpoints.latest('cp-book')).toMatchObject({ tree_size: 10, svcond: now, home: 'peer-x' });
    expect(published).toEqual([10]);
    await append('cp-book', CHECKPOINT_ROWS - 1);
    expect(await chain.checkpoints.tick()).toBe(0);
    await append('cp-book', 1);
    expect(await chain.checkpoints.tick()).toBe(1);
    expect((await chain.checkpoints.latest('cp-book'))!.tree_size).toBe(10 + CHECKPOINT_ROWS);
    expect(await chain.checkpoints.tick()).toBe(0);
  });

  it(`signs at most ${CHECKPOINTS_PER_SWEEP} a sweep; the rest follow in the next sweeps`, async () => {
    const slugs = Array.from({ length: CHECKPOINTS_PER_SWEEP + 3 }, (_, i) => `many-${i}`);
    for (const s of slugs) {
      await machine(s);
      await append(s, 2);
    }
    now += CHECKPOINT_TICKS;
    expect(await chain.checkpoints.tick()).toBe(CHECKPOINTS_PER_SWEEP);
    expect(await chain.checkpoints.tick()).toBe(3);
    for (const s of slugs) expect((await chain.checkpoints.latest(s))!.tree_size).toBe(2);
  });
});

describe('checkpoints seen from other homes', () => {
  let own: Store;
  let dirOwn: string;
  beforeAll(async () => {
    dirOwn = await mkdtemp(join(tmpdir(), 'svc-cp-seen-'));
    own = await Store.open(join(dirOwn, 'db'), { sync: false });
  });
  afterAll(async () => {
    await own.close();
    await rm(dirOwn, { recursive: true, force: true });
  });
  const cp = (slug: string, home: string, size: number, root = 'a'): Checkpoint => ({
    slug,
    home,
    tree_size: size,
    root_hash: root.repeat(64),
    svcond: size,
    signature: 'sig',
  });
  const kept = async () => (await own.range<Checkpoint>(own.sub('chain_checkpoints_seen'))).map((e) => `${e.value.slug}@${e.value.tree_size}`);

  it('keeps the newest sizes of each machine and a bound in all; forks among them are still found; the count survives a load', async () => {
    const seenOf = () => new Checkpoints(own, new ChainService(own).merkle, async () => 0, { perMachine: 2, seenMax: 3 });
    const seen = seenOf();
    await seen.load();
    const report = () => ({ held: seen.forkReport().held, unrecorded: seen.forkReport().unrecorded });
    expect(await seen.record(cp('seen-a', 'liar', 1))).toBe(false);
    expect(await seen.record(cp('seen-a', 'liar', 2))).toBe(false);
    // A third size of one machine: its oldest goes.
    expect(await seen.record(cp('seen-a', 'liar', 3))).toBe(false);
    expect(await kept()).toEqual(['seen-a@2', 'seen-a@3']);
    // One older than every size held is not kept; a second root of a size held is a fork.
    expect(await seen.record(cp('seen-a', 'liar', 1, 'b'))).toBe(false);
    expect(await seen.record(cp('seen-a', 'liar', 3, 'c'))).toBe(true);
    expect(report()).toEqual({ held: 2, unrecorded: 1 });

    // The bound in all: a new machine is kept below it, not past it; at the bound a machine held gives its oldest
    // size for a newer one, though it holds fewer than perMachine.
    await seen.record(cp('seen-b', 'liar', 1));
    await seen.record(cp('seen-c', 'other', 1));
    expect(await kept()).toEqual(['seen-a@2', 'seen-a@3', 'seen-b@1']);
    expect(report()).toEqual({ held: 3, unrecorded: 2 });
    await seen.record(cp('seen-b', 'liar', 2));
    expect(await kept()).toEqual(['seen-a@2', 'seen-a@3', 'seen-b@2']);
    expect(report()).toEqual({ held: 3, unrecorded: 2 });

    const again = seenOf();
    await again.load();
    expect(again.forkReport()).toMatchObject({ count: 1, held: 3, unrecorded: 0 });
  });
});

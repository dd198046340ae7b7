// When checkpoints are signed: every CHECKPOINT_ROWS rows, or CHECKPOINT_TICKS ticks after the last (or after the
// first unsigned row), at most CHECKPOINTS_PER_SWEEP a sweep. An injected tick; a store in a temp dir; no HTTP.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/db.js';
import { ChainService, type MachineRecord } from '../../src/chain/service.js';
import { CHECKPOINT_ROWS, CHECKPOINT_TICKS, CHECKPOINTS_PER_SWEEP } from '../../src/chain/checkpoints.js';

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

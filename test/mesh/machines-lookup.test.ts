// A slug no peer claimed is not asked of the peers again for a while (mesh/machines.ts MachineDirectory.homeOf), unless
// the node learns a peer meanwhile (util/missed-lookups.ts): the peer learnt may hold the machine.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MachineDirectory } from '../../src/mesh/machines.js';
import { Store } from '../../src/store/db.js';

let dir: string;
let store: Store;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-machines-'));
  store = await Store.open(dir, { sync: false });
});
afterAll(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe('a slug no peer claimed', () => {
  it('is not asked again while no peer is learnt, and is asked again once one is', async () => {
    let learnt = 0;
    let asked = 0;
    const directory = new MachineDirectory({
      store,
      nodeId: () => 'self',
      nowSvcond: () => 1_000,
      nowMs: () => 1_000_000,
      // No peer knows the slug here: the question goes to no one, and its miss is remembered.
      peers: () => {
        asked++;
        return [];
      },
      peersLearnt: () => learnt,
    });
    await directory.load();
    expect(await directory.homeOf('nobody-holds-it')).toBeNull();
    expect(await directory.homeOf('nobody-holds-it')).toBeNull();
    expect(asked).toBe(1);
    learnt++;
    expect(await directory.homeOf('nobody-holds-it')).toBeNull();
    expect(asked).toBe(2);
    expect(await directory.homeOf('nobody-holds-it')).toBeNull();
    expect(asked).toBe(2);
  });
});

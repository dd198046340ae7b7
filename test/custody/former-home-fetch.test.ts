// Who may fetch an identity's chain from its home: a custodian of its set of now, and every node that was a home of the
// identity before (home-change.ts wasHome), not only the home the latest change replaced. An old home that takes the
// chain in place of its copy counts the charges it certified and never wrote; refused, it never counted them (a
// 200-fault run ended with its node totals one charge short: the home of epoch 1, in no set after epoch 41).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chainRequest } from '../../src/custody/client.js';
import { HomeChanges, type HomeChange } from '../../src/custody/home-change.js';
import type { ChainAnswer } from '../../src/custody/protocol.js';
import { composedCustodian, composedNodes, type ComposedNode } from '../helpers/composed-custodian.js';

const zid = 'zid_4e947d5d15ba50ef41e0b255a34b2242';
const SECRET = 'former-home-fetch-secret-0123456789abcdef';
const NOW = 2_311_680_000;

let dir: string;
let nodes: ComposedNode[];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-former-home-'));
  nodes = await composedNodes(dir, 6);
});

afterEach(async () => {
  await Promise.all(nodes.map((n) => n.store.close()));
  await rm(dir, { recursive: true, force: true });
});

/** The changes of `zid` `homes` make, epoch 2 on (the first the home of epoch 1), applied in order at `changes`. */
async function moves(changes: HomeChanges, store: ComposedNode['store'], homes: string[]): Promise<void> {
  for (let i = 1; i < homes.length; i++) {
    const change: HomeChange = { zid, epoch: i + 1, home: homes[i]!, promises: [] };
    await store.commit(changes.putOps(change, homes[i - 1]!));
    changes.applied(change, homes[i - 1]!);
  }
}

describe('a fetch of an identity’s chain', () => {
  it('is answered to every former home of the identity, and to no other node outside its set', async () => {
    const [home, first, second, custodian, stranger, asker] = nodes as [ComposedNode, ComposedNode, ComposedNode, ComposedNode, ComposedNode, ComposedNode];
    const changes = new HomeChanges(home.store);
    // Epoch 1 at `first`, 2 at `second`, 3 at `asker`, 4 and 5 at `second` again, 6 at `home`.
    await moves(changes, home.store, [first.id, second.id, asker.id, second.id, second.id, home.id]);
    expect(await changes.wasHome(zid, first.id)).toBe(true);
    expect(await changes.wasHome(zid, asker.id)).toBe(true);
    expect(await changes.wasHome(zid, second.id)).toBe(true);
    expect(await changes.wasHome(zid, stranger.id)).toBe(false);
    expect(await changes.wasHome(zid, home.id)).toBe(false);
    expect(await changes.wasHome(`zid_${'0'.repeat(32)}`, first.id)).toBe(false);
    // Read again from the store (a restart): the same.
    const restarted = new HomeChanges(home.store);
    expect(await restarted.wasHome(zid, first.id)).toBe(true);
    expect(await restarted.wasHome(zid, stranger.id)).toBe(false);

    const served = composedCustodian(home, {
      home: () => home.id,
      members: () => [home.id, custodian.id],
      secret: SECRET,
      now: NOW,
      formerHome: (z, node) => restarted.wasHome(z, node),
    });
    const fetchBy = async (node: ComposedNode) => (await served.answer(chainRequest(SECRET, node.id, NOW, zid, 1), node.id)) as ChainAnswer;
    expect((await fetchBy(first)).refused).toBeUndefined();
    expect((await fetchBy(asker)).refused).toBeUndefined();
    expect((await fetchBy(custodian)).refused).toBeUndefined();
    expect(await fetchBy(stranger)).toMatchObject({ refused: { code: 'not-custodian' }, links: [] });
    // Without the former homes, only the set: the home of epoch 1 is refused.
    const setOnly = composedCustodian(home, { home: () => home.id, members: () => [home.id, custodian.id], secret: SECRET, now: NOW });
    expect(await setOnly.answer(chainRequest(SECRET, first.id, NOW, zid, 1), first.id)).toMatchObject({ refused: { code: 'not-custodian' } });
  });
});

// An old home learning its identity moved (custody/home-moves.ts apply): copies of one change arriving together are
// applied once, and the old home takes the new home's chain in place of its copy, again after a pause when the new
// home cannot be reached at first (down or cut off, as it often is right after a failover), the latest home's when
// the identity moved again meanwhile, and after a start when it stopped first. On a composed node view:
// three members, every set all three, promises and entry signatures signed by a test key per node.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FetchChain } from '../../src/custody/client.js';
import { entryHash, GENESIS_ENTRY_HASH, signingTextOf, type CustodyEntry } from '../../src/custody/entry.js';
import { HomeChanges, type HomeChange } from '../../src/custody/home-change.js';
import { EnvelopeLocks } from '../../src/tally/folders.js';
import { HomeMoves } from '../../src/custody/home-moves.js';
import { promiseSigningText, type PromiseBody } from '../../src/custody/promise.js';
import { recordsDigest, type ChainLink, type EntryRecords } from '../../src/custody/protocol.js';
import type { IdentityRecord } from '../../src/identity/service.js';
import { Store } from '../../src/store/db.js';
import { waitFor } from '../mesh/helpers.js';

const ZID = `zid_${'ef'.repeat(16)}`;
const MEMBERS = ['node-a', 'node-b', 'node-c'];
const sign = (node: string, text: string) => `${node}:${text}`;
const verify = (node: string, text: string, signature: string) => signature === sign(node, text);

/** The change making `home` the home in `epoch`, promised by it and node-c (node-b when it is node-c). */
function changeTo(home: string, epoch: number): HomeChange {
  const promises = [home, home === 'node-c' ? 'node-b' : 'node-c'].map((node) => {
    const promise: PromiseBody = { zid: ZID, epoch, candidate: home, head: null };
    return { promise, node, signature: sign(node, promiseSigningText(promise)) };
  });
  return { zid: ZID, epoch, home, promises };
}
const toB = () => changeTo('node-b', 2);

/** The chain each new home serves: node-b's one entry of epoch 2 putting the wallet, node-c's one of epoch 3. */
function chainAt(home: string): ChainLink[] {
  const epoch = home === 'node-b' ? 2 : 3;
  const free = home === 'node-b' ? 3 : 5;
  const records: EntryRecords = { v: 1, ops: [['put', 'wallets', ZID, JSON.stringify({ free, paid: 4 })]] };
  const entry: CustodyEntry = {
    v: 1,
    zid: ZID,
    epoch,
    seq: 1,
    prev_hash: GENESIS_ENTRY_HASH,
    kind: 'wallet',
    records: recordsDigest(records),
    balance: { free, paid: 4 },
    transfer: null,
  };
  const hash = entryHash(entry);
  const signers = [home, home === 'node-c' ? 'node-b' : 'node-c'];
  return [{ entry, records, signatures: signers.map((node) => ({ node, signature: sign(node, signingTextOf(hash)) })), certificate: null }];
}

let dir = '';
let store: Store;
let moves: HomeMoves;
let fetches = 0;
let reachable = true;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-home-moves-'));
  store = await Store.open(join(dir, 'db'), { sync: false });
  fetches = 0;
  reachable = true;
  const identities = store.sub('test_identities');
  await store.commit([{ type: 'put', sub: identities, key: ZID, value: { zid: ZID, home: 'node-a' } }]);
  moves = movesOn(store);
});

/** node-a's HomeMoves on `store`: node-a was the identity's home in epoch 1. */
function movesOn(on: Store): HomeMoves {
  const identities = on.sub('test_identities');
  const fetch: FetchChain = async (node) => {
    fetches++;
    if (!reachable) throw new Error('connect ECONNREFUSED');
    const links = chainAt(node);
    return { v: 1, head: { epoch: links[0]!.entry.epoch, seq: 1, hash: entryHash(links[0]!.entry) }, links, more: false };
  };
  return new HomeMoves({
    store,
    nodeId: () => 'node-a',
    replicas: 3,
    members: () => MEMBERS,
    verify,
    homeChanges: new HomeChanges(on),
    envelopeLocks: new EnvelopeLocks(),
    identity: {
      getIdentity: async (zid) => on.get<IdentityRecord>(identities, zid),
      homeMoveOps: async (ident, home) => [{ type: 'put', sub: identities, key: ident.zid, value: { ...ident, home } }],
    },
    forget: () => undefined,
    fetch,
    timeoutMs: 1000,
  });
}

afterEach(async () => {
  moves.stop();
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const wallet = () => store.get(store.sub('wallets'), ZID);

describe('an old home learning its identity moved', () => {
  it('applies copies of one change arriving together once, and takes the new home’s chain once', async () => {
    const standings = await Promise.all([moves.apply(toB()), moves.apply(toB()), moves.apply(toB())]);
    expect(standings.filter((s) => s.apply)).toHaveLength(1);
    expect(moves.stats.applied).toBe(1);
    await waitFor(() => moves.stats.replaced === 1, 5_000, 'the chain taken');
    expect(await wallet()).toEqual({ free: 3, paid: 4 });
    expect(fetches).toBe(1);
  });

  it('takes the new home’s chain after a pause when the new home cannot be reached at first', async () => {
    reachable = false;
    expect(await moves.apply(toB())).toEqual({ apply: true });
    await waitFor(() => fetches === 1, 5_000, 'the first fetch');
    expect(await wallet()).toBeUndefined();
    reachable = true;
    await waitFor(() => moves.stats.replaced === 1, 10_000, 'the chain taken on a later attempt');
    expect(fetches).toBe(2);
    expect(await wallet()).toEqual({ free: 3, paid: 4 });
  }, 15_000);

  it('takes a later home’s chain when another change comes before the copy was taken', async () => {
    reachable = false;
    expect(await moves.apply(toB())).toEqual({ apply: true });
    await waitFor(() => fetches === 1, 5_000, 'the first fetch');
    // node-b lost the identity to node-c before node-a could reach it: node-a's copy waits for node-c's chain now.
    expect(await moves.apply(changeTo('node-c', 3))).toEqual({ apply: true });
    reachable = true;
    await waitFor(() => moves.stats.replaced === 1, 10_000, 'the later home’s chain taken');
    expect(await wallet()).toEqual({ free: 5, paid: 4 });
    expect(await new HomeChanges(store).waitingFor(ZID)).toBeNull();
  }, 15_000);

  it('takes the chain after a start when it stopped before its copy was taken', async () => {
    reachable = false;
    expect(await moves.apply(toB())).toEqual({ apply: true });
    await waitFor(() => fetches === 1, 5_000, 'the first fetch');
    moves.stop();
    expect(await new HomeChanges(store).waitingFor(ZID)).toBe(2);
    // Started again on its store, the new home reachable.
    reachable = true;
    moves = movesOn(store);
    await moves.resume();
    await waitFor(() => moves.stats.replaced === 1, 5_000, 'the chain taken after the start');
    expect(await wallet()).toEqual({ free: 3, paid: 4 });
    expect(await new HomeChanges(store).waitingZids(10)).toEqual([]);
    // Nothing waits any more: a later start takes nothing.
    const before = fetches;
    moves.stop();
    moves = movesOn(store);
    await moves.resume();
    expect(fetches).toBe(before);
  });
});

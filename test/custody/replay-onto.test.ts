// A node that takes an identity's chain over (failover.ts via HomeMoves.adopt) writes the chain's ledger over its own:
// envelope records are keyed by token id, so the chain's records of an envelope that left the identity — the
// debit that deleted it, a same-node transfer that rewrote it for its receiver — must not touch the record another
// identity homed here holds of it (the credit this node made), and a copy this node holds as the identity's own
// goes when the chain ends without it. Index keys and the wallet are the identity's and are written as the chain
// ends. In-process: a store, HomeMoves, and chains written as their home's records.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HomeChanges, type HomeChange } from '../../src/custody/home-change.js';
import { HomeMoves } from '../../src/custody/home-moves.js';
import { GENESIS_ENTRY_HASH, type CustodyEntry } from '../../src/custody/entry.js';
import { recordsDigest, type EntryRecords, type RecordOp } from '../../src/custody/protocol.js';
import { replayOps } from '../../src/custody/replica.js';
import type { IdentityRecord } from '../../src/identity/service.js';
import { verifyText } from '../../src/mesh/wire.js';
import { padNum, Store } from '../../src/store/db.js';
import { EnvelopeLocks } from '../../src/tally/folders.js';

const Z = `zid_${'a'.repeat(32)}`; // the identity taken over
const Y = `zid_${'b'.repeat(32)}`; // homed on this node: received an envelope from Z here
const W = `zid_${'c'.repeat(32)}`; // received one from Z by a same-node transfer at Z's old home
const SELF = '12D3KooWSelf';
const OLD = '12D3KooWOld';
const token = (n: number) => `env_${String(n).padStart(24, '0')}`;

const envelope = (t: string, owner: string, seq: number) => ({ token_id: t, owner, face_value: 1, folder: 'inbox', funding: 'paid', seq });
const put = (sub: RecordOp[1], key: string, value: unknown): RecordOp => ['put', sub, key, JSON.stringify(value)];
const del = (sub: RecordOp[1], key: string): RecordOp => ['del', sub, key];
/** A link of the chain: its records, under an entry that charges nothing (this node never was Z's home). */
const link = (...ops: RecordOp[]): { entry: CustodyEntry; records: EntryRecords } => {
  const records: EntryRecords = { v: 1, ops };
  const entry: CustodyEntry = {
    v: 1,
    zid: Z,
    epoch: 1,
    seq: 1,
    prev_hash: GENESIS_ENTRY_HASH,
    kind: 'envelope',
    records: recordsDigest(records),
    balance: null,
    transfer: null,
  };
  return { entry, records };
};
const sealed = (t: string, seq: number) =>
  link(put('envelopes', t, envelope(t, Z, seq)), put('env_owner', `${Z}!${padNum(seq)}`, t), put('env_folder', `${Z}!inbox!${padNum(seq)}`, t));
const debited = (t: string, seq: number) => link(del('env_owner', `${Z}!${padNum(seq)}`), del('env_folder', `${Z}!inbox!${padNum(seq)}`), del('envelopes', t));

let dir: string;
let store: Store;
let moves: HomeMoves;
let envelopeLocks: EnvelopeLocks;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-replay-onto-'));
  store = await Store.open(dir, { sync: false });
  const identities = store.sub('identities');
  const ident: IdentityRecord = { zid: Z, home: OLD } as IdentityRecord;
  envelopeLocks = new EnvelopeLocks();
  moves = new HomeMoves({
    store,
    nodeId: () => SELF,
    replicas: 3,
    members: () => [SELF, OLD],
    verify: verifyText,
    homeChanges: new HomeChanges(store),
    envelopeLocks,
    identity: {
      // Y is homed here; W elsewhere (this node holds a stale record of W's at most).
      getIdentity: (zid) =>
        Promise.resolve(
          zid === Z ? ident : zid === Y ? ({ zid: Y, home: SELF } as IdentityRecord) : zid === W ? ({ zid: W, home: OLD } as IdentityRecord) : undefined,
        ),
      homeMoveOps: async (i, home) => [{ type: 'put', sub: identities, key: i.zid, value: { ...i, home } }],
    },
    forget: () => undefined,
    fetch: null,
    timeoutMs: 1000,
  });
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const envelopes = () => store.sub('envelopes');
const byOwner = () => store.sub('env_owner');
const change: HomeChange = { zid: Z, epoch: 2, home: SELF, promises: [] };

describe('taking a chain over, onto this node’s own ledger', () => {
  it('keeps the envelope another identity homed here received from the identity, and writes the identity’s as the chain ends', async () => {
    // Y's credit of token 1 (sent by Z, debited at Z's old home), numbered here.
    await store.commit([
      { type: 'put', sub: envelopes(), key: token(1), value: { ...envelope(token(1), Y, 40), transfer_id: 'xfer_1' } },
      { type: 'put', sub: byOwner(), key: `${Y}!${padNum(40)}`, value: token(1) },
    ]);
    const chain = [sealed(token(1), 7), sealed(token(2), 8), debited(token(1), 7)];
    await moves.adopt(change, chain, []);
    expect(await store.get(envelopes(), token(1))).toMatchObject({ owner: Y, seq: 40, transfer_id: 'xfer_1' });
    expect(await store.get(byOwner(), `${Y}!${padNum(40)}`)).toBe(token(1));
    expect(await store.get(envelopes(), token(2))).toMatchObject({ owner: Z, seq: 8 });
    expect(await store.range(byOwner(), { gte: `${Z}!`, lt: `${Z}!~` })).toEqual([{ key: `${Z}!${padNum(8)}`, value: token(2) }]);
    expect(await store.get(store.sub('identities'), Z)).toMatchObject({ home: SELF });
  });

  it('deletes a copy it holds as the identity’s when the chain ends with the envelope gone, and writes no record of another owner', async () => {
    // This node's stale copy of Z's ledger (it was Z's home once): tokens 3 and 4 still Z's here.
    await store.commit([
      { type: 'put', sub: envelopes(), key: token(3), value: envelope(token(3), Z, 3) },
      { type: 'put', sub: envelopes(), key: token(4), value: envelope(token(4), Z, 4) },
    ]);
    // Token 3 debited to a receiver elsewhere; token 4 and 5 moved to W by same-node transfers at Z's old home.
    const toW = (t: string, seq: number) => link(del('env_owner', `${Z}!${padNum(seq)}`), put('envelopes', t, envelope(t, W, 90 + seq)));
    const chain = [sealed(token(3), 3), sealed(token(4), 4), sealed(token(5), 5), debited(token(3), 3), toW(token(4), 4), toW(token(5), 5)];
    await moves.adopt(change, chain, []);
    expect(await store.get(envelopes(), token(3))).toBeUndefined();
    expect(await store.get(envelopes(), token(4))).toBeUndefined();
    expect(await store.get(envelopes(), token(5))).toBeUndefined();
    expect(await store.range(byOwner(), { gte: `${Z}!`, lt: `${Z}!~` })).toEqual([]);
  });

  it('leaves the record of an identity homed here that a chain fetched before the envelope left still gives to the identity', async () => {
    // Token 7 went from Z to Y (homed here) after the chain was read; token 8's record here is W's, a stale copy.
    await store.commit([
      { type: 'put', sub: envelopes(), key: token(7), value: { ...envelope(token(7), Y, 41), transfer_id: 'xfer_7' } },
      { type: 'put', sub: envelopes(), key: token(8), value: { ...envelope(token(8), W, 42), transfer_id: 'xfer_8' } },
    ]);
    await moves.adopt(change, [sealed(token(7), 7), sealed(token(8), 8)], []);
    expect(await store.get(envelopes(), token(7))).toMatchObject({ owner: Y, seq: 41, transfer_id: 'xfer_7' });
    expect(await store.get(envelopes(), token(8))).toMatchObject({ owner: Z, seq: 8 });
  });

  it('reads a credit that lands while it replays: the credit waits for the envelope, and the replay leaves its record', async () => {
    // This node's stale copy of token 9 as Z's; the chain ends with token 9 debited (to Y, homed here).
    await store.commit([{ type: 'put', sub: envelopes(), key: token(9), value: envelope(token(9), Z, 9) }]);
    // Y's credit of token 9, as transfers.ts receive writes it (under the envelope's lock), started right after the
    // replay has read the envelope's record and before its batch.
    const credit = () =>
      envelopeLocks.tokens([token(9)], () =>
        store.commit([
          { type: 'put', sub: envelopes(), key: token(9), value: { ...envelope(token(9), Y, 43), transfer_id: 'xfer_9' } },
          { type: 'put', sub: byOwner(), key: `${Y}!${padNum(43)}`, value: token(9) },
        ]),
      );
    let credited: Promise<void> | null = null;
    const read = store.getMany.bind(store);
    store.getMany = (async (sub: Parameters<Store['getMany']>[0], keys: string[]) => {
      const got = await read(sub, keys);
      if (credited === null && keys.includes(token(9))) {
        credited = credit();
        // Without the envelope's lock the credit is written by now; with it, it waits for the replay.
        await Promise.race([credited, new Promise((r) => setTimeout(r, 100))]);
      }
      return got;
    }) as Store['getMany'];
    await moves.adopt(change, [sealed(token(9), 9), debited(token(9), 9)], []);
    expect(credited).not.toBeNull();
    await credited;
    expect(await store.get(envelopes(), token(9))).toMatchObject({ owner: Y, seq: 43, transfer_id: 'xfer_9' });
    expect(await store.get(byOwner(), `${Y}!${padNum(43)}`)).toBe(token(9));
    expect(await store.range(byOwner(), { gte: `${Z}!`, lt: `${Z}!~` })).toEqual([]);
  });

  it('replays every record as it is without a ledger to write over (a custodian’s check of a run)', () => {
    const ops = replayOps(store, [sealed(token(6), 6), debited(token(6), 6)]);
    expect(ops.map((o) => `${o.type} ${o.key}`)).toEqual([
      `put ${token(6)}`,
      `put ${Z}!${padNum(6)}`,
      `put ${Z}!inbox!${padNum(6)}`,
      `del ${Z}!${padNum(6)}`,
      `del ${Z}!inbox!${padNum(6)}`,
      `del ${token(6)}`,
    ]);
  });
});

// A custodian whose head is on a branch a later epoch left: it alone signed an entry of epoch 1 at seq 2 (a debit, its
// answer lost, the slot given up), then a new epoch opened on seq 1 without it (it was cut off) and the chain went on.
// Every entry of that chain is refused by it (`prev-hash`, then `behind`), so it catches up from the home: the home's
// chain does not continue its head, and it follows that chain from where the two meet (seq 1), its branch's transfer
// id free again. A home whose chain leaves the head without a later epoch is not followed. Composed in-process: the
// custodians on their own stores, the test as the home proposing entries and answering fetches from its log.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { custodyRequest } from '../../src/custody/client.js';
import { Custodian } from '../../src/custody/custodian.js';
import { entryHash, GENESIS_ENTRY_HASH, signingTextOf, type CustodyEntry } from '../../src/custody/entry.js';
import { EPOCH_RECORDS, NO_RECORDS } from '../../src/custody/failover.js';
import type { ChainAnswer, ChainLink, CustodyAnswer, EntryRecords } from '../../src/custody/protocol.js';
import { signText } from '../../src/mesh/wire.js';
import { composedCustodian, composedSet, type ComposedNode } from '../helpers/composed-custodian.js';
import { forge, recordsOf } from '../helpers/custody.js';
import { waitFor } from '../mesh/helpers.js';

const SECRET = 'left-branch-secret-0123456789abcdef';
const zid = 'zid_456789abcdef0123456789abcdef0123';
const NOW = 1000;

let dir: string;
let nodes: ComposedNode[];
let home: ComposedNode;
let x: ComposedNode;
let y: ComposedNode;
let custodians: Map<string, Custodian>;
/** The home's certified log: what it answers a fetch with. */
let homeLog: ChainLink[];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-left-branch-'));
  ({
    nodes,
    inSetOrder: [home, x, y],
  } = await composedSet(dir, zid));
  homeLog = [];
  custodians = new Map(
    nodes.map((n) => [n.id, composedCustodian(n, { home: () => home.id, members: () => nodes.map((m) => m.id), secret: SECRET, now: NOW, fetch: homeFetch })]),
  );
});

afterEach(async () => {
  await Promise.all(nodes.map((n) => n.store.close()));
  await rm(dir, { recursive: true, force: true });
});

/** The home answers a fetch from its log. */
const homeFetch = (peer: string, _zid: string, from: number): Promise<ChainAnswer> => {
  expect(peer).toBe(home.id);
  const links = homeLog.filter((l) => l.entry.seq >= from);
  const last = homeLog.at(-1)?.entry;
  return Promise.resolve({ v: 1, head: last === undefined ? null : { epoch: last.epoch, seq: last.seq, hash: entryHash(last) }, links, more: false });
};

async function propose(to: ComposedNode, entry: CustodyEntry, records: EntryRecords = recordsOf(entry)): Promise<string> {
  const answer = (await custodians.get(to.id)!.answer(custodyRequest(SECRET, home.id, NOW, [entry], [records]), home.id)) as CustodyAnswer;
  const r = answer.results[0]!;
  return r.ok ? 'signed' : r.code;
}

/** The home proposes `entry` to `to`; signed by all of them, it joins the home's log. */
async function certify(entry: CustodyEntry, to: ComposedNode[], records: EntryRecords = recordsOf(entry)): Promise<CustodyEntry> {
  const signatures = [{ node: home.id, signature: signText(home.key, signingTextOf(entryHash(entry))) }];
  for (const n of to) expect(await propose(n, entry, records)).toBe('signed');
  homeLog.push({ entry, signatures, records, certificate: null });
  return entry;
}

const wallet = (free: number) => ({ free, paid: 0 });
const debit = (id: string) => ({ id, side: 'debit' as const, party: 'zid_fedcba9876543210fedcba9876543210', amount: 3, tokens: 'ab'.repeat(32) });

/**
 * Seq 1 certified by X and Y; seq 2 of epoch 1, a debit, signed by X alone (given up); epoch 2 opened on seq 1 with Y
 * (X cut off) and one write after it: X's head is epoch 1's seq 2, on no chain the home serves.
 */
async function leftBranch(): Promise<{ first: CustodyEntry; opens: CustodyEntry; next: CustodyEntry; givenUp: CustodyEntry }> {
  const first = await certify(
    forge({ v: 1, zid, epoch: 1, seq: 1, prev_hash: GENESIS_ENTRY_HASH, kind: 'wallet', records: '', balance: wallet(10), transfer: null }),
    [x, y],
  );
  const givenUp = forge({
    v: 1,
    zid,
    epoch: 1,
    seq: 2,
    prev_hash: entryHash(first),
    kind: 'transfer',
    records: '',
    balance: wallet(7),
    transfer: debit('xfer_a'),
  });
  expect(await propose(x, givenUp)).toBe('signed');
  const opens = await certify(
    { v: 1, zid, epoch: 2, seq: 2, prev_hash: entryHash(first), kind: 'epoch', records: EPOCH_RECORDS, balance: wallet(10), transfer: null },
    [y],
    NO_RECORDS,
  );
  const next = await certify(
    forge({ v: 1, zid, epoch: 2, seq: 3, prev_hash: entryHash(opens), kind: 'wallet', records: '', balance: wallet(9), transfer: null }),
    [y],
  );
  expect((await custodians.get(x.id)!.head(zid))?.hash).toBe(entryHash(givenUp));
  return { first, opens, next, givenUp };
}

describe('a custodian on a branch a later epoch left', () => {
  it('follows the home’s chain from where the two meet, and its branch’s transfer id is free again', async () => {
    const { first, opens, next } = await leftBranch();
    const custodian = custodians.get(x.id)!;
    // The next entry, a debit of the transfer X's branch carried: X is behind, and catches up.
    const again = forge({
      v: 1,
      zid,
      epoch: 2,
      seq: 4,
      prev_hash: entryHash(next),
      kind: 'transfer',
      records: '',
      balance: wallet(6),
      transfer: debit('xfer_a'),
    });
    expect(await propose(x, again)).toBe('behind');
    await waitFor(async () => (await custodian.head(zid))?.hash === entryHash(next), 5_000, 'X follows the home’s chain');
    expect(await custodian.head(zid)).toMatchObject({ epoch: 2, seq: 3, balance: wallet(9), fenced_below: 2 });
    expect((await custodian.page(zid, 1)).links.map((l) => entryHash(l.entry))).toEqual([first, opens, next].map(entryHash));
    expect(custodian.stats.caughtUp).toBe(2);
    // The transfer is not refused as applied already: the chain X holds now never applied it.
    expect(await propose(x, again)).toBe('signed');
    expect((await custodian.head(zid))?.seq).toBe(4);
  });

  it('catches up on the first entry of the later epoch that does not continue its head, before the chain reaches past it', async () => {
    const { first } = await leftBranch();
    // The home's log as it was before the write after the epoch entry: only the epoch entry is past seq 1.
    const next = homeLog.pop()!.entry;
    const custodian = custodians.get(x.id)!;
    expect(await propose(x, next)).toBe('prev-hash');
    await waitFor(async () => (await custodian.head(zid))?.seq === 2 && (await custodian.head(zid))?.epoch === 2, 5_000, 'X follows the epoch entry');
    expect((await custodian.page(zid, 1)).links.map((l) => l.entry.seq + ':' + l.entry.epoch)).toEqual(['1:1', '2:2']);
    expect((await custodian.entries(zid, 1, 10)).map((h) => entryHash(h.entry))).toContain(entryHash(first));
    expect(await propose(x, next)).toBe('signed');
  });

  it('follows a later epoch past a slot it signed another entry for, keeping its own entry of that slot', async () => {
    const first = await certify(
      forge({ v: 1, zid, epoch: 1, seq: 1, prev_hash: GENESIS_ENTRY_HASH, kind: 'wallet', records: '', balance: wallet(10), transfer: null }),
      [x, y],
    );
    const slot = { v: 1 as const, zid, epoch: 1, seq: 2, prev_hash: entryHash(first), kind: 'wallet' as const, records: '', transfer: null };
    const givenUp = forge({ ...slot, balance: wallet(8) }, 'given up');
    expect(await propose(x, givenUp)).toBe('signed');
    // The slot certified again in the next attempt with Y, then epoch 2 opened on it: X was cut off for both.
    const again = await certify(forge({ ...slot, balance: wallet(6), attempt: 1 }), [y]);
    const opens = await certify(
      { v: 1, zid, epoch: 2, seq: 3, prev_hash: entryHash(again), kind: 'epoch', records: EPOCH_RECORDS, balance: wallet(6), transfer: null },
      [y],
      NO_RECORDS,
    );
    const custodian = custodians.get(x.id)!;
    const next = forge({ v: 1, zid, epoch: 2, seq: 4, prev_hash: entryHash(opens), kind: 'wallet', records: '', balance: wallet(5), transfer: null });
    expect(await propose(x, next)).toBe('behind');
    await waitFor(async () => (await custodian.head(zid))?.hash === entryHash(opens), 5_000, 'X follows epoch 2');
    // Its slot keeps the entry it signed; the chain it holds has a gap there.
    const held = await custodian.entries(zid, 1, 10);
    expect(held.map((h) => entryHash(h.entry))).toEqual([first, givenUp, opens].map(entryHash));
    expect(custodian.stats.caughtUp).toBe(1);
    expect(await propose(x, next)).toBe('signed');
  });

  it('does not follow a chain that leaves its head without a later epoch', async () => {
    const first = await certify(
      forge({ v: 1, zid, epoch: 1, seq: 1, prev_hash: GENESIS_ENTRY_HASH, kind: 'wallet', records: '', balance: wallet(10), transfer: null }),
      [x, y],
    );
    const held = forge({ v: 1, zid, epoch: 1, seq: 2, prev_hash: entryHash(first), kind: 'wallet', records: '', balance: wallet(8), transfer: null }, 'x');
    expect(await propose(x, held)).toBe('signed');
    // Another entry of epoch 1 at seq 2 and one after it, as a home that forks its own epoch would serve them.
    const other = await certify(
      forge({ v: 1, zid, epoch: 1, seq: 2, prev_hash: entryHash(first), kind: 'wallet', records: '', balance: wallet(5), transfer: null }, 'y'),
      [y],
    );
    const after = await certify(
      forge({ v: 1, zid, epoch: 1, seq: 3, prev_hash: entryHash(other), kind: 'wallet', records: '', balance: wallet(4), transfer: null }),
      [y],
    );
    const custodian = custodians.get(x.id)!;
    expect(await propose(x, forge({ ...after, seq: 4, prev_hash: entryHash(after) }, 'z'))).toBe('behind');
    await waitFor(() => custodian.stats.catchUps === 1, 5_000, 'the catch-up ran');
    await new Promise((r) => setTimeout(r, 100));
    expect(await custodian.head(zid)).toMatchObject({ epoch: 1, seq: 2, hash: entryHash(held) });
    expect(custodian.stats.caughtUp).toBe(0);
  });
});

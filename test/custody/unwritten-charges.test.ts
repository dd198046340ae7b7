// Charges a home made and never wrote (custody/unwritten-charges.ts, Ledger.unwrittenChargesOps): an entry a custodian
// signed before the home stopped short of its batch, certified later by the next home, reaches the stopped home only
// with the chain it takes back. The chain's records carry the identity's running total of credits charged; the node's
// totals (charged, burned, foundation, sealed) count each such charge once, in the batch that writes the chain.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { slotKey } from '../../src/custody/custodian.js';
import { entryHash, GENESIS_ENTRY_HASH, type CustodyEntry } from '../../src/custody/entry.js';
import type { HomeChange } from '../../src/custody/home-change.js';
import { recordsDigest, type EntryRecords, type RecordOp } from '../../src/custody/protocol.js';
import { unwrittenCharges } from '../../src/custody/unwritten-charges.js';
import { chargedCounter } from '../../src/store/counter-keys.js';
import { IDENTITY_RECORD_PREFIX } from '../../src/store/counters.js';
import { foundationShare } from '../../src/tally/split.js';
import { startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

const Z = `zid_${'a'.repeat(32)}`;

/** A chain of `zid`: each link an entry of `kind` whose records put the identity's counter record at `charged`. */
function chainOf(zid: string, steps: { kind: CustodyEntry['kind']; charged?: number; epoch?: number }[]): { entry: CustodyEntry; records: EntryRecords }[] {
  const out: { entry: CustodyEntry; records: EntryRecords }[] = [];
  let prev = GENESIS_ENTRY_HASH;
  for (const [i, s] of steps.entries()) {
    const ops: RecordOp[] =
      s.charged === undefined ? [] : [['put', 'counters', `${IDENTITY_RECORD_PREFIX}${zid}`, JSON.stringify({ [chargedCounter(zid)]: s.charged })]];
    const records: EntryRecords = { v: 1, ops };
    const entry: CustodyEntry = {
      v: 1,
      zid,
      epoch: s.epoch ?? 1,
      seq: i + 1,
      prev_hash: prev,
      kind: s.kind,
      records: recordsDigest(records),
      balance: s.kind === 'envelope' ? null : { free: 0, paid: 100 - (s.charged ?? 0) },
      transfer: null,
    };
    prev = entryHash(entry);
    out.push({ entry, records });
  }
  return out;
}

describe('the charges of a chain this node never wrote', () => {
  it('are the rises of the running total on entries not written, each with the total before it', () => {
    const chain = chainOf(Z, [
      { kind: 'seal', charged: 3 },
      { kind: 'envelope' },
      { kind: 'seal', charged: 5 },
      { kind: 'wallet', charged: 6 },
      { kind: 'seal', charged: 9, epoch: 2 },
    ]);
    const written = new Set([entryHash(chain[0]!.entry), entryHash(chain[1]!.entry)]);
    const charges = unwrittenCharges(Z, chain, (entry, hash) => entry.epoch === 1 && !written.has(hash));
    expect(charges).toEqual([
      { cost: 2, chargedBefore: 3, sealed: true, hash: entryHash(chain[2]!.entry), entry: chain[2]!.entry },
      { cost: 1, chargedBefore: 5, sealed: false, hash: entryHash(chain[3]!.entry), entry: chain[3]!.entry },
    ]);
    // Everything written: nothing to count.
    expect(unwrittenCharges(Z, chain, () => false)).toEqual([]);
  });

  it('are bounded by the wallet’s fall: a running total holding charges made before any entry counts the entry’s only', () => {
    // Charged 6 before the identity had custodians (no entries); its first entry a grant, its second a seal of 1.
    const chain = chainOf(Z, [{ kind: 'wallet' }, { kind: 'seal', charged: 7 }]);
    chain[0]!.entry.balance = { free: 0, paid: 100 };
    chain[1]!.entry.balance = { free: 0, paid: 99 };
    expect(unwrittenCharges(Z, chain, () => true)).toEqual([
      { cost: 1, chargedBefore: 6, sealed: true, hash: entryHash(chain[1]!.entry), entry: chain[1]!.entry },
    ]);
  });
});

describe('a node taking back a chain that carries its unwritten charges', () => {
  let t: TestNode;
  beforeAll(async () => {
    t = await startTestNode();
  }, 60_000);
  afterAll(async () => {
    await t?.destroy();
  });

  it('counts them in its totals in the batch that writes the chain, keeps them across a restart, and counts each once', async () => {
    const x = await zkIdentity(t.url, 'unwritten-charges');
    // This node was x's home in epoch 1 and wrote none of these (a node alone keeps no log of entries).
    const chain = chainOf(x.zid, [
      { kind: 'seal', charged: 4 },
      { kind: 'seal', charged: 10 },
    ]);
    const totals = () => ({
      charged: t.node.counters.get('charged_total'),
      burned: t.node.counters.get('burned_total'),
      foundation: t.node.counters.get('foundation_total'),
      sealed: t.node.counters.get('sealed_total'),
    });
    const before = totals();
    const change: HomeChange = { zid: x.zid, epoch: 2, home: t.node.nodeId, promises: [] };
    await t.node.custody.homeMoves.adopt(change, chain, []);
    const foundation = foundationShare(before.charged + 10) - foundationShare(before.charged);
    const expected = {
      charged: before.charged + 10,
      burned: before.burned + 10 - foundation,
      foundation: before.foundation + foundation,
      sealed: before.sealed + 2,
    };
    expect(totals()).toEqual(expected);
    t = await t.restart();
    expect(totals()).toEqual(expected);
    // Taken again, twice at once (two copies of a later change): counted once, the first time only.
    await Promise.all([3, 4].map((epoch) => t.node.custody.homeMoves.adopt({ zid: x.zid, epoch, home: t.node.nodeId, promises: [] }, chain, [])));
    expect(totals()).toEqual(expected);
  }, 60_000);

  it('does not count a charge its log of written entries holds at the entry’s slot', async () => {
    const y = await zkIdentity(t.url, 'unwritten-charges-written');
    const chain = chainOf(y.zid, [
      { kind: 'seal', charged: 3 },
      { kind: 'seal', charged: 5 },
      { kind: 'seal', charged: 6 },
    ]);
    // The first two written here (its log holds them), the third not.
    const log = t.node.store.sub('custody_log');
    await t.node.store.commit(
      chain.slice(0, 2).map(({ entry, records }) => ({
        type: 'put' as const,
        sub: log,
        key: slotKey(entry),
        value: { entry, hash: entryHash(entry), signatures: [], records, certificate: null },
      })),
    );
    const sealed = t.node.counters.get('sealed_total');
    const charged = t.node.counters.get('charged_total');
    await t.node.custody.homeMoves.adopt({ zid: y.zid, epoch: 2, home: t.node.nodeId, promises: [] }, chain, []);
    expect(t.node.counters.get('sealed_total')).toBe(sealed + 1);
    expect(t.node.counters.get('charged_total')).toBe(charged + 1);
  }, 60_000);
});

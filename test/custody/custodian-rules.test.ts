// The custodian's table, one case per row (custody/custodian-rules.ts), and the custody set's draw (custody-set.ts).
import { describe, expect, it } from 'vitest';
import { CUSTODIAN_ROWS, decide, type Facts, type HeldHead } from '../../src/custody/custodian-rules.js';
import { custodySetOf } from '../../src/custody/custody-set.js';
import { entryHash, GENESIS_ENTRY_HASH, type CustodyEntry } from '../../src/custody/entry.js';
import { rankWeight } from '../../src/consensus/committee.js';

const zid = 'zid_00112233445566778899aabbccddeeff';
const head: HeldHead = { epoch: 2, seq: 5, hash: 'aa'.repeat(32), fenced_below: 2, balance: { free: 10, paid: 0 }, home: 'home' };
const next = (more: Partial<CustodyEntry> = {}): CustodyEntry => ({
  v: 1,
  zid,
  epoch: 2,
  seq: 6,
  prev_hash: head.hash,
  kind: 'wallet',
  records: 'bb'.repeat(32),
  balance: { free: 9, paid: 0 },
  transfer: null,
  ...more,
});
const moved = (side: 'debit' | 'credit') => ({ id: 'tr_1', side, party: 'zid_ffeeddccbbaa99887766554433221100', amount: 3, tokens: 'cc'.repeat(32) });
const facts = (more: Partial<Facts> = {}): Facts => ({
  fencedBelow: head.fenced_below,
  fromHome: true,
  slotHash: null,
  transferSeen: false,
  debitFault: null,
  recordsFault: null,
  ...more,
});
const outcome = (e: CustodyEntry, h: HeldHead | null, f: Facts) => {
  const d = decide(e, entryHash(e), h, f);
  return 'refuse' in d ? d.refuse : `sign-${d.sign}`;
};

describe('the custodian table', () => {
  it('has its rows in the order the protocol lists them', () => {
    expect(CUSTODIAN_ROWS.map((r) => r.refuse)).toEqual([
      'fenced',
      'not-home',
      'records-mismatch',
      'again',
      'slot-taken',
      'behind',
      'seq',
      'prev-hash',
      'balance',
      'transfer-reused',
      'debit-uncertified',
    ]);
  });
  it('signs the next entry of the holder, and the identity’s first when fresh', () => {
    expect(outcome(next(), head, facts())).toBe('sign-new');
    expect(outcome(next({ seq: 1, prev_hash: GENESIS_ENTRY_HASH }), null, facts())).toBe('sign-new');
  });
  it('behind: past the head, or past seq 1 when fresh (it catches up first)', () => {
    expect(outcome(next({ seq: 40, prev_hash: GENESIS_ENTRY_HASH }), null, facts())).toBe('behind');
    expect(outcome(next({ seq: 2 }), null, facts())).toBe('behind');
    const d = decide(next({ seq: 7 }), entryHash(next({ seq: 7 })), head, facts());
    expect(d).toEqual({ to: 'holding', refuse: 'behind', reason: 'this custodian holds up to seq 5, not 6: it catches up before it signs' });
  });
  it('not-home: a sender that is not the home, fresh or holding', () => {
    expect(outcome(next(), head, facts({ fromHome: false }))).toBe('not-home');
    expect(outcome(next(), null, facts({ fromHome: false }))).toBe('not-home');
  });
  it('fenced: an epoch below the highest accepted or promised, fresh or holding, before not-home (the old home learns it is fenced)', () => {
    expect(outcome(next({ epoch: 1 }), head, facts())).toBe('fenced');
    expect(outcome(next({ epoch: 2 }), head, facts({ fencedBelow: 3, fromHome: false }))).toBe('fenced');
    expect(outcome(next({ epoch: 2, seq: 1 }), null, facts({ fencedBelow: 3 }))).toBe('fenced');
    expect(outcome(next({ epoch: 3, seq: 1 }), null, facts({ fencedBelow: 3 }))).toBe('sign-new');
  });
  it('an epoch entry of a later epoch opens it on any prev_hash up to the head’s seq + 1; of the head’s epoch it chains as any entry', () => {
    // On a shorter chain than the one this custodian holds (its head an entry the new home did not take).
    const opening = next({ epoch: 3, kind: 'epoch', seq: 5, prev_hash: 'ee'.repeat(32), balance: null });
    expect(outcome(opening, head, facts({ fencedBelow: 3 }))).toBe('sign-new');
    expect(decide(opening, entryHash(opening), head, facts({ fencedBelow: 3 }))).toEqual({ to: 'holding', sign: 'new' });
    expect(outcome({ ...opening, seq: 6 }, head, facts({ fencedBelow: 3 }))).toBe('sign-new');
    // Past its head + 1 it catches up first, as for any entry.
    expect(outcome({ ...opening, seq: 9 }, head, facts({ fencedBelow: 3 }))).toBe('behind');
    expect(outcome(next({ kind: 'epoch', seq: 5 }), head, facts())).toBe('seq');
    expect(outcome(next({ kind: 'epoch', prev_hash: 'ee'.repeat(32) }), head, facts())).toBe('prev-hash');
    // Any other kind of a later epoch still chains on the head.
    expect(outcome(next({ epoch: 3, seq: 5 }), head, facts({ fencedBelow: 3 }))).toBe('seq');
  });
  it('records-mismatch: records that are not what the digest covers, fresh or holding, even for an entry signed already', () => {
    const e = next();
    expect(outcome(e, head, facts({ recordsFault: 'the records sent do not hash to the entry’s digest' }))).toBe('records-mismatch');
    expect(outcome(e, null, facts({ recordsFault: 'x' }))).toBe('records-mismatch');
    expect(outcome(e, head, facts({ recordsFault: 'x', slotHash: entryHash(e) }))).toBe('records-mismatch');
  });
  it('again: the very entry it signed for the slot; slot-taken: another one', () => {
    const e = next();
    expect(outcome(e, head, facts({ slotHash: entryHash(e) }))).toBe('sign-again');
    expect(outcome(e, head, facts({ slotHash: 'cc'.repeat(32) }))).toBe('slot-taken');
    // The home's next attempt at a slot signed here is another entry of that slot: one entry per (zid, epoch, seq).
    const retried = next({ attempt: 1 });
    expect(outcome(retried, head, facts({ slotHash: entryHash(e) }))).toBe('slot-taken');
    expect(outcome(retried, head, facts())).toBe('sign-new');
  });
  it('seq and prev-hash: only the next slot, on the head', () => {
    expect(outcome(next({ seq: 5 }), head, facts())).toBe('seq');
    expect(outcome(next({ seq: 1 }), head, facts())).toBe('seq');
    expect(outcome(next({ prev_hash: 'dd'.repeat(32) }), head, facts())).toBe('prev-hash');
  });
  it('balance: free or paid below zero', () => {
    expect(outcome(next({ balance: { free: -1, paid: 0 } }), head, facts())).toBe('balance');
    expect(outcome(next({ seq: 1, balance: { free: 0, paid: -1 } }), null, facts())).toBe('balance');
    expect(outcome(next({ balance: null }), head, facts())).toBe('sign-new');
  });
  it('transfer-reused: a transfer id seen on an earlier entry', () => {
    expect(outcome(next({ kind: 'transfer', transfer: moved('debit') }), head, facts({ transferSeen: true }))).toBe('transfer-reused');
    expect(outcome(next({ kind: 'transfer', transfer: moved('credit') }), head, facts({ transferSeen: true }))).toBe('transfer-reused');
    expect(outcome(next({ kind: 'transfer', transfer: moved('debit') }), head, facts())).toBe('sign-new');
  });
  it('debit-uncertified: a credit whose debit certificate fails, fresh or holding; never a debit', () => {
    const credit = next({ kind: 'transfer', transfer: moved('credit') });
    const d = decide(credit, entryHash(credit), head, facts({ debitFault: 'too few signers' }));
    expect(d).toEqual({ to: 'holding', refuse: 'debit-uncertified', reason: "the sender's debit is not certified: too few signers" });
    expect(outcome({ ...credit, seq: 1 }, null, facts({ debitFault: 'no certificate' }))).toBe('debit-uncertified');
    expect(outcome(credit, head, facts())).toBe('sign-new');
    // The fact is about a credit only: a debit or a wallet write with it set is signed.
    expect(outcome(next({ kind: 'transfer', transfer: moved('debit') }), head, facts({ debitFault: 'x' }))).toBe('sign-new');
    expect(outcome(next(), head, facts({ debitFault: 'x' }))).toBe('sign-new');
  });
});

describe('the custody set', () => {
  const members = ['n1', 'n2', 'n3', 'n4', 'n5'];
  it('is the home, then the members of highest sha256(zid|peer), R in all, majority ⌊R/2⌋ + 1', () => {
    const set = custodySetOf(zid, 'n3', members, 3);
    const ranked = members.filter((m) => m !== 'n3').sort((a, b) => (rankWeight(zid, a) < rankWeight(zid, b) ? 1 : -1));
    expect(set).toEqual({ home: 'n3', custodians: ['n3', ranked[0], ranked[1]], majority: 2 });
  });
  it('is smaller with fewer members, the home alone when there are none (majority 1)', () => {
    expect(custodySetOf(zid, 'h', ['h', 'x'], 3)).toEqual({ home: 'h', custodians: ['h', 'x'], majority: 2 });
    expect(custodySetOf(zid, 'h', [], 3)).toEqual({ home: 'h', custodians: ['h'], majority: 1 });
    expect(custodySetOf(zid, 'h', members, 1)).toEqual({ home: 'h', custodians: ['h'], majority: 1 });
  });
  it('does not depend on the order the members are listed in', () => {
    expect(custodySetOf(zid, 'n1', [...members].reverse(), 3)).toEqual(custodySetOf(zid, 'n1', members, 3));
  });
});

// What a custodian does with a proposed entry (docs/protocol.md §19), as a table: the identity's state at this
// custodian (`fresh`: it holds nothing of it; `holding`: it holds entries up to a head) and, row by row in order, the
// first check the entry fails decides the refusal. An entry that passes every row is signed and becomes the head.
// The rows that make two different entries of one slot impossible are `slot-taken` (this custodian signed another
// entry for that (zid, epoch, seq)) and `seq` / `behind` (only the next slot is ever signed). No row reads an entry's
// `attempt`: a later attempt's entry at a slot signed here is `slot-taken` too (docs/decisions.md "Custody", "Custodians
// keep one entry per slot"); a failover candidate orders heads by it (failover-rules.ts HEAD_ORDER). Pure: the caller reads the facts
// (the slot's record, whether the transfer id was seen, what is wrong with a credit's debit certificate) first.
import type { CustodyEntry } from './entry.js';

export type CustodianState = 'fresh' | 'holding';

/** The identity at this custodian: its head (the last entry it signed) and the epoch it is fenced at. */
export interface HeldHead {
  epoch: number;
  seq: number;
  hash: string;
  /** The head entry's attempt (entry.ts; absent: 0): its promise shows it. */
  attempt?: number;
  /** The epoch below which this custodian signs nothing for the identity (the highest epoch it accepted). */
  fenced_below: number;
  balance: { free: number; paid: number } | null;
  /** The node that proposed the entries held (the identity's home). */
  home: string;
  /** The members the set of the head's epoch passes over, as its epoch entry names them (absent: none). */
  excluded?: string[];
}

/** Why a custodian refuses an entry (the answer's `code`). */
export type Refusal =
  'not-home' | 'fenced' | 'records-mismatch' | 'slot-taken' | 'behind' | 'seq' | 'prev-hash' | 'balance' | 'transfer-reused' | 'debit-uncertified';

export interface Facts {
  /** The epoch below which this custodian signs nothing for the identity: the highest it accepted or promised (0: none). */
  fencedBelow: number;
  /** The sender is the identity's home for this epoch (the identity directory says so). */
  fromHome: boolean;
  /** Hash of the entry this custodian signed for the entry's slot, or null. */
  slotHash: string | null;
  /** The transfer id of the entry was carried by an earlier entry of the identity here. */
  transferSeen: boolean;
  /** For a credit: why the debit certificate sent with it does not certify it (debit-certificate.ts), else null. */
  debitFault: string | null;
  /** Why the records sent with the entry are not the ones its digest covers, or not the identity's (replica.ts), else null. */
  recordsFault: string | null;
}

export type Decision = { to: 'holding'; sign: 'new' | 'again' } | { to: CustodianState; refuse: Refusal; reason: string };

interface Row {
  from: readonly CustodianState[];
  refuse: Refusal | 'again';
  /** True when the row applies (the entry fails this check, or for 'again' is the one already signed). */
  test: (e: CustodyEntry, head: HeldHead | null, f: Facts, hash: string) => boolean;
  reason: (e: CustodyEntry, head: HeldHead | null, f: Facts) => string;
}

const BOTH = ['fresh', 'holding'] as const;
const HOLDING = ['holding'] as const;

/**
 * An epoch entry of an epoch above the head's opens that epoch on the chain its new home took from its promises
 * (promise.ts): it is signed on any seq, as a fresh custodian signs its first entry, and the entries after it chain on it.
 */
function opensEpoch(e: CustodyEntry, h: HeldHead): boolean {
  return e.kind === 'epoch' && e.epoch > h.epoch;
}

/** The rows, in the order they are checked. */
export const CUSTODIAN_ROWS: readonly Row[] = [
  {
    from: BOTH,
    refuse: 'fenced',
    test: (e, _h, f) => e.epoch < f.fencedBelow,
    reason: (e, _h, f) => `epoch ${e.epoch} is fenced (this custodian is at ${f.fencedBelow})`,
  },
  { from: BOTH, refuse: 'not-home', test: (_e, _h, f) => !f.fromHome, reason: () => 'the sender is not the identity’s home' },
  { from: BOTH, refuse: 'records-mismatch', test: (_e, _h, f) => f.recordsFault !== null, reason: (_e, _h, f) => f.recordsFault! },
  { from: BOTH, refuse: 'again', test: (_e, _h, f, hash) => f.slotHash === hash, reason: () => 'signed already' },
  { from: BOTH, refuse: 'slot-taken', test: (_e, _h, f) => f.slotHash !== null, reason: (e) => `another entry is signed for seq ${e.seq} of epoch ${e.epoch}` },
  {
    from: BOTH,
    refuse: 'behind',
    test: (e, h) => e.seq > (h?.seq ?? 0) + 1,
    reason: (e, h) => `this custodian holds up to seq ${h?.seq ?? 0}, not ${e.seq - 1}: it catches up before it signs`,
  },
  {
    from: HOLDING,
    refuse: 'seq',
    test: (e, h) => !opensEpoch(e, h!) && e.seq !== h!.seq + 1,
    reason: (e, h) => `seq ${e.seq} is not the next (${h!.seq + 1})`,
  },
  {
    from: HOLDING,
    refuse: 'prev-hash',
    test: (e, h) => !opensEpoch(e, h!) && e.prev_hash !== h!.hash,
    reason: () => 'prev_hash is not the hash of the last entry',
  },
  {
    from: BOTH,
    refuse: 'balance',
    test: (e) => e.balance !== null && (e.balance.free < 0 || e.balance.paid < 0),
    reason: (e) => `the balance would be below zero (${e.balance!.free} free, ${e.balance!.paid} paid)`,
  },
  {
    from: BOTH,
    refuse: 'transfer-reused',
    test: (e, _h, f) => e.transfer !== null && f.transferSeen,
    reason: (e) => `transfer ${e.transfer!.id} was applied already`,
  },
  {
    from: BOTH,
    refuse: 'debit-uncertified',
    test: (e, _h, f) => e.transfer?.side === 'credit' && f.debitFault !== null,
    reason: (_e, _h, f) => `the sender's debit is not certified: ${f.debitFault!}`,
  },
];

/**
 * The decision for `entry` (its hash `hash`) given the identity's head here (null: fresh). A custodian signs only the
 * entry after the last it holds: fresh, the identity's first; past its head, it is `behind` and catches up first.
 */
export function decide(entry: CustodyEntry, hash: string, head: HeldHead | null, facts: Facts): Decision {
  const state: CustodianState = head === null ? 'fresh' : 'holding';
  for (const row of CUSTODIAN_ROWS) {
    if (!row.from.includes(state) || !row.test(entry, head, facts, hash)) continue;
    if (row.refuse === 'again') return { to: 'holding', sign: 'again' };
    return { to: state, refuse: row.refuse, reason: row.reason(entry, head, facts) };
  }
  return { to: 'holding', sign: 'new' };
}

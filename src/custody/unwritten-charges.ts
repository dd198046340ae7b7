// The charges a home made and never wrote (docs/decisions.md "Custody", "What a failover moves"): a home that stops
// after a custodian signed its entry and before its own batch leaves the entry signed and unwritten; the next home
// takes the chain of the highest head its promises show, that entry on it, and certifies it in its epoch. The
// identity's ledger then holds the charge (its wallet, its running total, its envelope), while the node totals that
// count it (charged, burned, foundation, sealed) are the stopped home's, which never wrote it. When that node writes
// the chain (it takes the next home's chain back, or the identity again), it counts each such charge once: an entry
// of an epoch it was the home of, absent from its log of written entries, whose records raise the identity's
// running total of credits charged, and not counted before (the marks of those counted are kept by entry hash, written
// with the count). Pure: it reads the links' records.
import { chargedCounter } from '../store/counter-keys.js';
import { IDENTITY_RECORD_PREFIX } from '../store/counters.js';
import { entryHash, type CustodyEntry } from './entry.js';
import { LEDGER_SUBLEVELS } from './ledger-ops.js';
import type { EntryRecords } from './protocol.js';
import type { UnwrittenCharge } from '../tally/ledger.js';

/**
 * The charges of `links` (a checked chain of `zid`, in seq order from its first entry) that `unwritten` says this
 * node made and never wrote (given each entry and its hash), each with its entry and the entry's hash.
 */
export function unwrittenCharges(
  zid: string,
  links: readonly { entry: CustodyEntry; records: EntryRecords }[],
  unwritten: (entry: CustodyEntry, hash: string) => boolean,
): (UnwrittenCharge & { hash: string; entry: CustodyEntry })[] {
  const out: (UnwrittenCharge & { hash: string; entry: CustodyEntry })[] = [];
  const recordKey = `${IDENTITY_RECORD_PREFIX}${zid}`;
  const name = chargedCounter(zid);
  let charged = 0;
  let balance: number | null = null;
  for (const { entry, records } of links) {
    let after = charged;
    for (const op of records.ops) {
      if (op[0] !== 'put' || op[1] !== LEDGER_SUBLEVELS.counters || op[2] !== recordKey) continue;
      const value = (JSON.parse(op[3]) as Record<string, unknown>)[name];
      if (typeof value === 'number' && Number.isSafeInteger(value)) after = value;
    }
    const next: number | null = entry.balance === null ? balance : entry.balance.free + entry.balance.paid;
    // The wallet's fall bounds the cost where the wallet before is known: the first entry's running total may hold
    // charges made before the identity had custodians (no entries), which are not this entry's.
    const cost = balance === null || next === null ? after - charged : Math.min(after - charged, balance - next);
    if (cost > 0) {
      const hash = entryHash(entry);
      if (unwritten(entry, hash)) out.push({ cost, chargedBefore: after - cost, sealed: entry.kind === 'seal', hash, entry });
    }
    charged = after;
    balance = next;
  }
  return out;
}

// State transfer (docs/protocol.md §19, docs/decisions.md "Custody"): a run of an identity's entries with their
// records, as a node that holds them answers a `fetch` (protocol.ts ChainLink), checked and turned into the store ops
// that write the identity's ledger as its home holds it. Pure: no clock, no I/O (the store only names sublevels).
//
// The API the failover and catch-up build on:
//   checkChain(zid, links, after, quorum, verify)  the run continues `after` (seq + 1, prev_hash, epoch never lower),
//                                                  every records digest holds and names only the identity's ledger,
//                                                  and each entry carries `quorum.needed` signatures of accepted nodes
//   replayOps(store, links)                        the records of a checked run, in order, as store ops
//   linkOf(held, …)                                what a node answers for an entry it holds
// The fetch itself is client.ts chainFetcher / fetchChain.
import { JsonText, type Op, type Store } from '../store/db.js';
import { entryHash, FIRST_EPOCH, GENESIS_ENTRY_HASH, verifyEntrySignature, type EntrySignature } from './entry.js';
import { CHAIN_PAGE_BYTES, MAX_CHAIN_LINKS, recordsDigest, recordsSize, type ChainLink, type EntryRecords } from './protocol.js';

/** Where a run continues: the last entry before it (seq 0 and 64 zeros: the run starts at the identity's first entry). */
export interface ChainHead {
  epoch: number;
  seq: number;
  hash: string;
}

export const GENESIS_HEAD: ChainHead = { epoch: FIRST_EPOCH, seq: 0, hash: GENESIS_ENTRY_HASH };

/** Whose signatures count, and how many distinct ones each entry needs. */
export interface Quorum {
  accepts: (node: string) => boolean;
  needed: number;
}

export type ChainFault = 'zid' | 'seq' | 'prev-hash' | 'epoch' | 'records-mismatch' | 'signatures';

export type ChainCheck = { ok: true; head: ChainHead } | { ok: false; seq: number; fault: ChainFault; reason: string };

/**
 * Why `records` are not the identity's own (a record of another identity's wallet or indexes), else null. Envelope
 * records and audit rows are keyed by token id and by machine: a write that moves an envelope or appends to a shared
 * machine carries them in every identity's records.
 */
export function recordsFault(zid: string, records: EntryRecords): string | null {
  for (const op of records.ops) {
    const [, sub, key] = op;
    if (sub === 'wallets' && key !== zid) return `a record of another wallet (${key})`;
    if ((sub === 'env_owner' || sub === 'env_folder') && !key.startsWith(`${zid}!`)) return `a record of another identity's ${sub} (${key})`;
  }
  return null;
}

/** Check a run of `zid`'s entries continuing `after`; `quorum` null: the signatures are not counted. */
export function checkChain(
  zid: string,
  links: readonly ChainLink[],
  after: ChainHead,
  quorum: Quorum | null,
  verify: (signer: string, text: string, signature: string) => boolean,
): ChainCheck {
  let head = after;
  for (const { entry, records, signatures } of links) {
    const fail = (fault: ChainFault, reason: string): ChainCheck => ({ ok: false, seq: entry.seq, fault, reason });
    if (entry.zid !== zid) return fail('zid', `an entry of ${entry.zid}, not of ${zid}`);
    if (entry.seq !== head.seq + 1) return fail('seq', `seq ${entry.seq} does not follow ${head.seq}`);
    if (entry.prev_hash !== head.hash) return fail('prev-hash', `prev_hash of seq ${entry.seq} is not the hash of seq ${head.seq}`);
    if (entry.epoch < head.epoch) return fail('epoch', `epoch ${entry.epoch} of seq ${entry.seq} is below ${head.epoch}`);
    if (recordsDigest(records) !== entry.records) return fail('records-mismatch', `the records of seq ${entry.seq} do not hash to its digest`);
    const foreign = recordsFault(zid, records);
    if (foreign !== null) return fail('records-mismatch', `seq ${entry.seq} carries ${foreign}`);
    const hash = entryHash(entry);
    if (quorum !== null) {
      const signers = new Set<string>();
      for (const s of signatures) {
        if (!quorum.accepts(s.node)) continue;
        if (!verifyEntrySignature(verify, hash, s)) return fail('signatures', `the signature of ${s.node} on seq ${entry.seq} does not verify`);
        signers.add(s.node);
      }
      if (signers.size < quorum.needed)
        return fail('signatures', `seq ${entry.seq} carries ${signers.size} signatures that count; ${quorum.needed} are needed`);
    }
    head = { epoch: entry.epoch, seq: entry.seq, hash };
  }
  return { ok: true, head };
}

/** The store ops that write a checked run's records, in order: the identity's ledger as its home wrote it. */
export function replayOps(store: Store, links: readonly ChainLink[]): Op[] {
  const ops: Op[] = [];
  for (const { records } of links) {
    for (const op of records.ops) {
      const sub = store.sub(op[1]);
      if (op[0] === 'del') ops.push({ type: 'del', sub, key: op[2] });
      else ops.push({ type: 'put', sub, key: op[2], value: op[0] === 'put' ? new JsonText(op[3]) : Buffer.from(op[3], 'base64') });
    }
  }
  return ops;
}

/** An entry as a node that holds it answers it: with the signatures it holds. */
export function linkOf(
  held: { entry: ChainLink['entry']; records?: EntryRecords; certificate?: ChainLink['certificate'] },
  signatures: EntrySignature[],
): ChainLink {
  return { entry: held.entry, records: held.records ?? { v: 1, ops: [] }, signatures, certificate: held.certificate ?? null };
}

/** The first links of `links` that fill a page: at most MAX_CHAIN_LINKS and CHAIN_PAGE_BYTES of records (one at least). */
export function pageOf(links: readonly ChainLink[]): { links: ChainLink[]; more: boolean } {
  let bytes = 0;
  let end = 0;
  while (end < links.length && end < MAX_CHAIN_LINKS) {
    bytes += recordsSize(links[end]!.records) + 1024;
    if (end > 0 && bytes > CHAIN_PAGE_BYTES) break;
    end++;
  }
  return { links: links.slice(0, end), more: end < links.length };
}

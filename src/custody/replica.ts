// State transfer (docs/protocol.md §19, docs/decisions.md "Custody"): a run of an identity's entries with their
// records, as a node that holds them answers a `fetch` (protocol.ts ChainLink), checked and turned into the store ops
// that write the identity's ledger as its home holds it. Pure: no clock, no I/O (the store only names sublevels).
//
// The API the failover and catch-up build on:
//   checkChain(zid, links, after, quorum, verify)  the run continues `after` (seq + 1, prev_hash, epoch never lower),
//                                                  every records digest holds and names only the identity's ledger,
//                                                  and each entry carries `quorum.needed` signatures of accepted nodes
//   replayOps(store, links, onto?)                 the records of a checked run, in order, as store ops (onto: over a
//                                                  node's own ledger, envelope records of other owners left alone)
//   linkOf(held, …)                                what a node answers for an entry it holds
// The fetch itself is client.ts chainFetcher / fetchChain.
import { JsonText, type Op, type Store } from '../store/db.js';
import { entryHash, FIRST_EPOCH, GENESIS_ENTRY_HASH, verifyEntrySignature, type EntrySignature } from './entry.js';
import {
  CHAIN_PAGE_BYTES,
  MAX_CHAIN_LINKS,
  recordsDigest,
  recordsSize,
  type ChainLink,
  type EntryRecords,
  type RecordOp,
  type RecordSublevel,
} from './protocol.js';
import { identityOfDayCounter } from '../store/counter-keys.js';
import { IDENTITY_RECORD_PREFIX } from '../store/counters.js';

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

/** Sublevels whose records ride with an identity's ledger records and are only ever written (ledger-ops.ts addRiders). */
const RIDERS = new Set<RecordSublevel>(['results', 'result_index', 'record', 'record_by_owner', 'counters', 'transfers', 'transfer_outbox']);

/**
 * Why `records` are not the identity's own (a record of another identity's wallet, tier, indexes, results, counters
 * or transfers), else null. Envelope records and audit rows are keyed by token id and by machine: a write that moves an
 * envelope or appends to a shared machine carries them in every identity's records. A sealed result is the
 * identity's when an envelope of the identity in the same records names it; an outbox entry when the identity sends
 * the transfer of the same records it names.
 */
export function recordsFault(zid: string, records: EntryRecords): string | null {
  let results: Set<string> | null = null;
  let sent: Set<string> | null = null;
  // Envelopes and transfers are read only for a records that holds a result or an outbox entry (a folder move holds
  // thousands of envelopes and neither).
  const named = records.ops.some((op) => op[1] === 'results' || op[1] === 'transfer_outbox');
  for (const op of named ? records.ops : []) {
    if (op[0] === 'put' && op[1] === 'envelopes') {
      const e = jsonOf(op[3]) as { owner?: unknown; result_id?: unknown } | null;
      if (e?.owner === zid && typeof e.result_id === 'string') (results ??= new Set()).add(e.result_id);
    } else if (op[0] === 'put' && op[1] === 'transfers' && (jsonOf(op[3]) as { from?: unknown } | null)?.from === zid) (sent ??= new Set()).add(op[2]);
  }
  for (const op of records.ops) {
    const [kind, sub, key] = op;
    if (sub === 'wallets' && key !== zid) return `a record of another wallet (${key})`;
    if (sub === 'tiers' && key !== zid) return `a record of another identity's tier (${key})`;
    if ((sub === 'env_owner' || sub === 'env_folder' || sub === 'record_by_owner' || sub === 'transfer_credits') && !key.startsWith(`${zid}!`))
      return `a record of another identity's ${sub} (${key})`;
    if (!RIDERS.has(sub)) continue;
    if (kind !== 'put' && !(kind === 'put64' && sub === 'results')) return `a ${kind} of ${sub} (${key})`;
    const value = kind === 'put' ? (jsonOf(op[3]) as { owner?: unknown; from?: unknown; to?: unknown } | null) : null;
    if (sub === 'results' && results?.has(key) !== true) return `a result no envelope of ${zid} names (${key})`;
    if ((sub === 'result_index' || sub === 'record') && value?.owner !== zid) return `a ${sub} record of another owner (${key})`;
    if (sub === 'counters' && key !== `${IDENTITY_RECORD_PREFIX}${zid}` && identityOfDayCounter(key) !== zid) return `another counter record (${key})`;
    if (sub === 'transfers' && value?.from !== zid && value?.to !== zid) return `a transfer of other parties (${key})`;
    if (sub === 'transfer_outbox' && sent?.has(key) !== true) return `an outbox entry of a transfer ${zid} does not send (${key})`;
  }
  return null;
}

function jsonOf(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
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

/**
 * What a replay writes over: the identity whose run it is, the owner of each envelope record the node holds now (by
 * token id; undefined: none), read just before the replay's batch (envelopeTokens names the ones to read), and which
 * of those owners are homed on this node.
 */
export interface ReplayOnto {
  zid: string;
  owners: ReadonlyMap<string, string | undefined>;
  homedHere: ReadonlySet<string>;
}

/**
 * The store ops that write a checked run's records, in order: the identity's ledger as its home wrote it. With
 * `onto`, over a node's own ledger: an envelope record is keyed by token id, so the run's records of an envelope
 * that left the identity (a debit deletes it, a same-node transfer rewrites it for its new owner) are not the node's
 * to write when another owner's record is there (a credit this node made to an identity homed here); the record the
 * run ends on is written when it is the identity's, but over the record of another identity homed here (its home's
 * ledger says it holds the envelope now: the run is one fetched before the envelope left), and a copy the node holds
 * as the identity's is deleted when the run ends with the envelope gone from it.
 */
export function replayOps(store: Store, links: readonly Pick<ChainLink, 'records'>[], onto?: ReplayOnto): Op[] {
  const ops: Op[] = [];
  const last = new Map<string, RecordOp>();
  for (const { records } of links) {
    for (const op of records.ops) {
      if (onto !== undefined && op[1] === 'envelopes') {
        last.delete(op[2]);
        last.set(op[2], op);
        continue;
      }
      ops.push(opOf(store, op));
    }
  }
  for (const [token, op] of last) {
    const owner = op[0] === 'put' ? (jsonOf(op[3]) as { owner?: unknown } | null)?.owner : undefined;
    const holder = onto!.owners.get(token);
    if (owner === onto!.zid) {
      if (holder === undefined || holder === onto!.zid || !onto!.homedHere.has(holder)) ops.push(opOf(store, op));
    } else if (holder === onto!.zid) ops.push({ type: 'del', sub: store.sub(op[1]), key: token });
  }
  return ops;
}

function opOf(store: Store, op: RecordOp): Op {
  const sub = store.sub(op[1]);
  if (op[0] === 'del') return { type: 'del', sub, key: op[2] };
  return { type: 'put', sub, key: op[2], value: op[0] === 'put' ? new JsonText(op[3]) : Buffer.from(op[3], 'base64') };
}

/** The token ids of the envelope records a run writes or deletes. */
export function envelopeTokens(links: readonly Pick<ChainLink, 'records'>[]): string[] {
  const out = new Set<string>();
  for (const { records } of links) for (const op of records.ops) if (op[1] === 'envelopes') out.add(op[2]);
  return [...out];
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

/**
 * The links that chain back from the one of hash `last` to the first entry, in seq order: a holder may keep entries
 * of a slot's earlier epoch that the chain does not take (signed, never certified). Empty when `last` is not there.
 */
export function chainEndingOn<L extends Pick<ChainLink, 'entry'>>(links: readonly L[], last: string): L[] {
  const byHash = new Map(links.map((l) => [entryHash(l.entry), l]));
  const out: L[] = [];
  for (let l = byHash.get(last); l !== undefined; l = byHash.get(l.entry.prev_hash)) {
    out.push(l);
    if (l.entry.seq === 1) break;
  }
  return out.reverse();
}

/**
 * The highest `seq` of the envelope records a run writes (0: none). A node numbers the envelopes it writes from its
 * own node-wide counter, and an identity's index keys end in that seq: the home that takes a chain counts on from
 * above it, so an envelope it writes for the identity never takes the index key of one the chain brought.
 */
export function highestEnvelopeSeq(links: readonly { records: EntryRecords }[]): number {
  let top = 0;
  for (const { records } of links) {
    for (const op of records.ops) {
      if (op[0] !== 'put' || op[1] !== 'envelopes') continue;
      const seq = (jsonOf(op[3]) as { seq?: unknown } | null)?.seq;
      if (typeof seq === 'number' && seq > top) top = seq;
    }
  }
  return top;
}

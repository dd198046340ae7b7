// The one seam of custody: every write of the node passes the store's gate (store/db.ts CommitGate), and this reader
// finds in a write's records the identities whose ledger it changes: their wallet (`wallets`, keyed by zid), their
// envelopes (`envelopes` by owner, the owner and folder indexes keyed `zid!…`), the transfers credited to them
// (`transfer_credits`, keyed `zid!…`), their tier (`tiers`, keyed by zid: an operator's grant of a tier is an entry
// even where it moves no credit). The write's audit-chain rows go into
// each such identity's records. An envelope's record written or deleted by a write that takes envelopes from an
// identity (a transfer's debit, a slashing: the write deletes that identity's owner-index keys) is also that identity's:
// its copy of the ledger must not keep the envelope as its own. A transfer record in the same write names the transfer it debits or credits
// (its id, parties, face value and envelopes), and a credit's record carries the sender's debit certificate.
// What a reader of the identity needs at another home rides in its records (addRiders): the sealed result its
// envelope names and the result's record rows, its counter record and its day counters (computations, claim, chat
// messages of the day: `used:`, `claimed:`, `chat:` + day + zid), its transfer records and their outbox entries.
// Writes that touch no wallet and no envelope (a machine's own events, sessions, the peer store) are not entries, nor
// are the changes of an account that is no identity (the foundation's).
import { identityOfDayCounter } from '../store/counter-keys.js';
import { IDENTITY_RECORD_PREFIX } from '../store/counters.js';
import { JsonText, type Op, type Store, type Sublevel } from '../store/db.js';
import { debitCertificateSchema, type DebitCertificate } from './debit-certificate.js';
import { tokensDigest, ZID_PATTERN, type EntryKind, type EntryTransfer } from './entry.js';
import { recordsDigest, type EntryRecords, type RecordOp, type RecordSublevel } from './protocol.js';

/** The sublevels this reader knows, by their store names (the ledger's, the chain's and the transfers'). */
export const LEDGER_SUBLEVELS = {
  wallets: 'wallets',
  envelopes: 'envelopes',
  byOwner: 'env_owner',
  byFolder: 'env_folder',
  results: 'results',
  transfers: 'transfers',
  chainRows: 'chain_rows',
  resultIndex: 'result_index',
  record: 'record',
  recordByOwner: 'record_by_owner',
  counters: 'counters',
  outbox: 'transfer_outbox',
  credits: 'transfer_credits',
  tiers: 'tiers',
} as const;

/** What one write does to one identity's ledger. */
export interface LedgerChange {
  zid: string;
  kind: EntryKind;
  /** SHA-256 over the write's records of this identity and its chain rows, in the write's order (protocol.ts recordsDigest). */
  records: string;
  /** Those records, as they travel with the entry. */
  recordOps: EntryRecords;
  balance: { free: number; paid: number } | null;
  /** The transfer the write debits or credits for this identity, else null. */
  transfer: EntryTransfer | null;
  /** A credit's debit certificate, as the receiver's transfer record carries it (null for anything else). */
  certificate: DebitCertificate | null;
}

export class LedgerOpsReader {
  private readonly names = new Map<Sublevel, string>();

  constructor(store: Store) {
    for (const name of Object.values(LEDGER_SUBLEVELS)) this.names.set(store.sub(name, name === LEDGER_SUBLEVELS.results ? 'bytes' : 'json'), name);
  }

  /** Does the write put a transfer record? (A debit is certified even where its home holds the identity alone.) */
  putsTransfer(ops: readonly Op[]): boolean {
    for (const op of ops) if (op.type === 'put' && this.names.get(op.sub) === LEDGER_SUBLEVELS.transfers) return true;
    return false;
  }

  /** The identities a write changes, each once (in the order the write first names them); empty for any other write. */
  changes(ops: readonly Op[]): LedgerChange[] {
    let byZid: Map<string, { ops: Op[]; balance: { free: number; paid: number } | null }> | null = null;
    let sealed = false;
    let rows: Op[] | null = null;
    let transfers: Op[] | null = null;
    const losers = this.losers(ops);
    for (const op of ops) {
      const name = this.names.get(op.sub);
      if (name === undefined) continue;
      let zid: string | undefined;
      if (name === LEDGER_SUBLEVELS.wallets || name === LEDGER_SUBLEVELS.tiers) zid = op.key;
      else if (name === LEDGER_SUBLEVELS.envelopes) {
        zid = op.type === 'put' ? ((op.value as { owner?: unknown }).owner as string | undefined) : undefined;
        if (losers !== null) for (const loser of losers) if (loser !== zid) byZid = this.add(byZid, loser, op);
      } else if (name === LEDGER_SUBLEVELS.byOwner || name === LEDGER_SUBLEVELS.byFolder || name === LEDGER_SUBLEVELS.credits)
        zid = op.key.slice(0, op.key.indexOf('!'));
      else if (name === LEDGER_SUBLEVELS.results) sealed = sealed || op.type === 'put';
      else if (name === LEDGER_SUBLEVELS.chainRows) (rows ??= []).push(op);
      else if (name === LEDGER_SUBLEVELS.transfers && op.type === 'put') (transfers ??= []).push(op);
      // An account that is no identity (the node's foundation account, slashing.ts) has no home and no custody set.
      if (zid === undefined || !ZID_PATTERN.test(zid)) continue;
      byZid = this.add(byZid, zid, op);
      if (name === LEDGER_SUBLEVELS.wallets && op.type === 'put') {
        const w = op.value as { free: number; paid: number };
        byZid.get(zid)!.balance = { free: w.free, paid: w.paid };
      }
    }
    if (byZid === null) return [];
    this.addRiders(byZid, ops);
    const out: LedgerChange[] = [];
    for (const [zid, c] of byZid) {
      const moved = transferOf(zid, transfers);
      // A grant of a tier alone is a grant, as one that moves credits.
      const granted = c.balance !== null || c.ops.some((op) => this.names.get(op.sub) === LEDGER_SUBLEVELS.tiers);
      const kind: EntryKind = moved !== null ? 'transfer' : sealed ? 'seal' : granted ? 'wallet' : 'envelope';
      const recordOps = this.recordsOf(rows === null ? c.ops : [...c.ops, ...rows]);
      out.push({
        zid,
        kind,
        records: recordsDigest(recordOps),
        recordOps,
        balance: c.balance,
        transfer: moved?.transfer ?? null,
        certificate: moved?.certificate ?? null,
      });
    }
    return out;
  }

  private add(
    byZid: Map<string, { ops: Op[]; balance: { free: number; paid: number } | null }> | null,
    zid: string,
    op: Op,
  ): Map<string, { ops: Op[]; balance: { free: number; paid: number } | null }> {
    byZid ??= new Map();
    let c = byZid.get(zid);
    if (c === undefined) byZid.set(zid, (c = { ops: [], balance: null }));
    c.ops.push(op);
    return byZid;
  }

  /**
   * What rides with an identity's ledger records in the same write, for an identity the write already changes (a
   * rider alone makes no entry): its sealed result (named by its envelope), the result's record rows (by their
   * owner), its counter record and day counters (by the zid their key ends in), and its transfer records with their
   * outbox entries (a transfer's record is both parties'; its outbox entry the sender's).
   */
  private addRiders(byZid: Map<string, { ops: Op[]; balance: { free: number; paid: number } | null }>, ops: readonly Op[]): void {
    let resultOwners: Map<string, string> | null = null;
    let senders: Map<string, string> | null = null;
    for (const op of ops) {
      if (op.type !== 'put') continue;
      const name = this.names.get(op.sub);
      if (name === LEDGER_SUBLEVELS.envelopes) {
        const e = op.value as { owner?: unknown; result_id?: unknown };
        if (typeof e.owner === 'string' && typeof e.result_id === 'string') (resultOwners ??= new Map()).set(e.result_id, e.owner);
      } else if (name === LEDGER_SUBLEVELS.transfers) {
        const from = (op.value as MovedRecord).from;
        if (typeof from === 'string') (senders ??= new Map()).set(op.key, from);
      }
    }
    const ride = (zid: unknown, op: Op) => {
      if (typeof zid === 'string') byZid.get(zid)?.ops.push(op);
    };
    for (const op of ops) {
      if (op.type !== 'put') continue;
      const name = this.names.get(op.sub);
      const value = op.value as { owner?: unknown } & MovedRecord;
      if (name === LEDGER_SUBLEVELS.results) ride(resultOwners?.get(op.key), op);
      else if (name === LEDGER_SUBLEVELS.resultIndex || name === LEDGER_SUBLEVELS.record) ride(value.owner, op);
      else if (name === LEDGER_SUBLEVELS.recordByOwner) ride(op.key.slice(0, op.key.indexOf('!')), op);
      else if (name === LEDGER_SUBLEVELS.counters)
        ride(op.key.startsWith(IDENTITY_RECORD_PREFIX) ? op.key.slice(IDENTITY_RECORD_PREFIX.length) : identityOfDayCounter(op.key), op);
      else if (name === LEDGER_SUBLEVELS.transfers) {
        ride(value.from, op);
        if (value.to !== value.from) ride(value.to, op);
      } else if (name === LEDGER_SUBLEVELS.outbox) ride(senders?.get(op.key), op);
    }
  }

  /** The identities whose owner-index keys the write deletes (it takes envelopes from them), else null. */
  private losers(ops: readonly Op[]): Set<string> | null {
    let out: Set<string> | null = null;
    for (const op of ops) {
      if (op.type !== 'del' || this.names.get(op.sub) !== LEDGER_SUBLEVELS.byOwner) continue;
      const zid = op.key.slice(0, op.key.indexOf('!'));
      if (ZID_PATTERN.test(zid)) (out ??= new Set()).add(zid);
    }
    return out;
  }

  private recordsOf(ops: readonly Op[]): EntryRecords {
    const out: RecordOp[] = [];
    for (const op of ops) {
      const name = this.names.get(op.sub) as RecordSublevel;
      if (op.type === 'del') out.push(['del', name, op.key]);
      else {
        const v = valueText(op.value);
        out.push(typeof v === 'string' ? ['put', name, op.key, v] : ['put64', name, op.key, Buffer.from(v).toString('base64')]);
      }
    }
    return { v: 1, ops: out };
  }
}

/** The fields of a transfer record (tally/transfer-wire.ts TransferRecord) this reader needs. */
interface MovedRecord {
  from?: unknown;
  to?: unknown;
  token_ids?: unknown;
  face_value_total?: unknown;
  debit_certificate?: unknown;
}

/** The transfer of the write that moves envelopes from or to `zid` (its side for `zid`), else null. */
function transferOf(zid: string, transfers: readonly Op[] | null): { transfer: EntryTransfer; certificate: DebitCertificate | null } | null {
  if (transfers === null) return null;
  for (const op of transfers) {
    if (op.type !== 'put') continue;
    const t = op.value as MovedRecord;
    if (t.from !== zid && t.to !== zid) continue;
    const side = t.from === zid ? 'debit' : 'credit';
    const transfer: EntryTransfer = {
      id: op.key,
      side,
      party: String(side === 'debit' ? t.to : t.from),
      amount: typeof t.face_value_total === 'number' ? t.face_value_total : 0,
      tokens: tokensDigest(Array.isArray(t.token_ids) ? t.token_ids.map(String) : []),
    };
    // A certificate that is not one goes as none: the custodians refuse the credit (debit-uncertified).
    const certificate = side === 'credit' ? (debitCertificateSchema.safeParse(t.debit_certificate).data ?? null) : null;
    return { transfer, certificate };
  }
  return null;
}

/** A value as its (JSON) sublevel writes it: the JSON text (a string too is JSON text, quoted), or bytes as they are. */
function valueText(value: unknown): string | Uint8Array {
  if (value instanceof JsonText) return value.text;
  if (value instanceof Uint8Array) return value;
  return JSON.stringify(value) ?? 'null';
}

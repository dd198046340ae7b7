// Transfers of envelopes between identities (spec 4.6 transfer-bulk; architecture.md §7). Movable envelopes only:
// paid-funded, not bonded. Written at the sender's home, under the sender's EnvelopeLocks (the records are read from
// the store, so a folder move, a bond or another transfer of the same identity must not interleave).
//   same node:  one batch moves the envelopes (records, owner and folder indexes), both identities' counters, an
//               audit row on each identity's chain and the transfer record (delivered); where custodians certify
//               either identity's ledger writes, it goes as between nodes, delivered here with no request.
//   cross node: the two-ledger transfer. At the sender's home one batch removes the envelopes, writes the sender's
//               counters and audit row, the transfer record (pending, carrying the envelopes) and its outbox entry;
//               the delivery loop (transfer-delivery.ts) sends it, with the other transfers due to the same home, to
//               the receiver's home until acknowledged, with the sender's debit certificate (custody/debit-
//               certificate.ts), which the receiver's home checks. The receiver's home credits it in one batch keyed by the
//               transfer id, so a second delivery is answered as a duplicate and applied once; the sender's home
//               then marks it delivered and drops the outbox entry.
// The records and the delivery's wire (schemas, bounds, acknowledgements) are transfer-wire.ts.
import { ServiceError } from '../kernel/errors.js';
import { canonicalJson } from '../kernel/canonical.js';
import { sha256Hex } from '../kernel/bytes.js';
import { Xoshiro128, stateFromText } from '../numerics/prng.js';
import { padNum, type Op, type Store, type Sublevel } from '../store/db.js';
import type { Counters } from '../store/counters.js';
import type { ChainService } from '../chain/service.js';
import type { IdentityService } from '../identity/service.js';
import { envelopeCounter, folderCounter } from '../store/counter-keys.js';
import { TOKEN_ID_PATTERN, type EnvelopeLocks } from './folders.js';
import { ENVELOPE_SUBS, type EnvelopeRecord } from './ledger.js';
import { randomHex } from '../util/random-hex.js';
import { whileHeld } from '../util/bounded-map.js';
import type { DebitCertificateRecord, DebitCheck, DebitRecertify } from '../records/types.js';
import {
  MAX_TRANSFER_ENVELOPES,
  TRANSFER_ID_PATTERN,
  viewOf,
  type DeliveryAnswers,
  type DeliveryBatch,
  type DeliveryBody,
  type TransferAck,
  type TransferRecord,
  type TransferRefusal,
  type TransferRequest,
  type TransferView,
  type TravellingEnvelope,
} from './transfer-wire.js';
import { keyAfter } from '../util/range-cursor.js';

/** The folder a received envelope lands in. */
export const RECEIVED_FOLDER = 'inbox';
/** Envelope records read per step when choosing `count` of them. */
const PAGE = 1000;

export interface TransfersDeps {
  store: Store;
  counters: Counters;
  chain: ChainService;
  identity: IdentityService;
  locks: EnvelopeLocks;
  nodeId: () => string;
  nowSvcond: () => number;
  nowMs: () => number;
  /** Can this node deliver to another node (a mesh secret is configured)? */
  canDeliver: () => boolean;
  /** The receiver's home URL as this node knows it now, or null. */
  peerUrl: (peerId: string) => string | null;
  /** The debits' certificates by transfer id (custody's: written by the custody gate in each debit's batch). */
  debitCertificates: { get(transferId: string): Promise<DebitCertificateRecord | null> };
}

function badInput(field: string, reason: string, message: string, extra: Record<string, unknown> = {}): ServiceError {
  return new ServiceError(400, 'SVC_INVALID_INPUT', message, { field, reason, allowed: null, ...extra });
}

/**
 * `count` of `candidates` chosen uniformly at random, reproducibly: a partial Fisher–Yates shuffle driven by the
 * house PRNG (xoshiro128**) seeded from SHA-256 of `seed`. The candidates come in seal order (the owner index), so
 * the same seed and the same holdings give the same pick.
 */
export function pickAtRandom<T>(candidates: readonly T[], count: number, seed: string): T[] {
  const a = candidates.slice();
  const rng = new Xoshiro128(stateFromText(seed));
  const n = Math.min(count, a.length);
  for (let i = 0; i < n; i++) {
    const j = i + rng.int(a.length - i);
    const t = a[i]!;
    a[i] = a[j]!;
    a[j] = t;
  }
  return a.slice(0, n);
}

/** Why an envelope cannot be transferred, or null when it can. */
export function unmovableReason(e: EnvelopeRecord): 'soulbound' | 'bonded' | null {
  if (e.soulbound || e.funding !== 'paid') return 'soulbound';
  if (e.immovable || e.bond_id !== undefined) return 'bonded';
  return null;
}

export class Transfers {
  private readonly records: Sublevel;
  /** Pending cross-node transfers at the sender's home: transfer id → transfer id (the delivery loop's queue). */
  private readonly outbox: Sublevel;
  private readonly envelopes: Sublevel;
  private readonly byOwner: Sublevel;
  private readonly byFolder: Sublevel;
  /**
   * The transfers credited to an identity homed here, keyed `<to>!<transfer id>`: a ledger record of the receiver (it
   * travels with the credit's custody entry), so a delivery repeated after either home changed is a duplicate.
   */
  private readonly credits: Sublevel;
  private pendingSink: ((r: TransferRecord) => void) | null = null;
  /** Until custody supplies its check (checkDebitsWith), no credit is applied. */
  private debitFault: DebitCheck = () => Promise.resolve('this node does not check debit certificates yet');
  /** A pending debit's certificate as its delivery carries it (custody's, certifyDebitsWith); null: as it is kept. */
  private recertify: DebitRecertify | null = null;
  /** The identities' home changes this node knows and applies (custody's, followHomesWith); null: none shown. */
  private homes: TransferHomes | null = null;
  /** Identities whose ledger writes custodians certify; until custody says (custodyWith), none. */
  private custodied: (zid: string) => boolean = () => false;

  constructor(private readonly d: TransfersDeps) {
    this.records = d.store.sub('transfers');
    this.outbox = d.store.sub('transfer_outbox');
    this.envelopes = d.store.sub(ENVELOPE_SUBS.envelopes);
    this.byOwner = d.store.sub(ENVELOPE_SUBS.byOwner);
    this.byFolder = d.store.sub(ENVELOPE_SUBS.byFolder);
    this.credits = d.store.sub(TRANSFER_CREDITS_SUB);
  }

  /** The check of a delivery's debit certificate (custody's: the sender's custody set as this node sees it). */
  checkDebitsWith(fault: DebitCheck): void {
    this.debitFault = fault;
  }

  /** How this node tells the identities whose ledger writes custodians certify (custody's: a set of more than one). */
  custodyWith(custodied: (zid: string) => boolean): void {
    this.custodied = custodied;
  }

  /** How a pending debit's kept certificate is brought to the sender's custody set of now (custody's). */
  certifyDebitsWith(recertify: DebitRecertify): void {
    this.recertify = recertify;
  }

  /** The home changes a refusal shows (the receiver's) and a delivery carries (the sender's), and their check (custody's). */
  followHomesWith(homes: TransferHomes): void {
    this.homes = homes;
  }

  /** Check and apply a home change a receiver's old home showed (the next attempt goes where the directory then names). */
  async applyHomeChange(change: unknown): Promise<void> {
    await this.homes?.apply(change);
  }

  /** Where new pending transfers go once durable (the delivery loop). */
  onPending(sink: (r: TransferRecord) => void): void {
    this.pendingSink = sink;
  }

  /**
   * A transfer by id, as shown to its sender or receiver: 404 when unknown here, 403 to anyone else. Both parties'
   * records of a transfer share its key: where both are homed here, a chain written here (a takeover, a chain taken
   * back) may put the sender's pending record over the receiver's credit. The receiver is shown its credit then, as
   * the record will read once the delivery loop's repeated delivery is answered as a duplicate.
   */
  async view(id: string, zid: string): Promise<TransferView> {
    const r = TRANSFER_ID_PATTERN.test(id) ? await this.load(id) : undefined;
    if (!r) throw new ServiceError(404, 'SVC_NOT_FOUND', `no transfer ${id} is known at this identity's home`);
    if (r.from !== zid && r.to !== zid) throw new ServiceError(403, 'SVC_FORBIDDEN', 'a transfer is shown to its sender and its receiver only');
    if (r.state === 'pending' && r.to === zid) {
      const mark = await this.d.store.get<CreditMark>(this.credits, creditKey(zid, id));
      if (mark !== undefined && mark.from === r.from) return viewOf(deliveredRecord(r, r.attempts, mark));
    }
    return viewOf(r);
  }

  async load(id: string): Promise<TransferRecord | undefined> {
    return this.d.store.get<TransferRecord>(this.records, id);
  }

  /**
   * Pending cross-node transfers (the outbox), oldest id order: what the delivery loop resumes at start. An outbox
   * entry whose record is delivered goes: the receiver's credit, written here over the sender's pending record (both
   * homed here, view()), or a settled record, means the transfer was credited, so nothing is left to deliver.
   */
  async pending(): Promise<TransferRecord[]> {
    const ids = (await this.d.store.range<string>(this.outbox)).map((e) => e.key);
    const recs = await this.loadMany(ids);
    const done = ids.filter((_, k) => recs[k]?.state === 'delivered');
    if (done.length > 0) await this.d.store.commit(done.map((id) => ({ type: 'del', sub: this.outbox, key: id })));
    return recs.filter((r): r is TransferRecord => r !== undefined && r.state === 'pending');
  }

  /**
   * Transfer envelopes of `from` (homed here) to `to`: named, or `count` at random. `answerOps`: records the caller
   * writes in the transfer's batch, told the view it answers (an idempotent request's answer).
   */
  async transfer(from: string, req: TransferRequest, answerOps?: (view: TransferView) => Op[]): Promise<TransferView> {
    if ((req.token_ids === undefined) === (req.count === undefined)) throw badInput('token_ids', 'required', 'give token_ids or count (one of them)');
    if (req.to === from) throw badInput('to', 'self', 'a transfer goes to another identity, not to the sender');
    const ids = req.token_ids === undefined ? undefined : [...new Set(req.token_ids)];
    for (const id of ids ?? []) {
      if (!TOKEN_ID_PATTERN.test(id)) throw badInput('token_ids', 'format', `token id "${id}" is not an envelope token id (env_ + 24 hex)`, { token_id: id });
    }
    const wanted = ids?.length ?? req.count!;
    if (wanted > MAX_TRANSFER_ENVELOPES)
      throw badInput(ids ? 'token_ids' : 'count', 'limit', `a transfer moves at most ${MAX_TRANSFER_ENVELOPES} envelopes`, { limit: MAX_TRANSFER_ENVELOPES });
    // A receiver homed elsewhere whose assertion never reached this node is asked of the peers.
    const receiver = await this.d.identity.findIdentity(req.to);
    if (!receiver) throw new ServiceError(404, 'SVC_NOT_FOUND', `no identity ${req.to} is known to this node or its peers`, { field: 'to' });
    const sender = await this.d.identity.getIdentity(from);
    if (!sender) throw new ServiceError(404, 'SVC_NOT_FOUND', `no identity ${from} is known to this node`, { field: 'from' });
    const here = this.d.nodeId();
    // The identity record's home: the node it registered on, or the one that took it over (custody failover).
    const sameNode = receiver.home === here;
    // One write moves the envelopes when no custodian certifies either ledger. Otherwise the debit and the credit are
    // two writes, as between nodes (the credit delivered here, no request): one write would be an entry of each
    // identity, and custodians that certify the debit's and refuse the credit's keep a debit with no credit.
    const oneWrite = sameNode && !this.custodied(from) && !this.custodied(req.to);
    if (!sameNode && !this.d.canDeliver())
      throw new ServiceError(503, 'MESH_DISABLED', `${req.to} is homed on node ${receiver.home}, and this node has no mesh to deliver to it`);
    const fromSlug = sender.default_machine ?? this.d.identity.defaultSlug(from);
    const toSlug = receiver.default_machine ?? this.d.identity.defaultSlug(req.to);

    // Counters and chain heads are read on demand (bounded caches): both owners' are held in memory from their loads on.
    const held = () => [
      this.d.counters.hold(from),
      this.d.chain.hold(fromSlug),
      ...(oneWrite ? [this.d.counters.hold(req.to), this.d.chain.hold(toSlug)] : []),
    ];
    return this.d.locks.run(from, () =>
      whileHeld(held(), async () => {
        const transferId = `xfer_${randomHex(24)}`;
        const seed = ids ? null : sha256Hex(canonicalJson({ transfer_id: transferId, from, to: req.to, count: req.count }));
        const chosen = ids ? await this.named(from, ids) : await this.pick(from, req.count!, seed!);
        await this.d.counters.loadIdentity(from);
        if (oneWrite) await this.d.counters.loadIdentity(req.to);
        await this.d.chain.prepare(fromSlug);
        if (oneWrite) await this.d.chain.prepare(toSlug);
        // From here to the commit: synchronous (counters and chain heads in memory), as ledger.ts's rule asks.
        const svcond = this.d.nowSvcond();
        const unixMs = this.d.nowMs();
        const tokenIds = chosen.map((e) => e.token_id);
        const record: TransferRecord = {
          transfer_id: transferId,
          state: oneWrite ? 'delivered' : 'pending',
          from,
          to: req.to,
          from_home: here,
          to_home: receiver.home,
          count: chosen.length,
          token_ids: tokenIds,
          face_value_total: chosen.reduce((s, e) => s + e.face_value, 0),
          picked_by: ids ? 'token_ids' : 'count',
          seed,
          attempts: 0,
          last_error: null,
          created_svcond: svcond,
          created_unix_ms: unixMs,
          delivered_svcond: oneWrite ? svcond : null,
          delivered_unix_ms: oneWrite ? unixMs : null,
        };
        const ops: Op[] = [];
        const deltas = new Map<string, number>();
        const add = (name: string, d: number) => deltas.set(name, (deltas.get(name) ?? 0) + d);
        // Numbered here for the receiver (never given back, as seal's): a seq another node gave may be one of the
        // receiver's index keys already.
        const firstSeq = this.d.counters.get('envelope_seq') + 1;
        if (oneWrite) this.d.counters.bump('envelope_seq', chosen.length);
        for (const [i, e] of chosen.entries()) {
          ops.push({ type: 'del', sub: this.byOwner, key: `${from}!${padNum(e.seq)}` });
          ops.push({ type: 'del', sub: this.byFolder, key: `${from}!${e.folder}!${padNum(e.seq)}` });
          add(envelopeCounter(from), -1);
          add(folderCounter(from, e.folder), -1);
          if (oneWrite) {
            const seq = firstSeq + i;
            ops.push({ type: 'put', sub: this.byOwner, key: `${req.to}!${padNum(seq)}`, value: e.token_id });
            ops.push({ type: 'put', sub: this.byFolder, key: `${req.to}!${RECEIVED_FOLDER}!${padNum(seq)}`, value: e.token_id });
            ops.push({ type: 'put', sub: this.envelopes, key: e.token_id, value: receivedRecord(e, req.to, seq, transferId) });
            add(envelopeCounter(req.to), 1);
            add(folderCounter(req.to, RECEIVED_FOLDER), 1);
          } else {
            // The envelope leaves this ledger: the receiver's home writes it on its own.
            ops.push({ type: 'del', sub: this.envelopes, key: e.token_id });
          }
        }
        const rollbacks: (() => void)[] = [];
        const out = this.d.chain.appendOps(fromSlug, svcond, 'transfer_out', {
          transfer_id: transferId,
          to: req.to,
          to_home: receiver.home,
          token_ids: tokenIds,
        });
        ops.push(out.op);
        rollbacks.push(out.rollback);
        if (oneWrite) {
          const inRow = this.d.chain.appendOps(toSlug, svcond, 'transfer_in', { transfer_id: transferId, from, from_home: here, token_ids: tokenIds });
          ops.push(inRow.op);
          rollbacks.push(inRow.rollback);
          ops.push({ type: 'put', sub: this.records, key: transferId, value: record });
        } else {
          const pending: TransferRecord = { ...record, envelopes: chosen.map(travelling), to_url: this.d.peerUrl(receiver.home) };
          ops.push({ type: 'put', sub: this.records, key: transferId, value: pending });
          ops.push({ type: 'put', sub: this.outbox, key: transferId, value: transferId });
        }
        const view = viewOf(record);
        if (answerOps) ops.push(...answerOps(view));
        const mark = this.d.counters.mark();
        for (const [name, d] of deltas) this.d.counters.bump(name, d);
        this.d.counters.persistOps(oneWrite ? ['envelope_seq', ...deltas.keys()] : [...deltas.keys()], ops);
        try {
          await this.d.store.commit(ops);
        } catch (err) {
          for (const [name, d] of deltas) this.d.counters.revert(name, d, mark);
          for (const undo of rollbacks.reverse()) undo();
          throw err;
        }
        if (!oneWrite) this.pendingSink?.({ ...record, envelopes: chosen.map(travelling), to_url: this.d.peerUrl(receiver.home) });
        return view;
      }),
    );
  }

  /**
   * A cross-node transfer the node makes inside another batch (a slashing's reward, consensus/slashing.ts): the
   * pending record and its outbox entry for that batch, and what queues its delivery once the batch is durable. The
   * caller takes the envelopes off this ledger (their records and indexes) in the same batch; `from` signs nothing:
   * the delivery is signed by this node, as for every transfer.
   */
  outgoingOps(
    transferId: string,
    parties: { from: string; to: string; toHome: string },
    envelopes: EnvelopeRecord[],
  ): { record: TransferRecord; ops: Op[]; queue: () => void } {
    const svcond = this.d.nowSvcond();
    const record: TransferRecord = {
      transfer_id: transferId,
      state: 'pending',
      from: parties.from,
      to: parties.to,
      from_home: this.d.nodeId(),
      to_home: parties.toHome,
      count: envelopes.length,
      token_ids: envelopes.map((e) => e.token_id),
      face_value_total: envelopes.reduce((sum, e) => sum + e.face_value, 0),
      picked_by: 'token_ids',
      seed: null,
      attempts: 0,
      last_error: null,
      created_svcond: svcond,
      created_unix_ms: this.d.nowMs(),
      delivered_svcond: null,
      delivered_unix_ms: null,
    };
    const pending: TransferRecord = { ...record, envelopes: envelopes.map(travelling), to_url: this.d.peerUrl(parties.toHome) };
    return {
      record,
      ops: [
        { type: 'put', sub: this.records, key: transferId, value: pending },
        { type: 'put', sub: this.outbox, key: transferId, value: transferId },
      ],
      queue: () => this.pendingSink?.(pending),
    };
  }

  /**
   * At the receiver's home: credit a delivery once. `sender` is the verified signer of the delivery, which must be the
   * sender's home. 404 when the receiver is not homed here; a transfer id seen before is acknowledged as a duplicate
   * and changes nothing. The check and the batch run under the receiver's lock, so two concurrent deliveries of one
   * transfer apply it once.
   */
  async receive(delivery: DeliveryBody, sender: string): Promise<TransferAck> {
    const here = this.d.nodeId();
    if (delivery.from_home !== sender)
      throw new ServiceError(403, 'SVC_FORBIDDEN', `a delivery is signed by the sender's home (${delivery.from_home}), not by ${sender}`);
    if (delivery.to_home !== here)
      throw new ServiceError(409, 'SVC_CONFLICT', `this delivery is addressed to node ${delivery.to_home}`, { home: delivery.to_home });
    const receiver = await this.d.identity.getIdentity(delivery.to);
    if (!receiver || receiver.home !== here) {
      const moved = receiver ? await this.homes?.latest(delivery.to) : null;
      throw new ServiceError(
        404,
        'SVC_NOT_FOUND',
        `no identity ${delivery.to} is homed on this node`,
        { field: 'to' },
        moved ? { home_change: moved } : undefined,
      );
    }
    const toSlug = receiver.default_machine ?? this.d.identity.defaultSlug(delivery.to);
    const credit = {
      transfer_id: delivery.transfer_id,
      from: delivery.from,
      to: delivery.to,
      amount: delivery.envelopes.reduce((sum, e) => sum + e.face_value, 0),
      token_ids: delivery.envelopes.map((e) => e.token_id),
    };
    // Credited already: a duplicate, whatever certificate it carries (a home that took the sender over delivers every
    // debit of its chain again, and may hold no certificate for a debit of an earlier epoch).
    const credited = await this.creditOf(delivery);
    if (credited !== null) return credited;
    // The sender's home change, when this node missed it: the certificate is checked under the set of its epoch.
    if (delivery.from_home_change !== undefined) await this.homes?.apply(delivery.from_home_change);
    const fault = await this.debitFault(delivery.debit_certificate, credit);
    if (fault !== null)
      throw new ServiceError(403, 'SVC_DEBIT_UNCERTIFIED', `transfer ${delivery.transfer_id} is not credited: ${fault}`, {
        transfer_id: delivery.transfer_id,
        reason: fault,
      });
    // The envelopes' own locks too: a chain replayed here (custody/home-moves.ts) may write or delete their records.
    const tokenIds = delivery.envelopes.map((e) => e.token_id);
    return this.d.locks.run(delivery.to, () => this.d.locks.tokens(tokenIds, () => this.credit(delivery, tokenIds, toSlug)));
  }

  /** The credit of a delivery checked by receive() (its envelopes' `tokenIds`), under the receiver's and the envelopes' locks. */
  private credit(delivery: DeliveryBody, tokenIds: string[], toSlug: string): Promise<TransferAck> {
    const here = this.d.nodeId();
    return whileHeld([this.d.counters.hold(delivery.to), this.d.chain.hold(toSlug)], async () => {
      const again = await this.creditOf(delivery);
      if (again !== null) return again;
      const seen = await this.load(delivery.transfer_id);
      // A pending record here is the sender's own (both identities are homed on this node): not a credit.
      if (seen && seen.state !== 'pending') {
        if (seen.to !== delivery.to || seen.from !== delivery.from)
          throw new ServiceError(409, 'SVC_CONFLICT', `transfer ${delivery.transfer_id} is known here with other parties`);
        return ackOf(seen, true);
      }
      if (new Set(tokenIds).size !== tokenIds.length) throw new ServiceError(400, 'SVC_INVALID_INPUT', 'a delivery names an envelope twice');
      const existing = await this.d.store.getMany<EnvelopeRecord>(this.envelopes, tokenIds);
      // A record of an identity homed elsewhere now is this node's stale copy of a ledger a failover moved away (the
      // envelope left it there): the credit writes over it. One of an identity homed here is a clash.
      const homedHere = await Promise.all(
        existing.map(async (e) => e !== undefined && (e.owner === delivery.to || (await this.d.identity.getIdentity(e.owner))?.home === here)),
      );
      const clash = homedHere.indexOf(true);
      if (clash >= 0)
        throw new ServiceError(409, 'SVC_CONFLICT', `envelope ${tokenIds[clash]} is already on this node's ledger`, { token_id: tokenIds[clash] });
      await this.d.counters.loadIdentity(delivery.to);
      await this.d.chain.prepare(toSlug);
      // Synchronous from here to the commit.
      const svcond = this.d.nowSvcond();
      const unixMs = this.d.nowMs();
      const ops: Op[] = [];
      const names = ['envelope_seq', envelopeCounter(delivery.to), folderCounter(delivery.to, RECEIVED_FOLDER)];
      const n = delivery.envelopes.length;
      const firstSeq = this.d.counters.get('envelope_seq') + 1;
      const counted = this.d.counters.mark();
      this.d.counters.bump('envelope_seq', n);
      this.d.counters.bump(names[1]!, n);
      this.d.counters.bump(names[2]!, n);
      delivery.envelopes.forEach((t, i) => {
        const seq = firstSeq + i;
        const e: EnvelopeRecord = {
          token_id: t.token_id,
          owner: delivery.to,
          face_value: t.face_value,
          folder: RECEIVED_FOLDER,
          funding: 'paid',
          soulbound: false,
          svcond: t.svcond,
          result_id: t.result_id,
          hash: t.hash,
          seq,
          transfer_id: delivery.transfer_id,
        };
        ops.push({ type: 'put', sub: this.envelopes, key: t.token_id, value: e });
        ops.push({ type: 'put', sub: this.byOwner, key: `${delivery.to}!${padNum(seq)}`, value: t.token_id });
        ops.push({ type: 'put', sub: this.byFolder, key: `${delivery.to}!${RECEIVED_FOLDER}!${padNum(seq)}`, value: t.token_id });
      });
      const inRow = this.d.chain.appendOps(toSlug, svcond, 'transfer_in', {
        transfer_id: delivery.transfer_id,
        from: delivery.from,
        from_home: delivery.from_home,
        token_ids: tokenIds,
      });
      ops.push(inRow.op);
      const record: TransferRecord = {
        transfer_id: delivery.transfer_id,
        state: 'delivered',
        from: delivery.from,
        to: delivery.to,
        from_home: delivery.from_home,
        to_home: here,
        count: n,
        token_ids: tokenIds,
        face_value_total: delivery.envelopes.reduce((s, e) => s + e.face_value, 0),
        picked_by: delivery.picked_by,
        seed: delivery.seed,
        attempts: delivery.attempt,
        last_error: null,
        created_svcond: delivery.created_svcond,
        created_unix_ms: delivery.created_unix_ms,
        delivered_svcond: svcond,
        delivered_unix_ms: unixMs,
      };
      // The certificate goes with the credit: the custody gate sends it to the receiver's custodians.
      ops.push({
        type: 'put',
        sub: this.records,
        key: delivery.transfer_id,
        value: { ...record, debit_certificate: delivery.debit_certificate ?? undefined },
      });
      const mark: CreditMark = { transfer_id: delivery.transfer_id, from: delivery.from, delivered_svcond: svcond, delivered_unix_ms: unixMs };
      ops.push({ type: 'put', sub: this.credits, key: creditKey(delivery.to, delivery.transfer_id), value: mark });
      this.d.counters.persistOps(names, ops);
      try {
        await this.d.store.commit(ops);
      } catch (err) {
        // envelope_seq stays: numbers are never handed out twice (ledger.ts seal).
        this.d.counters.revert(names[1]!, n, counted);
        this.d.counters.revert(names[2]!, n, counted);
        inRow.rollback();
        throw err;
      }
      return ackOf(record, false);
    });
  }

  /** The acknowledgement of a delivery whose transfer is credited to its receiver here already, else null (409: other parties). */
  private async creditOf(delivery: DeliveryBody): Promise<TransferAck | null> {
    const mark = await this.d.store.get<CreditMark>(this.credits, creditKey(delivery.to, delivery.transfer_id));
    if (mark === undefined) return null;
    if (mark.from !== delivery.from) throw new ServiceError(409, 'SVC_CONFLICT', `transfer ${delivery.transfer_id} is known here with other parties`);
    return {
      transfer_id: mark.transfer_id,
      to: delivery.to,
      delivered_svcond: mark.delivered_svcond,
      delivered_unix_ms: mark.delivered_unix_ms,
      duplicate: true,
    };
  }

  /**
   * At the receiver's home: a delivery request, each transfer credited once (receive()); one answer per transfer, a
   * refusal carrying its part-7 status and code.
   */
  async receiveAll(batch: DeliveryBatch, sender: string): Promise<DeliveryAnswers> {
    const acks = await Promise.all(
      batch.deliveries.map((d) =>
        this.receive(d, sender).catch((err: unknown): TransferRefusal => {
          const e = err instanceof ServiceError ? err : null;
          const moved = (e?.details as { home_change?: unknown } | undefined)?.home_change;
          return {
            transfer_id: d.transfer_id,
            error: { status: e?.status ?? 500, code: e?.code ?? 'SVC_INTERNAL_ERROR', message: e?.message ?? 'the delivery could not be applied' },
            ...(moved === undefined ? {} : { home_change: moved }),
          };
        }),
      ),
    );
    return { acks };
  }

  /**
   * At the sender's home, after an attempt: the acknowledged transfers delivered and out of the outbox, the others'
   * attempt count and error kept (across restarts), all in one batch. Records no longer pending are left alone.
   */
  async settle(outcomes: { id: string; attempts: number; ack?: TransferAck; error?: string }[]): Promise<void> {
    const records = await this.d.store.getMany<TransferRecord>(
      this.records,
      outcomes.map((o) => o.id),
    );
    const ops: Op[] = [];
    outcomes.forEach((o, k) => {
      const r = records[k];
      if (!r) return;
      // Credited on this node (the receiver is homed here too): the record is the credit's, the outbox entry goes.
      if (r.state !== 'pending') {
        if (o.ack) ops.push({ type: 'del', sub: this.outbox, key: o.id });
        return;
      }
      if (o.ack) {
        ops.push({ type: 'put', sub: this.records, key: o.id, value: deliveredRecord(r, o.attempts, o.ack) }, { type: 'del', sub: this.outbox, key: o.id });
      } else {
        ops.push({ type: 'put', sub: this.records, key: o.id, value: { ...r, attempts: o.attempts, last_error: (o.error ?? 'failed').slice(0, 500) } });
      }
    });
    if (ops.length > 0) await this.d.store.commit(ops);
  }

  /** Records by id (undefined where there is none), a pending one with the debit certificate its delivery carries. */
  async loadMany(ids: string[]): Promise<(TransferRecord | undefined)[]> {
    const recs = await this.d.store.getMany<TransferRecord>(this.records, ids);
    return Promise.all(recs.map((r) => (r?.state === 'pending' ? this.withCertificate(r) : r)));
  }

  /**
   * A pending record as this node delivers it: with its debit certificate, from this node (the one that signs the
   * delivery), to the receiver's home (a custody failover moves an identity's home, docs/decisions.md "Custody").
   */
  private async withCertificate(r: TransferRecord): Promise<TransferRecord> {
    const kept = await this.d.debitCertificates.get(r.transfer_id);
    // To the receiver's home as the identity directory names it (a failover may have moved it since the debit).
    const receiver = await this.d.identity.getIdentity(r.to);
    const toHome = receiver?.home ?? r.to_home;
    const moved = await this.homes?.latest(r.from);
    const here = {
      ...r,
      from_home: this.d.nodeId(),
      to_home: toHome,
      to_url: toHome === r.to_home ? r.to_url : null,
      ...(moved ? { from_home_change: moved } : {}),
    };
    const certificate = this.recertify === null ? kept : await this.recertify(kept, { from: r.from, transfer_id: r.transfer_id });
    return certificate === null ? here : { ...here, debit_certificate: certificate };
  }

  /** Queue the pending transfers among `ids` for delivery (the outbox of an identity this node took over). */
  async resume(ids: readonly string[]): Promise<number> {
    let n = 0;
    for (const r of await this.d.store.getMany<TransferRecord>(this.records, [...ids])) {
      if (r?.state !== 'pending') continue;
      this.pendingSink?.(r);
      n++;
    }
    return n;
  }

  /** The named envelopes of `zid`: 400 naming the first that is unknown, another's, soulbound or bonded. */
  private async named(zid: string, ids: string[]): Promise<EnvelopeRecord[]> {
    const records = await this.d.store.getMany<EnvelopeRecord>(this.envelopes, ids);
    return ids.map((id, k) => {
      const e = records[k];
      // Another identity's envelope is answered as unknown: its existence is not the caller's business.
      if (!e || e.owner !== zid) throw badInput('token_ids', 'unknown', `no envelope ${id} of yours`, { token_id: id });
      const why = unmovableReason(e);
      if (why === 'soulbound')
        throw new ServiceError(400, 'SVC_ENVELOPE_NOT_MOVABLE', `envelope ${id} is soulbound (free-funded): only paid-funded envelopes move`, {
          field: 'token_ids',
          token_id: id,
          reason: why,
        });
      if (why === 'bonded')
        throw new ServiceError(400, 'SVC_ENVELOPE_NOT_MOVABLE', `envelope ${id} is bonded (bond ${e.bond_id ?? 'unknown'}): release the bond first`, {
          field: 'token_ids',
          token_id: id,
          reason: why,
          bond_id: e.bond_id ?? null,
        });
      return e;
    });
  }

  /** `count` movable envelopes of `zid` at random (pickAtRandom with `seed`); 400 saying how many are movable. */
  private async pick(zid: string, count: number, seed: string): Promise<EnvelopeRecord[]> {
    const movable: EnvelopeRecord[] = [];
    let held = 0;
    let gte = `${zid}!`;
    for (;;) {
      const page = await this.d.store.range<string>(this.byOwner, { gte, lt: `${zid}!~`, limit: PAGE });
      if (page.length === 0) break;
      const records = await this.d.store.getMany<EnvelopeRecord>(
        this.envelopes,
        page.map((p) => p.value),
      );
      for (const e of records) {
        if (!e || e.owner !== zid) continue;
        held++;
        if (unmovableReason(e) === null) movable.push(e);
      }
      if (page.length < PAGE) break;
      gte = keyAfter(page[page.length - 1]!.key);
    }
    if (movable.length < count) {
      throw new ServiceError(
        400,
        'SVC_INSUFFICIENT_ENVELOPES',
        `a transfer of ${count} envelopes needs ${count} movable ones; ${movable.length} of the ${held} held are movable (paid-funded, not bonded)`,
        { field: 'count', requested: count, movable: movable.length, held },
      );
    }
    return pickAtRandom(movable, count, seed);
  }
}

/** A pending record as delivered: the receiver's home acknowledged it after `attempts` (at the times it gives). */
function deliveredRecord(r: TransferRecord, attempts: number, at: Pick<TransferAck, 'delivered_svcond' | 'delivered_unix_ms'>): TransferRecord {
  const { envelopes: _e, to_url: _u, ...rest } = r;
  return { ...rest, state: 'delivered', attempts, last_error: null, delivered_svcond: at.delivered_svcond, delivered_unix_ms: at.delivered_unix_ms };
}

function travelling(e: EnvelopeRecord): TravellingEnvelope {
  return { token_id: e.token_id, face_value: e.face_value, funding: 'paid', svcond: e.svcond, result_id: e.result_id, hash: e.hash };
}

/** The record of an envelope under its new owner on this node, in the receiver's inbox, without a bond mark. */
function receivedRecord(e: EnvelopeRecord, owner: string, seq: number, transferId: string): EnvelopeRecord {
  const { immovable: _i, bond_id: _b, ...rest } = e;
  return { ...rest, owner, folder: RECEIVED_FOLDER, seq, transfer_id: transferId };
}

/** What custody gives transfers of the identities' home changes (node/custody.ts): transfers never read them itself. */
export interface TransferHomes {
  /** The latest home change of `zid` this node knows (with its earlier changes), or null. */
  latest(zid: string): Promise<unknown>;
  /** Check `change` against this node's view and apply it (a change that does not hold is not applied). */
  apply(change: unknown): Promise<void>;
}

/** The sublevel of the transfers credited to each identity (custody/ledger-ops.ts reads it as the receiver's). */
export const TRANSFER_CREDITS_SUB = 'transfer_credits';

/** A transfer credited to an identity: enough to acknowledge a repeated delivery as its first was. */
interface CreditMark {
  transfer_id: string;
  from: string;
  delivered_svcond: number;
  delivered_unix_ms: number;
}

const creditKey = (to: string, transferId: string) => `${to}!${transferId}`;

function ackOf(r: TransferRecord, duplicate: boolean): TransferAck {
  return { transfer_id: r.transfer_id, to: r.to, delivered_svcond: r.delivered_svcond ?? 0, delivered_unix_ms: r.delivered_unix_ms ?? 0, duplicate };
}

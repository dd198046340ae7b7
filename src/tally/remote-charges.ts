// An action on a state machine charged to a caller whose wallet is at another home than the machine: a
// contract transition by an identity homed on P, on a machine homed on M. The wallet lives at P only, so P charges it
// when it signs the caller's voucher (http/chain-delegation.ts), and M applies the action; the charge is settled by
// asking M what became of it.
//
//   P (the caller's home)                                   M (the machine's home)
//   voucher asked → debit + pending record + outbox, one batch (402 and nothing signed when short)
//                  ─── voucher {…, nonce, charge} via the forwarding node ──▶ the transition's batch writes
//                                                                             `applied` under (P, nonce); a refusal
//                                                                             writes `refused` (tally/charge-outcomes.ts)
//   the outbox asks (chain.charge.settle) ───────────────────────────────────▶ applied | refused | void
//                  ◀── signed answer (chain.charge.outcome) ───────────────── (unknown nonce: `void` is written first,
//   applied → charged; refused or void → refunded                             so the voucher can never apply after)
//   (the refund credited in the batch that marks the record)
//
// When P asks: at once when P forwarded the request itself (its answer is in, nothing is in flight); otherwise once the
// voucher has expired (SETTLE_AFTER_MS: M refuses a voucher more than MAX_SKEW_TICKS from its tick), and again with
// the delivery loop's backoff until M answers. Asking early is safe, never wrong: M voids an unknown nonce before
// answering, so a voucher still on its way is refused there and refunded here. So a pending charge with no answer
// stays pending (the wallet debited, the outbox retrying) until M answers; no charge is settled by a timer alone.
import { z } from 'zod';
import type { Op, Store, Sublevel } from '../store/db.js';
import type { MeshEvent } from '../mesh/wire.js';
import { verifyEventSignature } from '../mesh/wire.js';
import { MAX_SKEW_TICKS } from '../mesh/validator.js';
import { TICK_SECONDS_EXACT } from '../kernel/clock.js';
import { ServiceError } from '../kernel/errors.js';
import type { Ledger } from './ledger.js';
import type { Outcome } from './delivery-loop.js';
import type { TallyCharge } from '../records/types.js';

/** A direct request of the payer's home to the machine's home: what became of these charges? And its signed answer. */
export const CHARGE_SETTLE_EVENT = 'chain.charge.settle';
export const CHARGE_OUTCOME_EVENT = 'chain.charge.outcome';
export const CHARGE_SETTLE_PATH = '/api/mesh/chain-charges/settle';
/** Most charges asked about in one request. */
export const MAX_SETTLE_BATCH = 64;
/** When a charge the payer's home did not forward itself is first asked about: once its voucher has expired, with 8 ticks to spare. */
export const SETTLE_AFTER_MS = Math.ceil((MAX_SKEW_TICKS + 8) * TICK_SECONDS_EXACT * 1000);
const NONCE = /^[0-9a-f]{32}$/;

/** The charge's state at the payer's home. */
export type RemoteChargeState = 'pending' | 'charged' | 'refunded';
/** What the machine's home answers for a charge: the action applied, refused after the voucher was accepted, or never (voided). */
export type ChargeOutcome = 'applied' | 'refused' | 'void';

/**
 * The protocol at the payer's home, as a table: state × the machine's answer → next state. Only `pending` moves; a
 * settled charge ignores a repeated answer (the refund is credited once, in the batch that leaves `pending`).
 */
export const PAYER_TRANSITIONS: Readonly<Record<RemoteChargeState, Partial<Record<ChargeOutcome, RemoteChargeState>>>> = {
  pending: { applied: 'charged', refused: 'refunded', void: 'refunded' },
  charged: {},
  refunded: {},
};

export interface RemoteChargeRecord {
  /** The voucher's nonce: the charge's id at both homes. */
  nonce: string;
  state: RemoteChargeState;
  zid: string;
  action: string;
  credits: number;
  /** How the debit was funded, so a refund goes back where it came from. */
  from_free: number;
  from_paid: number;
  slug: string;
  machine_home: string;
  created_svcond: number;
  created_unix_ms: number;
  /** Settlement requests sent to the machine's home. */
  attempts: number;
  last_error: string | null;
  outcome: ChargeOutcome | null;
  settled_unix_ms: number | null;
  /** The machine's home URL when the charge was made (while the peer table does not know it). */
  machine_url: string | null;
}

/** One charge as the machine's home is asked about it. */
export const settleItem = z
  .object({
    nonce: z.string().regex(NONCE),
    zid: z.string().regex(/^zid_[0-9a-f]{32}$/),
    slug: z.string().min(1).max(64),
    credits: z.number().int().nonnegative(),
    attempt: z.number().int().min(1),
  })
  .strict();
export type SettleItem = z.infer<typeof settleItem>;
/** The body of a signed CHARGE_SETTLE_EVENT. */
export const settleBatch = z.object({ charges: z.array(settleItem).min(1).max(MAX_SETTLE_BATCH) }).strict();
export type SettleBatch = z.infer<typeof settleBatch>;

/** The machine's home's answer for one charge (in a CHARGE_OUTCOME_EVENT), or why it cannot answer yet. */
export type SettleAnswer =
  { nonce: string; outcome: ChargeOutcome; seq: number | null } | { nonce: string; error: { status: number; code: string; message: string } };
export interface SettleAnswers {
  outcomes: SettleAnswer[];
}
export interface SettleAck {
  nonce: string;
  outcome: ChargeOutcome;
  seq: number | null;
}

/** The verified outcomes of a settle request for `nonces` from `home`, or null when the answer is not its signed answer to exactly them. */
export async function verifiedOutcomes(answer: unknown, home: string, nonces: readonly string[]): Promise<Outcome<SettleAck>[] | null> {
  const e = answer as MeshEvent | null;
  if (!e || typeof e !== 'object' || e.type !== CHARGE_OUTCOME_EVENT || e.sender !== home) return null;
  const list = (e.body as { outcomes?: unknown } | null)?.outcomes;
  if (!Array.isArray(list) || list.length !== nonces.length) return null;
  const out: Outcome<SettleAck>[] = [];
  for (let i = 0; i < nonces.length; i++) {
    const a = list[i] as Partial<{ nonce: string; outcome: string; seq: number | null; error: { status: number; code: string; message: string } }> | null;
    if (!a || typeof a !== 'object' || a.nonce !== nonces[i]) return null;
    if (a.error && typeof a.error === 'object') out.push({ error: `${a.error.status} ${a.error.code}: ${a.error.message}` });
    else if (a.outcome === 'applied' || a.outcome === 'refused' || a.outcome === 'void')
      out.push({ ack: { nonce: nonces[i]!, outcome: a.outcome, seq: typeof a.seq === 'number' ? a.seq : null } });
    else return null;
  }
  return (await verifyEventSignature(e)) ? out : null;
}

export interface RemoteChargesDeps {
  store: Store;
  ledger: Ledger;
  nowSvcond: () => number;
  nowMs: () => number;
  peerUrl: (peerId: string) => string | null;
}

/** The payer's home's side: charges made for vouchers, their outbox, and their settlement. */
export class RemoteCharges {
  private readonly records: Sublevel;
  /** Pending charges: nonce → nonce (the delivery loop's queue). */
  private readonly outbox: Sublevel;
  private pendingSink: ((r: RemoteChargeRecord) => void) | null = null;

  constructor(private readonly d: RemoteChargesDeps) {
    this.records = d.store.sub('remote_charges');
    this.outbox = d.store.sub('remote_charge_outbox');
  }

  onPending(sink: (r: RemoteChargeRecord) => void): void {
    this.pendingSink = sink;
  }

  /**
   * Debit `credits` from `zid`'s wallet for an action on machine `slug` at `machineHome`, with the pending record and
   * its outbox entry, in one batch. 402 INSUFFICIENT_BALANCE and nothing written when the wallet is short.
   */
  async charge(a: { nonce: string; zid: string; action: string; credits: number; slug: string; machineHome: string }): Promise<TallyCharge> {
    await this.d.ledger.wallet(a.zid);
    // From here to the commit: synchronous (the wallet in memory), as Ledger.chargeOps asks.
    const w = this.d.ledger.cachedWallet(a.zid);
    const fromFree = Math.min(w.free, a.credits);
    const paid = this.d.ledger.chargeOps(a.zid, a.action, a.credits);
    const record: RemoteChargeRecord = {
      nonce: a.nonce,
      state: 'pending',
      zid: a.zid,
      action: a.action,
      credits: a.credits,
      from_free: fromFree,
      from_paid: a.credits - fromFree,
      slug: a.slug,
      machine_home: a.machineHome,
      created_svcond: this.d.nowSvcond(),
      created_unix_ms: this.d.nowMs(),
      attempts: 0,
      last_error: null,
      outcome: null,
      settled_unix_ms: null,
      machine_url: this.d.peerUrl(a.machineHome),
    };
    try {
      await this.d.store.commit([
        ...paid.ops,
        { type: 'put', sub: this.records, key: a.nonce, value: record },
        { type: 'put', sub: this.outbox, key: a.nonce, value: a.nonce },
      ]);
    } catch (err) {
      paid.rollback();
      throw err;
    }
    this.pendingSink?.(record);
    return paid.charge;
  }

  async load(nonce: string): Promise<RemoteChargeRecord | undefined> {
    return NONCE.test(nonce) ? this.d.store.get<RemoteChargeRecord>(this.records, nonce) : undefined;
  }

  async loadMany(ids: string[]): Promise<(RemoteChargeRecord | undefined)[]> {
    return this.d.store.getMany<RemoteChargeRecord>(this.records, ids);
  }

  /** Pending charges (the outbox): what the loop resumes at start. */
  async pending(): Promise<RemoteChargeRecord[]> {
    const ids = await this.d.store.range<string>(this.outbox);
    const recs = await this.loadMany(ids.map((e) => e.key));
    return recs.filter((r): r is RemoteChargeRecord => r !== undefined && r.state === 'pending');
  }

  /**
   * After a settle request: each answered charge moves by PAYER_TRANSITIONS and leaves the outbox, a refund credited
   * in the same batch; the others keep their attempt count and error. Records no longer pending are left alone.
   */
  async settle(outcomes: { id: string; attempts: number; ack?: SettleAck; error?: string }[]): Promise<void> {
    const records = await this.loadMany(outcomes.map((o) => o.id));
    for (const [k, o] of outcomes.entries()) if (o.ack && records[k]?.state === 'pending') await this.d.ledger.wallet(records[k]!.zid);
    // Synchronous from here to the commit (the wallets in memory).
    const ops: Op[] = [];
    const rollbacks: (() => void)[] = [];
    const now = this.d.nowMs();
    outcomes.forEach((o, k) => {
      const r = records[k];
      if (!r || r.state !== 'pending') return;
      if (!o.ack) {
        ops.push({ type: 'put', sub: this.records, key: o.id, value: { ...r, attempts: o.attempts, last_error: (o.error ?? 'failed').slice(0, 500) } });
        return;
      }
      const next = PAYER_TRANSITIONS[r.state][o.ack.outcome];
      if (!next) return;
      if (next === 'refunded') {
        const credit = this.d.ledger.creditOps(r.zid, r.from_free, r.from_paid);
        ops.push(...credit.ops);
        rollbacks.push(credit.rollback);
      }
      const done: RemoteChargeRecord = { ...r, state: next, outcome: o.ack.outcome, attempts: o.attempts, last_error: null, settled_unix_ms: now };
      ops.push({ type: 'put', sub: this.records, key: o.id, value: done }, { type: 'del', sub: this.outbox, key: o.id });
    });
    if (ops.length === 0) return;
    try {
      await this.d.store.commit(ops);
    } catch (err) {
      for (const undo of rollbacks.reverse()) undo();
      throw err;
    }
  }
}

/** The delivery of a pending charge's question, for its `attempt`-th attempt. */
export function settleItemOf(r: RemoteChargeRecord, attempt: number): SettleItem {
  return { nonce: r.nonce, zid: r.zid, slug: r.slug, credits: r.credits, attempt };
}

/** Refusals a machine's home gives for one charge it cannot answer yet (kept pending at the payer's home). */
export function inProgress(nonce: string): SettleAnswer {
  const e = new ServiceError(409, 'SVC_CONFLICT', `the request of voucher ${nonce} is being applied; ask again`);
  return { nonce, error: { status: e.status, code: e.code, message: e.message } };
}

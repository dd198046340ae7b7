// The machine's home's side of a charge made at the caller's home (tally/remote-charges.ts): what became of each
// charged voucher, kept under (the payer's home, the nonce), durable, so the payer's home's question has one answer.
//
//   (none) ── the voucher's action applied (written in its batch) ──▶ applied
//   (none) ── the voucher accepted, the action refused or failed ───▶ refused
//   (none) ── the payer's home asks first ──────────────────────────▶ void
//   applied | refused | void: final. A voucher whose nonce has a record is refused (used before), after a restart too.
//
// A voucher being applied is held in memory (claim) from its acceptance to its record; a question about it meanwhile is
// answered "ask again" (409), and a question's own check-and-void holds the same claim, so the two never interleave.
import type { Op, Store, Sublevel } from '../store/db.js';
import { ServiceError } from '../kernel/errors.js';
import { inProgress, type ChargeOutcome, type SettleAnswer, type SettleAnswers, type SettleItem } from './remote-charges.js';

export interface ChargeOutcomeRecord {
  outcome: ChargeOutcome;
  zid: string | null;
  slug: string | null;
  /** The row the action wrote, when applied. */
  seq: number | null;
  reason: string | null;
  unix_ms: number;
}

/** A charged voucher being applied here: its record is written by appliedOp (in the action's batch) or refused(). */
export interface ChargeClaim {
  appliedOp(seq: number): Op;
  refused(reason: string): Promise<void>;
  /** Let the claim go (after its record is durable, or when nothing was written: the payer's question then voids it). */
  release(): void;
}

export class ChargeOutcomes {
  private readonly records: Sublevel;
  private readonly held = new Set<string>();

  constructor(
    private readonly store: Store,
    private readonly nowMs: () => number,
  ) {
    this.records = store.sub('charge_outcomes');
  }

  private key(payerHome: string, nonce: string): string {
    return `${payerHome}!${nonce}`;
  }

  async outcomeOf(payerHome: string, nonce: string): Promise<ChargeOutcomeRecord | undefined> {
    return this.store.get<ChargeOutcomeRecord>(this.records, this.key(payerHome, nonce));
  }

  /**
   * Take a charged voucher for applying: 401 SVC_INVALID_KEY `used before` when its nonce is being applied or asked
   * about, or has an outcome (applied, refused, voided).
   */
  async claim(payerHome: string, nonce: string, zid: string, slug: string): Promise<ChargeClaim> {
    const key = this.key(payerHome, nonce);
    const usedBefore = () =>
      new ServiceError(401, 'SVC_INVALID_KEY', "the caller's voucher was refused: used before", { key_id: null, revoked_at: null, reason: 'used before' });
    if (this.held.has(key)) throw usedBefore();
    this.held.add(key);
    try {
      if ((await this.store.get(this.records, key)) !== undefined) throw usedBefore();
    } catch (err) {
      this.held.delete(key);
      throw err;
    }
    const record = (outcome: ChargeOutcome, seq: number | null, reason: string | null): ChargeOutcomeRecord => ({
      outcome,
      zid,
      slug,
      seq,
      reason,
      unix_ms: this.nowMs(),
    });
    return {
      appliedOp: (seq) => ({ type: 'put', sub: this.records, key, value: record('applied', seq, null) }),
      refused: (reason) => this.store.commit([{ type: 'put', sub: this.records, key, value: record('refused', null, reason.slice(0, 300)) }]),
      release: () => this.held.delete(key),
    };
  }

  /**
   * The payer's home (`sender`, verified) asks what became of its charges: one answer each, in order. A nonce unknown
   * here is voided first (written before the answer), so its voucher can never apply after; one being applied is
   * answered 409 (asked again later).
   */
  async answer(items: SettleItem[], sender: string): Promise<SettleAnswers> {
    const keys = items.map((i) => this.key(sender, i.nonce));
    const mine = keys.map((k) => !this.held.has(k));
    keys.forEach((k, i) => mine[i] && this.held.add(k));
    try {
      const known = await this.store.getMany<ChargeOutcomeRecord>(this.records, keys);
      const ops: Op[] = [];
      const outcomes: SettleAnswer[] = items.map((it, i) => {
        if (!mine[i]) return inProgress(it.nonce);
        const r = known[i];
        if (r) return { nonce: it.nonce, outcome: r.outcome, seq: r.seq };
        const voided: ChargeOutcomeRecord = { outcome: 'void', zid: it.zid, slug: it.slug, seq: null, reason: 'asked before any use', unix_ms: this.nowMs() };
        ops.push({ type: 'put', sub: this.records, key: keys[i]!, value: voided });
        return { nonce: it.nonce, outcome: 'void', seq: null };
      });
      if (ops.length > 0) await this.store.commit(ops);
      return { outcomes };
    } finally {
      keys.forEach((k, i) => mine[i] && this.held.delete(k));
    }
  }
}

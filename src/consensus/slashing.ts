// The effects of a verdict (architecture.md §6; docs/protocol.md §16 is the table, verdict.ts's effectsOf the rule),
// each applied exactly once, keyed by challenge id:
//   - the stake, at the challenger's home: held at intake (in the challenge's batch); burned when the challenge is
//     rejected, returned (to the free and paid balances it came from) on upheld and no_quorum;
//   - the mark, at every node (upheld): the bond is marked slashed in the node's registry (bonds.ts), which makes it
//     ineligible at once and its node's runs bond-less, and starts its operator's cooldown — only a bond the registry
//     holds under the executor's node (executed_by.node): a bond id names a stake only for its holder;
//   - the envelopes, at the bond's home (upheld): the envelopes still held under the bond leave its identity —
//     `challengerShare` of them (rounded down) to the challenger when its claim was the deciding digest (moved here
//     when the challenger is homed here, else a transfer to its home in the outbox), the rest to the foundation
//     account; owner, indexes, counters, the slashing record, the operator's return to idle and the registry's
//     applied record in ONE batch, then `consensus.slashed` is gossiped. A second upheld challenge of the same bond
//     finds nothing left under it and records an empty slashing: the bond goes once, and its reward with it.
// A verdict recorded but whose effect was not yet written (a crash in between, or a write its custodians did not
// certify) is applied again, at start and on the consensus timer (ChallengeService.retryOwedEffects): the record of an
// effect is in the effect's own batch, so it is never applied twice. The verdict's batch marks each effect owed here
// (owed-effects.ts); the effect's batch deletes the marker, so each pass reads only those.
import { ServiceError } from '../kernel/errors.js';
import { padNum, type Json, type Op, type Store, type Sublevel } from '../store/db.js';
import type { Counters } from '../store/counters.js';
import { envelopeCounter, folderCounter } from '../store/counter-keys.js';
import type { EnvelopeLocks } from '../tally/folders.js';
import { ENVELOPE_SUBS, type EnvelopeRecord, type Ledger } from '../tally/ledger.js';
import { whileHeld } from '../util/bounded-map.js';
import { RECEIVED_FOLDER, type Transfers } from '../tally/transfers.js';
import { sha256Hex } from '../kernel/bytes.js';
import { effectsOf, rewardCount, type Outcome } from './verdict.js';
import type { BondService } from './bonds.js';
import type { ChallengeEntry, StakeHold } from './challenges.js';
import type { ModeService } from './modes.js';
import { effectRecordKey, OwedEffects } from './owed-effects.js';

/** The owner of slashed envelopes: the foundation account of the node that holds the bond. */
export const FOUNDATION_ACCOUNT = 'foundation';
/** The folder slashed envelopes land in. */
export const SLASHED_FOLDER = 'slashed';

export interface SlashRecord {
  challenge_id: string;
  bond_id: string;
  zid: string;
  /** Every envelope the slashing took from the bonded identity (the reward's and the foundation's). */
  token_ids: string[];
  svcond: number;
  /** The challenger's share (its claim was the deciding digest), or null: the envelopes and how they went. */
  reward: SlashReward | null;
}

export interface SlashReward {
  zid: string;
  home: string;
  token_ids: string[];
  /** The transfer that carries them to the challenger's home; null when the challenger is homed here. */
  transfer_id: string | null;
}

export interface StakeRecord {
  challenge_id: string;
  zid: string;
  amount: number;
  outcome: string;
  effect: 'burned' | 'returned';
  svcond: number;
}

export interface SlashingOptions {
  store: Store;
  ledger: Ledger;
  counters: Counters;
  /** The envelope locks folder moves (and transfers) take: a slashing is a change of the bonded identity's envelopes. */
  locks: EnvelopeLocks;
  bonds: BondService;
  modes: ModeService;
  nodeId: () => string;
  nowSvcond: () => number;
  /** Share of the slashed envelopes a challenger whose claim was the deciding digest receives (config slashing). */
  challengerShare: number;
  /** Ticks after a challenge's deadline by which the bond's home must apply its slashing (config slashing). */
  applyTicks: number;
  /** Cross-node transfers (a reward to a challenger homed elsewhere); absent without a mesh. */
  transfers?: Pick<Transfers, 'outgoingOps'>;
  /** Where a slashing is logged (before its batch, and once written). */
  log?: (msg: string, fields: Record<string, unknown>) => void;
}

export class SlashingService {
  private readonly sub: Sublevel;
  private readonly envelopes: Sublevel;
  private readonly byOwner: Sublevel;
  private readonly byFolder: Sublevel;
  private readonly running = new Map<string, Promise<void>>();
  private readonly owed: OwedEffects;

  constructor(private readonly o: SlashingOptions) {
    this.sub = o.store.sub('slashing');
    this.envelopes = o.store.sub(ENVELOPE_SUBS.envelopes);
    this.byOwner = o.store.sub(ENVELOPE_SUBS.byOwner);
    this.byFolder = o.store.sub(ENVELOPE_SUBS.byFolder);
    this.owed = new OwedEffects(o.store);
  }

  /**
   * Hold `amount` credits of `zid` (homed here) as a challenge's stake: free credits first, then paid. 402 when the
   * wallet holds less. The ops go in the challenge's batch; rollback undoes the in-memory change if it fails.
   */
  async holdStake(zid: string, amount: number): Promise<{ hold: StakeHold; ops: Op[]; rollback: () => void }> {
    while (!this.o.ledger.isLoaded(zid)) await this.o.ledger.wallet(zid);
    const w = this.o.ledger.cachedWallet(zid);
    if (w.free + w.paid < amount)
      throw new ServiceError(402, 'INSUFFICIENT_BALANCE', `a challenge stakes ${amount} credits; balance is ${w.free + w.paid}`, {
        cost: amount,
        balance: w.free + w.paid,
      });
    const fromFree = Math.min(w.free, amount);
    const c = this.o.ledger.creditOps(zid, -fromFree, -(amount - fromFree));
    return { hold: { zid, amount, from_free: fromFree, from_paid: amount - fromFree }, ops: c.ops, rollback: c.rollback };
  }

  /** The verdict listener: the effects this node owns, each once. */
  async onVerdict(entry: ChallengeEntry): Promise<void> {
    const id = entry.challenge.challenge.challenge_id;
    const prev = this.running.get(id) ?? Promise.resolve();
    const run = prev.then(() => this.apply(entry));
    const tail = run.catch(() => undefined);
    this.running.set(id, tail);
    try {
      await run;
    } finally {
      if (this.running.get(id) === tail) this.running.delete(id);
    }
  }

  async slashRecord(challengeId: string): Promise<SlashRecord | undefined> {
    return this.o.store.get<SlashRecord>(this.sub, effectRecordKey('slash', challengeId));
  }

  async stakeRecord(challengeId: string): Promise<StakeRecord | undefined> {
    return this.o.store.get<StakeRecord>(this.sub, effectRecordKey('stake', challengeId));
  }

  private async apply(entry: ChallengeEntry): Promise<void> {
    const v = entry.verdict;
    if (!v) return;
    const c = entry.challenge.challenge;
    const me = this.o.nodeId();
    const effects = effectsOf(v.outcome, claimMatched(entry));
    if (entry.stake && c.challenger_home === me) await this.settleStake(entry, entry.stake, v.outcome);
    if (!effects.slashBond) return;
    // A bond id counts only for the node the registry holds it under: a verdict naming another node's bond (or one not
    // known here) marks nothing and moves nothing (challenges.ts refuses such a challenge before it is kept).
    if (this.o.bonds.holderOf(c.executed_by.bond_id) !== c.executed_by.node) {
      this.o.log?.('a verdict names a bond its executor does not hold here: nothing slashed', {
        challenge_id: c.challenge_id,
        bond_id: c.executed_by.bond_id,
        node: c.executed_by.node,
      });
      await this.o.store.commit([this.owed.done(c.challenge_id, 'mark'), ...(c.executed_by.node === me ? [this.owed.done(c.challenge_id, 'slash')] : [])]);
      return;
    }
    await this.o.bonds.markSlashed(
      c.executed_by.bond_id,
      { challenge_id: c.challenge_id, challenge_svcond: c.svcond, due_svcond: c.deadline_svcond + this.o.applyTicks },
      [this.owed.done(c.challenge_id, 'mark')],
    );
    if (c.executed_by.node === me) await this.slash(entry, effects.rewardChallenger);
  }

  private async settleStake(entry: ChallengeEntry, hold: StakeHold, outcome: string): Promise<void> {
    const id = entry.challenge.challenge.challenge_id;
    if (await this.stakeRecord(id)) {
      await this.o.store.commit([this.owed.done(id, 'stake')]);
      return;
    }
    const burned = effectsOf(outcome as Outcome, claimMatched(entry)).stake === 'burned';
    const rec: StakeRecord = {
      challenge_id: id,
      zid: hold.zid,
      amount: hold.amount,
      outcome,
      effect: burned ? 'burned' : 'returned',
      svcond: this.o.nowSvcond(),
    };
    const ops: Op[] = [{ type: 'put', sub: this.sub, key: effectRecordKey('stake', id), value: rec as unknown as Json }, this.owed.done(id, 'stake')];
    let rollback: () => void;
    if (burned) {
      this.o.counters.bump('burned_total', hold.amount);
      this.o.counters.persistOps(['burned_total'], ops);
      rollback = () => this.o.counters.revert('burned_total', hold.amount);
    } else {
      while (!this.o.ledger.isLoaded(hold.zid)) await this.o.ledger.wallet(hold.zid);
      const credit = this.o.ledger.creditOps(hold.zid, hold.from_free, hold.from_paid);
      ops.push(...credit.ops);
      rollback = credit.rollback;
    }
    try {
      await this.o.store.commit(ops);
    } catch (err) {
      rollback();
      throw err;
    }
  }

  private async slash(entry: ChallengeEntry, rewardChallenger: boolean): Promise<void> {
    const c = entry.challenge.challenge;
    const id = c.challenge_id;
    const bondEntry = this.o.bonds.get(c.executed_by.bond_id);
    const bond = bondEntry?.bond?.bond;
    if (!bond || bond.node !== c.executed_by.node) return;
    // The three identities' counters are read on demand (a bounded cache): held in memory from their loads on.
    const holds = [this.o.counters.hold(bond.zid), this.o.counters.hold(FOUNDATION_ACCOUNT), this.o.counters.hold(c.challenger)];
    await this.o.locks.run(bond.zid, () =>
      whileHeld(holds, async () => {
        if (await this.slashRecord(id)) {
          await this.o.store.commit([this.owed.done(id, 'slash')]);
          return;
        }
        const held = (await this.o.ledger.envelopesById(bond.token_ids)).filter(
          (e): e is EnvelopeRecord => !!e && e.owner === bond.zid && e.bond_id === bond.bond_id,
        );
        const here = c.challenger_home === this.o.nodeId();
        const canPay = rewardChallenger && (here || this.o.transfers !== undefined);
        // The challenger's share: the first envelopes in the bond's order (the same pick at every retry).
        const toChallenger = canPay ? held.slice(0, rewardCount(held.length, this.o.challengerShare)) : [];
        const toFoundation = held.slice(toChallenger.length);
        await this.o.ledger.loadCounts(bond.zid);
        await this.o.ledger.loadCounts(FOUNDATION_ACCOUNT);
        if (here && toChallenger.length > 0) await this.o.ledger.loadCounts(c.challenger);
        // From here to the commit: synchronous (counters in memory), as ledger.ts's rule asks.
        const ops: Op[] = [];
        const deltas = new Map<string, number>();
        const bump = (name: string, d: number) => deltas.set(name, (deltas.get(name) ?? 0) + d);
        const moveTo = (e: EnvelopeRecord, owner: string, folder: string) => {
          const { immovable: _i, bond_id: _b, ...rest } = e;
          ops.push({ type: 'put', sub: this.byOwner, key: `${owner}!${padNum(e.seq)}`, value: e.token_id });
          ops.push({ type: 'put', sub: this.byFolder, key: `${owner}!${folder}!${padNum(e.seq)}`, value: e.token_id });
          ops.push({ type: 'put', sub: this.envelopes, key: e.token_id, value: { ...rest, owner, folder } });
          bump(envelopeCounter(owner), 1);
          bump(folderCounter(owner, folder), 1);
        };
        for (const e of held) {
          ops.push({ type: 'del', sub: this.byOwner, key: `${bond.zid}!${padNum(e.seq)}` });
          ops.push({ type: 'del', sub: this.byFolder, key: `${bond.zid}!${e.folder}!${padNum(e.seq)}` });
          bump(envelopeCounter(bond.zid), -1);
          bump(folderCounter(bond.zid, e.folder), -1);
        }
        for (const e of toFoundation) moveTo(e, FOUNDATION_ACCOUNT, SLASHED_FOLDER);
        let reward: SlashReward | null = null;
        let queue = () => undefined as void;
        if (toChallenger.length > 0 && here) {
          for (const e of toChallenger) moveTo(e, c.challenger, RECEIVED_FOLDER);
          reward = { zid: c.challenger, home: c.challenger_home, token_ids: toChallenger.map((e) => e.token_id), transfer_id: null };
        } else if (toChallenger.length > 0) {
          // The envelopes leave this ledger: the challenger's home writes them on its own when the transfer arrives.
          for (const e of toChallenger) ops.push({ type: 'del', sub: this.envelopes, key: e.token_id });
          const out = this.o.transfers!.outgoingOps(rewardTransferId(id), { from: bond.zid, to: c.challenger, toHome: c.challenger_home }, toChallenger);
          ops.push(...out.ops);
          queue = out.queue;
          reward = { zid: c.challenger, home: c.challenger_home, token_ids: out.record.token_ids, transfer_id: out.record.transfer_id };
        }
        const rec: SlashRecord = {
          challenge_id: id,
          bond_id: bond.bond_id,
          zid: bond.zid,
          token_ids: held.map((e) => e.token_id),
          svcond: this.o.nowSvcond(),
          reward,
        };
        ops.push({ type: 'put', sub: this.sub, key: effectRecordKey('slash', id), value: rec as unknown as Json }, this.owed.done(id, 'slash'));
        // The operator returns to idle, and the registry records the slashing applied (the first one: the bond goes once).
        const idle = this.o.modes.idleOnRelease(bond.zid);
        ops.push(...idle.ops);
        const applied = bondEntry.slash_applied
          ? null
          : this.o.bonds.appliedOps({ bond_id: bond.bond_id, challenge_id: id, node: bond.node, token_ids: rec.token_ids, svcond: rec.svcond });
        if (applied) ops.push(...applied.ops);
        for (const [name, d] of deltas) this.o.counters.bump(name, d);
        this.o.counters.persistOps([...deltas.keys()], ops);
        this.o.log?.('slashing a bond', { challenge_id: id, bond_id: bond.bond_id, envelopes: held.length, reward: toChallenger.length });
        try {
          await this.o.store.commit(ops);
        } catch (err) {
          for (const [name, d] of deltas) this.o.counters.revert(name, d);
          throw err;
        }
        idle.apply();
        queue();
        this.o.log?.('bond slashed', { challenge_id: id, bond_id: bond.bond_id, envelopes: held.length, reward: toChallenger.length });
        await applied?.done();
      }),
    );
  }
}

/** What a result's record row and its verify answer say of its bond's verdict: upheld, with the challenge, or none. */
export interface VerdictMark {
  verdict: 'upheld' | null;
  challenge_id: string | null;
}

/** The verdict mark of a result executed under `executedBy` (its bond slashed in this node's registry, or not). */
export function verdictMarkOf(bonds: Pick<BondService, 'get'>, executedBy: { bond_id?: unknown } | null | undefined): VerdictMark {
  const bondId = executedBy && typeof executedBy.bond_id === 'string' ? executedBy.bond_id : null;
  const e = bondId === null ? null : bonds.get(bondId);
  const challenge = e?.slashed?.challenge_id ?? e?.slash_applied?.slashed.challenge_id ?? null;
  return challenge === null ? { verdict: null, challenge_id: null } : { verdict: 'upheld', challenge_id: challenge };
}

/** Whether a decided challenge's claim was the deciding digest. */
export function claimMatched(entry: ChallengeEntry): boolean {
  const v = entry.verdict;
  return v !== null && v.deciding_digest !== null && v.deciding_digest === entry.challenge.challenge.claimed_digest;
}

/** The id of the transfer that carries a challenge's reward: derived from the challenge id, so it is made once. */
export function rewardTransferId(challengeId: string): string {
  return `xfer_${sha256Hex(`reward|${challengeId}`).slice(0, 24)}`;
}

// The ledger effects of a challenge (architecture.md §6), each at the home that keeps the ledger it touches, each
// applied exactly once, keyed by challenge id:
//   - the stake, at the challenger's home: held at intake (in the challenge's batch); burned when the challenge is
//     rejected, returned (to the free and paid balances it came from) on upheld, not_reproducible and no_quorum;
//   - the bond, at the bond's home (the executor's node): on upheld, the bonded envelopes still held under the bond
//     go to the foundation account — owner, indexes, counters and the slashing record in ONE batch. A second upheld
//     challenge of the same bond finds nothing left under it and records an empty slashing: the bond goes once.
// A verdict recorded but whose effect was not yet written (a crash in between) is applied again at start
// (ChallengeService.resumeEffects): the record of an effect is in the effect's own batch, so it is never applied twice.
// The verdict's batch marks each effect owed here (owed-effects.ts); the effect's batch deletes the marker (the
// slashing's once its bond's release was tried), so the pass at start reads only those.
import { ServiceError } from '../kernel/errors.js';
import { padNum, type Json, type Op, type Store, type Sublevel } from '../store/db.js';
import type { Counters } from '../store/counters.js';
import { envelopeCounter, folderCounter } from '../store/counter-keys.js';
import type { EnvelopeLocks } from '../tally/folders.js';
import { ENVELOPE_SUBS, type EnvelopeRecord, type Ledger } from '../tally/ledger.js';
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
  token_ids: string[];
  svcond: number;
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
    await this.o.ledger.wallet(zid);
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
    if (entry.stake && c.challenger_home === me) await this.settleStake(entry, entry.stake, v.outcome);
    if (v.outcome === 'upheld' && c.executed_by.node === me) await this.slash(entry);
  }

  private async settleStake(entry: ChallengeEntry, hold: StakeHold, outcome: string): Promise<void> {
    const id = entry.challenge.challenge.challenge_id;
    if (await this.stakeRecord(id)) {
      await this.o.store.commit([this.owed.done(id, 'stake')]);
      return;
    }
    const burned = outcome === 'rejected';
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
      await this.o.ledger.wallet(hold.zid);
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

  private async slash(entry: ChallengeEntry): Promise<void> {
    const c = entry.challenge.challenge;
    const id = c.challenge_id;
    const bondEntry = this.o.bonds.get(c.executed_by.bond_id);
    const bond = bondEntry?.bond?.bond;
    if (!bond) return;
    if (!(await this.slashRecord(id))) {
      await this.o.locks.run(bond.zid, async () => {
        if (await this.slashRecord(id)) return;
        const held = (await this.o.ledger.envelopesById(bond.token_ids)).filter(
          (e): e is EnvelopeRecord => !!e && e.owner === bond.zid && e.bond_id === bond.bond_id,
        );
        await this.o.ledger.loadCounts(bond.zid);
        await this.o.ledger.loadCounts(FOUNDATION_ACCOUNT);
        // From here to the commit: synchronous (counters in memory), as ledger.ts's rule asks.
        const ops: Op[] = [];
        const deltas = new Map<string, number>();
        const bump = (name: string, d: number) => deltas.set(name, (deltas.get(name) ?? 0) + d);
        for (const e of held) {
          const { immovable: _i, bond_id: _b, ...rest } = e;
          const moved: EnvelopeRecord = { ...rest, owner: FOUNDATION_ACCOUNT, folder: SLASHED_FOLDER };
          ops.push({ type: 'del', sub: this.byOwner, key: `${bond.zid}!${padNum(e.seq)}` });
          ops.push({ type: 'del', sub: this.byFolder, key: `${bond.zid}!${e.folder}!${padNum(e.seq)}` });
          ops.push({ type: 'put', sub: this.byOwner, key: `${FOUNDATION_ACCOUNT}!${padNum(e.seq)}`, value: e.token_id });
          ops.push({ type: 'put', sub: this.byFolder, key: `${FOUNDATION_ACCOUNT}!${SLASHED_FOLDER}!${padNum(e.seq)}`, value: e.token_id });
          ops.push({ type: 'put', sub: this.envelopes, key: e.token_id, value: moved });
          bump(folderCounter(bond.zid, e.folder), -1);
        }
        if (held.length > 0) {
          bump(envelopeCounter(bond.zid), -held.length);
          bump(envelopeCounter(FOUNDATION_ACCOUNT), held.length);
          bump(folderCounter(FOUNDATION_ACCOUNT, SLASHED_FOLDER), held.length);
        }
        const rec: SlashRecord = { challenge_id: id, bond_id: bond.bond_id, zid: bond.zid, token_ids: held.map((e) => e.token_id), svcond: this.o.nowSvcond() };
        ops.push({ type: 'put', sub: this.sub, key: effectRecordKey('slash', id), value: rec as unknown as Json });
        for (const [name, d] of deltas) this.o.counters.bump(name, d);
        this.o.counters.persistOps([...deltas.keys()], ops);
        this.o.log?.('slashing a bond', { challenge_id: id, bond_id: bond.bond_id, envelopes: held.length });
        try {
          await this.o.store.commit(ops);
        } catch (err) {
          for (const [name, d] of deltas) this.o.counters.revert(name, d);
          throw err;
        }
        this.o.log?.('bond slashed', { challenge_id: id, bond_id: bond.bond_id, envelopes: held.length });
      });
    }
    // The bond holds nothing now: it is released (its operator back to idle), once no other challenge holds it open.
    const active = this.o.bonds.ofZid(bond.zid)?.bond.bond_id === bond.bond_id;
    if (active && this.o.bonds.openChallenges(bond.bond_id).length > 0) return; // owed still: the next start tries the release again
    if (active) {
      const idle = this.o.modes.idleOnRelease(bond.zid);
      await this.o.bonds.release(bond.zid, idle.ops).then(
        () => idle.apply(),
        () => undefined,
      );
    }
    // Slashed, and released or no longer active: no longer owed.
    await this.o.store.commit([this.owed.done(id, 'slash')]);
  }
}

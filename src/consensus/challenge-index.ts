// Challenges by tick (docs/decisions.md, "Challenges indexed in their batch"). Listings page from two index
// sublevels written in the same batch as the challenge's entry, instead of reading every stored challenge:
//   challenges_by_tick   `inverse tick!challenge_id` → id   (newest first, then by id, in key order)
//   challenges_by_state  `state!inverse tick!challenge_id` → id
//   challenges_by_bond   `bond_id!inverse tick!challenge_id` → id   (a bond's challenges: GET /api/contribute/status)
//   challenges_counts    `states` → {state: n}   (listing totals; rewritten in each batch that moves a challenge)
// A challenge's tick never changes; its state does, so each write puts the key of its state and deletes the keys of
// the others (blind deletes: no read before the batch). Challenges stored before the index are indexed once at start.
import { padNum, type Op, type Store, type Sublevel } from '../store/db.js';
import { backfillOnce } from '../store/backfill.js';

/** The one-time pass indexing the challenges stored before the index (chain_meta, as every pass's state). */
const BACKFILL_KEY = 'challenges-by-tick-v1';
/** The one-time pass indexing by bond the challenges stored before the by-bond index existed. */
const BY_BOND_BACKFILL_KEY = 'challenges-by-bond-v1';
/** The key of the counts record. */
const COUNTS_KEY = 'states';

/** What the index reads of a challenge entry. */
export interface IndexedChallenge {
  state: string;
  challenge: { challenge: { challenge_id: string; svcond: number; executed_by: { bond_id: string } } };
}

export class ChallengeIndex {
  private readonly byTick: Sublevel;
  private readonly byState: Sublevel;
  private readonly byBond: Sublevel;
  private readonly countsSub: Sublevel;
  /** Stored challenges by state, counted at load and moved after each write's batch (null: count the index's keys). */
  private counts: Map<string, number> | null = null;

  constructor(
    private readonly store: Store,
    /** Every state a challenge can be in (each write deletes the keys of the others). */
    private readonly states: readonly string[],
  ) {
    this.byTick = store.sub('challenges_by_tick');
    this.byState = store.sub('challenges_by_state');
    this.byBond = store.sub('challenges_by_bond');
    this.countsSub = store.sub('challenges_counts', 'json', { rewritten: true });
  }

  /** The index ops of an entry as it is written now (in the entry's own batch). */
  ops(e: IndexedChallenge): Op[] {
    const c = e.challenge.challenge;
    const at = `${inverseTick(c.svcond)}!${c.challenge_id}`;
    const ops: Op[] = [{ type: 'put', sub: this.byTick, key: at, value: c.challenge_id }, this.bondOp(e)];
    for (const s of this.states) {
      const key = `${s}!${at}`;
      ops.push(s === e.state ? { type: 'put', sub: this.byState, key, value: c.challenge_id } : { type: 'del', sub: this.byState, key });
    }
    return ops;
  }

  /** A challenge's key in the by-bond index (its bond and tick never change: a put, the same each write). */
  private bondOp(e: IndexedChallenge): Op {
    const c = e.challenge.challenge;
    return { type: 'put', sub: this.byBond, key: `${c.executed_by.bond_id}!${inverseTick(c.svcond)}!${c.challenge_id}`, value: c.challenge_id };
  }

  /**
   * At load: how many challenges are in each state, from the counts record; a store without one (before it) has
   * them counted once from the by-state index's keys (no entry is read), and the record written; so has a store
   * whose one-time pass indexed challenges now (`recount`).
   */
  async count(recount = false): Promise<void> {
    const kept = recount ? undefined : await this.store.get<Record<string, number>>(this.countsSub, COUNTS_KEY);
    if (kept !== undefined) {
      this.counts = new Map(this.states.map((s) => [s, kept[s] ?? 0]));
      return;
    }
    const counts = new Map<string, number>();
    for (const s of this.states) counts.set(s, await this.countKeys(this.byState, { gte: `${s}!`, lt: `${s}!~` }));
    this.counts = counts;
    await this.store.commit([this.countsOp()]);
  }

  /**
   * A challenge about to be stored in state `to`, before in `from` (null: new): the counts moved now, and the op that
   * persists them for the write's batch (committed in this turn: batches land in call order); undo if it fails.
   */
  moveOps(from: string | null, to: string): { ops: Op[]; undo: () => void } {
    if (!this.counts || from === to) return { ops: [], undo: () => undefined };
    this.moved(from, to);
    return {
      ops: [this.countsOp()],
      undo: () => {
        this.bump(to, -1);
        if (from !== null) this.bump(from, 1);
      },
    };
  }

  /** Stored challenges in a state (0 before load). */
  countOf(state: string): number {
    return this.counts?.get(state) ?? 0;
  }

  private countsOp(): Op {
    return { type: 'put', sub: this.countsSub, key: COUNTS_KEY, value: Object.fromEntries(this.counts ?? []) };
  }

  private bump(state: string, d: number): void {
    this.counts?.set(state, Math.max(0, (this.counts.get(state) ?? 0) + d));
  }

  /** The ids of the challenges in the given states (the open ones, at load), newest first per state. */
  async idsIn(states: readonly string[]): Promise<string[]> {
    const ids: string[] = [];
    for (const s of states) for (const { value } of await this.store.range<string>(this.byState, { gte: `${s}!`, lt: `${s}!~` })) ids.push(value);
    return ids;
  }

  /** The ids of the challenges against a bond, newest tick first. */
  async ofBond(bondId: string): Promise<string[]> {
    return (await this.store.range<string>(this.byBond, { gte: `${bondId}!`, lt: `${bondId}!~` })).map((e) => e.value);
  }

  private async countKeys(sub: Sublevel, range: { gte: string; lt: string }): Promise<number> {
    let total = 0;
    const it = sub.keys(range);
    try {
      for await (const _ of it) total++;
    } finally {
      await it.close();
    }
    return total;
  }

  /** A challenge stored in state `to`, before in `from` (null: new): the counts in memory. */
  private moved(from: string | null, to: string): void {
    if (!this.counts || from === to) return;
    if (from !== null) this.bump(from, -1);
    this.bump(to, 1);
  }

  /** The ids of one page, newest tick first (then by id), of every challenge or of one state's; and how many there are. */
  async page(state: string | undefined, limit: number, offset: number): Promise<{ total: number; ids: string[] }> {
    const [sub, range] = state === undefined ? [this.byTick, { gte: '', lt: '~' }] : [this.byState, { gte: `${state}!`, lt: `${state}!~` }];
    const page = await this.store.range<string>(sub, { ...range, limit: offset + limit });
    const ids = page.slice(offset).map((e) => e.value);
    if (this.counts) {
      const total = state === undefined ? [...this.counts.values()].reduce((a, b) => a + b, 0) : (this.counts.get(state) ?? 0);
      return { total, ids };
    }
    // Not counted (no load yet): the index's keys only (no entry is read or parsed).
    return { total: await this.countKeys(sub, range), ids };
  }

  /** At start, once each: index the stored challenges (the same ops a write makes; a stop mid-pass resumes). */
  async backfill(entries: Sublevel): Promise<number> {
    const n = await backfillOnce<IndexedChallenge>(this.store, { key: BACKFILL_KEY, source: entries, opsFor: (_id, e) => this.ops(e) });
    return n + (await backfillOnce<IndexedChallenge>(this.store, { key: BY_BOND_BACKFILL_KEY, source: entries, opsFor: (_id, e) => [this.bondOp(e)] }));
  }
}

/** A tick as a key that sorts the newest first (ticks are non-negative safe integers). */
function inverseTick(svcond: number): string {
  return padNum(Number.MAX_SAFE_INTEGER - Math.max(0, Math.min(Math.floor(svcond), Number.MAX_SAFE_INTEGER)));
}

// The home change (docs/protocol.md §19, "Failover"): the node that gathered the promises of a majority of an
// identity's custody set for an epoch tells the mesh, in a signed event `custody.home` {zid, epoch, home, promises},
// that it is the identity's home from that epoch. Every node checks the promises against ITS view of the set (the home
// its directory holds, its members, its R) and keeps the change (one record per identity, the latest epoch), which is
// also what a custodian shows the old home when it refuses its entries as fenced. A change it cannot check (an epoch
// more than one above the one it knows: it missed the one between) is ignored, not applied.
import { z } from 'zod';
import { padNum, type Op, type Store, type Sublevel } from '../store/db.js';
import { excludedMember, excludedSchema, setOfConfig, type SetConfig } from './custody-set.js';
import { FIRST_EPOCH, ZID_PATTERN } from './entry.js';
import { homesToAsk, promisesFault, signedPromiseSchema, type EpochHome, type Verify } from './promise.js';

export const HOME_CHANGE_EVENT = 'custody.home';

/** One change as it is checked: the epoch, its home and the promises that made it. */
export const changeSchema = z
  .object({
    zid: z.string().regex(ZID_PATTERN),
    epoch: z
      .number()
      .int()
      .min(FIRST_EPOCH + 1),
    home: z.string().min(1).max(128),
    /** The promises of a majority of the set of the epoch before (promise.ts), the new home's own among them. */
    promises: z.array(signedPromiseSchema).min(1).max(7),
    /**
     * The epoch of the home whose set made the promises: below `epoch - 1` when epochs between were promised and never
     * completed (no home change made them), so a node that knows that epoch checks the change all the same.
     */
    after: z.number().int().min(FIRST_EPOCH).optional(),
    /**
     * The members the new home's set passes over in this epoch (custody-set.ts; absent: none), as every promise names
     * them: a reconfiguration is a change whose home is the home before, with another set.
     */
    excluded: excludedSchema.optional(),
  })
  .strict();
/** Most earlier changes a change carries. */
export const MAX_EARLIER_CHANGES = 8;

/**
 * A change as it travels: with the changes before it that its sender applied (at most MAX_EARLIER_CHANGES, oldest
 * first), so a node that missed some checks and applies them in order instead of ignoring the change as a gap.
 */
export const homeChangeSchema = changeSchema.extend({ earlier: z.array(changeSchema).max(MAX_EARLIER_CHANGES).optional() }).strict();
export type HomeChange = z.infer<typeof homeChangeSchema>;

/** What a checker knows of the identity: its home and the epoch of that home (and the members its set passes over). */
export interface KnownHome extends SetConfig {
  epoch: number;
  /**
   * The home of the epoch a change names as its base (`after`) when that epoch is below the one known here (null or
   * absent: not known here): such a change is checked from there when its promises name the epoch known here.
   */
  base?: SetConfig | null;
}

/** How a change compares with what the checker knows: apply it, it is known already, or it cannot be checked here. */
export type ChangeStanding = { apply: true } | { apply: false; why: 'known' | 'gap' | 'invalid'; reason: string };

/**
 * A change is checked from the epoch known here: its promises must hold a majority of that epoch's home's set (and of
 * the sets of the later epochs they name), as its candidate's did from the epoch it knew, which may be a later one
 * (an epoch whose candidate certified its epoch entry and stopped before any node applied its change: no node but
 * the ones holding that entry can check the change from it). A change made from an earlier epoch than the one known here (`after`: its
 * candidate had not heard of this one) whose promises do not is checked from its own base when that epoch's home is
 * known here (`known.base`) and its promises name the epoch known here with its home (its candidate asked that
 * home's set) or show a head of a later epoch (whose home did). A change made from an epoch above the one known here
 * whose promises do not hold from it is a gap: it cannot be checked here.
 */
export function standingOf(change: HomeChange, known: KnownHome, members: Iterable<string>, replicas: number, verify: Verify): ChangeStanding {
  if (change.epoch <= known.epoch) return { apply: false, why: 'known', reason: `epoch ${change.epoch} is not above the known ${known.epoch}` };
  const baseEpoch = change.after ?? change.epoch - 1;
  const candidate = { home: change.home, excluded: change.excluded };
  const faultFrom = (view: EpochHome) =>
    promisesFault(change.promises, change.zid, change.epoch, candidate, view, (at) => setOfConfig(change.zid, at, members, replicas), verify);
  const fromKnown = faultFrom(known);
  if (fromKnown === null) return { apply: true };
  if (baseEpoch > known.epoch) return { apply: false, why: 'gap', reason: `epoch ${change.epoch} follows an epoch not known here (${known.epoch})` };
  if (baseEpoch < known.epoch && known.base != null) {
    const base = { epoch: baseEpoch, ...known.base };
    const covers =
      change.promises.some((s) => (s.promise.head?.epoch ?? FIRST_EPOCH) > known.epoch) ||
      homesToAsk(change.promises, base).some((h) => h.epoch === known.epoch && h.home === known.home);
    const fromBase = covers ? faultFrom(base) : null;
    if (covers && fromBase === null) return { apply: true };
    if (covers) return { apply: false, why: 'invalid', reason: fromBase! };
  }
  if (baseEpoch === known.epoch || change.epoch === known.epoch + 1) return { apply: false, why: 'invalid', reason: fromKnown };
  return { apply: false, why: 'gap', reason: `epoch ${change.epoch} was made from epoch ${baseEpoch}, and its promises do not name the known ${known.epoch}` };
}

/** A home change as a node keeps it: with the home it replaced (who may fetch the chain to catch up). */
interface KeptChange {
  /** Without its earlier changes (kept in `earlier`). */
  change: HomeChange;
  earlier?: HomeChange[];
  previous: string;
  /** The home of each earlier epoch (by epoch): a debit of any of them is delivered, and checked, after the change. */
  homes?: Record<string, string>;
  /** The members the set of each earlier epoch passed over, by epoch (absent: none). */
  sets?: Record<string, string[]>;
}

/** A home change's key in the history: the identity, then the epoch (fixed width, so a range reads epochs in order). */
const historyKey = (zid: string, epoch: number) => `${zid}!${padNum(epoch, 8)}`;

/**
 * The latest home change of each identity this node applied (or made), with the homes of the epochs before it; and
 * the history: every change applied, made or learned here, by identity and epoch, which other nodes fetch to learn the
 * home of an epoch they missed (home-history.ts).
 */
export class HomeChanges {
  private readonly sub: Sublevel;
  private readonly history: Sublevel;
  /** Identities whose copy here waits for a new home's chain: zid → the epoch of that home's change (putOps). */
  private readonly waiting: Sublevel;
  private readonly cache = new Map<string, KeptChange | null>();

  constructor(private readonly store: Store) {
    this.sub = store.sub('custody_homes', 'json', { rewritten: true });
    this.history = store.sub('custody_changes', 'json');
    this.waiting = store.sub('custody_copies_waiting', 'json');
  }

  private async kept(zid: string): Promise<KeptChange | null> {
    const cached = this.cache.get(zid);
    if (cached !== undefined) return cached;
    const stored = (await this.store.get<KeptChange>(this.sub, zid)) ?? null;
    if (!this.cache.has(zid)) this.cache.set(zid, stored);
    return this.cache.get(zid) ?? null;
  }

  /** The latest change, with the earlier ones kept (as it is announced and shown to a fenced home). */
  async latest(zid: string): Promise<HomeChange | null> {
    const kept = await this.kept(zid);
    if (kept === null) return null;
    return kept.earlier !== undefined && kept.earlier.length > 0 ? { ...kept.change, earlier: kept.earlier } : kept.change;
  }

  /** The home the latest change replaced (null: none known). */
  async previousHome(zid: string): Promise<string | null> {
    return (await this.kept(zid))?.previous ?? null;
  }

  /**
   * Was `node` a home of `zid` before the latest change kept here: the home it replaced, an earlier epoch's home, or
   * the new home of a change in the history? Such a node may fetch the chain to take it in place of its copy.
   */
  async wasHome(zid: string, node: string): Promise<boolean> {
    const kept = await this.kept(zid);
    if (kept === null) return false;
    if (kept.previous === node || Object.values(kept.homes ?? {}).includes(node)) return true;
    const history = await this.store.range<HomeChange>(this.history, { gte: historyKey(zid, FIRST_EPOCH), lt: `${zid}!~` });
    return history.some((r) => r.value.home === node && r.value.epoch < kept.change.epoch);
  }

  /** The home of `zid` in `epoch`, an epoch before the latest change, and its set's passed-over members (null: not known here). */
  async configAt(zid: string, epoch: number): Promise<SetConfig | null> {
    const kept = await this.kept(zid);
    if (kept === null || epoch >= kept.change.epoch) return null;
    const home = kept.homes === undefined ? (epoch === kept.change.epoch - 1 ? kept.previous : null) : (kept.homes[String(epoch)] ?? null);
    return home === null ? null : { home, ...excludedMember(kept.sets?.[String(epoch)]) };
  }

  /**
   * The ops keeping `change`, which replaced `previous`, with the homes of the epochs before it (those kept, as read by
   * `latest`, and `previous`'s), and in the history; `waiting`: this node's copy of the ledger waits for the new home's
   * chain (an old home's copy, and the charges it made and never wrote: home-moves.ts replaceCopy), marked so a node
   * stopped meanwhile takes it after its start. `applied` once they are on disk.
   */
  putOps(change: HomeChange, previous: string, waiting = false): Op[] {
    return [
      { type: 'put', sub: this.sub, key: change.zid, value: this.keptOf(change, previous) },
      this.historyOp(change),
      waiting ? { type: 'put', sub: this.waiting, key: change.zid, value: change.epoch } : { type: 'del', sub: this.waiting, key: change.zid },
    ];
  }

  /** The epoch of the change whose new home's chain this node's copy of the identity waits for (null: none). */
  async waitingFor(zid: string): Promise<number | null> {
    return (await this.store.get<number>(this.waiting, zid)) ?? null;
  }

  /** The identities whose copy waits for a later home's chain here, at most `limit`. */
  async waitingZids(limit: number): Promise<string[]> {
    return (await this.store.range(this.waiting, { limit })).map((r) => r.key);
  }

  /** The op taking the mark off once the chain of epoch `epoch`'s home is written (none when it waits for another). */
  async takenOps(zid: string, epoch: number): Promise<Op[]> {
    return (await this.waitingFor(zid)) === epoch ? [{ type: 'del', sub: this.waiting, key: zid }] : [];
  }

  private historyOp(change: HomeChange): Op {
    const { earlier: _carried, ...bare } = change;
    return { type: 'put', sub: this.history, key: historyKey(change.zid, change.epoch), value: bare };
  }

  /**
   * Did `node` open epoch `epoch` of `zid`: is a change of that epoch naming it in the history? A node keeps every
   * change it makes, in the batch that makes it the home. Not the home a change's promises name for an epoch between
   * two changes (`configAt`): several candidates may have been promised that epoch, and only one certified it.
   */
  async opened(zid: string, epoch: number, node: string): Promise<boolean> {
    const kept = await this.store.get<HomeChange>(this.history, historyKey(zid, epoch));
    return kept !== undefined && kept.home === node;
  }

  /** The changes of `zid` in the history above epoch `after`, oldest first, at most `limit`. */
  async changesAfter(zid: string, after: number, limit: number): Promise<HomeChange[]> {
    const rows = await this.store.range<HomeChange>(this.history, { gte: historyKey(zid, after + 1), lt: `${zid}!~`, limit });
    return rows.map((r) => r.value);
  }

  /**
   * The home of `zid` in `epoch` as kept here, with its set's passed-over members: the latest change's, or one kept
   * with it for an earlier epoch (null: not known here, or no change of the identity here).
   */
  async knownConfig(zid: string, epoch: number): Promise<SetConfig | null> {
    const kept = await this.kept(zid);
    return kept !== null && epoch === kept.change.epoch ? configOf(kept.change) : this.configAt(zid, epoch);
  }

  /**
   * Keep the homes of epochs below the latest change learned from `changes` (each checked by the caller from an epoch
   * whose home is known here): with the kept record and in the history, in one batch.
   */
  async learn(zid: string, changes: readonly HomeChange[]): Promise<void> {
    const kept = await this.kept(zid);
    if (kept === null) return;
    const below = changes.filter((c) => c.epoch < kept.change.epoch);
    if (below.length === 0) return;
    const sets = { ...kept.sets, ...Object.fromEntries(below.flatMap((c) => (c.excluded === undefined ? [] : [[String(c.epoch), c.excluded]]))) };
    const next: KeptChange = {
      ...kept,
      homes: { ...kept.homes, ...Object.fromEntries(below.map((c) => [String(c.epoch), c.home])) },
      ...(Object.keys(sets).length > 0 ? { sets } : {}),
    };
    await this.store.commitAside([{ type: 'put', sub: this.sub, key: zid, value: next }, ...below.map((c) => this.historyOp(c))]);
    if (this.cache.get(zid) === kept) this.cache.set(zid, next);
  }

  applied(change: HomeChange, previous: string): void {
    this.cache.set(change.zid, this.keptOf(change, previous));
  }

  private keptOf(change: HomeChange, previous: string): KeptChange {
    const before = this.cache.get(change.zid) ?? null;
    if (before?.change.epoch === change.epoch) return before;
    // `previous` was the home of the epoch of the change before (an epoch promised but never completed has none), with
    // that change's set, and the epochs between that the change's promises name had the homes and sets they name
    // (promise.ts homesToAsk): a debit of one of them is checked under its set.
    const knownEpoch = before?.change.epoch ?? FIRST_EPOCH;
    const homes: Record<string, string> = { ...before?.homes, [String(knownEpoch)]: previous };
    const sets: Record<string, string[]> = { ...before?.sets };
    if (before?.change.excluded !== undefined && before.change.home === previous) sets[String(knownEpoch)] = before.change.excluded;
    for (const h of homesToAsk(change.promises, { epoch: knownEpoch, home: previous, ...excludedMember(sets[String(knownEpoch)]) }))
      if (h.epoch > knownEpoch && h.epoch < change.epoch && homes[String(h.epoch)] === undefined) {
        homes[String(h.epoch)] = h.home;
        if (h.excluded !== undefined) sets[String(h.epoch)] = h.excluded;
      }
    const { earlier: _carried, ...bare } = change;
    const earlier = before === null ? [] : [...(before.earlier ?? []), before.change].slice(-MAX_EARLIER_CHANGES);
    return { change: bare, previous, homes, ...(Object.keys(sets).length > 0 ? { sets } : {}), ...(earlier.length > 0 ? { earlier } : {}) };
  }
}

/** The home a change names and the members its set passes over. */
export function configOf(change: Pick<HomeChange, 'home' | 'excluded'>): SetConfig {
  return { home: change.home, ...excludedMember(change.excluded) };
}

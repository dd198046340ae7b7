// Counters kept in memory and persisted with the batch that changes them, so a total is never a scan
// and survives a restart. One instance per store; the node is the only writer.
//
// Storage: counters that always change together are stored as one record, so a seal writes fewer keys:
//   '#totals'    → {sealed_total, burned_total, foundation_total, envelope_seq, charged_total, foundation_shares_total}   (node-wide totals)
//   '#id:<zid>'  → {'env:<zid>': n, 'envf:<zid>:<folder>': n, 'chg:<zid>': n, 'rec:<zid>': n, …}   (an identity's envelope counts, credits charged, results published)
// Every other counter (day quotas, which are pruned by prefix) is its own key with a number value. Records of
// the earlier layout (one key per counter) are read at load and folded into their group record once.
// An identity's record is read when it is first needed (loadIdentity) and kept in a cache bounded by least recent
// use, so memory does not grow with the number of identities; the node totals and day counters stay in memory.
import { Holds, LruMap, PendingWrites } from '../util/bounded-map.js';
import { JsonText, QueuedValue, type Op, type Store, type Sublevel } from './db.js';

/** Identities whose counter records are kept in memory, unless configured (limits.identityCacheMax). */
export const IDENTITY_CACHE_DEFAULT = 4096;

const TOTALS_KEY = '#totals';
/** An identity's record is this prefix and its zid. */
export const IDENTITY_RECORD_PREFIX = '#id:';
const TOTALS = new Set(['sealed_total', 'burned_total', 'foundation_total', 'envelope_seq', 'charged_total', 'foundation_shares_total']);
/**
 * The totals that count what was written: on disk, the sum of the commits written. A commit the custody gate refuses
 * is counted in memory until its caller rolls back, and a commit made meanwhile must not carry it to the disk (a node
 * stopped before its next write would keep it). envelope_seq is not one: a number handed out is never given back.
 */
const WRITTEN_TOTALS = new Set(['sealed_total', 'burned_total', 'foundation_total', 'charged_total', 'foundation_shares_total']);

/** The totals record of one commit: its increments join `written` when the commit passes the gate (store/db.ts QueuedValue). */
class TotalsValue extends QueuedValue {
  constructor(
    private readonly written: Map<string, number>,
    private readonly snapshot: Record<string, number>,
    private readonly deltas: ReadonlyMap<string, number>,
  ) {
    super();
  }

  accepted(): void {
    for (const [name, d] of this.deltas) this.written.set(name, (this.written.get(name) ?? 0) + d);
  }

  discarded(): void {
    for (const [name, d] of this.deltas) this.written.set(name, (this.written.get(name) ?? 0) - d);
  }

  toJSON(): Record<string, number> {
    const value = { ...this.snapshot };
    for (const name of Object.keys(value)) if (WRITTEN_TOTALS.has(name)) value[name] = this.written.get(name) ?? 0;
    return value;
  }
}

/** The record key a counter is stored under, or null when it is stored alone. */
export function groupOf(name: string): string | null {
  if (TOTALS.has(name)) return TOTALS_KEY;
  const zid = identityOf(name);
  return zid === null ? null : `${IDENTITY_RECORD_PREFIX}${zid}`;
}

/** The identity whose record holds this counter, or null for a node-wide or day counter. */
export function identityOf(name: string): string | null {
  if (name.startsWith('env:') || name.startsWith('chg:') || name.startsWith('rec:')) return name.slice(4);
  if (name.startsWith('envf:')) {
    const end = name.indexOf(':', 5);
    if (end > 5) return name.slice(5, end);
  }
  return null;
}

export class Counters {
  /** Node totals and stand-alone (day) counters. */
  private readonly values = new Map<string, number>();
  /** Group record key → the counter names stored in it (the totals record; identities' records are in `identities`). */
  private readonly groups = new Map<string, Set<string>>();
  /** Identity → its record's counters (name → value): the identities used most recently. */
  private readonly identities: LruMap<string, Map<string, number>>;
  /** Identities whose counters changed in memory and are not written yet: never evicted. */
  private readonly pending: PendingWrites<string>;
  /** Identities whose counters a caller holds in memory (hold()): never evicted while held. */
  private readonly holds = new Holds<string>();
  /**
   * Reservations taken before their work (a day-quota slot) and not settled yet: counted by get, so limits see work in
   * flight, but never persisted, so a batch written meanwhile (or a crash) cannot store a count of work never sealed.
   */
  private readonly reserved = new Map<string, number>();
  /** WRITTEN_TOTALS as the commits written (or queued to be) sum them: what the totals record stores. */
  private readonly written = new Map<string, number>();
  /** Increments of WRITTEN_TOTALS made since the last totals record: the commit being made's, taken by its record. */
  private unassigned = new Map<string, number>();
  private readonly sub: Sublevel;

  constructor(
    private readonly store: Store,
    identityCacheMax = IDENTITY_CACHE_DEFAULT,
  ) {
    this.sub = store.sub('counters', 'json', { rewritten: true });
    this.pending = new PendingWrites(store.progress);
    this.identities = new LruMap(identityCacheMax, (zid) => this.pending.pending(zid) || this.holds.held(zid));
  }

  /** Keep an identity's record in memory, once loaded, until the returned release is called (Ledger.holding). */
  hold(zid: string): () => void {
    return this.holds.hold(zid);
  }

  /** Drop an identity's record kept in memory (written past this class: a custody failover's state transfer). */
  forgetIdentity(zid: string): void {
    this.identities.forget(zid);
  }

  /**
   * Stand-alone counters written past this class (a custody chain replayed: an identity's day counters, as the home
   * that held it wrote them, the chain's last write of each last): their values in memory follow what was written.
   */
  replayed(ops: readonly Op[]): void {
    for (const op of ops) {
      if (op.sub !== this.sub || op.key.startsWith('#') || groupOf(op.key) !== null) continue;
      if (op.type === 'del') this.values.delete(op.key);
      else {
        const value: unknown = op.value instanceof JsonText ? JSON.parse(op.value.text) : op.value;
        if (typeof value === 'number') this.values.set(op.key, value);
      }
    }
  }

  /**
   * A mark to take before in-memory increments whose batch may fail: `revert` given it leaves the counters of an
   * identity whose record was dropped since (its record was rewritten from a chain, without the increment).
   */
  mark(): number {
    return this.identities.mark();
  }

  /** Is this identity's record in memory (its counters usable synchronously)? */
  hasIdentity(zid: string): boolean {
    return this.identities.has(zid);
  }

  /** Identities whose counters are in memory now (≤ the bound, plus any with a write in flight). */
  get identitiesCached(): number {
    return this.identities.size;
  }

  /**
   * Read an identity's counter record into memory, if it is not there: after it, get/bump/persistOp of its
   * counters run synchronously. Undefined (nothing to wait for) when it is in memory already.
   */
  loadIdentity(zid: string): Promise<void> | undefined {
    if (this.identities.get(zid) !== undefined) return undefined;
    return this.identities
      .load(zid, async () => {
        const rec = await this.store.get<Record<string, number>>(this.sub, `${IDENTITY_RECORD_PREFIX}${zid}`);
        return new Map(rec && typeof rec === 'object' ? Object.entries(rec) : []);
      })
      .then(() => undefined);
  }

  /** An identity's counters in memory; a read of one not loaded is a bug of the caller, never a silent 0. */
  private identity(zid: string): Map<string, number> {
    const m = this.identities.get(zid);
    if (m === undefined) throw new Error(`counters of ${zid} not loaded`);
    return m;
  }

  async load(): Promise<void> {
    const legacy: string[] = [];
    const singles: [string, number][] = [];
    for (const { key, value } of await this.store.range<unknown>(this.sub)) {
      if (key.startsWith(IDENTITY_RECORD_PREFIX)) continue;
      if (key.startsWith('#')) {
        if (value && typeof value === 'object') {
          for (const [name, n] of Object.entries(value as Record<string, number>)) this.set(name, n);
        }
      } else if (typeof value === 'number') {
        singles.push([key, value]);
      }
    }
    // Single keys of grouped counters are from the earlier layout; a group record, when present, is newer.
    const touched = new Set<string>();
    for (const [name, n] of singles) {
      const group = groupOf(name);
      if (group === null) {
        this.values.set(name, n);
        continue;
      }
      legacy.push(name);
      const zid = identityOf(name);
      if (zid !== null) await this.loadIdentity(zid);
      if (!this.has(name)) {
        this.set(name, n);
        touched.add(group);
      }
    }
    if (legacy.length > 0) {
      // Fold the earlier layout into group records once, atomically.
      const ops: Op[] = [...touched].map((g) => this.groupOp(g));
      for (const name of legacy) ops.push({ type: 'del', sub: this.sub, key: name });
      await this.store.commit(ops);
    }
  }

  private has(name: string): boolean {
    const zid = identityOf(name);
    return zid === null ? this.values.has(name) : this.identity(zid).has(name);
  }

  private set(name: string, n: number): void {
    const zid = identityOf(name);
    if (zid !== null) {
      this.identity(zid).set(name, n);
      this.pending.changed(zid);
      return;
    }
    this.values.set(name, n);
    if (WRITTEN_TOTALS.has(name)) this.written.set(name, n);
    const group = groupOf(name);
    if (group === null) return;
    let members = this.groups.get(group);
    if (!members) this.groups.set(group, (members = new Set()));
    members.add(name);
  }

  /** A counter's value, with the reservations on it not yet settled. */
  get(name: string): number {
    return this.committed(name) + (this.reserved.get(name) ?? 0);
  }

  /** A counter's value without its reservations: what persistOp writes. */
  private committed(name: string): number {
    const zid = identityOf(name);
    if (zid !== null) return this.identity(zid).get(name) ?? 0;
    return this.values.get(name) ?? 0;
  }

  /** Apply an increment in memory only; persist with persistOps in the same batch (rollback with revert). */
  bump(name: string, delta: number): void {
    const zid = identityOf(name);
    if (zid !== null) {
      const m = this.identity(zid);
      m.set(name, (m.get(name) ?? 0) + delta);
      this.pending.changed(zid);
      return;
    }
    const current = this.values.get(name);
    if (current === undefined) {
      this.set(name, 0);
      this.values.set(name, delta);
    } else this.values.set(name, current + delta);
    if (WRITTEN_TOTALS.has(name)) this.unassigned.set(name, (this.unassigned.get(name) ?? 0) + delta);
  }

  /** Apply an increment in memory and return the op that persists it; add the op to the same batch. */
  add(name: string, delta: number): Op {
    this.bump(name, delta);
    return this.persistOp(name);
  }

  /**
   * Reserve in memory only (a day-quota slot taken before the work): counted by get, never persisted. The work's batch
   * settles it (settle, then persistOp in that batch); work that ends without a batch gives it back (unreserve).
   */
  reserve(name: string, delta = 1): number {
    this.reserved.set(name, (this.reserved.get(name) ?? 0) + delta);
    return this.get(name);
  }

  /** Give back a reservation that will not be settled. */
  unreserve(name: string, delta = 1): void {
    const left = (this.reserved.get(name) ?? 0) - delta;
    if (left > 0) this.reserved.set(name, left);
    else this.reserved.delete(name);
  }

  /** Turn a reservation into an increment in memory: persist it with persistOp in the batch (undo with unsettle). */
  settle(name: string, delta = 1): void {
    this.unreserve(name, delta);
    this.bump(name, delta);
  }

  /** Undo a settle whose batch failed: the increment goes, the reservation is held again. */
  unsettle(name: string, delta = 1): void {
    this.revert(name, delta);
    this.reserve(name, delta);
  }

  /** The op that persists a counter's current in-memory value (its whole group record, if it has one). */
  persistOp(name: string): Op {
    const group = groupOf(name);
    if (group !== null) return this.groupOp(group);
    return { type: 'put', sub: this.sub, key: name, value: this.committed(name) };
  }

  /** The ops that persist the current values of the named counters: one per record, in first-seen order. */
  persistOps(names: readonly string[], into: Op[] = []): Op[] {
    let seen: string[] | null = null;
    for (const name of names) {
      const key = groupOf(name) ?? name;
      if (seen === null) seen = [];
      else if (seen.includes(key)) continue;
      seen.push(key);
      into.push(this.persistOp(name));
    }
    return into;
  }

  private groupOp(group: string): Op {
    const value: Record<string, number> = {};
    if (group.startsWith(IDENTITY_RECORD_PREFIX)) {
      for (const [name, n] of this.identity(group.slice(IDENTITY_RECORD_PREFIX.length))) value[name] = n;
      return { type: 'put', sub: this.sub, key: group, value };
    }
    const members = this.groups.get(group);
    if (members) for (const name of members) value[name] = this.values.get(name) ?? 0;
    if (group !== TOTALS_KEY) return { type: 'put', sub: this.sub, key: group, value };
    const deltas = this.unassigned;
    this.unassigned = new Map();
    return { type: 'put', sub: this.sub, key: group, value: new TotalsValue(this.written, value, deltas) };
  }

  /**
   * Undo in-memory increments whose batch failed; `mark` (taken before them): not those of an identity whose record
   * was dropped since.
   */
  revert(name: string, delta: number, mark?: number): void {
    const zid = identityOf(name);
    if (zid !== null) {
      if (mark !== undefined && this.identities.forgottenSince(zid, mark)) return;
      // Not in memory: evicted after its failed batch settled, so the store holds the value without the change.
      const m = this.identities.get(zid);
      if (m !== undefined) m.set(name, (m.get(name) ?? 0) - delta);
      return;
    }
    this.values.set(name, (this.values.get(name) ?? 0) - delta);
  }

  /** Counters whose name starts with prefix, sorted by name (an identity's folder counters: load it first). */
  withPrefix(prefix: string): [string, number][] {
    const zid = identityOf(prefix);
    const from = zid !== null ? this.identity(zid) : this.values;
    return [...from.entries()].filter(([k]) => k.startsWith(prefix)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  }

  /** Drop counters with a given prefix below a cutoff key (old day counters). Returns the ops. */
  pruneBefore(prefix: string, cutoffKey: string): Op[] {
    const ops: Op[] = [];
    const groups = new Set<string>();
    for (const key of [...this.values.keys()]) {
      if (key.startsWith(prefix) && key < cutoffKey) {
        this.values.delete(key);
        const group = groupOf(key);
        if (group === null) ops.push({ type: 'del', sub: this.sub, key });
        else {
          this.groups.get(group)?.delete(key);
          groups.add(group);
        }
      }
    }
    for (const group of groups) ops.push(this.groupOp(group));
    return ops;
  }
}

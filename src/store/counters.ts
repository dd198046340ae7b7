// Counters kept in memory and persisted with the batch that changes them, so a total is never a scan
// and survives a restart. One instance per store; the node is the only writer.
//
// Storage: counters that always change together are stored as one record, so a seal writes fewer keys:
//   '#totals'    → {sealed_total, burned_total, foundation_total, envelope_seq, charged_total, foundation_shares_total}   (node-wide totals)
//   '#id:<zid>'  → {'env:<zid>': n, 'envf:<zid>:<folder>': n, 'chg:<zid>': n, …}   (an identity's envelope counts, credits charged)
// Every other counter (day quotas, which are pruned by prefix) is its own key with a number value. Records of
// the earlier layout (one key per counter) are read at load and folded into their group record once.
import type { Op, Store, Sublevel } from './db.js';

const TOTALS_KEY = '#totals';
const TOTALS = new Set(['sealed_total', 'burned_total', 'foundation_total', 'envelope_seq', 'charged_total', 'foundation_shares_total']);

/** The record key a counter is stored under, or null when it is stored alone. */
export function groupOf(name: string): string | null {
  if (TOTALS.has(name)) return TOTALS_KEY;
  if (name.startsWith('env:') || name.startsWith('chg:')) return `#id:${name.slice(4)}`;
  if (name.startsWith('envf:')) {
    const end = name.indexOf(':', 5);
    if (end > 5) return `#id:${name.slice(5, end)}`;
  }
  return null;
}

export class Counters {
  private readonly values = new Map<string, number>();
  /** Group record key → the counter names stored in it. */
  private readonly groups = new Map<string, Set<string>>();
  private readonly sub: Sublevel;

  constructor(private readonly store: Store) {
    this.sub = store.sub('counters', 'json', { rewritten: true });
  }

  async load(): Promise<void> {
    const legacy: string[] = [];
    const singles: [string, number][] = [];
    for (const { key, value } of await this.store.range<unknown>(this.sub)) {
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
      if (!this.values.has(name)) {
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

  private set(name: string, n: number): void {
    this.values.set(name, n);
    const group = groupOf(name);
    if (group === null) return;
    let members = this.groups.get(group);
    if (!members) this.groups.set(group, (members = new Set()));
    members.add(name);
  }

  get(name: string): number {
    return this.values.get(name) ?? 0;
  }

  /** Apply an increment in memory only; persist with persistOps in the same batch (rollback with revert). */
  bump(name: string, delta: number): void {
    const current = this.values.get(name);
    if (current === undefined) this.set(name, delta);
    else this.values.set(name, current + delta);
  }

  /** Apply an increment in memory and return the op that persists it; add the op to the same batch. */
  add(name: string, delta: number): Op {
    this.bump(name, delta);
    return this.persistOp(name);
  }

  /** Reserve in memory only (e.g. a day quota slot taken before the work); persist with persistOp at seal time. */
  reserve(name: string, delta = 1): number {
    this.bump(name, delta);
    return this.get(name);
  }

  /** The op that persists a counter's current in-memory value (its whole group record, if it has one). */
  persistOp(name: string): Op {
    const group = groupOf(name);
    if (group !== null) return this.groupOp(group);
    return { type: 'put', sub: this.sub, key: name, value: this.get(name) };
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
    const members = this.groups.get(group);
    if (members) for (const name of members) value[name] = this.values.get(name) ?? 0;
    return { type: 'put', sub: this.sub, key: group, value };
  }

  /** Undo in-memory increments whose batch failed. */
  revert(name: string, delta: number): void {
    this.values.set(name, this.get(name) - delta);
  }

  /** Counters whose name starts with prefix, sorted by name. */
  withPrefix(prefix: string): [string, number][] {
    return [...this.values.entries()].filter(([k]) => k.startsWith(prefix)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
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

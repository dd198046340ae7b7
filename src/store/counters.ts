// Counters kept in memory and persisted with the batch that changes them, so a total is never a scan
// and survives a restart. One instance per store; the node is the only writer.
import type { Op, Store, Sublevel } from './db.js';

export class Counters {
  private readonly values = new Map<string, number>();
  private readonly sub: Sublevel;

  constructor(private readonly store: Store) {
    this.sub = store.sub('counters');
  }

  async load(): Promise<void> {
    for (const { key, value } of await this.store.range<number>(this.sub)) this.values.set(key, value);
  }

  get(name: string): number {
    return this.values.get(name) ?? 0;
  }

  /** Apply an increment in memory and return the op that persists it; add the op to the same batch. */
  add(name: string, delta: number): Op {
    const next = this.get(name) + delta;
    this.values.set(name, next);
    return { type: 'put', sub: this.sub, key: name, value: next };
  }

  /** Reserve in memory only (e.g. a day quota slot taken before the work); persist with persistOp at seal time. */
  reserve(name: string, delta = 1): number {
    const next = this.get(name) + delta;
    this.values.set(name, next);
    return next;
  }

  /** The op that persists a counter's current in-memory value. */
  persistOp(name: string): Op {
    return { type: 'put', sub: this.sub, key: name, value: this.get(name) };
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
    for (const key of [...this.values.keys()]) {
      if (key.startsWith(prefix) && key < cutoffKey) {
        this.values.delete(key);
        ops.push({ type: 'del', sub: this.sub, key });
      }
    }
    return ops;
  }
}

// Caches bounded in size: when a new key would pass the limit, the oldest inserted entry goes first (Map keeps
// insertion order; setting a key already present neither moves it nor evicts anything). The one helper for every
// "drop the oldest when full" cache of the node, so the bound is checked in one place.

export class BoundedMap<K, V> extends Map<K, V> {
  constructor(readonly max: number) {
    super();
    if (!(Number.isInteger(max) && max >= 1)) throw new RangeError(`a bounded map needs max ≥ 1, got ${max}`);
  }

  override set(key: K, value: V): this {
    // `max` is undefined while Map's constructor runs (it sets nothing here: no initial entries are accepted).
    if (this.max !== undefined && !this.has(key)) {
      while (this.size >= this.max) this.delete(this.keys().next().value as K);
    }
    return super.set(key, value);
  }
}

export class BoundedSet<T> extends Set<T> {
  constructor(readonly max: number) {
    super();
    if (!(Number.isInteger(max) && max >= 1)) throw new RangeError(`a bounded set needs max ≥ 1, got ${max}`);
  }

  override add(value: T): this {
    if (this.max !== undefined && !this.has(value)) {
      while (this.size >= this.max) this.delete(this.values().next().value as T);
    }
    return super.add(value);
  }
}

/** A second bound of an LruMap: the sum of its entries' weights (estimated bytes, say) stays at most `max`. */
export interface WeightBound<V> {
  max: number;
  of: (value: V) => number;
}

/**
 * A cache of records that live in the store, bounded by least recent use: get() and set() make an entry the newest,
 * and when a set passes the bound (entries, and with `weights` their summed weight) the least recently used entries
 * go first, except those `keep` names (an in-memory change whose write has not settled, see PendingWrites): they
 * stay, and the map is over its bound only by them, until they are written. A miss is answered by reading the store
 * again, so no value depends on the cache.
 */
export class LruMap<K, V> extends Map<K, V> {
  /** Reads of missing keys in flight (load): one per key, shared by every miss of it until it lands. */
  private readonly reads = new Map<K, { value: Promise<V>; overtaken: boolean }>();
  /** How many forget() calls were made, and the count at each key's last one (what forgottenSince asks). */
  private forgets = 0;
  private readonly forgottenAt = new Map<K, number>();

  /** The summed weight of the entries (0 without `weights`). */
  private weighed = 0;
  private readonly weightOf = new Map<K, number>();

  constructor(
    readonly max: number,
    private readonly keep: (key: K) => boolean = () => false,
    readonly weights?: WeightBound<V>,
  ) {
    super();
    if (!(Number.isInteger(max) && max >= 1)) throw new RangeError(`a bounded map needs max ≥ 1, got ${max}`);
    if (weights !== undefined && !(Number.isFinite(weights.max) && weights.max >= 1)) throw new RangeError(`a weight bound needs max ≥ 1, got ${weights.max}`);
  }

  /** The summed weight of the entries (0 without a weight bound). */
  get weight(): number {
    return this.weighed;
  }

  /**
   * The entry, read with `read` on a miss and kept (`landed` runs as it enters, in the same turn). Misses of one key
   * share one read. Why that is enough: only an entry in memory is changed, and a changed one stays until its write
   * settles, so a missing key has every write settled and a read started now is current when it lands. Two reads of
   * a key would not be: the first lands, a change is written, the entry is evicted, and the second, started before
   * that write, lands with the value it overwrote. A read overtaken by forget() (the key was written past the
   * cache) is made again.
   */
  load(key: K, read: () => Promise<V>, landed?: (value: V) => void): Promise<V> {
    const hit = this.get(key);
    if (hit !== undefined) return Promise.resolve(hit);
    const inFlight = this.reads.get(key);
    if (inFlight !== undefined) return inFlight.value;
    const flight: { value: Promise<V>; overtaken: boolean } = { value: Promise.resolve(undefined as V), overtaken: false };
    this.reads.set(key, flight);
    flight.value = (async (): Promise<V> => {
      try {
        for (;;) {
          const value: V = await read();
          if (flight.overtaken) {
            flight.overtaken = false;
            continue;
          }
          const present = this.get(key);
          if (present !== undefined) return present;
          this.set(key, value);
          landed?.(value);
          return value;
        }
      } finally {
        if (this.reads.get(key) === flight) this.reads.delete(key);
      }
    })();
    return flight.value;
  }

  /** Drop a key whose record was written past the cache: a read of it in flight may predate the write, and is made again. */
  forget(key: K): boolean {
    const inFlight = this.reads.get(key);
    if (inFlight !== undefined) inFlight.overtaken = true;
    this.forgottenAt.set(key, ++this.forgets);
    return this.delete(key);
  }

  /** A mark to take before an in-memory change whose undo may come after its key is forgotten (forgottenSince). */
  mark(): number {
    return this.forgets;
  }

  /**
   * Was `key` forgotten since `mark`? Its record was then rewritten past the cache without the change made after the
   * mark: an undo of that change has nothing left to undo.
   */
  forgottenSince(key: K, mark: number): boolean {
    return (this.forgottenAt.get(key) ?? 0) > mark;
  }

  override get(key: K): V | undefined {
    const v = super.get(key);
    if (v !== undefined && this.max !== undefined) {
      super.delete(key);
      super.set(key, v);
    }
    return v;
  }

  override set(key: K, value: V): this {
    if (this.max === undefined) return super.set(key, value);
    this.unweigh(key);
    super.delete(key);
    super.set(key, value);
    if (this.weights !== undefined) {
      const w = this.weights.of(value);
      this.weightOf.set(key, w);
      this.weighed += w;
    }
    if (this.over()) this.trim(key);
    return this;
  }

  override delete(key: K): boolean {
    // Map's constructor and clear() may call in before the fields exist.
    if (this.weightOf !== undefined) this.unweigh(key);
    return super.delete(key);
  }

  override clear(): void {
    this.weightOf.clear();
    this.weighed = 0;
    super.clear();
  }

  private unweigh(key: K): void {
    const w = this.weightOf.get(key);
    if (w === undefined) return;
    this.weighed -= w;
    this.weightOf.delete(key);
  }

  private over(): boolean {
    return this.size > this.max || (this.weights !== undefined && this.weighed > this.weights.max);
  }

  /**
   * Evict least recently used entries that are not kept until the bounds hold (or only kept ones are left); never
   * `newest`, the entry just set (a caller loading it is about to use it).
   */
  private trim(newest: K): void {
    for (const k of super.keys()) {
      if (!this.over()) return;
      if (k !== newest && !this.keep(k)) this.delete(k);
    }
  }
}

/** How far the store's writes have come: commits accepted, and commits settled (written or failed), in order. */
export interface WriteProgress {
  readonly commits: number;
  readonly settled: number;
}

/**
 * Keys changed in memory whose write has not settled yet: such an entry must not leave its cache, or a read of the
 * store in between would miss the change. The rule it relies on (the one the ledger already follows): a change in
 * memory and the commit that writes it are made in one synchronous turn, so that commit is the next one accepted
 * or a later one of the same turn, and the store settles the commits of one turn together (one batch).
 */
export class PendingWrites<K> {
  private readonly marks = new Map<K, number>();

  constructor(private readonly progress: WriteProgress) {}

  /** `key` changed in memory; its commit follows in this turn. */
  changed(key: K): void {
    this.marks.set(key, this.progress.commits + 1);
  }

  /** Is a change of `key` not yet written (or failed)? */
  pending(key: K): boolean {
    const mark = this.marks.get(key);
    if (mark === undefined) return false;
    if (this.progress.settled >= mark) {
      this.marks.delete(key);
      return false;
    }
    return true;
  }

  /** Keys with marks kept (settled ones are dropped as they are asked about or evicted). */
  get size(): number {
    return this.marks.size;
  }

  forget(key: K): void {
    this.marks.delete(key);
  }
}

/**
 * Keys a caller holds in a cache while it works with them: an entry it loaded and reads synchronously after more
 * awaits, which a bounded cache must not let go meanwhile (a cache's `keep` asks `held`). Counted: holders of one key
 * release in any order.
 */
export class Holds<K> {
  private readonly counts = new Map<K, number>();

  /** Hold `key` until the returned release is called (once; later calls do nothing). */
  hold(key: K): () => void {
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.counts.get(key) ?? 1) - 1;
      if (left > 0) this.counts.set(key, left);
      else this.counts.delete(key);
    };
  }

  held(key: K): boolean {
    return this.counts.has(key);
  }
}

/** Run `use`, then call every release of holds taken for it (Holds.hold and the caches' hold methods), however it ends. */
export async function whileHeld<T>(releases: readonly (() => void)[], use: () => Promise<T>): Promise<T> {
  try {
    return await use();
  } finally {
    for (const release of releases) release();
  }
}

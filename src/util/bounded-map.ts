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

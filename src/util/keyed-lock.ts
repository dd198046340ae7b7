// Work under one key at a time, in arrival order (another key never waits): an identity's envelope changes, a state
// machine's writes, a stream channel's ticks, a reactor's steps, an agent's ticks, a webhook's changes. A failed piece
// of work releases the key like a finished one.
export class KeyedLock {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const tail = before.then(() => mine);
    this.tails.set(key, tail);
    await before;
    try {
      return await work();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  /**
   * Work under every one of `keys` at once. The keys are taken one by one in sorted order, so two callers whose keys
   * overlap never each hold one the other waits for.
   */
  runAll<T>(keys: Iterable<string>, work: () => Promise<T>): Promise<T> {
    const sorted = [...new Set(keys)].sort();
    const from = (i: number): Promise<T> => (i === sorted.length ? work() : this.run(sorted[i]!, () => from(i + 1)));
    return from(0);
  }
}

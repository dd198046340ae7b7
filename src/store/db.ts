// LevelDB through `level`: one database per data dir, JSON values, named sublevels, and one write path
// (`commit`) that groups the ops of concurrent writers into a single atomic batch (group commit).
// Each caller's ops land in one batch, so every acknowledged write is atomic and, with sync on, durable.
import { Level } from 'level';
import type { AbstractSublevel } from 'abstract-level';

export type Json = unknown;
export type Sublevel = AbstractSublevel<Level<string, Json>, string | Buffer | Uint8Array, string, Json>;

export type Op =
  | { type: 'put'; sub: Sublevel; key: string; value: Json }
  | { type: 'del'; sub: Sublevel; key: string };

export interface StoreOptions {
  /** fsync each batch (durable across a machine crash). */
  sync: boolean;
}

interface Pending {
  ops: Op[];
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class Store {
  readonly db: Level<string, Json>;
  private readonly subs = new Map<string, Sublevel>();
  private queue: Pending[] = [];
  private flushing = false;
  private closed = false;
  private readonly sync: boolean;
  /** Batches written and ops written, for the bench and status. */
  readonly stats = { batches: 0, ops: 0 };

  private constructor(db: Level<string, Json>, options: StoreOptions) {
    this.db = db;
    this.sync = options.sync;
  }

  static async open(dir: string, options: StoreOptions = { sync: true }): Promise<Store> {
    const db = new Level<string, Json>(dir, { valueEncoding: 'json' });
    await db.open();
    return new Store(db, options);
  }

  /** A named sublevel; 'utf8' for values that are already text (e.g. serialised results). */
  sub(name: string, encoding: 'json' | 'utf8' = 'json'): Sublevel {
    let s = this.subs.get(name);
    if (!s) {
      s = this.db.sublevel<string, Json>(name, { valueEncoding: encoding }) as Sublevel;
      this.subs.set(name, s);
    }
    return s;
  }

  async get<T = Json>(sub: Sublevel, key: string): Promise<T | undefined> {
    const v = await sub.get(key);
    return (v === undefined ? undefined : v) as T | undefined;
  }

  async getMany<T = Json>(sub: Sublevel, keys: string[]): Promise<(T | undefined)[]> {
    if (keys.length === 0) return [];
    return (await sub.getMany(keys)) as (T | undefined)[];
  }

  /** Entries of a sublevel in key order within [gte, lt), at most limit, optionally reversed. */
  async range<T = Json>(
    sub: Sublevel,
    opts: { gte?: string; lt?: string; limit?: number; reverse?: boolean } = {},
  ): Promise<{ key: string; value: T }[]> {
    const out: { key: string; value: T }[] = [];
    const it = sub.iterator({ ...opts, limit: opts.limit ?? -1 });
    try {
      for await (const [key, value] of it) out.push({ key, value: value as T });
    } finally {
      await it.close();
    }
    return out;
  }

  /**
   * Write ops atomically. Ops of callers that arrive while a batch is in flight are grouped into the next
   * batch; each caller's promise settles when the batch holding its ops is on disk.
   */
  commit(ops: Op[]): Promise<void> {
    if (this.closed) return Promise.reject(new Error('store is closed'));
    if (ops.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ ops, resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.queue.length > 0) {
        const group = this.queue;
        this.queue = [];
        const batch = this.db.batch();
        let count = 0;
        for (const p of group) {
          for (const op of p.ops) {
            if (op.type === 'put') batch.put(op.key, op.value, { sublevel: op.sub });
            else batch.del(op.key, { sublevel: op.sub });
            count++;
          }
        }
        try {
          await batch.write({ sync: this.sync });
          this.stats.batches++;
          this.stats.ops += count;
          for (const p of group) p.resolve();
        } catch (err) {
          for (const p of group) p.reject(err);
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  /** Wait for queued writes, then close LevelDB. */
  async close(): Promise<void> {
    while (this.flushing || this.queue.length > 0) await new Promise((r) => setTimeout(r, 5));
    this.closed = true;
    await this.db.close();
  }
}

/** Fixed-width decimal so that lexicographic key order is numeric order. */
export function padNum(n: number, width = 16): string {
  return String(n).padStart(width, '0');
}

// LevelDB through `level`: one database per data dir, JSON values, named sublevels, and one write path
// (`commit`) that groups the ops of concurrent writers into a single atomic batch (group commit).
// Each caller's ops land in one batch, so every acknowledged write is atomic and, with sync on, durable.
import { Level } from 'level';
import type { AbstractSublevel } from 'abstract-level';

export type Json = unknown;
export type Sublevel = AbstractSublevel<Level<string, Json>, string | Buffer | Uint8Array, string, Json>;

export type Op = { type: 'put'; sub: Sublevel; key: string; value: Json } | { type: 'del'; sub: Sublevel; key: string };

export interface StoreOptions {
  /** fsync each batch (durable across a machine crash). */
  sync: boolean;
}

interface Pending {
  /** Encoded ops (those not on rewritten records): root key, then the value text or bytes (put) or null (del). */
  encoded: (string | Uint8Array | null)[];
  /** Its ops on rewritten records, put in the batch's last-op map when it joins the queue. */
  rewrites: Op[] | null;
  /** Counted in `progress` (a commit made with commitAside is not). */
  tracked: boolean;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * A stage between a commit and its batch: the custody replicator (src/custody/replicator.ts) holds an identity's
 * ledger writes until a majority of its custodians hold them. Called synchronously in the committer's turn.
 */
export interface CommitGate {
  /** null: the ops go on as they are; else the ops to add to the commit's batch, once they may be written (rejected: the commit fails, nothing of it is written). */
  hold(ops: readonly Op[]): Promise<Op[]> | null;
  /** A commit it refused (`ops`, as given to hold) has settled: its caller was told, and rolls its memory back. */
  refusalSettled?(ops: readonly Op[]): void;
}

/** A commit waiting for its turn: commits join the queue in the order they were made, a held one when its gate lets it. */
interface Held {
  pending: Pending;
  ops: readonly Op[];
  ready: boolean;
  failure: unknown;
}

/**
 * A batch could not be written (disk full, I/O error, store closed under it). Nothing of it is on disk; the callers
 * roll back what they changed in memory.
 */
export class StoreWriteError extends Error {
  constructor(cause: unknown) {
    super(`the store could not write: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    this.name = 'StoreWriteError';
  }
}

/**
 * A value of a 'json' sublevel given as its JSON text, written as it is: for a record whose JSON a caller made
 * already (e.g. to hash it). Read back, it is the parsed value like any other.
 */
export class JsonText {
  constructor(readonly text: string) {}
}

/**
 * A rewritten record's value that depends on which commits are written: `accepted` when its commit joins the write
 * queue (it passed the gate, in the order commits were made), `discarded` when the batch holding it could not be
 * written, `toJSON` when that batch is encoded. A commit the gate refused calls neither (store/counters.ts: the node
 * totals count written commits only).
 */
export abstract class QueuedValue {
  abstract accepted(): void;
  abstract discarded(): void;
  abstract toJSON(): Json;
}

/**
 * Per-op option of a put whose value is bytes (the root's default value encoding is utf8). Frozen: abstract-level
 * spreads the options into each op and adds members, and V8 then makes a new hidden class per op from an ordinary
 * object literal, not from a frozen one (measured with %HaveSameMap).
 */
const BYTES = Object.freeze({ valueEncoding: 'view' } as const);

export class Store {
  readonly db: Level<string, Json>;
  private readonly subs = new Map<string, Sublevel>();
  /** Value encoding of each sublevel made by sub(): 'json' values are JSON text on disk, 'utf8' and 'bytes' as is. */
  private readonly encodings = new WeakMap<Sublevel, 'json' | 'utf8' | 'bytes'>();
  private readonly rewrittenSubs = new WeakSet<Sublevel>();
  private queue: Pending[] = [];
  /**
   * The queued commits' ops on rewritten records (sub(…, { rewritten: true })), by root key: only the last op on
   * each is written, and its value is encoded then (a counter or wallet record, rewritten by every seal of a batch,
   * is serialised once per batch, not once per seal).
   */
  private rewrites = new Map<string, Op>();
  private flushing = false;
  private closed = false;
  /** Where held commits wait, in order (empty unless a gate holds one). */
  private held: Held[] = [];
  /** The stage that may hold a commit (set by the composition root; null: every commit goes straight to the queue). */
  gate: CommitGate | null = null;
  private readonly sync: boolean;
  /** Batches written and ops written (after dropping ops replaced within their batch), for the bench and status. */
  readonly stats = { batches: 0, ops: 0 };
  /**
   * Commits accepted and commits settled (written or failed), counted in order: commits settle in the order they
   * were accepted, those of one synchronous turn in one batch. The bounded caches keep an entry whose change is not
   * settled yet (util/bounded-map.ts, PendingWrites).
   */
  readonly progress = { commits: 0, settled: 0 };
  /** Called after each batch is written: its ops and how long the write took (the node's metrics, node/foundation.ts). */
  onBatch: ((ops: number, seconds: number) => void) | null = null;

  private constructor(db: Level<string, Json>, options: StoreOptions) {
    this.db = db;
    this.sync = options.sync;
  }

  static async open(dir: string, options: StoreOptions = { sync: true }): Promise<Store> {
    // Every record lives in a sublevel with its own value encoding; the root's utf8 encoding is what `flush`
    // writes through (keys prefixed and values encoded here, so abstract-level's per-op work stays monomorphic).
    // A 16 MiB write buffer (LevelDB's default is 4 MiB): 4× fewer memtable flushes and level-0 files to compact
    // under sustained sealing (~4.5 KB per seal); measured ~10 % less CPU per seal, all threads. Memory: two
    // memtables at most (active + flushing).
    const db = new Level<string, Json>(dir, { valueEncoding: 'utf8', writeBufferSize: 16 * 1024 * 1024 });
    await db.open();
    return new Store(db, options);
  }

  /**
   * A named sublevel; 'utf8' for values that are already text, 'bytes' for values that are already UTF-8 bytes
   * (serialised results: written as given, read back as a Buffer).
   */
  sub(name: string, encoding: 'json' | 'utf8' | 'bytes' = 'json', options: { rewritten?: boolean } = {}): Sublevel {
    let s = this.subs.get(name);
    if (!s) {
      s = this.db.sublevel<string, Json>(name, { valueEncoding: encoding === 'bytes' ? 'buffer' : encoding }) as Sublevel;
      this.subs.set(name, s);
      this.encodings.set(s, encoding);
    }
    // Records of this sublevel are rewritten by many commits (counters, wallets): within one batch only the last
    // op on each of its keys is written. Other keys are written as given (LevelDB applies a batch in order, so a
    // repeated key still ends with its last value; this only saves writing the ones that would be replaced).
    if (options.rewritten) this.rewrittenSubs.add(s);
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

  /** Entries of a sublevel in key order within [gte, lt), at most limit, optionally reversed; an undefined bound is none. */
  async range<T = Json>(sub: Sublevel, opts: { gte?: string; lt?: string; limit?: number; reverse?: boolean } = {}): Promise<{ key: string; value: T }[]> {
    const out: { key: string; value: T }[] = [];
    // Level reads an undefined bound as the text "undefined" (a range past every hex key): it is left out instead.
    const { gte, lt, reverse } = opts;
    const it = sub.iterator({ ...(gte === undefined ? {} : { gte }), ...(lt === undefined ? {} : { lt }), reverse: reverse ?? false, limit: opts.limit ?? -1 });
    try {
      for await (const [key, value] of it) out.push({ key, value: value as T });
    } finally {
      await it.close();
    }
    return out;
  }

  /** Keys of a sublevel, counted up to `max` (a backlog's size: bounded, so a huge one costs no more than `max` keys). */
  async count(sub: Sublevel, max: number): Promise<number> {
    let n = 0;
    const it = sub.keys({ limit: max });
    try {
      for await (const _ of it) n++;
    } finally {
      await it.close();
    }
    return n;
  }

  /**
   * Write ops atomically. Ops of callers that arrive while a batch is in flight are grouped into the next
   * batch; each caller's promise settles when the batch holding its ops is on disk.
   */
  commit(ops: Op[]): Promise<void> {
    return this.accept(ops, true);
  }

  /**
   * Write ops that no other commit builds on (a custodian's records of other nodes' identities) in the next batch,
   * past the commits a gate holds: a custodian answering its peers never waits for its own identities' custodians.
   */
  commitAside(ops: Op[]): Promise<void> {
    return this.accept(ops, false);
  }

  private accept(ops: Op[], tracked: boolean): Promise<void> {
    if (this.closed) return Promise.reject(new Error('store is closed'));
    if (ops.length === 0) return Promise.resolve();
    let pending: Pending;
    try {
      pending = this.encodeOps(ops, tracked);
    } catch (err) {
      return Promise.reject(err);
    }
    if (tracked) this.progress.commits++;
    let hold: Promise<Op[]> | null = null;
    if (tracked && this.gate !== null) {
      try {
        hold = this.gate.hold(ops);
      } catch (err) {
        hold = Promise.reject(err);
      }
    }
    return new Promise<void>((resolve, reject) => {
      pending.resolve = resolve;
      pending.reject = reject;
      if (!tracked || (hold === null && this.held.length === 0)) {
        this.enqueue(pending);
        return;
      }
      const h: Held = { pending, ops, ready: hold === null, failure: null };
      this.held.push(h);
      hold?.then(
        (extra) => {
          try {
            const more = this.encodeOps(extra, true);
            pending.encoded.push(...more.encoded);
            if (more.rewrites !== null) (pending.rewrites ??= []).push(...more.rewrites);
          } catch (err) {
            h.failure = err;
          }
          h.ready = true;
          this.drainHeld();
        },
        (err: unknown) => {
          h.failure = err ?? new Error('the commit was refused');
          h.ready = true;
          this.drainHeld();
        },
      );
    });
  }

  /**
   * Encode now, in the caller's turn: a value that cannot be encoded fails this caller only. Same bytes as
   * put(key, value, { sublevel }): the sublevel's key prefix and its value encoding (level-transcoder's json is
   * JSON.stringify), without abstract-level's per-op option cloning.
   */
  private encodeOps(ops: readonly Op[], tracked: boolean): Pending {
    const encoded: (string | Uint8Array | null)[] = [];
    let rewrites: Op[] | null = null;
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i]!;
      if (this.rewrittenSubs.has(op.sub)) {
        // Checked now, encoded when the batch is written (values of rewritten records are never changed after a commit).
        if (op.type === 'put') this.checkEncodable(op.sub, op.value);
        (rewrites ??= []).push(op);
        continue;
      }
      encoded.push(op.sub.prefixKey(op.key, 'utf8'), op.type === 'put' ? this.encode(op.sub, op.value) : null);
    }
    return { encoded, rewrites, tracked, resolve: () => undefined, reject: () => undefined };
  }

  /** Held commits join the queue in the order they were made; a refused one settles there in its turn, unwritten. */
  private drainHeld(): void {
    while (this.held.length > 0 && this.held[0]!.ready) {
      const h = this.held.shift()!;
      if (h.failure === null) this.enqueue(h.pending);
      else {
        const { failure, pending, ops } = h;
        const settled = () => this.gate?.refusalSettled?.(ops);
        this.enqueue({
          encoded: [],
          rewrites: null,
          tracked: true,
          resolve: () => {
            pending.reject(failure);
            settled();
          },
          reject: (err) => {
            pending.reject(err);
            settled();
          },
        });
      }
    }
  }

  private enqueue(pending: Pending): void {
    if (pending.rewrites !== null)
      for (const op of pending.rewrites) {
        if (op.type === 'put' && op.value instanceof QueuedValue) op.value.accepted();
        this.rewrites.set(op.sub.prefixKey(op.key, 'utf8'), op);
      }
    this.queue.push(pending);
    if (!this.flushing) {
      // Started after the current round of I/O callbacks (setImmediate), so one batch takes the seals of the whole
      // round, not the first alone: one log write (and one fsync) for all of them.
      this.flushing = true;
      void nextRound().then(() => this.flush());
    }
  }

  private async flush(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const group = this.queue;
        const rewrites = this.rewrites;
        this.queue = [];
        this.rewrites = new Map();
        const batch = this.db.batch();
        let count = 0;
        try {
          for (let g = 0; g < group.length; g++) {
            const e = group[g]!.encoded;
            for (let i = 0; i < e.length; i += 2) {
              const value = e[i + 1] ?? null;
              if (value === null) batch.del(e[i] as string);
              else if (typeof value === 'string') batch.put(e[i] as string, value);
              else batch.put(e[i] as string, value as unknown as string, BYTES);
              count++;
            }
          }
          // A rewritten record's last op in this batch: the totals record, and a busy identity's wallet, counters
          // and quota slot, are rewritten by every seal.
          for (const [key, op] of rewrites) {
            if (op.type === 'del') batch.del(key);
            else {
              const value = this.encode(op.sub, op.value);
              if (typeof value === 'string') batch.put(key, value);
              else batch.put(key, value as unknown as string, BYTES);
            }
            count++;
          }
          const started = this.onBatch === null ? 0 : performance.now();
          await batch.write({ sync: this.sync });
          if (this.onBatch !== null) this.onBatch(count, (performance.now() - started) / 1000);
          this.stats.batches++;
          this.stats.ops += count;
          this.progress.settled += tracked(group);
          for (const p of group) p.resolve();
        } catch (err) {
          // The callers queued meanwhile built their ops on this group's in-memory changes (a chain row's previous
          // hash, a counter's new total): written without this group they would leave a gap on disk, so they fail
          // with it, and every caller rolls back.
          const failed = new StoreWriteError(err);
          const queued = this.queue;
          this.queue = [];
          this.rewrites = new Map();
          this.progress.settled += tracked(group) + tracked(queued);
          for (const p of [...group, ...queued])
            for (const op of p.rewrites ?? []) if (op.type === 'put' && op.value instanceof QueuedValue) op.value.discarded();
          for (const p of group) p.reject(failed);
          for (const p of queued) p.reject(failed);
        }
        // Buffered, a write returns fast and few callers are queued by then: the next batch waits for the end of
        // this round of I/O callbacks to take every seal it makes. Durable (fsync), callers pile up during the
        // write, and starting the next batch at once, before the answers of this one go out, is what shortens the
        // cycle (measured: +7 % durable sealed/s at 50 connections, 6 pairs; deferring here won 2 of 3 buffered).
        if (!this.sync) await nextRound();
      }
    } finally {
      this.flushing = false;
    }
  }

  private encode(sub: Sublevel, value: Json): string | Uint8Array {
    const encoding = this.encodings.get(sub);
    if (encoding === 'json') return value instanceof JsonText ? value.text : JSON.stringify(value);
    this.checkEncodable(sub, value);
    return value as string | Uint8Array;
  }

  /** Throws the TypeError encode would throw for this value, without encoding it. */
  private checkEncodable(sub: Sublevel, value: Json): void {
    const encoding = this.encodings.get(sub);
    if (encoding === 'bytes' && !(value instanceof Uint8Array)) throw new TypeError('a bytes sublevel takes Uint8Array values');
    if (encoding === 'utf8' && typeof value !== 'string') throw new TypeError('a utf8 sublevel takes string values');
  }

  /** Wait for queued writes, then close LevelDB. */
  async close(): Promise<void> {
    while (this.flushing || this.queue.length > 0 || this.held.length > 0) await new Promise((r) => setTimeout(r, 5));
    this.closed = true;
    await this.db.close();
  }
}

/** Commits of a group counted in `progress`. */
function tracked(group: readonly Pending[]): number {
  let n = 0;
  for (const p of group) if (p.tracked) n++;
  return n;
}

/** Resolves in the event loop's check phase, after the I/O callbacks of the current round. */
function nextRound(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Fixed-width decimal so that lexicographic key order is numeric order. */
export function padNum(n: number, width = 16): string {
  return String(n).padStart(width, '0');
}

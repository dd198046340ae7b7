// The storage format version of a data dir's store: one number in the store_meta sublevel, written at the first start.
// A start on an older store runs the registered migrations from its version up, each one resumable pass
// (store/backfill.ts) whose last batch also bumps the version, so a stop mid-migration resumes on the next start and
// a version is never bumped without its migration's last write. A store older than the migrations reach, or newer
// than this code, is refused with what to do.
import { backfillOnce } from './backfill.js';
import type { Json, Op, Store, Sublevel } from './db.js';

/** The version of a store written before the version key existed (the first format). */
export const FIRST_FORMAT = 1;

/** Where the version (and each migration's progress) is kept. */
export const STORE_META = 'store_meta';
export const FORMAT_KEY = 'storage_format';

/** One step from `from` to `from + 1`: a walk over one sublevel in key order, with idempotent ops for each record. */
export interface Migration {
  from: number;
  /** What it changes, for the log line. */
  what: string;
  source: (store: Store) => Sublevel;
  /** The ops of one record, on `store` (the same ops again when a stopped pass redoes its last chunk). */
  opsFor: (key: string, value: Json, store: Store) => Op[] | Promise<Op[]>;
}

export interface StorageFormat {
  /** The version this code reads and writes. */
  version: number;
  migrations: readonly Migration[];
}

/** This release's format: the first, no migrations yet. */
export const STORAGE_FORMAT: StorageFormat = { version: FIRST_FORMAT, migrations: [] };

/** The store cannot be opened by this code (too old to migrate, or newer): the message says what to do. */
export class StorageFormatError extends Error {
  constructor(
    message: string,
    readonly found: number,
    readonly expected: number,
  ) {
    super(message);
    this.name = 'StorageFormatError';
  }
}

export interface FormatOutcome {
  /** The version found (null: a new store). */
  found: number | null;
  version: number;
  /** The migrations run now, by their from-version. */
  migrated: number[];
}

/** The version a store holds: its key, else FIRST_FORMAT when it has records, else null (a new store). */
export async function storedFormat(store: Store): Promise<number | null> {
  const kept = await store.get<unknown>(store.sub(STORE_META), FORMAT_KEY);
  if (kept !== undefined) {
    if (!Number.isSafeInteger(kept) || (kept as number) < FIRST_FORMAT)
      throw new Error(`the store's ${FORMAT_KEY} record is not a version: ${JSON.stringify(kept)}`);
    return kept as number;
  }
  const first = await store.db.keys({ limit: 1 }).all();
  return first.length === 0 ? null : FIRST_FORMAT;
}

/**
 * Bring the store to `format.version` before anything reads it: write the version on a new store, migrate an older
 * one (each migration announced through `log` before it runs), refuse one it cannot.
 */
export async function settleStorageFormat(store: Store, format: StorageFormat, log: (message: string) => void = () => undefined): Promise<FormatOutcome> {
  const meta = store.sub(STORE_META);
  const found = await storedFormat(store);
  const versionOp = (v: number): Op => ({ type: 'put', sub: meta, key: FORMAT_KEY, value: v });
  if (found === null) {
    await store.commit([versionOp(format.version)]);
    return { found, version: format.version, migrated: [] };
  }
  if (found > format.version) {
    throw new StorageFormatError(
      `the data dir's store is in storage format ${found}, newer than this svc-node reads (${format.version}): run the svc-node release that wrote it or a later one, or restore a backup taken before the upgrade`,
      found,
      format.version,
    );
  }
  const migrated: number[] = [];
  for (let v = found; v < format.version; v++) {
    const step = format.migrations.find((m) => m.from === v);
    if (!step) {
      throw new StorageFormatError(
        `the data dir's store is in storage format ${v} and this svc-node (format ${format.version}) has no migration from it: start a release that migrates format ${v} first (docs/operating.md, Upgrades), or restore a backup into a new data dir`,
        v,
        format.version,
      );
    }
    log(`migrating the store from storage format ${v} to ${v + 1}: ${step.what}`);
    await backfillOnce(store, {
      key: `migration-${v}`,
      source: step.source(store),
      opsFor: (key, value) => step.opsFor(key, value, store),
      meta,
      finish: [versionOp(v + 1)],
    });
    migrated.push(v);
  }
  // A store from before the version key, already at the first format: the key is written once.
  if (migrated.length === 0 && (await store.get(meta, FORMAT_KEY)) === undefined) await store.commit([versionOp(found)]);
  return { found, version: format.version, migrated };
}

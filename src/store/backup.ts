// A data dir's backup file: gzip of NDJSON lines. The first line says what it is (format, node, versions); then one
// line per data-dir file kept with the store (the node's secrets) and one per LevelDB entry, key and value as base64
// of their bytes, all read from one iterator (one LevelDB snapshot: a state between two batches, never half of one);
// the last line is the manifest: the counts per sublevel and the SHA-256 of every line before it. A restore checks
// the whole file before it writes anything, and writes into a temporary dir renamed into place at the end.
import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readdir, rename, rm, rmdir } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { createGunzip, createGzip, type Gzip } from 'node:zlib';
import { Level } from 'level';
import { writeSecretFile } from '../config/secret-file.js';
import { makeDirs } from '../util/make-dirs.js';

export const BACKUP_FORMAT = 'svc-node-backup';
export const BACKUP_FORMAT_VERSION = 1;
/** The store's directory inside a data dir. */
import { STORE_DIR } from './store-dir.js';

export interface BackupHeader {
  format: typeof BACKUP_FORMAT;
  format_version: number;
  node_version: string;
  node_id: string;
  /** The store's storage format (store/format.ts): a node of a later release migrates it at its first start. */
  storage_format: number | null;
  created_unix_ms: number;
}

export interface BackupManifest extends BackupHeader {
  /** The data-dir files in the backup, by name. */
  files: string[];
  entries: number;
  /** Entries per sublevel (the key's first `!name!` prefix; "" for keys outside any sublevel). */
  counts: Record<string, number>;
  /** Bytes of the lines before the manifest, uncompressed. */
  bytes: number;
  /** SHA-256 (hex) of those bytes. */
  sha256: string;
}

export interface DataDirFile {
  name: string;
  bytes: Uint8Array;
}

/** A database read as raw bytes: the node's open store (store.db) or a data dir's store opened by the CLI. */
export type RawDb = Level<string, unknown>;

/** The sublevel an encoded key belongs to. */
function sublevelOf(key: Buffer): string {
  if (key[0] !== 0x21) return '';
  const end = key.indexOf(0x21, 1);
  return end < 0 ? '' : key.subarray(1, end).toString('utf8');
}

/** 64 KiB of lines per chunk handed to gzip. */
const CHUNK_BYTES = 64 * 1024;

/**
 * The backup of `db` and `files` as a gzip stream. The iterator (the snapshot) is opened now, in the caller's turn,
 * so the backup holds the store as it is when this is called, whatever is written while the stream is read.
 */
export function backupStream(db: RawDb, header: Omit<BackupHeader, 'format' | 'format_version'>, files: DataDirFile[]): Gzip {
  const it = db.iterator({ keyEncoding: 'buffer', valueEncoding: 'buffer' });
  async function* lines(): AsyncGenerator<Buffer> {
    const hash = createHash('sha256');
    let bytes = 0;
    let chunk: string[] = [];
    let chunkBytes = 0;
    const take = (line: string): Buffer | null => {
      chunk.push(line, '\n');
      chunkBytes += line.length + 1;
      if (chunkBytes < CHUNK_BYTES) return null;
      return drain();
    };
    const drain = (): Buffer => {
      const out = Buffer.from(chunk.join(''), 'utf8');
      hash.update(out);
      bytes += out.length;
      chunk = [];
      chunkBytes = 0;
      return out;
    };
    const head: BackupHeader = { format: BACKUP_FORMAT, format_version: BACKUP_FORMAT_VERSION, ...header };
    take(JSON.stringify(head));
    for (const f of files) take(JSON.stringify({ file: f.name, data: Buffer.from(f.bytes).toString('base64') }));
    const counts: Record<string, number> = {};
    let entries = 0;
    try {
      for await (const [key, value] of it as AsyncIterable<[Buffer, Buffer]>) {
        const sub = sublevelOf(key);
        counts[sub] = (counts[sub] ?? 0) + 1;
        entries++;
        const out = take(JSON.stringify([key.toString('base64'), value.toString('base64')]));
        if (out !== null) yield out;
      }
    } finally {
      await it.close();
    }
    const last = drain();
    if (last.length > 0) yield last;
    const manifest: BackupManifest = { ...head, files: files.map((f) => f.name), entries, counts, bytes, sha256: hash.digest('hex') };
    yield Buffer.from(`${JSON.stringify({ manifest })}\n`, 'utf8');
  }
  const gzip = createGzip();
  const source = Readable.from(lines());
  source.on('error', (err) => gzip.destroy(err));
  gzip.on('close', () => {
    // A reader that went away: end the walk (its finally closes the iterator).
    if (!source.readableEnded) source.destroy();
  });
  return source.pipe(gzip);
}

/** The file is not a whole, unaltered backup of this format. */
export class BackupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackupError';
  }
}

type Line = { kind: 'file'; file: DataDirFile } | { kind: 'entry'; key: Buffer; value: Buffer };

function isHeader(v: unknown): v is BackupHeader {
  const h = v as Partial<BackupHeader> | null;
  return typeof h === 'object' && h !== null && h.format === BACKUP_FORMAT && typeof h.format_version === 'number' && typeof h.node_id === 'string';
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function parseLine(text: string, n: number): Line | { kind: 'manifest'; manifest: BackupManifest } {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new BackupError(`line ${n} is not JSON`);
  }
  if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string' && BASE64.test(v[0]) && BASE64.test(v[1])) {
    return { kind: 'entry', key: Buffer.from(v[0], 'base64'), value: Buffer.from(v[1], 'base64') };
  }
  const o = v as { file?: unknown; data?: unknown; manifest?: unknown } | null;
  if (o && typeof o.file === 'string' && /^[A-Za-z0-9._-]+$/.test(o.file) && typeof o.data === 'string' && BASE64.test(o.data)) {
    return { kind: 'file', file: { name: o.file, bytes: Buffer.from(o.data, 'base64') } };
  }
  if (o && isHeader(o.manifest)) return { kind: 'manifest', manifest: o.manifest as BackupManifest };
  throw new BackupError(`line ${n} is neither a file, an entry nor the manifest`);
}

/**
 * Read a backup file line by line, checking it as it goes; `each` sees every file and entry line. Resolves with the
 * manifest once the whole file is read and its digest and counts match; rejects with a BackupError otherwise.
 */
export async function readBackup(path: string, each: (line: Line) => void | Promise<void> = () => undefined): Promise<BackupManifest> {
  const input = createReadStream(path).pipe(createGunzip());
  const reader = createInterface({ input, crlfDelay: Infinity });
  const hash: Hash = createHash('sha256');
  let bytes = 0;
  let n = 0;
  let header: BackupHeader | null = null;
  let manifest: BackupManifest | null = null;
  const counts: Record<string, number> = {};
  let entries = 0;
  try {
    for await (const text of reader) {
      n++;
      if (manifest !== null) throw new BackupError(`line ${n} follows the manifest`);
      if (n === 1) {
        let head: unknown;
        try {
          head = JSON.parse(text);
        } catch {
          head = null;
        }
        if (!isHeader(head)) throw new BackupError('the first line is not an svc-node backup header');
        if (head.format_version !== BACKUP_FORMAT_VERSION) {
          throw new BackupError(`backup format ${head.format_version} is not the one this svc-node reads (${BACKUP_FORMAT_VERSION})`);
        }
        header = head;
      } else {
        const line = parseLine(text, n);
        if (line.kind === 'manifest') {
          manifest = line.manifest;
          continue;
        }
        if (line.kind === 'entry') {
          const sub = sublevelOf(line.key);
          counts[sub] = (counts[sub] ?? 0) + 1;
          entries++;
        }
        await each(line);
      }
      const raw = Buffer.from(`${text}\n`, 'utf8');
      hash.update(raw);
      bytes += raw.length;
    }
  } catch (err) {
    if (err instanceof BackupError) throw err;
    throw new BackupError(`cannot read it: ${(err as Error).message}`);
  } finally {
    reader.close();
    input.destroy();
  }
  if (header === null) throw new BackupError('it is empty');
  if (manifest === null) throw new BackupError('it ends before its manifest (a cut or unfinished backup)');
  const digest = hash.digest('hex');
  if (manifest.sha256 !== digest || manifest.bytes !== bytes) throw new BackupError(`its content does not match the manifest's SHA-256 (${manifest.sha256})`);
  if (manifest.entries !== entries || JSON.stringify(sortedCounts(manifest.counts)) !== JSON.stringify(sortedCounts(counts))) {
    throw new BackupError('its entries do not match the counts of the manifest');
  }
  return manifest;
}

function sortedCounts(c: Record<string, number>): [string, number][] {
  return Object.entries(c).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** Entries written per batch on restore. */
const RESTORE_BATCH = 1000;

/** Whether `dir` is missing or an empty directory (a restore's target). */
export async function isEmptyDir(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length === 0;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw err;
  }
}

/**
 * Restore a checked backup into `dataDir` (missing or empty): the whole file is checked first, then written into a
 * sibling temporary dir (files 0600, entries in batches) which is renamed to `dataDir` once complete, so a stopped
 * restore leaves no half-written data dir.
 */
export async function restoreBackup(path: string, dataDir: string): Promise<BackupManifest> {
  if (!(await isEmptyDir(dataDir))) throw new BackupError(`${dataDir} is not empty: restore into a new or empty data dir`);
  const checked = await readBackup(path);
  await makeDirs(dirname(dataDir));
  const tmp = join(dirname(dataDir), `.${basename(dataDir)}.restoring-${process.pid}`);
  await rm(tmp, { recursive: true, force: true });
  await mkdir(tmp, { mode: 0o700 });
  const db = new Level<Buffer, Buffer>(join(tmp, STORE_DIR), { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  try {
    await db.open();
    let batch = db.batch();
    const manifest = await readBackup(path, async (line) => {
      if (line.kind === 'file') {
        await writeSecretFile(join(tmp, line.file.name), line.file.bytes);
        return;
      }
      batch.put(line.key, line.value);
      if (batch.length >= RESTORE_BATCH) {
        await batch.write({ sync: false });
        batch = db.batch();
      }
    });
    // The last batch durable, with every earlier one (LevelDB's log is one file, written in order).
    await batch.write({ sync: true });
    if (manifest.sha256 !== checked.sha256) throw new BackupError('the file changed while it was restored');
    await db.close();
    await rmdir(dataDir).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
    await rename(tmp, dataDir);
    return manifest;
  } catch (err) {
    await db.close().catch(() => undefined);
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
}

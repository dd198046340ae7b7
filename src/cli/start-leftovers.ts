// What a failed `svc-node start` made in its data dir, removed again: an operator who fixes the reason (a busy port,
// a bad flag the node found late) is not left with a node key, secrets and a store no node ever used. Only what this
// start made goes: a directory that stood before stays (empty or not, with the mode it had), and so does every entry
// it held. A data dir that held a store is a node's: nothing in it is removed, whatever the start added.
import { chmod, lstat, readdir, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { STORE_DIR } from '../store/store-dir.js';

/** The data dir as it stood before a start. */
export type DataDirBefore =
  /** `top` is the highest missing directory on the data dir's path: the first a start makes. */
  | { kind: 'missing'; top: string }
  /** A directory with no store: its entries and its mode (a start makes it private) before the start. */
  | { kind: 'entries'; dir: string; entries: ReadonlySet<string>; mode: number }
  /** A node's data dir (it holds a store), or one that could not be read: a failed start removes nothing. */
  | { kind: 'keep' };

/** Reads how `dir` stands, before the start makes anything there. */
export async function dataDirBefore(dir: string): Promise<DataDirBefore> {
  let path = resolve(dir);
  let top: string | null = null;
  for (;;) {
    try {
      await lstat(path);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return { kind: 'keep' };
      top = path;
      if (dirname(path) === path) break;
      path = dirname(path);
    }
  }
  if (top !== null) return { kind: 'missing', top };
  try {
    const entries = new Set(await readdir(path));
    const mode = (await stat(path)).mode & 0o7777;
    return entries.has(STORE_DIR) ? { kind: 'keep' } : { kind: 'entries', dir: path, entries, mode };
  } catch {
    // A file, a link to nothing, a directory this user may not read: the start fails on it and makes nothing there.
    return { kind: 'keep' };
  }
}

/**
 * Removes what a failed start made since `before` was read, and returns the paths removed. A start refused because
 * another node holds the store removes nothing: that node may have made the same new data dir at the same time.
 */
export async function removeStartLeftovers(before: DataDirBefore, err: unknown): Promise<string[]> {
  if (before.kind === 'keep' || storeLocked(err)) return [];
  if (before.kind === 'missing') {
    await rm(before.top, { recursive: true, force: true });
    return [before.top];
  }
  const made = (await readdir(before.dir).catch(() => [])).filter((name) => !before.entries.has(name)).map((name) => join(before.dir, name));
  for (const path of made) await rm(path, { recursive: true, force: true });
  if (((await stat(before.dir)).mode & 0o7777) !== before.mode) await chmod(before.dir, before.mode);
  return made;
}

function storeLocked(err: unknown): boolean {
  const e = err as { code?: unknown; cause?: { code?: unknown } } | null | undefined;
  return e?.code === 'LEVEL_LOCKED' || e?.cause?.code === 'LEVEL_LOCKED';
}

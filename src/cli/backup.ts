// svc-node backup and restore (docs/operating.md, Backups). backup: a consistent copy of a data dir's store and
// secrets, from the running node that holds the store (POST /api/admin/backup with the operator token) or, when no
// node runs on it, read from the data dir itself; written to a temporary file, checked, then renamed to --out.
// restore: checks a backup whole, then rebuilds a data dir from it (store/backup.ts). Exit 0 done, 1 the node refused
// or the file is not a usable backup, 2 a usage error (missing data dir, non-empty target, node not reachable).
import { STORE_DIR } from '../store/store-dir.js';
import { dataDirProblem } from './data-dir.js';
import { createWriteStream } from 'node:fs';
import { readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { Command } from 'commander';
import { readOperatorToken } from '../config/operator-token.js';
import { NODE_VERSION } from '../config/version.js';
import type { BackupManifest } from '../store/backup.js';
import type { Store } from '../store/db.js';
import { exitWith, unreachableReason } from './node-request.js';

// What a backup or restore needs, loaded when one runs (the other commands start without the node's modules).
const foundation = () => import('../node/foundation.js');
const backups = () => import('../store/backup.js');

/** The data dir given, or exit 2 (nothing is created for a missing one). */
async function existingDataDir(dir: string): Promise<void> {
  const problem = await dataDirProblem(dir, { store: true });
  if (problem !== null) exitWith(problem, 2);
}

function isLocked(err: unknown): boolean {
  const e = err as { code?: string; cause?: { code?: string } };
  return e.code === 'LEVEL_LOCKED' || e.cause?.code === 'LEVEL_LOCKED';
}

/** The store read directly (no node runs on the data dir); null when a node holds it. */
async function backupFromDataDir(dataDir: string, tmp: string): Promise<boolean> {
  const [{ backupStream }, { Store }, { storedFormat }, { readNodeId }] = await Promise.all([
    backups(),
    import('../store/db.js'),
    import('../store/format.js'),
    import('../mesh/identity.js'),
  ]);
  let store: Store;
  try {
    store = await Store.open(join(dataDir, STORE_DIR), { sync: false });
  } catch (err) {
    if (isLocked(err)) return false;
    throw err;
  }
  try {
    const nodeId = (await readNodeId(dataDir)) ?? '';
    const header = { node_version: NODE_VERSION, node_id: nodeId, storage_format: await storedFormat(store), created_unix_ms: Date.now() };
    const { readDataDirSecrets } = await foundation();
    await pipeline(backupStream(store.db, header, await readDataDirSecrets(dataDir)), createWriteStream(tmp, { mode: 0o600 }));
  } finally {
    await store.close();
  }
  return true;
}

/** The backup streamed by the running node. */
async function backupFromNode(opts: { dataDir: string; url?: string; token?: string }, tmp: string): Promise<void> {
  const { LOCAL_URL_FILE } = await foundation();
  const url = opts.url ?? (await readFile(join(opts.dataDir, LOCAL_URL_FILE), 'utf8').catch(() => '')).trim();
  if (!url) exitWith(`a node holds ${opts.dataDir} but its URL is unknown: give --url`, 2);
  const token = opts.token ?? process.env.SVC_OPERATOR_TOKEN ?? (await readOperatorToken(opts.dataDir));
  if (!token) exitWith(`no operator token: give --token, SVC_OPERATOR_TOKEN or a data dir holding operator-token`, 2);
  const { BACKUP_PATH } = await import('../http/routes/admin.js');
  const target = `${url.replace(/\/+$/, '')}${BACKUP_PATH}`;
  let res: Response;
  try {
    res = await fetch(target, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
  } catch (err) {
    exitWith(`a node holds ${opts.dataDir} but ${target} cannot be reached: ${unreachableReason(err)}`, 2);
  }
  if (!res.ok || res.body === null) {
    const text = await res.text();
    let error: { code?: string; message?: string } | undefined;
    try {
      error = (JSON.parse(text) as { error?: typeof error }).error;
    } catch {
      error = undefined;
    }
    exitWith(`${target} answered ${res.status}${error ? ` ${error.code}: ${error.message}` : ''}`, 1);
  }
  await pipeline(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), createWriteStream(tmp, { mode: 0o600 }));
}

function summary(file: string, m: BackupManifest, extra: Record<string, unknown>): string {
  const { node_id, node_version, storage_format, created_unix_ms, entries, counts, files, sha256 } = m;
  return `${JSON.stringify({ file, ...extra, node_id, node_version, storage_format, created_unix_ms, entries, counts, files, sha256 })}\n`;
}

export function addBackupCommands(program: Command): void {
  program
    .command('backup')
    .description("a consistent backup of a node's data dir (store and secrets), from the node running on it or from the dir itself")
    .option('--data-dir <dir>', 'the data dir', process.env.SVC_DATA_DIR ?? './data')
    .requiredOption('--out <file>', 'the backup file to write (gzip; as secret as the data dir)')
    .option('--url <url>', "the running node's URL (default: the one it wrote in the data dir)")
    .option('--token <token>', "the operator token (default: SVC_OPERATOR_TOKEN, else the data dir's operator-token)")
    .action(async (opts: { dataDir: string; out: string; url?: string; token?: string }) => {
      await existingDataDir(opts.dataDir);
      // A usage error like the data dir's, said before any reading (it was exit 1 with the ENOENT of a temporary file).
      const outDir = dirname(resolve(opts.out));
      if (
        !(await stat(outDir).then(
          (s) => s.isDirectory(),
          () => false,
        ))
      )
        exitWith(`--out: directory ${outDir} does not exist`, 2);
      const { readBackup, BackupError } = await backups();
      const tmp = `${opts.out}.partial-${process.pid}`;
      let from: 'data dir' | 'running node' = 'data dir';
      try {
        if (!(await backupFromDataDir(opts.dataDir, tmp))) {
          from = 'running node';
          await backupFromNode(opts, tmp);
        }
        const manifest = await readBackup(tmp);
        await rename(tmp, opts.out);
        process.stdout.write(summary(opts.out, manifest, { from }));
      } catch (err) {
        await rm(tmp, { force: true });
        exitWith(err instanceof BackupError ? `the backup read back is not whole: ${err.message}` : `backup failed: ${(err as Error).message}`, 1);
      }
    });

  program
    .command('restore')
    .description('rebuild a data dir from a backup: checks the whole file, then writes a new data dir (missing or empty)')
    .requiredOption('--in <file>', 'the backup file')
    .requiredOption('--data-dir <dir>', 'the data dir to create')
    .action(async (opts: { in: string; dataDir: string }) => {
      if ((await stat(opts.in).catch(() => null)) === null) exitWith(`no backup file ${opts.in}`, 2);
      const { isEmptyDir, restoreBackup, BackupError } = await backups();
      if (!(await isEmptyDir(opts.dataDir))) exitWith(`${opts.dataDir} is not empty: restore into a new or empty data dir`, 2);
      try {
        const manifest = await restoreBackup(opts.in, opts.dataDir);
        process.stdout.write(summary(opts.in, manifest, { restored: opts.dataDir }));
      } catch (err) {
        exitWith(err instanceof BackupError ? `${opts.in} is not a usable backup: ${err.message}` : `restore failed: ${(err as Error).message}`, 1);
      }
    });
}

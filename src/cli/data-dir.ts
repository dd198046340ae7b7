// The data dir a client command reads (keys, verify, grant): it must exist. A typo must not leave a fresh node key
// and operator token behind and exit 0 as if it had read the node's; only `svc-node start` makes a data dir.
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { STORE_DIR } from '../store/store-dir.js';

/**
 * Why `dir` cannot be read as a node's data dir (it is missing, or not a directory; with `store`, it holds no node's
 * store: a wrong but existing directory), or null when it can.
 */
export async function dataDirProblem(dir: string, options: { store?: boolean } = {}): Promise<string | null> {
  try {
    const s = await stat(dir);
    if (!s.isDirectory()) return `data dir ${dir} is not a directory`;
    if (options.store && (await stat(join(dir, STORE_DIR)).catch(() => null)) === null)
      return `${dir} holds no store (${STORE_DIR}/): not a node's data dir (svc-node start makes one; give the data dir of a node)`;
    return null;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return `data dir ${dir} does not exist (svc-node start creates one; give the data dir of a node)`;
    return `cannot read data dir ${dir}: ${(err as Error).message}`;
  }
}

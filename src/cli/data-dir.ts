// The data dir a client command reads (keys, verify, grant): it must exist. A typo must not leave a fresh node key
// and operator token behind and exit 0 as if it had read the node's; only `svc-node start` makes a data dir.
import { stat } from 'node:fs/promises';

/** Why `dir` cannot be read as a node's data dir (it is missing, or not a directory), or null when it can. */
export async function dataDirProblem(dir: string): Promise<string | null> {
  try {
    const s = await stat(dir);
    return s.isDirectory() ? null : `data dir ${dir} is not a directory`;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return `data dir ${dir} does not exist (svc-node start creates one; give the data dir of a node)`;
    return `cannot read data dir ${dir}: ${(err as Error).message}`;
  }
}

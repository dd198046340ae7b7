// A directory and its missing parents, as mkdir -p makes them, but one that ends. Node's own recursive mkdir spins
// forever where mkdir answers ENOENT although the parent exists (under /proc or /sys, or below a symbolic link to
// nothing): it takes ENOENT for "the parent is missing", makes the parent (EEXIST), and tries again.
import { mkdir, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

/**
 * Makes `dir` and its missing parents (each with `mode`, less the umask); an existing directory is left as it is.
 * Returns the first directory it made (the top of what is new), or undefined when `dir` already was a directory.
 * Throws mkdir's error as it is: EEXIST where something else than a directory stands, ENOENT where the parent stands
 * and the file system still refuses.
 */
export async function makeDirs(dir: string, mode = 0o777): Promise<string | undefined> {
  const path = resolve(dir);
  try {
    await mkdir(path, { mode });
    return path;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' && (await isDirectory(path))) return undefined;
    const parent = dirname(path);
    if (code !== 'ENOENT' || parent === path) throw err;
    const first = await makeDirs(parent, mode);
    // Once: with the parent in place, a second ENOENT is the file system's answer, not a missing parent.
    try {
      await mkdir(path, { mode });
    } catch (again) {
      if ((again as NodeJS.ErrnoException).code !== 'EEXIST' || !(await isDirectory(path))) throw again;
      return first;
    }
    return first ?? path;
  }
}

async function isDirectory(path: string): Promise<boolean> {
  return stat(path).then(
    (s) => s.isDirectory(),
    () => false,
  );
}

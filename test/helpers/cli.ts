// The svc-node command as the CLI tests run it: from source through tsx, in the repository, with temp dirs that are
// removed after the test file.
import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

export const ROOT = join(import.meta.dirname, '..', '..');
/** node arguments that run the CLI from source. */
export const CLI = ['--import', 'tsx', join(ROOT, 'src/cli/index.ts')];

/** A maker of temp dirs named `<prefix>…`, all removed after the calling test file. */
export function tempDirs(prefix: string): () => Promise<string> {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });
  return async () => {
    const d = await mkdtemp(join(tmpdir(), prefix));
    dirs.push(d);
    return d;
  };
}

/** Run the CLI to its end; `without` names variables of this process's environment the command must not see. */
export function runCli(args: string[], env: Record<string, string> = {}, without: string[] = []): { status: number | null; stdout: string; stderr: string } {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const name of without) delete base[name];
  const r = spawnSync(process.execPath, [...CLI, ...args], { cwd: ROOT, env: { ...base, ...env }, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The exit code of a child process, once it has exited (null when a signal ended it). */
export function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((r) => (child.exitCode !== null ? r(child.exitCode) : child.once('exit', (code) => r(code))));
}

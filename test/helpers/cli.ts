// The svc-node command as the CLI tests run it: the build in dist/ (test/global-setup.ts builds it before any test
// file runs, so it is never older than src/), in the repository, with temp dirs that are removed after the test file.
// The build, not tsx: a command then starts in a fraction of a second instead of compiling src/ on every run.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

export const ROOT = join(import.meta.dirname, '..', '..');
/** The built CLI's entry point. */
export const DIST_CLI = join(ROOT, 'dist/cli/index.js');
/** node arguments that run the CLI. */
export const CLI = [DIST_CLI];

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

/**
 * Run the CLI to its end without blocking this process (whose in-process nodes it may be talking to); `without` as in
 * runCli.
 */
export function runCliAsync(
  args: string[],
  env: Record<string, string> = {},
  without: string[] = [],
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const name of without) delete base[name];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...CLI, ...args], { cwd: ROOT, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** The exit code of a child process, once it has exited (null when a signal ended it). */
export function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((r) => (child.exitCode !== null ? r(child.exitCode) : child.once('exit', (code) => r(code))));
}

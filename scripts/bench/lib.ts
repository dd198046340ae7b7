// What the bench scripts share: numeric --name value arguments, percentiles, child servers that report their url, and an
// identity key and the operator's bond header as clients get them.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export const root = join(import.meta.dirname, '..', '..');

/** The number after --name on the command line, or def. */
export function numberArg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
}

/** The p-th percentile (nearest rank) of some figures, in any order; NaN for none. */
export function percentile(figures: readonly number[], p: number): number {
  if (figures.length === 0) return NaN;
  const sorted = [...figures].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/**
 * Spawn a server (cwd: the project root, or `cwd`) and wait for the `"url":…` of its listening line (`startMs`, 30 s by
 * default; a server that has not said it by then is killed). Its output after that line is read and dropped. `ipc` opens an IPC channel
 * to it (process.send in the child).
 */
export function startProcess(
  cmd: string,
  argv: string[],
  env: Record<string, string>,
  cwd = root,
  ipc = false,
  startMs = 30_000,
): Promise<{ child: ChildProcess; url: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { cwd, env: { ...process.env, ...env }, stdio: ipc ? ['ignore', 'pipe', 'inherit', 'ipc'] : ['ignore', 'pipe', 'inherit'] });
    let buf = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`process did not report its url in ${startMs / 1000} s`));
    }, startMs);
    const onData = (d: Buffer): void => {
      buf += d.toString();
      const m = /"url":"([^"]+)"/.exec(buf);
      if (m) {
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        resolve({ child, url: m[1]! });
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`process exited early with ${code ?? signal}`));
    });
  });
}

/** SIGTERM a server and wait for it to exit. */
export function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.removeAllListeners('exit');
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/**
 * CPU time (user + system, ms) a process and its descendants have used so far (Linux /proc; null elsewhere or once
 * it has exited). Descendants count because tsx runs its script in a child process.
 */
export function processCpuMs(pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    let ms = (Number(fields[11]) + Number(fields[12])) * 10;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      for (const child of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean)) ms += processCpuMs(Number(child)) ?? 0;
    }
    return ms;
  } catch {
    return null;
  }
}

/**
 * An identity key (sk_) of a v3 identity, as a client gets one: login-v3 opens a session, the session mints the key.
 * Identity-wide routes (envelopes, transfers, bonds, modes, webhooks, challenges) refuse a machine's zsm_ key.
 */
export async function identityKey(url: string, equationSha256: string): Promise<string> {
  const login = await fetch(`${url}/api/svc-auth/login-v3`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ equation_sha256: equationSha256 }),
  });
  if (login.status !== 200) throw new Error(`login-v3 answered ${login.status}`);
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
  const minted = await fetch(`${url}/api/auth/api-key`, { method: 'POST', headers: { 'content-type': 'application/json', cookie }, body: '{"kind":"sk"}' });
  if (minted.status !== 201) throw new Error(`api-key answered ${minted.status}`);
  return ((await minted.json()) as { key: string }).key;
}

/** The header that makes a bond the operator's (consensus/bond-slot.ts): the operator token in a node's data dir. */
export function operatorBond(dataDir: string): Record<string, string> {
  return { 'x-svc-operator-token': readFileSync(join(dataDir, 'operator-token'), 'utf8').trim() };
}

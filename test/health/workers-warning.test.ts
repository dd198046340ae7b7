// A node process whose working directory is deleted under it (docs/operating.md, "Warnings"): the next worker thread
// it starts dies as it starts (a worker reads the directory as it starts), and /api/health lists WORKERS_NOT_STARTING
// with the cause, while the worker already running still serves.
import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { afterAll, expect, it } from 'vitest';
import { CLI, exitOf, tempDirs } from '../helpers/cli.js';
import { bearer, call, zkIdentity } from '../helpers/node.js';
import { waitUntil } from '../helpers/wait.js';

const tempDir = tempDirs('svc-workers-warning-');
let stop: (() => Promise<unknown>) | null = null;
afterAll(async () => {
  await stop?.();
});

it('lists WORKERS_NOT_STARTING with the cause once a worker dies as it starts; the running worker still serves', async () => {
  const cwd = await tempDir();
  const dataDir = await tempDir();
  const child = spawn(process.execPath, [...CLI, 'start'], {
    cwd,
    env: { ...process.env, SVC_HOST: '127.0.0.1', SVC_PORT: '0', SVC_P2P_PORT: '0', SVC_DATA_DIR: dataDir, SVC_SOLVER_THREADS: '1', SVC_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    return exitOf(child);
  };
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const listening = await waitUntil(() => out.split('\n').find((l) => l.includes('"msg":"listening"')), 'the listening line', 60_000, 100);
  const url = JSON.parse(listening).url as string;
  expect((await call(url, 'GET', '/api/health')).body.warnings).toEqual([]);
  const id = await zkIdentity(url, 'workers-warning');

  await rm(cwd, { recursive: true, force: true });
  // A run takes the pool's one worker, and the pool starts a spare beside it: the spare dies as it starts.
  const run = await call(url, 'POST', '/api/svc/zeta', { n: 3, count: 1 }, bearer(id.key));
  expect(run.status, run.text).toBe(200);
  const warning = await waitUntil(
    async () => ((await call(url, 'GET', '/api/health')).body.warnings as Record<string, any>[]).find((w) => w.code === 'WORKERS_NOT_STARTING'),
    'WORKERS_NOT_STARTING in /api/health',
    30_000,
    250,
  );
  expect(warning.message).toMatch(/^solver workers die as they start \(Error: ENOENT: no such file or directory, uv_cwd\)/);
  // One warn line in the node's log, with the code.
  expect(out.split('\n').filter((l) => l.includes('"warning":"WORKERS_NOT_STARTING"') && l.includes('"level":40'))).toHaveLength(1);
  // The worker that was running before still serves.
  const again = await call(url, 'POST', '/api/svc/zeta', { n: 4, count: 1 }, bearer(id.key));
  expect(again.status, again.text).toBe(200);
  expect(await stop()).toBe(0);
  stop = null;
}, 120_000);

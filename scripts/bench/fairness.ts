// Fair solver scheduling under a heavy caller: the built node (as npm start runs it, solverThreads as configured,
// `auto` by default) serves a heavy caller that keeps the pool busy with the largest flow runs its limits allow (as
// many in flight as its cap lets wait, plus the pool), while a light caller sends `heat {}` runs one after another.
// First the light caller's runs alone (the baseline, same process and minute), then under the heavy load.
// Prints one JSON line: the light caller's p50/p99/max latency alone and under load, their ratio, and what the heavy
// caller got (completed, timed out, refused with 429). Target: the light p99 under load stays under 2 s.
// Usage: npx tsx scripts/bench/fairness.ts [--seconds 60] [--baseline 20] [--gap-ms 250] [--threads auto] [--no-build]
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultRegistry } from '../../src/solvers/registry.js';
import { defaultOf, maximise, MAX_CASES } from './solver-maxima.js';
import { numberArg, root, startProcess, stop } from './lib.js';
import { helpFromHeader } from '../help.js';

helpFromHeader(import.meta.url);

const seconds = numberArg('seconds', 60);
const baselineRuns = numberArg('baseline', 20);
const gapMs = numberArg('gap-ms', 250);
const threadsArg = process.argv.indexOf('--threads');
const threads = threadsArg >= 0 ? process.argv[threadsArg + 1]! : 'auto';
const cap = 4;

/** The largest flow run (solver-maxima.ts's case, sized against flow's own limits). */
const flowCase = MAX_CASES.find((c) => c.solver === 'flow')!;
const flow = defaultRegistry().get('flow')!;
const heavyInputs = maximise((raw) => flow.resolve(raw) as Record<string, unknown>, flowCase, defaultOf(flow.inputs)).inputs;

const START_HEAP_FLAGS: string[] =
  (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start.match(/--(max|min)-semi-space-size=\d+/g) ??
  [];

// --no-build: dist as it is (e.g. while another bench's node runs from it).
if (!process.argv.includes('--no-build')) execFileSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit' });
const dataDir = await mkdtemp(join(tmpdir(), 'svc-fairness-'));
const { child, url } = await startProcess(process.execPath, [...START_HEAP_FLAGS, 'dist/cli/index.js', 'start'], {
  SVC_PORT: '0',
  SVC_DATA_DIR: dataDir,
  SVC_LOG_LEVEL: 'info',
  SVC_SYNC_WRITES: 'false',
  SVC_INITIAL_CREDITS: '100000000',
  SVC_SOLVER_THREADS: threads,
  SVC_MAX_QUEUED_RUNS_PER_IDENTITY: String(cap),
});

async function register(seed: string): Promise<string> {
  const digest = createHash('sha256').update(`fairness ${seed} ${Date.now()}`).digest('hex');
  const r = await fetch(`${url}/api/svc-auth/register-v3`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ equation_sha256: digest }),
  });
  return ((await r.json()) as { admin_key: string }).admin_key;
}

async function post(key: string, path: string, body: unknown): Promise<{ status: number; code: string | null; ms: number; retryAfter: number | null }> {
  const t0 = performance.now();
  const r = await fetch(url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  const ms = performance.now() - t0;
  let code: string | null = null;
  if (r.status >= 400) code = (JSON.parse(text) as { error?: { code?: string } }).error?.code ?? null;
  const ra = r.headers.get('retry-after');
  return { status: r.status, code, ms, retryAfter: ra === null ? null : Number(ra) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
};
const r0 = (x: number) => Math.round(x);

try {
  const heavy = await register('heavy');
  const light = await register('light');

  // Baseline: the light caller alone (the first run also brings the worker up).
  await post(light, '/api/svc/heat', {});
  const alone: number[] = [];
  for (let i = 0; i < baselineRuns; i++) {
    const r = await post(light, '/api/svc/heat', {});
    if (r.status === 200) alone.push(r.ms);
    await sleep(gapMs);
  }

  // The heavy caller: one loop per run it may have running or waiting; a 429 waits its Retry-After.
  const heavyStats = { sent: 0, completed: 0, timedOut: 0, refused: 0, other: 0, completedMs: [] as number[] };
  let stopping = false;
  const pool = threads === 'auto' ? Math.max(1, availableParallelism() - 1) : Number(threads);
  const heavyLoops = Array.from({ length: pool + cap }, async () => {
    while (!stopping) {
      heavyStats.sent++;
      const r = await post(heavy, '/api/svc/flow', heavyInputs);
      if (r.status === 200) {
        heavyStats.completed++;
        heavyStats.completedMs.push(r.ms);
      } else if (r.code === 'SVC_TIMEOUT') heavyStats.timedOut++;
      else if (r.status === 429) {
        heavyStats.refused++;
        await sleep((r.retryAfter ?? 1) * 1000);
      } else heavyStats.other++;
    }
  });
  // Let the heavy runs fill the pool and the queue before the light caller measures.
  await sleep(2000);
  const loaded: number[] = [];
  const lightErrors: Record<string, number> = {};
  const until = performance.now() + seconds * 1000;
  while (performance.now() < until) {
    const r = await post(light, '/api/svc/heat', {});
    if (r.status === 200) loaded.push(r.ms);
    else lightErrors[r.code ?? String(r.status)] = (lightErrors[r.code ?? String(r.status)] ?? 0) + 1;
    await sleep(gapMs);
  }
  stopping = true;
  await Promise.all(heavyLoops);

  const p99 = quantile(loaded, 0.99);
  console.log(
    JSON.stringify({
      bench: 'fairness',
      solverThreads: threads,
      pool,
      cores: availableParallelism(),
      maxQueuedRunsPerIdentity: cap,
      heavyRun: { solver: 'flow', inputs: heavyInputs, medianMs: r0(quantile(heavyStats.completedMs, 0.5)) },
      heavy: { sent: heavyStats.sent, completed: heavyStats.completed, timedOut: heavyStats.timedOut, refused429: heavyStats.refused, other: heavyStats.other },
      light: {
        aloneRuns: alone.length,
        aloneP50Ms: r0(quantile(alone, 0.5)),
        aloneP99Ms: r0(quantile(alone, 0.99)),
        loadedRuns: loaded.length,
        loadedP50Ms: r0(quantile(loaded, 0.5)),
        loadedP99Ms: r0(p99),
        loadedMaxMs: r0(Math.max(...loaded)),
        loadedOver2s: loaded.filter((ms) => ms > 2000).length,
        aloneOver2s: alone.filter((ms) => ms > 2000).length,
        p50Ratio: Math.round((quantile(loaded, 0.5) / quantile(alone, 0.5)) * 100) / 100,
        errors: lightErrors,
      },
      targetMs: 2000,
      metTarget: p99 < 2000,
    }),
  );
} finally {
  await stop(child);
  await rm(dataDir, { recursive: true, force: true });
}

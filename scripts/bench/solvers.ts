// Every registered solver on its defaults (per mode where it has modes): warm-up, then 5 runs.
// Prints one JSON line per solver and mode: {solver, mode, medianMs, maxRssMb}.
// Usage: npx tsx scripts/bench/solvers.ts [--runs 5] [--only heat,wave]
//
// --max: each solver at its maxima instead (solver-maxima.ts: the largest inputs its limits accept), one run per
// case on a worker thread (ended after --timeout seconds, default 120). One JSON line per case:
// {solver, case, inputs (the sized ones), ms, passed, over5s, workLimit, limitFor5s (the limit that would scale the
// run to 5 s, assuming time ∝ work)}. Usage: npx tsx scripts/bench/solvers.ts --max [--only flow,climate] [--timeout 120]
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { defaultRegistry } from '../../src/solvers/registry.js';
import { MAX_CASES, maximise, type MaxCase } from './solver-maxima.js';

const args = process.argv.slice(2);
const runsArg = args.indexOf('--runs');
const runs = runsArg >= 0 ? Number(args[runsArg + 1]) : 5;
const onlyArg = args.indexOf('--only');
const only = onlyArg >= 0 ? new Set(args[onlyArg + 1]!.split(',')) : null;

/** The selector key each moded solver uses, with its modes. */
function modeVariants(s: { inputs: { key: string; range: string }[]; modes: string[] | null }): { key: string | null; mode: string | null }[] {
  if (!s.modes || s.modes.length === 0) return [{ key: null, mode: null }];
  const selector = ['mode', 'analysis', 'model', 'problem', 'potential', 'shape', 'method', 'option_type', 'initial', 'geometry']
    .find((k) => s.inputs.some((i) => i.key === k && s.modes!.every((m) => i.range.includes(m))));
  return s.modes.map((mode) => ({ key: selector ?? 'mode', mode }));
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** Worker side of --max: size the case, run it once, report. */
function runMaxCase(c: MaxCase): void {
  const solver = defaultRegistry().get(c.solver);
  if (!solver) throw new Error(`unknown solver ${c.solver}`);
  const { inputs, workLimit, refusal } = maximise((raw) => solver.resolve(raw) as Record<string, unknown>, c);
  const resolved = solver.resolve(inputs);
  const t0 = process.hrtime.bigint();
  const out = solver.run(resolved);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  parentPort!.postMessage({ ms, passed: out.check.passed, workLimit, refusal, grown: c.grow ? { [c.grow.key]: inputs[c.grow.key] } : null });
}

/** One case on a worker thread, ended at the timeout. */
function maxCaseOnWorker(c: MaxCase, timeoutS: number): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    // This file is TypeScript run by tsx: the worker registers tsx before importing it (as executor.ts spawnWorker).
    const tsx = pathToFileURL(join(dirname(createRequire(import.meta.url).resolve('tsx/package.json')), 'dist/esm/api/index.mjs')).href;
    const bootstrap = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(import.meta.url)}); });`;
    const w = new Worker(bootstrap, { eval: true, workerData: { maxCase: c } });
    const timer = setTimeout(() => {
      void w.terminate();
      resolve({ ms: null, timedOutAfterS: timeoutS });
    }, timeoutS * 1000);
    w.once('message', (m) => {
      clearTimeout(timer);
      void w.terminate();
      resolve(m as Record<string, unknown>);
    });
    w.once('error', (err) => {
      clearTimeout(timer);
      resolve({ ms: null, error: err.message });
    });
  });
}

/** The sized inputs of a case, for the line (big arrays shown by their length). */
function sizeOf(base: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(base).map(([k, v]) => [k, Array.isArray(v) ? `[${v.length}]` : v]));
}

async function maxima(): Promise<void> {
  const timeoutArg = args.indexOf('--timeout');
  const timeoutS = timeoutArg >= 0 ? Number(args[timeoutArg + 1]) : 120;
  for (const c of MAX_CASES) {
    if (only && !only.has(c.solver)) continue;
    const r = await maxCaseOnWorker(c, timeoutS);
    const ms = typeof r.ms === 'number' ? Math.round(r.ms) : null;
    const workLimit = typeof r.workLimit === 'number' ? r.workLimit : null;
    const over = ms === null || ms > 5000;
    const limitFor5s = over && ms !== null && workLimit !== null ? Number(((workLimit * 5000) / ms).toPrecision(2)) : null;
    console.log(JSON.stringify({ solver: c.solver, case: c.name, inputs: { ...sizeOf(c.base), ...(r.grown as object | null) }, ms, passed: r.passed ?? null, over5s: over, workLimit, limitFor5s, ...(r.refusal ? { boundBy: r.refusal } : {}), ...(r.timedOutAfterS ? { timedOutAfterS: r.timedOutAfterS } : {}), ...(r.error ? { error: r.error } : {}) }));
  }
}

if (!isMainThread) {
  runMaxCase((workerData as { maxCase: MaxCase }).maxCase);
} else if (args.includes('--max')) {
  await maxima();
} else for (const solver of defaultRegistry().list()) {
  if (only && !only.has(solver.id)) continue;
  for (const { key, mode } of modeVariants(solver)) {
    const raw = key && mode ? { [key]: mode } : {};
    let inputs: Record<string, unknown>;
    try {
      inputs = solver.resolve(raw);
    } catch {
      inputs = solver.resolve({});
    }
    solver.run(inputs); // warm-up
    const times: number[] = [];
    let maxRss = process.memoryUsage.rss();
    for (let i = 0; i < runs; i++) {
      const t0 = process.hrtime.bigint();
      const out = solver.run(inputs);
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
      maxRss = Math.max(maxRss, process.memoryUsage.rss());
      if (!out.check.passed) throw new Error(`${solver.id} ${mode}: check failed on defaults`);
    }
    console.log(JSON.stringify({ solver: solver.id, mode: mode ?? null, medianMs: Math.round(median(times) * 100) / 100, maxRssMb: Math.round((maxRss / 1048576) * 10) / 10 }));
  }
}

// Every registered solver on its defaults (per mode where it has modes): warm-up, then 5 runs.
// Prints one JSON line per solver and mode: {solver, mode, medianMs, maxRssMb}.
// Usage: npx tsx scripts/bench/solvers.ts [--runs 5] [--only heat,wave]
//
// --max: each solver at its maxima instead (solver-maxima.ts: the largest inputs its limits accept), one run per
// case in a child process (killed after --timeout seconds, default 300). One JSON line per case:
// {solver, case, inputs (the sized ones), ms (wall), cpuMs (the run's CPU time: what it costs a free core, and what
// over5s judges, since on a shared machine wall time measures the neighbours too), passed, over5s, workLimit,
// limitFor5s (the work limit that would bring the run to 5 s of CPU, assuming time ∝ work), boundBy (what refused
// the next larger input)}. Usage: npx tsx scripts/bench/solvers.ts --max [--only flow,climate] [--timeout 300]
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { defaultRegistry } from '../../src/solvers/registry.js';
import { progress } from '../../src/cli/progress.js';
import { MAX_CASES, defaultOf, maximise, type MaxCase } from './solver-maxima.js';
import { helpFromHeader } from '../help.js';

helpFromHeader(import.meta.url);

const args = process.argv.slice(2);
const runsArg = args.indexOf('--runs');
const runs = runsArg >= 0 ? Number(args[runsArg + 1]) : 5;
const onlyArg = args.indexOf('--only');
const only = onlyArg >= 0 ? new Set(args[onlyArg + 1]!.split(',')) : null;

/** The selector key each moded solver uses, with its modes. */
function modeVariants(s: { inputs: { key: string; range: string }[]; modes: string[] | null }): { key: string | null; mode: string | null }[] {
  if (!s.modes || s.modes.length === 0) return [{ key: null, mode: null }];
  const selector = ['mode', 'analysis', 'model', 'problem', 'potential', 'shape', 'method', 'option_type', 'initial', 'geometry'].find((k) =>
    s.inputs.some((i) => i.key === k && s.modes!.every((m) => i.range.includes(m))),
  );
  return s.modes.map((mode) => ({ key: selector ?? 'mode', mode }));
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** Child side of --max: size the case, run it once, print one JSON line of what was measured. */
function runMaxCase(c: MaxCase): void {
  const solver = defaultRegistry().get(c.solver);
  if (!solver) throw new Error(`unknown solver ${c.solver}`);
  const { inputs, workLimit, refusal } = maximise((raw) => solver.resolve(raw) as Record<string, unknown>, c, defaultOf(solver.inputs));
  const resolved = solver.resolve(inputs);
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  let passed: boolean | null = null;
  let failure: string | null = null;
  try {
    passed = solver.run(resolved).check.passed;
  } catch (err) {
    // A run that ends in an error (a budget spent, no convergence) has still cost its time.
    failure = (err as Error).message;
  }
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const cpu = process.cpuUsage(cpu0);
  console.log(
    JSON.stringify({
      ms,
      cpuMs: (cpu.user + cpu.system) / 1000,
      passed,
      ...(failure ? { runError: failure } : {}),
      workLimit,
      refusal,
      grown: c.grow ? { [c.grow.key]: inputs[c.grow.key] } : null,
    }),
  );
}

/**
 * One case in a child process (this file, --max-case i), killed at the timeout. A child, not a worker thread, so
 * that its CPU time is its own: on a shared machine the wall time says as much about the neighbours as the solver.
 */
function maxCaseInChild(index: number, timeoutS: number): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), '--max-case', String(index)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutS * 1000);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (signal === 'SIGKILL') return resolve({ ms: null, timedOutAfterS: timeoutS });
      try {
        resolve(JSON.parse(out.trim().split('\n').pop()!) as Record<string, unknown>);
      } catch {
        resolve({
          ms: null,
          error: (
            err
              .trim()
              .split('\n')
              .find((l) => /Error/.test(l)) ?? `exit ${code}`
          ).slice(0, 300),
        });
      }
    });
  });
}

/** The sized inputs of a case, for the line (big arrays shown by their length). */
function sizeOf(base: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(base).map(([k, v]) => [k, Array.isArray(v) ? `[${v.length}]` : v]));
}

async function maxima(): Promise<void> {
  const timeoutArg = args.indexOf('--timeout');
  const timeoutS = timeoutArg >= 0 ? Number(args[timeoutArg + 1]) : 300;
  for (const [i, c] of MAX_CASES.entries()) {
    if (only && !only.has(c.solver)) continue;
    const r = await maxCaseInChild(i, timeoutS);
    const ms = typeof r.ms === 'number' ? Math.round(r.ms) : null;
    const cpuMs = typeof r.cpuMs === 'number' ? Math.round(r.cpuMs) : null;
    const workLimit = typeof r.workLimit === 'number' ? r.workLimit : null;
    // Judged by CPU time (what the run costs a free core), wall time beside it.
    const cost = cpuMs ?? ms;
    const over = cost === null || cost > 5000;
    const limitFor5s = over && cost !== null && workLimit !== null ? Number(((workLimit * 5000) / cost).toPrecision(2)) : null;
    console.log(
      JSON.stringify({
        solver: c.solver,
        case: c.name,
        inputs: { ...sizeOf(c.base), ...(r.grown as object | null) },
        ms,
        cpuMs,
        passed: r.passed ?? null,
        over5s: over,
        workLimit,
        limitFor5s,
        ...(r.refusal ? { boundBy: r.refusal } : {}),
        ...(r.runError ? { runError: r.runError } : {}),
        ...(r.timedOutAfterS ? { timedOutAfterS: r.timedOutAfterS } : {}),
        ...(r.error ? { error: r.error } : {}),
      }),
    );
  }
}

const caseArg = args.indexOf('--max-case');
if (caseArg >= 0) {
  runMaxCase(MAX_CASES[Number(args[caseArg + 1])]!);
} else if (args.includes('--max')) {
  await maxima();
} else {
  const spin = await progress('bench: solvers');
  for (const solver of defaultRegistry().list()) {
    if (only && !only.has(solver.id)) continue;
    for (const { key, mode } of modeVariants(solver)) {
      spin.text(`bench: ${solver.id}${mode ? ` ${mode}` : ''} (${runs} runs)`);
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
      console.log(
        JSON.stringify({
          solver: solver.id,
          mode: mode ?? null,
          medianMs: Math.round(median(times) * 100) / 100,
          maxRssMb: Math.round((maxRss / 1048576) * 10) / 10,
        }),
      );
    }
  }
  spin.succeed('bench: solvers done');
}

// Every registered solver on its defaults (per mode where it has modes): warm-up, then 5 runs.
// Prints one JSON line per solver and mode: {solver, mode, medianMs, maxRssMb}.
// Usage: npx tsx scripts/bench/solvers.ts [--runs 5] [--only heat,wave]
import { defaultRegistry } from '../../src/solvers/registry.js';

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

for (const solver of defaultRegistry().list()) {
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

// What the micro-benchmarks share: a timer that runs the optimised path and the plain path in alternating blocks
// (so a drift in the machine's speed lands on both), the share of a fresh sealed compute a saving amounts to, and
// a realistic sealed compute's inputs (kinetic energy, as the compute bench sends).
import { numberArg } from '../lib.js';

/**
 * Median µs per call of each function, over `rounds` alternating blocks of `iterations` calls (after a warm-up). The
 * time is this process's CPU time, not the wall clock: on a machine shared with other work the wall clock counts the
 * time other processes ran, which a CPU time does not (and the compute bench's per-request figure is CPU time too).
 */
export function compare(
  optimised: () => unknown,
  plain: () => unknown,
  opts: { iterations?: number; rounds?: number } = {},
): { optimisedUs: number; plainUs: number } {
  const iterations = opts.iterations ?? 20_000;
  const rounds = opts.rounds ?? 15;
  const block = (f: () => unknown): number => {
    const t0 = process.cpuUsage();
    for (let i = 0; i < iterations; i++) sink = f();
    const t = process.cpuUsage(t0);
    return (t.user + t.system) / iterations;
  };
  block(optimised);
  block(plain);
  const a: number[] = [];
  const b: number[] = [];
  for (let r = 0; r < rounds; r++) {
    a.push(block(optimised));
    b.push(block(plain));
  }
  return { optimisedUs: round(median(a)), plainUs: round(median(b)) };
}
/** Keeps results alive so the JIT cannot drop the work. */
export let sink: unknown;

const median = (xs: number[]): number => {
  const s = [...xs].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const round = (x: number): number => Math.round(x * 1000) / 1000;

/**
 * The node's CPU time per fresh sealed compute over HTTP, all its threads (--fresh-cpu-us: the compute bench's first
 * line reports it as cpuUsPerRequest; take it from a run under the same machine conditions): what a saving is a share
 * of. Without it the share is not given.
 */
const freshCpuUs = numberArg('fresh-cpu-us', NaN);

/** One JSON line: both figures, the saving per sealed compute, and that saving as a share of a fresh request. */
export function report(name: string, r: { optimisedUs: number; plainUs: number }, extra: Record<string, unknown> & { perFreshSeal: number }): void {
  const savedUs = (r.plainUs - r.optimisedUs) * extra.perFreshSeal;
  console.log(
    JSON.stringify({
      bench: name,
      ...r,
      ...extra,
      savedUsPerFreshSeal: round(savedUs),
      shareOfFresh: Number.isNaN(freshCpuUs) ? null : round(savedUs / freshCpuUs),
      freshCpuUs: Number.isNaN(freshCpuUs) ? null : freshCpuUs,
    }),
  );
}

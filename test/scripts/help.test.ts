// The scripts run by hand answer --help with their opening comment and start nothing (a bench or the mesh simulation
// given --help would otherwise run for minutes; readme-tools.ts would rewrite README.md).
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { root } from '../../scripts/bench/lib.js';
import { headerComment } from '../../scripts/help.js';

/** Modules and child processes of the scripts, never run by hand; and the micro-benchmarks, which end within seconds. */
const NOT_RUN_BY_HAND = new Set([
  'scripts/help.ts',
  'scripts/bench/lib.ts',
  'scripts/bench/guard-plan.ts',
  'scripts/bench/solver-maxima.ts',
  'scripts/bench/push-stamp.ts',
  'scripts/bench/push-clients.ts',
  'scripts/bench/bare-koa.ts',
  'scripts/sim/mesh-messages.ts',
  'scripts/sim/mesh-worker.ts',
]);

function scripts(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'micro' ? [] : scripts(path);
    return e.name.endsWith('.ts') ? [relative(root, path)] : [];
  });
}

describe('scripts --help', () => {
  it('every script run by hand prints its opening comment on --help before it starts anything', () => {
    const entries = scripts(join(root, 'scripts')).filter((f) => !NOT_RUN_BY_HAND.has(f));
    expect(entries).toEqual(
      expect.arrayContaining(['scripts/bench/seal-ops.ts', 'scripts/sim/mesh.ts', 'scripts/fault/run.ts', 'scripts/docs/readme-tools.ts']),
    );
    const without = entries.filter((f) => {
      const source = readFileSync(join(root, f), 'utf8');
      // compute.ts and guard.ts print usage texts of their own.
      return !source.includes('helpFromHeader(import.meta.url)') && !source.includes("'--help'") && !source.includes('args.help');
    });
    expect(without).toEqual([]);
    // Each has an opening comment to print.
    for (const f of entries) expect(headerComment(readFileSync(join(root, f), 'utf8')).length, f).toBeGreaterThan(40);
  });

  it('the opening comment is the leading // lines without their slashes, up to the first other line', () => {
    const source = "// What it does.\n// Usage: npx tsx x.ts [--n 5]\n//\n//   --n   how many\nimport x from 'y';\n// not this\n";
    expect(headerComment(source)).toBe('What it does.\nUsage: npx tsx x.ts [--n 5]\n\n  --n   how many');
    expect(headerComment("import x from 'y';\n")).toBe('');
  });
});

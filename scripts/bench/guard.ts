// Keeps the sealing path's speed won: builds the previous release (or --against REF) in a git worktree of its own,
// runs scripts/bench/compute.ts --compare against it and prints one JSON line with the two commits and the ratios
// (this / baseline: fresh, repeated, durable; each side's durable over the bare durable pipeline). It exits 1 only
// with --fail-below X and a ratio under X. How to read it: docs/performance.md, "Keeping it won".
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compareLine, guardUsage, lockCovers, parseGuardArgs, previousReleaseTag, ratiosBelow } from './guard-plan.js';
import { root } from './lib.js';

const git = (...argv: string[]): string => execFileSync('git', argv, { cwd: root, encoding: 'utf8' }).trim();

let args;
try {
  args = parseGuardArgs(process.argv.slice(2));
} catch (e) {
  console.error(`bench:guard: ${(e as Error).message}\n${guardUsage}`);
  process.exit(2);
}
if (args.help) {
  console.log(guardUsage);
  process.exit(0);
}

const head = git('rev-parse', 'HEAD');
let ref = args.against;
if (ref === null) {
  const tags = git('tag', '--list', 'v*', '--sort=-v:refname').split('\n');
  ref = previousReleaseTag(tags, (tag) => git('rev-list', '-n', '1', tag), head);
  if (ref === null) {
    console.error('bench:guard: no earlier release tag (v*) than HEAD; tag a release (docs/performance.md, "Keeping it won") or pass --against <commit>');
    process.exit(2);
  }
}
let baseline: string;
try {
  baseline = git('rev-parse', '--verify', `${ref}^{commit}`);
} catch {
  console.error(`bench:guard: ${ref} is not a tag or commit of this repository`);
  process.exit(2);
}

// One directory per baseline commit under the system's temp dir, removed at the end (a crashed run's is replaced).
const cacheDir = join(tmpdir(), 'svc-bench-guard');
const dir = join(cacheDir, baseline.slice(0, 12));
await mkdir(cacheDir, { recursive: true });
const removeWorktree = (): void => {
  // The shared node_modules is a symlink: unlinked first, so that removing the worktree never reaches into it.
  rmSync(join(dir, 'node_modules'), { force: true });
  if (existsSync(dir)) execFileSync('git', ['worktree', 'remove', '--force', dir], { cwd: root, stdio: 'ignore' });
  execFileSync('git', ['worktree', 'prune'], { cwd: root, stdio: 'ignore' });
};
removeWorktree();
let exitCode = 0;
try {
  git('worktree', 'add', '--detach', dir, baseline);
  const lock = (at: string) => JSON.parse(readFileSync(join(at, 'package-lock.json'), 'utf8')) as Parameters<typeof lockCovers>[0];
  const sharedModules = lockCovers(lock(dir), lock(root));
  if (sharedModules) symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
  else execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, stdio: ['ignore', 'inherit', 'inherit'] });
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: dir, stdio: ['ignore', 'inherit', 'inherit'] });

  const bench = [
    join(root, 'node_modules', '.bin', 'tsx'),
    [
      join(root, 'scripts', 'bench', 'compute.ts'),
      '--compare',
      dir,
      '--duration',
      String(args.duration),
      '--rounds',
      String(args.rounds),
      '--connections',
      String(args.connections),
    ],
  ] as const;
  const output = await new Promise<string>((resolve, reject) => {
    const child = spawn(bench[0], bench[1], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.on('data', (d: Buffer) => (text += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`compute.ts exited with ${code}`))));
  });
  const compare = compareLine(output);
  if (compare === null) throw new Error('compute.ts printed no compare line');
  const below = ratiosBelow(compare, args.failBelow);
  console.log(
    JSON.stringify({
      head,
      baseline,
      baselineRef: ref,
      sharedModules,
      fresh: compare.freshThisOverOther,
      repeated: compare.repeatedThisOverOther,
      durable: compare.durableThisOverOther,
      headOfBareDurable: compare.thisOfBareDurable,
      baselineOfBareDurable: compare.otherOfBareDurable,
      freshTurnRatios: compare.freshTurnRatios,
      durableTurnRatios: compare.durableTurnRatios,
      non2xx: compare.non2xx,
      durationS: args.duration,
      rounds: args.rounds,
      failBelow: args.failBelow,
      below,
    }),
  );
  if (below.length > 0) exitCode = 1;
} catch (e) {
  console.error(`bench:guard: ${(e as Error).message}`);
  exitCode = 2;
} finally {
  removeWorktree();
}
process.exit(exitCode);

// The guard's decisions, apart from git, npm and the bench it runs (scripts/bench/guard.ts): its arguments, which
// release it measures against, how the baseline's node_modules are provided, and what its JSON line says.

export interface GuardArgs {
  help: boolean;
  /** A tag or commit to measure against instead of the previous release tag. */
  against: string | null;
  /** Exit non-zero when a this-over-baseline ratio is below this; null: report only. */
  failBelow: number | null;
  duration: number;
  rounds: number;
  connections: number;
}

export const guardUsage = `Usage: npm run bench:guard [-- --against <tag|commit>] [--fail-below 0.9] [--duration 10] [--rounds 5] [--connections 50]
  --against REF    measure against this tag or commit (default: the newest v* tag that is not HEAD)
  --fail-below X   exit 1 when the fresh, repeated or durable ratio (this / baseline) is below X (default: never)
  --duration S, --rounds N, --connections N   passed to scripts/bench/compute.ts
Prints one JSON line: the two commits and the ratios of scripts/bench/compute.ts --compare.`;

/** Parses the guard's command line (after the script name); throws with a readable message on a bad one. */
export function parseGuardArgs(argv: readonly string[]): GuardArgs {
  const args: GuardArgs = { help: false, against: null, failBelow: null, duration: 10, rounds: 5, connections: 50 };
  const positive = (name: string, text: string | undefined): number => {
    const value = Number(text);
    if (text === undefined || text.trim() === '' || !Number.isFinite(value) || value <= 0)
      throw new Error(`--${name} takes a positive number, got ${text ?? 'nothing'}`);
    return value;
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const value = argv[i + 1];
    switch (flag) {
      case '--help':
      case '-h':
        args.help = true;
        break;
      case '--against':
        if (value === undefined || value.startsWith('--') || value.trim() === '') throw new Error('--against takes a tag or a commit');
        args.against = value;
        i++;
        break;
      case '--fail-below':
        args.failBelow = positive('fail-below', value);
        i++;
        break;
      case '--duration':
        args.duration = positive('duration', value);
        i++;
        break;
      case '--rounds':
        args.rounds = Math.floor(positive('rounds', value));
        i++;
        break;
      case '--connections':
        args.connections = Math.floor(positive('connections', value));
        i++;
        break;
      default:
        throw new Error(`unknown argument ${flag}`);
    }
  }
  return args;
}

/**
 * The previous release: the first tag (newest first, as `git tag --list 'v*' --sort=-v:refname` lists them) whose
 * commit is not HEAD's, so that a tagged HEAD is measured against the release before it. Null when there is none.
 */
export function previousReleaseTag(tagsNewestFirst: readonly string[], commitOf: (tag: string) => string, head: string): string | null {
  for (const tag of tagsNewestFirst) if (tag !== '' && commitOf(tag) !== head) return tag;
  return null;
}

interface Lockfile {
  packages?: Record<string, { version?: string }>;
}

/**
 * Whether this checkout's node_modules can serve the baseline: every package the baseline's package-lock.json
 * installs is installed here at the same version (an identical lock is the plain case). Extra packages here are never
 * loaded by the baseline's code. Otherwise the baseline gets its own `npm ci`.
 */
export function lockCovers(baseline: Lockfile, current: Lockfile): boolean {
  const mine = current.packages ?? {};
  for (const [path, entry] of Object.entries(baseline.packages ?? {})) {
    if (path === '') continue;
    if (mine[path]?.version !== entry.version) return false;
  }
  return true;
}

/** The compare line of compute.ts (the one with `compare`), or null when its output has none. */
export function compareLine(output: string): Record<string, unknown> | null {
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue;
    const parsed = JSON.parse(line) as Record<string, unknown>;
    if ('compare' in parsed) return parsed;
  }
  return null;
}

export const guardedRatios = ['freshThisOverOther', 'repeatedThisOverOther', 'durableThisOverOther'] as const;

/** The ratios (this / baseline) below `failBelow`, by name; empty when none is or no bar is set. */
export function ratiosBelow(compare: Record<string, unknown>, failBelow: number | null): string[] {
  if (failBelow === null) return [];
  return guardedRatios.filter((name) => typeof compare[name] !== 'number' || (compare[name] as number) < failBelow);
}

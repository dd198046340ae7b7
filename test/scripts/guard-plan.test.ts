import { describe, expect, it } from 'vitest';
import { compareLine, lockCovers, parseGuardArgs, previousReleaseTag, ratiosBelow } from '../../scripts/bench/guard-plan.js';

describe('bench guard: previous release tag', () => {
  const commits: Record<string, string> = { 'v0.3.0': 'c3', 'v0.2.1': 'c2', 'v0.2.0': 'c1', 'v0.1.0': 'c0' };
  const commitOf = (tag: string): string => commits[tag]!;

  it('takes the newest tag when HEAD is past it', () => {
    expect(previousReleaseTag(['v0.3.0', 'v0.2.1', 'v0.2.0'], commitOf, 'c9')).toBe('v0.3.0');
  });

  it('skips the tags on HEAD, so a tagged HEAD is measured against the release before it', () => {
    expect(previousReleaseTag(['v0.3.0', 'v0.2.1'], commitOf, 'c3')).toBe('v0.2.1');
    expect(previousReleaseTag(['v0.3.0', 'v0.2.1', 'v0.2.0'], (t) => (t === 'v0.2.0' ? 'c1' : 'c3'), 'c3')).toBe('v0.2.0');
  });

  it('answers null with no tag or only HEAD tagged (git prints one empty line for no tag)', () => {
    expect(previousReleaseTag([''], commitOf, 'c3')).toBeNull();
    expect(previousReleaseTag(['v0.3.0'], commitOf, 'c3')).toBeNull();
  });
});

describe('bench guard: arguments', () => {
  it('defaults to the previous release, report only, the bench defaults', () => {
    expect(parseGuardArgs([])).toEqual({ help: false, against: null, failBelow: null, duration: 10, rounds: 5, connections: 50 });
  });

  it('reads every flag', () => {
    expect(parseGuardArgs(['--against', '5fa5588', '--fail-below', '0.9', '--duration', '4', '--rounds', '2', '--connections', '20'])).toEqual({
      help: false,
      against: '5fa5588',
      failBelow: 0.9,
      duration: 4,
      rounds: 2,
      connections: 20,
    });
    expect(parseGuardArgs(['--help']).help).toBe(true);
    expect(parseGuardArgs(['-h']).help).toBe(true);
  });

  it('refuses a missing or bad value and an unknown flag', () => {
    expect(() => parseGuardArgs(['--against'])).toThrow(/--against takes a tag or a commit/);
    expect(() => parseGuardArgs(['--against', '--rounds', '2'])).toThrow(/--against/);
    expect(() => parseGuardArgs(['--fail-below', 'x'])).toThrow(/--fail-below takes a positive number, got x/);
    expect(() => parseGuardArgs(['--duration', '0'])).toThrow(/--duration/);
    expect(() => parseGuardArgs(['--rounds'])).toThrow(/got nothing/);
    expect(() => parseGuardArgs(['--compare', 'dir'])).toThrow(/unknown argument --compare/);
  });
});

describe('bench guard: shared node_modules', () => {
  const lock = (packages: Record<string, string>) => ({
    packages: { '': { version: '0.1.0' }, ...Object.fromEntries(Object.entries(packages).map(([k, version]) => [k, { version }])) },
  });

  it('shares when every package of the baseline is installed here at its version', () => {
    expect(lockCovers(lock({ 'node_modules/a': '1.0.0' }), lock({ 'node_modules/a': '1.0.0', 'node_modules/b': '2.0.0' }))).toBe(true);
    expect(lockCovers({ packages: { '': { version: '0.0.1' } } }, lock({}))).toBe(true);
  });

  it('does not share when a version differs or a package is missing here', () => {
    expect(lockCovers(lock({ 'node_modules/a': '1.0.0' }), lock({ 'node_modules/a': '1.0.1' }))).toBe(false);
    expect(lockCovers(lock({ 'node_modules/a': '1.0.0', 'node_modules/c': '3.0.0' }), lock({ 'node_modules/a': '1.0.0' }))).toBe(false);
  });
});

describe('bench guard: the compare line and the bar', () => {
  const output = [
    '{"freshComputeRps":100}',
    'bench: noise',
    '{"compare":"/tmp/x","freshThisOverOther":0.95,"repeatedThisOverOther":1.1,"durableThisOverOther":0.85}',
    '{"inProcessSealedPerSec":9}',
    '',
  ].join('\n');

  it('finds the line with compare', () => {
    expect(compareLine(output)).toEqual({ compare: '/tmp/x', freshThisOverOther: 0.95, repeatedThisOverOther: 1.1, durableThisOverOther: 0.85 });
    expect(compareLine('{"freshComputeRps":100}\n')).toBeNull();
  });

  it('names the ratios under the bar, none without a bar, and a missing ratio as under it', () => {
    const compare = compareLine(output)!;
    expect(ratiosBelow(compare, 0.9)).toEqual(['durableThisOverOther']);
    expect(ratiosBelow(compare, 1)).toEqual(['freshThisOverOther', 'durableThisOverOther']);
    expect(ratiosBelow(compare, null)).toEqual([]);
    expect(ratiosBelow({ compare: 'x', freshThisOverOther: 1, repeatedThisOverOther: 1 }, 0.9)).toEqual(['durableThisOverOther']);
  });
});

// The node's V8 heap flags have one source (src/config/heap-flags.ts); the places that cannot import it —
// package.json's scripts, the CLI shebang, docker/Dockerfile — must say the same, flag for flag.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NODE_HEAP_FLAGS, WORKER_HEAP_RESET_FLAGS } from '../../src/config/heap-flags.js';

const root = join(import.meta.dirname, '..', '..');
const read = (p: string) => readFileSync(join(root, p), 'utf8');
const FLAGS = NODE_HEAP_FLAGS.join(' ');

describe('node heap flags in one place', () => {
  it('are the 64 MiB young generation', () => {
    expect(NODE_HEAP_FLAGS).toEqual(['--max-semi-space-size=64', '--min-semi-space-size=64']);
    expect(WORKER_HEAP_RESET_FLAGS).toEqual(['--min-semi-space-size=0']);
  });

  it('package.json start and cluster run node with exactly these flags', () => {
    const { scripts } = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    expect(scripts.start).toContain(`node ${FLAGS} dist/cli/index.js start`);
    expect(scripts.cluster).toContain(`node ${FLAGS} dist/cli/index.js cluster`);
    // No script carries other heap-size flags (a stale copy would show here).
    for (const [name, script] of Object.entries(scripts)) {
      for (const flag of script.match(/--[a-z-]*space-size=\d+/g) ?? []) expect(NODE_HEAP_FLAGS, `${name}: ${flag}`).toContain(flag);
    }
  });

  it('the CLI shebang runs node with them', () => {
    expect(read('src/cli/index.ts').split('\n')[0]).toBe(`#!/usr/bin/env -S node ${FLAGS}`);
  });

  it('the Dockerfile CMD runs node with them', () => {
    const cmd = read('docker/Dockerfile')
      .split('\n')
      .find((l) => l.startsWith('CMD '));
    expect(JSON.parse(cmd!.slice(4))).toEqual(['node', ...NODE_HEAP_FLAGS, 'dist/cli/index.js', 'start']);
  });

  it('no other file of src, scripts or docker spells a heap-size flag out', () => {
    const offenders: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(join(root, dir))) {
        const p = join(dir, name);
        if (statSync(join(root, p)).isDirectory()) walk(p);
        else if (/(semi|old)-space-size=\d/.test(read(p))) offenders.push(p);
      }
    };
    for (const d of ['src', 'scripts', 'docker']) walk(d);
    expect(offenders.sort()).toEqual(['docker/Dockerfile', 'src/cli/index.ts', 'src/config/heap-flags.ts']);
  });
});

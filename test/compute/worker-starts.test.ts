// A worker thread that cannot start is tried again later and later (src/compute/worker-starts.ts), not at once in a
// loop: in a process whose working directory was deleted (a node's, when its directory is removed under it), the seal
// worker and the solver pool start a handful of threads rather than one after another on every core, fail work at once
// with the cause, and serve again once workers can start.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FIRST_WAIT_MS, LAST_WAIT_MS, WorkerStarts } from '../../src/compute/worker-starts.js';
import { ROOT } from '../helpers/cli.js';

describe('WorkerStarts', () => {
  afterEach(() => vi.restoreAllMocks());

  it('waits twice as long after each death in a row, up to the last wait, and not at all once a worker got ready', () => {
    let now = 1000;
    vi.spyOn(performance, 'now').mockImplementation(() => now);
    const starts = new WorkerStarts();
    expect(starts.wait()).toBe(0);
    expect(starts.failureText()).toBeNull();
    const waits: number[] = [];
    for (let i = 0; i < 12; i++) {
      starts.died(new Error(`death ${i}`));
      waits.push(starts.wait());
    }
    expect(waits.slice(0, 4)).toEqual([FIRST_WAIT_MS, 2 * FIRST_WAIT_MS, 4 * FIRST_WAIT_MS, 8 * FIRST_WAIT_MS]);
    expect(waits.at(-1)).toBe(LAST_WAIT_MS);
    expect(Math.max(...waits)).toBe(LAST_WAIT_MS);
    expect(starts.failureText()).toBe('Error: death 11');
    now += LAST_WAIT_MS / 2;
    expect(starts.wait()).toBe(LAST_WAIT_MS / 2);
    starts.ready();
    expect(starts.wait()).toBe(0);
    expect(starts.failureText()).toBeNull();
    starts.died(new Error('again'));
    expect(starts.wait()).toBe(FIRST_WAIT_MS);
  });
});

describe('workers that cannot start', () => {
  it('are tried again later and later; work fails at once with the cause; workers serve once they can start', () => {
    const r = spawnSync(process.execPath, [join(ROOT, 'test/helpers/unstartable-workers.mjs')], { cwd: ROOT, encoding: 'utf8', timeout: 90_000 });
    expect(r.status, r.stderr).toBe(0);
    const { started, whileGone, afterwards } = JSON.parse(r.stdout);
    // 1.5 s of tries at 0, 0.1, 0.3, 0.7 and 1.5 s: at most five threads for each of the two (replaced at once, it was
    // dozens in the same time).
    expect(started).toBeGreaterThanOrEqual(2);
    expect(started).toBeLessThanOrEqual(12);
    expect(whileGone.seal).toMatchObject({ ok: false });
    expect(whileGone.seal.message).toMatch(/^the seal worker could not start \(next try in \d+ ms\): .*uv_cwd/);
    expect(whileGone.solve).toMatchObject({ ok: false });
    expect(whileGone.solve.message).toMatch(/^solver workers could not start \(next try in \d+ ms\): .*uv_cwd/);
    // What the WORKERS_NOT_STARTING warning reads, while they cannot start and once they have.
    expect(whileGone.failures.seal).toMatch(/uv_cwd/);
    expect(whileGone.failures.solve).toMatch(/uv_cwd/);
    expect(afterwards.failures).toEqual({ seal: null, solve: null });
    // A seal worker that answers (its job was not a body: it says why), and a solver run's output.
    expect(afterwards.seal.message).toMatch(/^sealing failed: /);
    expect(afterwards.solve).toMatchObject({ ok: true });
    expect(afterwards.solve.value).toEqual(expect.arrayContaining(['value', 'unit', 'outputs']));
  }, 120_000);
});

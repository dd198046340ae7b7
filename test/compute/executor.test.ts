// The solver worker pool and a run whose caller has left (its signal aborted): a waiting run leaves the queue, rejected
// with the signal's reason; one on a worker finishes (here: at its time limit, not at the signal), since ending it
// would cost a worker's restart and charge nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkerPoolExecutor } from '../../src/compute/executor.js';
import { defaultRegistry } from '../../src/solvers/registry.js';
import { waitUntil } from '../helpers/wait.js';

const registry = defaultRegistry();
/** The longest gauge run its work limit allows: seconds of a core, far more than the steps below take. */
const ENDLESS = registry.get('gauge')!.resolve({ L: 24, max_sweeps: 36_000, target_rel_error: 1e-5 }) as Record<string, unknown>;
const SMALL = registry.get('heat')!.resolve({}) as Record<string, unknown>;
const LIMIT_SECONDS = 600;

let pool: WorkerPoolExecutor;
beforeAll(() => {
  pool = new WorkerPoolExecutor({ size: 1, maxQueuedPerOwner: 4 });
});
afterAll(() => pool?.close());

describe('WorkerPoolExecutor: a run whose caller left', () => {
  it('leaves the queue while it waits; once on a worker it is not stopped by its caller leaving', async () => {
    const owner = 'left-owner';
    const first = new AbortController();
    const second = new AbortController();
    // The first run ends by finishing or at its time limit (seconds): an end by the signal would show its reason instead.
    const running = pool.run('gauge', ENDLESS, undefined, 5, owner, 'free', first.signal).catch((e: unknown) => e);
    await waitUntil(() => pool.runsOf(owner).running === 1, 'the first run to be on the worker');
    // The owner has a run on the only worker: its second waits.
    const waiting = pool.run('gauge', ENDLESS, undefined, LIMIT_SECONDS, owner, 'free', second.signal).catch((e: unknown) => e);
    expect(pool.runsOf(owner)).toEqual({ running: 1, waiting: 1 });

    second.abort(new Error('the second caller left'));
    expect(await waiting).toMatchObject({ message: 'the second caller left' });
    expect(pool.runsOf(owner)).toEqual({ running: 1, waiting: 0 });
    expect(pool.queueDepth()).toBe(0);

    first.abort(new Error('the first caller left'));
    expect(pool.runsOf(owner)).toEqual({ running: 1, waiting: 0 });
    const ended = (await running) as { code?: string; value?: number };
    if (ended instanceof Error) expect(ended).toMatchObject({ code: 'SVC_TIMEOUT' });
    else expect(Number.isFinite(ended.value)).toBe(true);
    expect(pool.runsOf(owner)).toEqual({ running: 0, waiting: 0 });

    const out = await pool.run('heat', SMALL, undefined, LIMIT_SECONDS, owner);
    expect(Number.isFinite(out.value)).toBe(true);
  });

  it('does not take a run whose caller has already left', async () => {
    const gone = AbortSignal.abort(new Error('gone before it was sent'));
    await expect(pool.run('heat', SMALL, undefined, LIMIT_SECONDS, 'early-owner', 'free', gone)).rejects.toThrow('gone before it was sent');
    expect(pool.runsOf('early-owner')).toEqual({ running: 0, waiting: 0 });
  });
});

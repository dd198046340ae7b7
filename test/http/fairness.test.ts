// Solver scheduling over HTTP on a real node with one worker: callers are served in turn, one caller's waiting runs
// are capped (429), and the tier time limit counts from acceptance. Orders of completion and error fields are
// asserted, never wall-clock thresholds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type Reply, type TestNode } from '../helpers/node.js';
import type { WorkerPoolExecutor } from '../../src/compute/executor.js';

/** Poll `ready` every 20 ms, for 30 s at most. */
async function until(ready: () => boolean): Promise<void> {
  for (const end = Date.now() + 30_000; !ready();) {
    if (Date.now() > end) throw new Error('timed out waiting for the pool');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Half a second of Metropolis sweeps here (no early stop at this target): long enough that a run is still on the worker
 * while the test sends the next request, on a machine several times faster.
 */
const HEAVY = { L: 16, max_sweeps: 20_000, target_rel_error: 1e-5 };
/** The longest gauge run its work limit allows (L² × (therm + max sweeps) ≤ 2.1e7): 2 s of CPU here, more than twice the 0.8 s limit below. */
const ENDLESS = { L: 24, max_sweeps: 36_000, target_rel_error: 1e-5 };

/** A run that succeeds once the worker has loaded (from source under load, it may take longer than a short limit). */
async function warmUp(url: string, key: string): Promise<void> {
  for (let i = 0; i < 60; i++) {
    const r = await call(url, 'POST', '/api/svc/zeta', {}, bearer(key));
    if (r.status === 200) return;
    expect(r.body.error?.code, r.text).toBe('SVC_TIMEOUT');
    expect(r.body.error.run_seconds).toBe(0);
  }
  throw new Error('the solver worker never became ready');
}

describe('fair solver scheduling (one pool worker)', () => {
  let t: TestNode;
  beforeAll(async () => {
    t = await startTestNode({ solverThreads: 1, limits: { maxQueuedRunsPerIdentity: 2 } }, { initialCredits: 1000, timeLimitSeconds: 600 });
  });
  afterAll(async () => {
    await t.destroy();
  });

  it("a heavy caller's waiting runs do not hold back another caller's small run: it completes before the heavy caller's 2nd and 3rd", async () => {
    const heavy = await zkIdentity(t.url, 'fair-heavy');
    const light = await zkIdentity(t.url, 'fair-light');
    // The worker is up before the race starts.
    expect((await call(t.url, 'POST', '/api/svc/zeta', {}, bearer(light.key))).status).toBe(200);
    const done: string[] = [];
    const track = (label: string, p: Promise<Reply>): Promise<Reply> =>
      p.then((r) => {
        done.push(label);
        return r;
      });
    const pool = (t.node as unknown as { executor: WorkerPoolExecutor }).executor;
    const heavyRuns = [1, 2, 3].map((i) => track(`heavy${i}`, call(t.url, 'POST', '/api/svc/gauge', HEAVY, bearer(heavy.key))));
    // Sent once the heavy runs are in the pool (one running, two waiting); in FIFO order it would finish last.
    await until(() => pool.runsOf(`zid:${heavy.zid}`).running === 1 && pool.runsOf(`zid:${heavy.zid}`).waiting === 2);
    const lightRun = track('light', call(t.url, 'POST', '/api/svc/heat', {}, bearer(light.key)));
    const replies = await Promise.all([...heavyRuns, lightRun]);
    for (const r of replies) expect(r.status, r.text).toBe(200);
    const lightAt = done.indexOf('light');
    // At most one heavy run (the one on the worker when the light run came) finishes before it.
    expect(lightAt).toBeLessThanOrEqual(1);
    // (It may even finish before all of them, on a loaded machine: the first heavy run can reach the worker late.)
    expect(done.slice(lightAt + 1).filter((l) => l.startsWith('heavy')).length).toBeGreaterThanOrEqual(2);
  }, 120_000);

  it('a caller with its cap of runs waiting gets 429 SVC_RATE_LIMIT with Retry-After, is not charged, and others are not refused', async () => {
    const greedy = await zkIdentity(t.url, 'fair-greedy');
    const other = await zkIdentity(t.url, 'fair-other');
    expect((await call(t.url, 'POST', '/api/svc/zeta', {}, bearer(other.key))).status).toBe(200);
    const balance = async (key: string): Promise<number> => {
      const r = await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(key));
      expect(r.status, r.text).toBe(200);
      return r.body.total;
    };
    const before = await balance(greedy.key);
    // One runs, two wait (the cap), the fourth is refused.
    // Each step waits until the pool holds what the previous one sent (a fixed pause is too short on a loaded machine).
    const pool = (t.node as unknown as { executor: WorkerPoolExecutor }).executor;
    const runs = () => pool.runsOf(`zid:${greedy.zid}`);
    const first = call(t.url, 'POST', '/api/svc/gauge', HEAVY, bearer(greedy.key));
    await until(() => runs().running === 1);
    const waiting = [call(t.url, 'POST', '/api/svc/gauge', HEAVY, bearer(greedy.key)), call(t.url, 'POST', '/api/svc/gauge', HEAVY, bearer(greedy.key))];
    await until(() => runs().waiting === 2);
    const refused = await call(t.url, 'POST', '/api/svc/gauge', HEAVY, bearer(greedy.key));
    const e = expectError(refused, 429, 'SVC_RATE_LIMIT');
    expect(e.limit).toBe(2);
    expect(e.queued_runs).toBe(2);
    expect(e.running_runs).toBe(1);
    expect(e.window_seconds).toBe(600);
    expect(Number.isInteger(e.retry_after_seconds) && e.retry_after_seconds >= 1).toBe(true);
    expect(refused.headers.get('retry-after')).toBe(String(e.retry_after_seconds));
    expect(Number.isNaN(Date.parse(e.reset_at))).toBe(false);
    // Another caller is queued meanwhile, not refused.
    const others = await call(t.url, 'POST', '/api/svc/heat', {}, bearer(other.key));
    expect(others.status, others.text).toBe(200);
    const accepted = await Promise.all([first, ...waiting]);
    for (const r of accepted) expect(r.status, r.text).toBe(200);
    // Three runs charged (10 each), the refused one not.
    expect(before - (await balance(greedy.key))).toBe(30);
    // Once its queue has drained the caller is accepted again.
    expect((await call(t.url, 'POST', '/api/svc/zeta', {}, bearer(greedy.key))).status).toBe(200);
  }, 120_000);
});

describe('a node-wide cap on waiting runs', () => {
  it('beyond limits.maxQueuedRuns waiting node-wide, any caller gets 429 SVC_RATE_LIMIT (scope node) with Retry-After, uncharged', async () => {
    // Per caller 2 may wait, node-wide 2: one caller filling its own cap fills the node's.
    const t = await startTestNode(
      { solverThreads: 1, limits: { maxQueuedRunsPerIdentity: 2, maxQueuedRuns: 2 } },
      { initialCredits: 1000, timeLimitSeconds: 600 },
    );
    const abort = new AbortController();
    try {
      const filler = await zkIdentity(t.url, 'node-cap-filler');
      const stranger = await zkIdentity(t.url, 'node-cap-stranger');
      await warmUp(t.url, filler.key);
      await warmUp(t.url, stranger.key);
      const pool = (t.node as unknown as { executor: WorkerPoolExecutor }).executor;
      const runs = () => pool.runsOf(`zid:${filler.zid}`);
      const send = (body: unknown) =>
        fetch(`${t.url}/api/svc/gauge`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...bearer(filler.key) },
          body: JSON.stringify(body),
          signal: abort.signal,
        }).catch(() => undefined);
      // Aborted at the end (the node's stop waits for open requests): one long run holds the worker, two wait.
      void send(ENDLESS);
      await until(() => runs().running === 1);
      void send(HEAVY);
      void send(HEAVY);
      await until(() => runs().waiting === 2);
      const before = (await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(stranger.key))).body.total;
      // The stranger has nothing waiting or running, yet the node's queue is full.
      const refused = await call(t.url, 'POST', '/api/svc/heat', {}, bearer(stranger.key));
      const e = expectError(refused, 429, 'SVC_RATE_LIMIT');
      expect(e.scope).toBe('node');
      expect(e.limit).toBe(2);
      expect(e.queued_runs).toBe(2);
      expect(e.message).toMatch(/on this node/);
      expect(Number.isInteger(e.retry_after_seconds) && e.retry_after_seconds >= 1).toBe(true);
      expect(refused.headers.get('retry-after')).toBe(String(e.retry_after_seconds));
      expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(stranger.key))).body.total).toBe(before);
      expect(pool.queueDepth()).toBe(2);
    } finally {
      abort.abort();
      await t.destroy();
    }
  }, 120_000);
});

describe('a full pool', () => {
  it("a newcomer's small run does not wait for another caller's long run to end: an overflow worker serves it", async () => {
    const t = await startTestNode({ solverThreads: 1 }, { initialCredits: 1000, timeLimitSeconds: 600 });
    try {
      const heavy = await zkIdentity(t.url, 'overflow-heavy');
      const light = await zkIdentity(t.url, 'overflow-light');
      await warmUp(t.url, light.key);
      let heavyDone = false;
      // Aborted at the end: the node's stop waits for open requests.
      const abort = new AbortController();
      const long = fetch(`${t.url}/api/svc/gauge`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...bearer(heavy.key) },
        body: JSON.stringify(ENDLESS),
        signal: abort.signal,
      }).then(() => {
        heavyDone = true;
      });
      long.catch(() => undefined);
      await new Promise((r) => setTimeout(r, 150));
      // The pool's one worker is on the long run (seconds); FIFO would hold this run behind it.
      const small = await call(t.url, 'POST', '/api/svc/heat', {}, bearer(light.key));
      expect(small.status, small.text).toBe(200);
      expect(small.body.value).toBeGreaterThan(0);
      expect(heavyDone).toBe(false);
      abort.abort();
    } finally {
      await t.destroy();
    }
  }, 120_000);
});

describe('the time limit counts from acceptance', () => {
  it('a run that waited behind another is timed from acceptance: SVC_TIMEOUT names the limit, the elapsed time, the wait and the run', async () => {
    const limit = 0.8;
    const t = await startTestNode({ solverThreads: 1 }, { initialCredits: 1000, timeLimitSeconds: limit });
    try {
      const id = await zkIdentity(t.url, 'acceptance');
      await warmUp(t.url, id.key);
      const a = call(t.url, 'POST', '/api/svc/gauge', ENDLESS, bearer(id.key));
      await new Promise((r) => setTimeout(r, 150));
      // B waits while A holds the worker until A's limit ends it; B's limit runs out soon after.
      const b = call(t.url, 'POST', '/api/svc/gauge', ENDLESS, bearer(id.key));
      const ea = expectError(await a, 500, 'SVC_TIMEOUT');
      expect(ea.time_limit_seconds).toBe(limit);
      expect(ea.queued_seconds).toBeLessThan(ea.run_seconds);
      const eb = expectError(await b, 500, 'SVC_TIMEOUT');
      expect(eb.time_limit_seconds).toBe(limit);
      // The wait was most of B's time (A held the worker for all but the ~150 ms B came after it).
      expect(eb.queued_seconds).toBeGreaterThan(limit / 2);
      expect(eb.queued_seconds).toBeGreaterThan(eb.run_seconds);
      expect(eb.elapsed_seconds).toBeGreaterThanOrEqual(limit - 0.01);
      expect(Math.abs(eb.queued_seconds + eb.run_seconds - eb.elapsed_seconds)).toBeLessThanOrEqual(0.002);
      expect(eb.message).toMatch(/queued/);
      // Nothing sealed for either.
      const list = await call(t.url, 'GET', `/api/tally/envelopes/${id.zid}`, undefined, bearer(id.key));
      expect(list.body.total).toBe(1);
    } finally {
      await t.destroy();
    }
  }, 120_000);
});

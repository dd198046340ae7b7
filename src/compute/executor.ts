// Where solver runs execute. Inline runs on the calling thread (tests that inject their own registry);
// the worker pool runs them on worker threads, keeps the event loop free, serves the callers' queues in turn (one
// heavy caller cannot hold the pool), and enforces the tier time limit from acceptance by terminating a worker that
// overruns (SVC_TIMEOUT), replacing it with a fresh one.
import v8 from 'node:v8';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { WORKER_HEAP_RESET_FLAGS } from '../config/heap-flags.js';
import { ServiceError, type ErrorCode } from '../kernel/errors.js';
import { FIRST_BACKOFF_SECONDS } from '../kernel/error-catalogue.js';
import type { SolverRegistry } from '../solvers/registry.js';
import type { SolverOutput } from '../solvers/types.js';
import { WorkerStarts } from './worker-starts.js';

/** tsx's ESM register API (dev only: running from source). */
function tsxEsmApi(): string {
  const pkg = createRequire(import.meta.url).resolve('tsx/package.json');
  return pathToFileURL(join(dirname(pkg), 'dist/esm/api/index.mjs')).href;
}

const FROM_SOURCE = fileURLToPath(import.meta.url).endsWith('.ts');
/**
 * Running from source, workers compile their .ts modules through tsx: about a second of CPU per worker. The test run
 * sets SVC_WORKERS_FROM_BUILD=1 (vitest.config.ts), whose global setup brings dist/ up to date with src/ first: its
 * workers run the build's .js, as a node started from dist/ does.
 */
const WORKERS_FROM_BUILD = FROM_SOURCE && process.env.SVC_WORKERS_FROM_BUILD === '1';

/**
 * `--min-semi-space-size` (npm start gives node 64 MiB; docs/decisions.md) is meant for the main thread, which serves
 * HTTP and seals. V8 applies it to every isolate it creates, workers too, and there it would pin the whole young
 * generation, ~128 MiB per worker (measured: RSS 207 → 432 MiB after 40 solver runs); a worker's resourceLimits do
 * not override the flag. So it is reset before each worker is made (cheap, and idempotent): heap flags are read when an
 * isolate is created, so the main isolate keeps what it started with and workers get V8's growing young generation.
 */
export function resetWorkerHeapFlags(): void {
  for (const flag of WORKER_HEAP_RESET_FLAGS) v8.setFlagsFromString(flag);
}

/**
 * A worker thread running the module `name` of this directory (solver-worker, seal-worker): the .js file from
 * dist, or, from source (tsx), the .ts file loaded through a bootstrap that registers tsx first.
 */
export function spawnWorker(name: string, workerData?: unknown): Worker {
  resetWorkerHeapFlags();
  if (WORKERS_FROM_BUILD) return new Worker(new URL(`../../dist/compute/${name}.js`, import.meta.url), { workerData });
  const entry = new URL(`./${name}${FROM_SOURCE ? '.ts' : '.js'}`, import.meta.url);
  if (!FROM_SOURCE) return new Worker(entry, { workerData });
  const bootstrap = `import(${JSON.stringify(tsxEsmApi())}).then((m) => { m.register(); return import(${JSON.stringify(entry.href)}); });`;
  return new Worker(bootstrap, { eval: true, workerData });
}

export interface SolverExecutor {
  /** True when run() itself stops a job at its time limit (so callers need not check afterwards). */
  readonly enforcesTimeLimit: boolean;
  /**
   * Run a solver for `owner` (whose runs are queued and capped together: an identity's ZID, the anonymous IP).
   * The time limit (the caller's tier's, named by `tier` in SVC_TIMEOUT) counts from this call, so the wait for a
   * worker is part of it. `signal` (its caller left): a run still waiting for a worker leaves the queue, rejected with
   * the signal's reason; one that has started finishes.
   */
  run(
    solverId: string,
    inputs: Record<string, unknown>,
    state: unknown,
    timeLimitSeconds: number,
    owner: string,
    tier?: string,
    signal?: AbortSignal,
  ): Promise<SolverOutput>;
  /** Runs it could start now without queueing (a node advertises this in its tick events). */
  freeSlots(): number;
  /** Runs waiting for a worker now (the MMIO queue-depth register); absent: none ever wait. */
  queueDepth?(): number;
  /** Why workers die as they start, while they do (none has got ready since); null or absent: they start. */
  startFailure?(): string | null;
  close(): Promise<void>;
}

const round3 = (seconds: number): number => Math.round(seconds * 1000) / 1000;

/**
 * SVC_TIMEOUT with both figures of part 7 (the limit and the time from acceptance), split into the wait for a
 * worker and the run itself, so a caller can tell a too-large problem from a busy node.
 */
export function timeoutError(
  limitSeconds: number,
  elapsedSeconds: number,
  tier: string,
  split: { queuedSeconds: number; runSeconds: number } = { queuedSeconds: 0, runSeconds: elapsedSeconds },
): ServiceError {
  const waited = split.queuedSeconds >= split.runSeconds;
  return new ServiceError(
    500,
    'SVC_TIMEOUT',
    `computation took ${elapsedSeconds.toFixed(3)} s from acceptance (${split.queuedSeconds.toFixed(3)} s queued, ${split.runSeconds.toFixed(3)} s running), over the ${limitSeconds} s limit of the ${tier} tier`,
    {
      time_limit_seconds: limitSeconds,
      tier,
      elapsed_seconds: round3(elapsedSeconds),
      queued_seconds: round3(split.queuedSeconds),
      run_seconds: round3(split.runSeconds),
      suggestion: waited
        ? 'the run waited for a free solver worker most of the time: retry later, or reduce the problem size (grid points, steps)'
        : 'reduce the problem size (grid points, steps) or use a higher tier',
      // A busy node: come back after about as long as this run waited; a run too large for the limit: the spec's first
      // backoff step (the same run will time out again unless the problem or the tier changes).
      retry_after_seconds: waited ? Math.max(FIRST_BACKOFF_SECONDS, Math.ceil(split.queuedSeconds)) : FIRST_BACKOFF_SECONDS,
    },
  );
}

/** Worker threads for a `solverThreads` setting: a number as given; `auto`, every core but one (at least 1). */
export function solverPoolSize(setting: number | 'auto', cores: number = availableParallelism()): number {
  return setting === 'auto' ? Math.max(1, cores - 1) : setting;
}

export class InlineExecutor implements SolverExecutor {
  readonly enforcesTimeLimit = false;
  constructor(private readonly registry: SolverRegistry) {}

  async run(
    solverId: string,
    inputs: Record<string, unknown>,
    state: unknown,
    _limit?: number,
    _owner?: string,
    _tier?: string,
    signal?: AbortSignal,
  ): Promise<SolverOutput> {
    const solver = this.registry.get(solverId);
    if (!solver) throw new Error(`unknown solver ${solverId}`);
    // A run on the calling thread cannot be stopped once started; one whose caller has already left is not started.
    signal?.throwIfAborted();
    return solver.run(inputs, state);
  }

  /** One: a run on the main thread blocks the loop, so none is ever waiting here while another runs. */
  freeSlots(): number {
    return 1;
  }

  async close(): Promise<void> {}
}

interface Job {
  id: number;
  owner: string;
  solverId: string;
  inputs: Record<string, unknown>;
  state: unknown;
  limitSeconds: number;
  /** The caller's tier, for SVC_TIMEOUT. */
  tier: string;
  /** performance.now() at acceptance: the time limit counts from here. */
  acceptedAt: number;
  /** performance.now() when a worker took it; null while it waits. */
  startedAt: number | null;
  /** Fires at the deadline, waiting or running. */
  timer: NodeJS.Timeout | null;
  /** Removes the listener on the caller's signal (a no-op without one). */
  unlisten: () => void;
  resolve: (o: SolverOutput) => void;
  reject: (e: unknown) => void;
}

/** One caller's runs: those waiting (in order) and how many are on workers now. */
interface OwnerQueue {
  waiting: Job[];
  running: number;
  /** Dispatch number of its last run to start (-1: none yet); the owner served longest ago goes first. */
  lastServed: number;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  job: Job | null;
  /** Ends an idle worker beyond the pool size (overflow workers are kept only while they serve). */
  retireTimer: NodeJS.Timeout | null;
}

/** How long an overflow worker is kept idle before it is ended (a newcomer soon after reuses it warm). */
const OVERFLOW_IDLE_MS = 30_000;

type WorkerReply =
  | { id: number; ok: true; output: SolverOutput }
  | {
      id: number;
      ok: false;
      error: { service: boolean; status?: number; code?: ErrorCode; message: string; extra?: Record<string, unknown>; details?: unknown };
    };

export interface WorkerPoolOptions {
  /**
   * Worker threads that serve every caller (the first is started at once, the others when runs wait). Up to as many
   * again (and one more) are overflow workers, which serve only callers with no run on a worker yet (see pump).
   */
  size: number;
  /** Runs one owner may have waiting for a worker; beyond it 429 SVC_RATE_LIMIT. */
  maxQueuedPerOwner: number;
  /**
   * Runs waiting for a worker node-wide, whoever the owners (many identities could otherwise each fill their own cap
   * and grow the queue without bound); beyond it 429 SVC_RATE_LIMIT. Absent: no node-wide cap.
   */
  maxQueued?: number;
}

export class WorkerPoolExecutor implements SolverExecutor {
  readonly enforcesTimeLimit = true;
  private readonly slots: Slot[] = [];
  /** Owners with runs waiting or running; an owner leaves when it has neither. */
  private readonly owners = new Map<string, OwnerQueue>();
  private waitingCount = 0;
  private dispatches = 0;
  private nextId = 1;
  private closed = false;
  /** Moving average of run times (ms), for the Retry-After of a full queue. */
  private typicalRunMs = 1000;
  private readonly size: number;
  /** Workers at most, overflow included. */
  private readonly maxWorkers: number;
  private readonly starts = new WorkerStarts();
  /** Starts the next worker once workers that could not start have waited (starts). */
  private restart: NodeJS.Timeout | null = null;

  constructor(private readonly options: WorkerPoolOptions) {
    this.size = Math.max(1, options.size);
    // The overflow: as many again, plus one so that a spare can load while another is taken (see grow).
    this.maxWorkers = 2 * this.size + 1;
    this.slots.push(this.spawn());
  }

  private spawn(): Slot {
    const worker = spawnWorker('solver-worker');
    worker.unref();
    const slot: Slot = { worker, ready: false, job: null, retireTimer: null };
    worker.on('message', (reply: WorkerReply | { ready: true }) => {
      if ('ready' in reply) {
        slot.ready = true;
        this.starts.ready();
        this.pump();
      } else this.settle(slot, reply);
    });
    worker.on('error', (err) => this.fail(slot, err));
    worker.on('exit', (code) => {
      if (slot.job || !slot.ready) this.fail(slot, new Error(`solver worker exited with code ${code}`));
    });
    return slot;
  }

  run(
    solverId: string,
    inputs: Record<string, unknown>,
    state: unknown,
    timeLimitSeconds: number,
    owner: string,
    tier = 'free',
    signal?: AbortSignal,
  ): Promise<SolverOutput> {
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    if (this.closed) return Promise.reject(new Error('executor is closed'));
    if (this.cannotStart()) return Promise.reject(this.starts.refusal('solver workers'));
    let queue = this.owners.get(owner);
    if (queue && queue.waiting.length >= this.options.maxQueuedPerOwner) return Promise.reject(this.queueFull(queue, timeLimitSeconds));
    if (this.options.maxQueued !== undefined && this.waitingCount >= this.options.maxQueued) return Promise.reject(this.nodeQueueFull(timeLimitSeconds));
    if (!queue) {
      queue = { waiting: [], running: 0, lastServed: -1 };
      this.owners.set(owner, queue);
    }
    const q = queue;
    return new Promise((resolve, reject) => {
      const job: Job = {
        id: this.nextId++,
        owner,
        solverId,
        inputs,
        state,
        limitSeconds: timeLimitSeconds,
        tier,
        acceptedAt: performance.now(),
        startedAt: null,
        timer: null,
        unlisten: () => undefined,
        resolve,
        reject,
      };
      job.timer = setTimeout(() => this.expire(job), Math.max(0, timeLimitSeconds * 1000));
      if (signal) {
        const stop = () => this.stop(job, signal.reason);
        signal.addEventListener('abort', stop, { once: true });
        job.unlisten = () => signal.removeEventListener('abort', stop);
      }
      q.waiting.push(job);
      this.waitingCount++;
      this.pump();
    });
  }

  startFailure(): string | null {
    return this.starts.failureText();
  }

  queueDepth(): number {
    return this.waitingCount;
  }

  freeSlots(): number {
    let busy = 0;
    for (const slot of this.slots) if (slot.job) busy++;
    return Math.max(0, this.size - busy - this.waitingCount);
  }

  /** An owner's runs on workers and waiting (runOwner names owners). */
  runsOf(owner: string): { running: number; waiting: number } {
    const q = this.owners.get(owner);
    return { running: q?.running ?? 0, waiting: q?.waiting.length ?? 0 };
  }

  /** 429 for an owner whose queue is full; Retry-After: about when its first waiting run should start. */
  private queueFull(queue: OwnerQueue, limitSeconds: number): ServiceError {
    let ownersWaiting = 0;
    for (const q of this.owners.values()) if (q.waiting.length > 0) ownersWaiting++;
    // Served in turn: its first run starts after about one run of every owner waiting, spread over the workers.
    const estimate = (this.typicalRunMs * Math.max(1, ownersWaiting)) / this.size / 1000;
    const retry = Math.min(Math.max(1, Math.ceil(estimate)), Math.max(1, Math.ceil(limitSeconds)));
    const max = this.options.maxQueuedPerOwner;
    return new ServiceError(
      429,
      'SVC_RATE_LIMIT',
      `too many solver runs waiting: at most ${max} per caller wait for a worker (${queue.running} running, ${queue.waiting.length} waiting); retry when one has started`,
      {
        limit: max,
        // A waiting run leaves the queue within the time limit (it starts or times out), so this is the window.
        window_seconds: limitSeconds,
        retry_after_seconds: retry,
        reset_at: new Date(Date.now() + retry * 1000).toISOString(),
        queued_runs: queue.waiting.length,
        running_runs: queue.running,
      },
    );
  }

  /** 429 when the node's queue is full, whoever asks; Retry-After: about when the run first in line should start. */
  private nodeQueueFull(limitSeconds: number): ServiceError {
    const max = this.options.maxQueued!;
    let running = 0;
    for (const slot of this.slots) if (slot.job) running++;
    // The queue drains at about one run per worker per typical run time; a waiting run leaves it within its limit.
    const estimate = this.typicalRunMs / this.size / 1000;
    const retry = Math.min(Math.max(1, Math.ceil(estimate)), Math.max(1, Math.ceil(limitSeconds)));
    return new ServiceError(
      429,
      'SVC_RATE_LIMIT',
      `too many solver runs waiting on this node: at most ${max} wait for a worker, whoever the callers (${running} running, ${this.waitingCount} waiting); retry when one has started`,
      {
        limit: max,
        scope: 'node',
        window_seconds: limitSeconds,
        retry_after_seconds: retry,
        reset_at: new Date(Date.now() + retry * 1000).toISOString(),
        queued_runs: this.waitingCount,
        running_runs: running,
      },
    );
  }

  /** The owner to serve next: fewest runs on workers, then served longest ago, then the oldest waiting run. */
  private nextOwner(): OwnerQueue | null {
    let best: OwnerQueue | null = null;
    for (const q of this.owners.values()) {
      if (q.waiting.length === 0) continue;
      if (
        !best ||
        q.running < best.running ||
        (q.running === best.running && (q.lastServed < best.lastServed || (q.lastServed === best.lastServed && q.waiting[0]!.id < best.waiting[0]!.id)))
      )
        best = q;
    }
    return best;
  }

  /**
   * Start waiting runs on idle workers, the next owner first (nextOwner). A run on a worker cannot be paused, so
   * when `size` workers are busy an owner with a run on one waits, but an owner with none gets an overflow worker
   * (up to 2 × size + 1 in all): the OS shares the cores among the threads, so a newcomer's small run is not held
   * behind another caller's long one (each runs slower meanwhile; both count against their limits).
   */
  private pump(): void {
    if (this.closed) return;
    let busy = 0;
    for (const slot of this.slots) if (slot.job) busy++;
    for (const slot of this.slots) {
      if (!slot.ready || slot.job || this.waitingCount === 0) continue;
      const queue = this.nextOwner()!;
      if (busy >= this.size && queue.running > 0) break;
      const job = queue.waiting.shift()!;
      this.waitingCount--;
      queue.running++;
      queue.lastServed = this.dispatches++;
      if (slot.retireTimer) clearTimeout(slot.retireTimer);
      slot.retireTimer = null;
      slot.job = job;
      busy++;
      job.startedAt = performance.now();
      // Once on a worker a run finishes (sealed and charged as asked) whether or not its caller stays: ending it would
      // cost a worker's restart and charge nothing, so leaving at once would be a free way to churn the pool.
      job.unlisten();
      slot.worker.postMessage({ id: job.id, solverId: job.solverId, inputs: job.inputs, state: job.state });
    }
    this.grow(busy);
    this.retireIdle();
  }

  /** Start workers for runs that wait: within `size` for anyone, beyond it for owners with no run on a worker. */
  private grow(busy: number): void {
    let starting = 0;
    let idle = 0;
    for (const slot of this.slots) {
      if (!slot.ready) starting++;
      else if (!slot.job) idle++;
    }
    if (this.starts.wait() > 0) return this.startLater();
    while (this.waitingCount > starting + idle && this.slots.length < this.size) {
      this.slots.push(this.spawn());
      starting++;
    }
    if (busy < this.size) return;
    let newcomers = 0;
    for (const q of this.owners.values()) if (q.running === 0 && q.waiting.length > 0) newcomers++;
    // While the pool is full, a spare is kept loaded (a worker takes a while to load every solver, seconds on a
    // busy machine; a newcomer should not wait for that). When no spare is ready, a second one starts loading: the
    // one loading may be taken first (e.g. by the caller whose run was just ended at its limit).
    while ((Math.max(1, newcomers) > starting + idle || (idle === 0 && starting < 2)) && this.slots.length < this.maxWorkers) {
      this.slots.push(this.spawn());
      starting++;
    }
  }

  /** Idle workers beyond `size` are ended after OVERFLOW_IDLE_MS (one spare of a full pool is kept). */
  private retireIdle(): void {
    let extra = this.slots.length - this.size;
    for (const slot of this.slots) {
      if (extra <= 0) break;
      if (!slot.ready || slot.job || slot.retireTimer) continue;
      extra--;
      slot.retireTimer = setTimeout(() => this.retire(slot), OVERFLOW_IDLE_MS);
      slot.retireTimer.unref();
    }
  }

  private retire(slot: Slot): void {
    slot.retireTimer = null;
    const i = this.slots.indexOf(slot);
    if (i < 0 || slot.job || this.slots.length <= this.size) return;
    let busy = 0;
    let otherSpares = 0;
    for (const s of this.slots) {
      if (s.job) busy++;
      else if (s.ready && s !== slot) otherSpares++;
    }
    if (busy >= this.size && otherSpares === 0) {
      slot.retireTimer = setTimeout(() => this.retire(slot), OVERFLOW_IDLE_MS);
      slot.retireTimer.unref();
      return;
    }
    this.slots.splice(i, 1);
    void slot.worker.terminate();
  }

  /** A run has left its worker (or the queue): the owner's count and the owners map follow. */
  private finish(job: Job): void {
    if (job.timer) clearTimeout(job.timer);
    job.timer = null;
    job.unlisten();
    const queue = this.owners.get(job.owner);
    if (!queue) return;
    if (job.startedAt !== null) queue.running--;
    if (queue.running === 0 && queue.waiting.length === 0) this.owners.delete(job.owner);
  }

  private release(slot: Slot): Job | null {
    const job = slot.job;
    slot.job = null;
    if (job) this.finish(job);
    return job;
  }

  private settle(slot: Slot, reply: WorkerReply): void {
    if (!slot.job || slot.job.id !== reply.id) return;
    const job = this.release(slot)!;
    this.typicalRunMs = 0.8 * this.typicalRunMs + 0.2 * (performance.now() - job.startedAt!);
    if (reply.ok) job.resolve(reply.output);
    else if (reply.error.service)
      job.reject(new ServiceError(reply.error.status!, reply.error.code!, reply.error.message, reply.error.extra ?? {}, reply.error.details));
    else job.reject(new Error(reply.error.message));
    this.pump();
  }

  /**
   * The deadline passed. A waiting run leaves the queue; a running one ends its worker (the only way to stop
   * synchronous numerics), and a new worker is started.
   */
  private expire(job: Job): void {
    job.timer = null;
    const now = performance.now();
    const elapsed = (now - job.acceptedAt) / 1000;
    const queuedSeconds = job.startedAt === null ? elapsed : (job.startedAt - job.acceptedAt) / 1000;
    this.stop(job, timeoutError(job.limitSeconds, elapsed, job.tier, { queuedSeconds, runSeconds: elapsed - queuedSeconds }));
  }

  /** Ends a run that has not settled, as expire says (its deadline, or its caller left), and rejects it with `reason`. */
  private stop(job: Job, reason: unknown): void {
    if (job.startedAt === null) {
      const queue = this.owners.get(job.owner);
      const i = queue ? queue.waiting.indexOf(job) : -1;
      if (i < 0) return;
      queue!.waiting.splice(i, 1);
      this.waitingCount--;
      this.finish(job);
      job.reject(reason);
      return;
    }
    const slot = this.slots.find((s) => s.job === job);
    if (!slot) return;
    this.release(slot);
    void slot.worker.terminate();
    this.replace(slot);
    job.reject(reason);
  }

  private fail(slot: Slot, err: unknown): void {
    const job = this.release(slot);
    void slot.worker.terminate();
    // One of the pool's workers died before it was ready: it could not start (a worker this pool ended is out of it).
    const unstarted = !slot.ready && !this.closed && this.slots.includes(slot);
    if (unstarted) this.starts.died(err);
    this.replace(slot);
    if (job) job.reject(err);
    if (unstarted && this.cannotStart()) this.rejectWaiting();
  }

  /** A worker was ended: a new one takes its place within `size`; an overflow one is not replaced until needed. */
  private replace(slot: Slot): void {
    if (slot.retireTimer) clearTimeout(slot.retireTimer);
    const i = this.slots.indexOf(slot);
    if (i < 0 || this.closed) return;
    if (this.slots.length > this.size || this.starts.wait() > 0) this.slots.splice(i, 1);
    else this.slots[i] = this.spawn();
    this.pump();
  }

  /** No worker is ready and none may start yet: workers could not start. */
  private cannotStart(): boolean {
    return this.starts.wait() > 0 && !this.slots.some((s) => s.ready);
  }

  /** Runs waiting for a worker are failed at once when none can start, rather than at their time limits. */
  private rejectWaiting(): void {
    const err = this.starts.refusal('solver workers');
    for (const queue of this.owners.values()) {
      for (const job of queue.waiting.splice(0)) {
        this.waitingCount--;
        this.finish(job);
        job.reject(err);
      }
    }
  }

  /** One worker is started after the wait (the pool keeps one loaded, as at its start), then waiting runs are served. */
  private startLater(): void {
    if (this.restart || this.closed) return;
    this.restart = setTimeout(() => {
      this.restart = null;
      if (this.closed) return;
      if (this.slots.length === 0) this.slots.push(this.spawn());
      this.pump();
    }, this.starts.wait());
    this.restart.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.restart) clearTimeout(this.restart);
    for (const queue of this.owners.values()) {
      for (const job of queue.waiting.splice(0)) {
        if (job.timer) clearTimeout(job.timer);
        job.unlisten();
        job.reject(new Error('executor is closed'));
      }
    }
    this.waitingCount = 0;
    for (const slot of this.slots) {
      if (slot.job?.timer) clearTimeout(slot.job.timer);
      if (slot.retireTimer) clearTimeout(slot.retireTimer);
    }
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
  }
}

// Where solver runs execute. Inline runs on the calling thread (tests that inject their own registry);
// the worker pool runs them on worker threads, keeps the event loop free, and enforces the tier time limit by
// terminating a worker that overruns (SVC_TIMEOUT), replacing it with a fresh one.
import v8 from 'node:v8';
import { Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { WORKER_HEAP_RESET_FLAGS } from '../config/heap-flags.js';
import { ServiceError, type ErrorCode } from '../kernel/errors.js';
import type { SolverRegistry } from '../solvers/registry.js';
import type { SolverOutput } from '../solvers/types.js';

/** tsx's ESM register API (dev only: running from source). */
function tsxEsmApi(): string {
  const pkg = createRequire(import.meta.url).resolve('tsx/package.json');
  return pathToFileURL(join(dirname(pkg), 'dist/esm/api/index.mjs')).href;
}

const FROM_SOURCE = fileURLToPath(import.meta.url).endsWith('.ts');

/**
 * `--min-semi-space-size` (npm start gives node 64 MiB; docs/decisions.md) is meant for the main thread, which serves
 * HTTP and seals. V8 applies it to every isolate it creates, workers too, and there it would pin the whole young
 * generation, ~128 MiB per worker (measured: RSS 207 → 432 MiB after 40 solver runs); a worker's resourceLimits do
 * not override the flag. So it is reset before the first worker is made: heap flags are read when an isolate is
 * created, so the main isolate keeps what it started with and workers get V8's growing young generation.
 */
let workerHeapFlagsSet = false;
export function resetWorkerHeapFlags(): void {
  if (workerHeapFlagsSet) return;
  for (const flag of WORKER_HEAP_RESET_FLAGS) v8.setFlagsFromString(flag);
  workerHeapFlagsSet = true;
}

/**
 * A worker thread running the module `name` of this directory (solver-worker, seal-worker): the .js file from
 * dist, or, from source (tests, tsx), the .ts file loaded through a bootstrap that registers tsx first.
 */
export function spawnWorker(name: string, workerData?: unknown): Worker {
  resetWorkerHeapFlags();
  const entry = new URL(`./${name}${FROM_SOURCE ? '.ts' : '.js'}`, import.meta.url);
  if (!FROM_SOURCE) return new Worker(entry, { workerData });
  const bootstrap = `import(${JSON.stringify(tsxEsmApi())}).then((m) => { m.register(); return import(${JSON.stringify(entry.href)}); });`;
  return new Worker(bootstrap, { eval: true, workerData });
}

export interface SolverExecutor {
  /** True when run() itself stops a job at its time limit (so callers need not check afterwards). */
  readonly enforcesTimeLimit: boolean;
  run(solverId: string, inputs: Record<string, unknown>, state: unknown, timeLimitSeconds: number): Promise<SolverOutput>;
  /** Runs it could start now without queueing (a node advertises this in its tick events). */
  freeSlots(): number;
  close(): Promise<void>;
}

export function timeoutError(limitSeconds: number, elapsedSeconds: number, tier: string): ServiceError {
  return new ServiceError(500, 'SVC_TIMEOUT', `computation took ${elapsedSeconds.toFixed(3)} s, over the ${limitSeconds} s limit of the ${tier} tier`, {
    time_limit_seconds: limitSeconds,
    elapsed_seconds: Math.round(elapsedSeconds * 1000) / 1000,
    suggestion: 'reduce the problem size (grid points, steps) or use a higher tier',
  });
}

export class InlineExecutor implements SolverExecutor {
  readonly enforcesTimeLimit = false;
  constructor(private readonly registry: SolverRegistry) {}

  async run(solverId: string, inputs: Record<string, unknown>, state: unknown): Promise<SolverOutput> {
    const solver = this.registry.get(solverId);
    if (!solver) throw new Error(`unknown solver ${solverId}`);
    return solver.run(inputs, state);
  }

  /** One: a run on the main thread blocks the loop, so none is ever waiting here while another runs. */
  freeSlots(): number {
    return 1;
  }

  async close(): Promise<void> {}
}

interface Pending {
  id: number;
  solverId: string;
  inputs: Record<string, unknown>;
  state: unknown;
  limitSeconds: number;
  resolve: (o: SolverOutput) => void;
  reject: (e: unknown) => void;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  job: Pending | null;
  timer: NodeJS.Timeout | null;
  startedAt: number;
}

type WorkerReply = { id: number; ok: true; output: SolverOutput } | { id: number; ok: false; error: { service: boolean; status?: number; code?: ErrorCode; message: string; extra?: Record<string, unknown>; details?: unknown } };

export class WorkerPoolExecutor implements SolverExecutor {
  readonly enforcesTimeLimit = true;
  private readonly slots: Slot[] = [];
  private readonly queue: Pending[] = [];
  private nextId = 1;
  private closed = false;

  constructor(size: number, private readonly tier: string) {
    for (let i = 0; i < Math.max(1, size); i++) this.slots.push(this.spawn());
  }

  private spawn(): Slot {
    const worker = spawnWorker('solver-worker');
    worker.unref();
    const slot: Slot = { worker, ready: false, job: null, timer: null, startedAt: 0 };
    worker.on('message', (reply: WorkerReply | { ready: true }) => {
      if ('ready' in reply) {
        slot.ready = true;
        this.pump();
      } else this.settle(slot, reply);
    });
    worker.on('error', (err) => this.fail(slot, err));
    worker.on('exit', (code) => {
      if (slot.job) this.fail(slot, new Error(`solver worker exited with code ${code}`));
    });
    return slot;
  }

  run(solverId: string, inputs: Record<string, unknown>, state: unknown, timeLimitSeconds: number): Promise<SolverOutput> {
    if (this.closed) return Promise.reject(new Error('executor is closed'));
    return new Promise((resolve, reject) => {
      this.queue.push({ id: this.nextId++, solverId, inputs, state, limitSeconds: timeLimitSeconds, resolve, reject });
      this.pump();
    });
  }

  freeSlots(): number {
    let free = 0;
    for (const slot of this.slots) if (slot.ready && !slot.job) free++;
    return Math.max(0, free - this.queue.length);
  }

  private pump(): void {
    for (const slot of this.slots) {
      if (!slot.ready || slot.job || this.queue.length === 0) continue;
      const job = this.queue.shift()!;
      slot.job = job;
      slot.startedAt = performance.now();
      slot.timer = setTimeout(() => this.overrun(slot), Math.max(0, job.limitSeconds * 1000));
      slot.worker.postMessage({ id: job.id, solverId: job.solverId, inputs: job.inputs, state: job.state });
    }
  }

  private release(slot: Slot): Pending | null {
    const job = slot.job;
    if (slot.timer) clearTimeout(slot.timer);
    slot.job = null;
    slot.timer = null;
    return job;
  }

  private settle(slot: Slot, reply: WorkerReply): void {
    if (!slot.job || slot.job.id !== reply.id) return;
    const job = this.release(slot)!;
    if (reply.ok) job.resolve(reply.output);
    else if (reply.error.service) job.reject(new ServiceError(reply.error.status!, reply.error.code!, reply.error.message, reply.error.extra ?? {}, reply.error.details));
    else job.reject(new Error(reply.error.message));
    this.pump();
  }

  /** The job ran past its limit: end the worker (the only way to stop synchronous numerics), start a new one. */
  private overrun(slot: Slot): void {
    const job = this.release(slot);
    if (!job) return;
    const elapsed = (performance.now() - slot.startedAt) / 1000;
    void slot.worker.terminate();
    this.replace(slot);
    job.reject(timeoutError(job.limitSeconds, elapsed, this.tier));
  }

  private fail(slot: Slot, err: unknown): void {
    const job = this.release(slot);
    void slot.worker.terminate();
    this.replace(slot);
    if (job) job.reject(err);
  }

  private replace(slot: Slot): void {
    const i = this.slots.indexOf(slot);
    if (i >= 0 && !this.closed) {
      this.slots[i] = this.spawn();
      this.pump();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const p of this.queue.splice(0)) p.reject(new Error('executor is closed'));
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
  }
}

// Where sealed bodies are built and serialised: on the seal worker (default: the main thread keeps HTTP and the
// ledger, and a body's building, canonical serialisation and UTF-8 conversion run on another core), or inline on
// the calling thread (sealWorker: false, e.g. on one core).
import type { Worker } from 'node:worker_threads';
import type { SlottedJson } from '../kernel/member-slots.js';
import { prepareBody, type BodyJob } from './sealed-body.js';
import { spawnWorker } from './executor.js';
import { WorkerStarts } from './worker-starts.js';

export interface Sealer {
  prepare(job: BodyJob): Promise<SlottedJson>;
  /** Bodies handed over and not back yet (the seal worker's queue; 0 inline, where none waits). */
  inFlight(): number;
  /** Why the seal worker dies as it starts, while it does; null or absent: it starts. */
  startFailure?(): string | null;
  close(): Promise<void>;
}

export class InlineSealer implements Sealer {
  constructor(private readonly receiptKey: Buffer) {}

  async prepare(job: BodyJob): Promise<SlottedJson> {
    return prepareBody(this.receiptKey, job);
  }

  inFlight(): number {
    return 0;
  }

  async close(): Promise<void> {}
}

type Reply = { id: number; ok: true; bytes: Uint8Array; slots: SlottedJson['slots'] } | { id: number; ok: false; message: string } | { ready: true };

export class WorkerSealer implements Sealer {
  /** Null while a worker that died before it was ready waits to be replaced (starts). */
  private worker: Worker | null;
  private readonly pending = new Map<number, { resolve: (m: SlottedJson) => void; reject: (e: unknown) => void }>();
  private readonly starts = new WorkerStarts();
  private restart: NodeJS.Timeout | null = null;
  private nextId = 1;
  private closed = false;

  constructor(private readonly receiptKey: Buffer) {
    this.worker = this.spawn();
  }

  private spawn(): Worker {
    const worker = spawnWorker('seal-worker', { receiptKey: new Uint8Array(this.receiptKey) });
    worker.unref();
    let ready = false;
    worker.on('message', (reply: Reply) => {
      if ('ready' in reply) {
        ready = true;
        this.starts.ready();
        return;
      }
      const p = this.pending.get(reply.id);
      if (!p) return;
      this.pending.delete(reply.id);
      if (reply.ok) p.resolve({ bytes: reply.bytes, slots: reply.slots });
      else p.reject(new Error(`sealing failed: ${reply.message}`));
    });
    // A worker that dies fails the jobs it held (nothing of theirs was written: the ledger comes after) and is
    // replaced: at once if it had got ready, else after the wait of workers that cannot start (worker-starts.ts).
    const failAll = (err: unknown) => {
      if (this.worker !== worker) return;
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
      if (this.closed) return;
      if (ready) {
        this.worker = this.spawn();
        return;
      }
      this.starts.died(err);
      this.worker = null;
      this.restart = setTimeout(() => {
        this.restart = null;
        if (!this.closed) this.worker = this.spawn();
      }, this.starts.wait());
      this.restart.unref();
    };
    worker.on('error', failAll);
    worker.on('exit', (code) => failAll(new Error(`seal worker exited with code ${code}`)));
    return worker;
  }

  inFlight(): number {
    return this.pending.size;
  }

  startFailure(): string | null {
    return this.starts.failureText();
  }

  prepare(job: BodyJob): Promise<SlottedJson> {
    if (this.closed) return Promise.reject(new Error('sealer is closed'));
    const worker = this.worker;
    if (worker === null) return Promise.reject(this.starts.refusal('the seal worker'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // As JSON text: the job is plain JSON, and a string crosses threads several times cheaper than the
      // structured clone of the object (measured ~36 µs → a few µs of main-thread time per job).
      worker.postMessage(`${id}\n${JSON.stringify(job)}`);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    for (const p of this.pending.values()) p.reject(new Error('sealer is closed'));
    this.pending.clear();
    if (this.restart) clearTimeout(this.restart);
    await worker?.terminate();
  }
}

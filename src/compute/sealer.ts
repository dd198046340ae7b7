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

type Answer = { id: number; ok: true; bytes: Uint8Array; slots: SlottedJson['slots'] } | { id: number; ok: false; message: string };
/** One job's answer, the answers of a batch of jobs (in their order), or the worker's word that it is loaded. */
type Reply = Answer | Answer[] | { ready: true };

export class WorkerSealer implements Sealer {
  /** Null while a worker that died before it was ready waits to be replaced (starts). */
  private worker: Worker | null;
  private readonly pending = new Map<number, { resolve: (m: SlottedJson) => void; reject: (e: unknown) => void }>();
  private readonly starts = new WorkerStarts();
  private restart: NodeJS.Timeout | null = null;
  private nextId = 1;
  private closed = false;
  /**
   * Jobs made in this turn of the event loop, posted together once it ends (setImmediate): under load the requests
   * read in one poll phase cross to the worker in one message and come back in one, where a message each cost ~40 µs
   * more of CPU per job (the threads' wake-ups and the messages' dispatch; docs/performance.md, "Sealing").
   */
  private queued: string[] = [];

  constructor(private readonly receiptKey: Buffer) {
    this.worker = this.spawn();
  }

  private spawn(): Worker {
    const worker = spawnWorker('seal-worker', { receiptKey: new Uint8Array(this.receiptKey) });
    worker.unref();
    let ready = false;
    worker.on('message', (reply: Reply) => {
      if (Array.isArray(reply)) for (const answer of reply) this.answered(answer);
      else if ('ready' in reply) {
        ready = true;
        this.starts.ready();
      } else this.answered(reply);
    });
    // A worker that dies fails the jobs it held (nothing of theirs was written: the ledger comes after) and is
    // replaced: at once if it had got ready, else after the wait of workers that cannot start (worker-starts.ts).
    const failAll = (err: unknown) => {
      if (this.worker !== worker) return;
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
      this.queued = [];
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

  private answered(answer: Answer): void {
    const p = this.pending.get(answer.id);
    if (!p) return;
    this.pending.delete(answer.id);
    if (answer.ok) p.resolve({ bytes: answer.bytes, slots: answer.slots });
    else p.reject(new Error(`sealing failed: ${answer.message}`));
  }

  /** Post the jobs queued this turn: one alone as its text, several as an array of texts. */
  private readonly post = (): void => {
    const texts = this.queued;
    this.queued = [];
    if (texts.length === 0 || this.worker === null) return;
    this.worker.postMessage(texts.length === 1 ? texts[0] : texts);
  };

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
      if (this.queued.push(`${id}\n${JSON.stringify(job)}`) === 1) setImmediate(this.post);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    for (const p of this.pending.values()) p.reject(new Error('sealer is closed'));
    this.pending.clear();
    this.queued = [];
    if (this.restart) clearTimeout(this.restart);
    await worker?.terminate();
  }
}

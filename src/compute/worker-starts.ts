// When a worker thread may start again after workers that died before they were ready. A worker that cannot start
// (its working directory deleted, which a worker reads as it starts, or its module missing) would otherwise be replaced
// at once, again and again: each start loads the worker's modules, and such a node spent both cores on nothing else.
// Deaths in a row wait twice as long each time, from FIRST_WAIT_MS to LAST_WAIT_MS; a worker that gets ready starts
// the count again.

export const FIRST_WAIT_MS = 100;
export const LAST_WAIT_MS = 30_000;

export class WorkerStarts {
  private deaths = 0;
  private notBefore = 0;
  private failure: unknown = null;

  /** A worker said it is ready: the next start may be at once. */
  ready(): void {
    this.deaths = 0;
    this.notBefore = 0;
    this.failure = null;
  }

  /** A worker died before it was ready, of `err`. */
  died(err: unknown): void {
    this.deaths++;
    this.failure = err;
    this.notBefore = performance.now() + Math.min(LAST_WAIT_MS, FIRST_WAIT_MS * 2 ** (this.deaths - 1));
  }

  /** Milliseconds until the next worker may start (0: now). */
  wait(): number {
    return Math.max(0, this.notBefore - performance.now());
  }

  /** Why the last worker to die before it was ready died, as text (null: none has since a worker got ready). */
  failureText(): string | null {
    return this.failure === null ? null : String(this.failure);
  }

  /** The error work gets while `workers` cannot start: when the next try is, and why the last one failed. */
  refusal(workers: string): Error {
    return new Error(`${workers} could not start (next try in ${Math.ceil(this.wait())} ms): ${String(this.failure)}`);
  }
}

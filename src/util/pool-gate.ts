// A bound on work that holds a thread of libuv's pool for long (scrypt, a name lookup that may wait seconds for a DNS
// server), so that LevelDB's reads and writes, which run on the same pool (UV_THREADPOOL_SIZE, 4 by default), always
// find a thread: at most `running` such jobs at once, process-wide (the pool is), up to `waitingMax` waiting in order,
// and beyond that the caller is refused at once rather than queued behind seconds of work.

/** Threads in libuv's pool: UV_THREADPOOL_SIZE, read when the pool starts, else 4. */
export const THREADPOOL_SIZE = Math.max(1, Number.parseInt(process.env.UV_THREADPOOL_SIZE ?? '', 10) || 4);

export class PoolGate {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    readonly running: number,
    readonly waitingMax: number,
  ) {}

  /** Run `fn` when a place is free (first come, first served); throws `full()` when waitingMax already wait. */
  async run<T>(fn: () => Promise<T>, full: () => Error): Promise<T> {
    if (this.active < this.running) this.active++;
    else {
      if (this.waiting.length >= this.waitingMax) throw full();
      // The place is handed over by the job that frees it (active stays counted), so no later caller overtakes.
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }

  /** Jobs running and waiting now. */
  load(): { running: number; waiting: number } {
    return { running: this.active, waiting: this.waiting.length };
  }
}

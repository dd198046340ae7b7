// A count of events per name over a sliding window (failed logins per email, peer questions per caller address):
// `max` in `windowMs` at most, then the name is held until its oldest event leaves the window. In memory, bounded
// (the least recently counted names out first).
import { ServiceError } from '../kernel/errors.js';
import { LruMap } from './bounded-map.js';

export class SlidingWindow {
  private readonly times: LruMap<string, number[]>;

  constructor(
    readonly max: number,
    readonly windowMs: number,
    private readonly now: () => number,
    namesMax = 10_000,
  ) {
    this.times = new LruMap(namesMax);
  }

  /** When `name` may go again (ms, the clock of `now`), or null when it may now. */
  heldUntil(name: string): number | null {
    const times = this.recent(name);
    return times.length < this.max ? null : times[0]! + this.windowMs;
  }

  add(name: string): void {
    const times = this.recent(name);
    times.push(this.now());
    if (times.length > this.max) times.shift();
    this.times.set(name, times);
  }

  clear(name: string): void {
    this.times.delete(name);
  }

  private recent(name: string): number[] {
    const times = this.times.get(name);
    if (times === undefined) return [];
    const from = this.now() - this.windowMs;
    while (times.length > 0 && times[0]! <= from) times.shift();
    return times;
  }
}

/** 429 SVC_RATE_LIMIT for a name a window holds until `untilMs`, in part 7's shape with `scope`. */
export function windowFull(w: SlidingWindow, untilMs: number, nowMs: number, message: string, scope: string): ServiceError {
  const retry = Math.max(1, Math.ceil((untilMs - nowMs) / 1000));
  return new ServiceError(429, 'SVC_RATE_LIMIT', message, {
    limit: w.max,
    window_seconds: w.windowMs / 1000,
    retry_after_seconds: retry,
    reset_at: new Date(untilMs).toISOString(),
    scope,
  });
}

// Failed logins of an identity, counted where its secret is checked (its home): past FAILURES_MAX in WINDOW_MS, a
// login for it is refused before its secret is hashed, from any address, until the oldest failure in the window is
// WINDOW_MS old. The per-address limit (limits.authPerMinute) slows one guesser; this stops many addresses guessing
// one password together. The price: a guesser can keep an identity's password login shut; its API keys and a v3
// login (a proof no one can guess) are not counted with it. In memory, bounded (least recently failed out first).
import { ServiceError } from '../kernel/errors.js';
import { LruMap } from '../util/bounded-map.js';

export const FAILURES_MAX = 10;
export const WINDOW_MS = 15 * 60_000;
const IDENTITIES_MAX = 10_000;

export class FailedProofs {
  private readonly failures = new LruMap<string, number[]>(IDENTITIES_MAX);

  constructor(private readonly now: () => number) {}

  /** 429 while `who` (an email or a zid) has FAILURES_MAX failures in the window. */
  check(who: string): void {
    const times = this.recent(who);
    if (times.length < FAILURES_MAX) return;
    const resetMs = times[0]! + WINDOW_MS;
    const retry = Math.max(1, Math.ceil((resetMs - this.now()) / 1000));
    throw new ServiceError(429, 'SVC_RATE_LIMIT', `too many failed logins for this identity: ${FAILURES_MAX} in ${WINDOW_MS / 60_000} minutes`, {
      limit: FAILURES_MAX,
      window_seconds: WINDOW_MS / 1000,
      retry_after_seconds: retry,
      reset_at: new Date(resetMs).toISOString(),
      scope: 'identity',
    });
  }

  failed(who: string): void {
    const times = this.recent(who);
    times.push(this.now());
    if (times.length > FAILURES_MAX) times.shift();
    this.failures.set(who, times);
  }

  /** A login that succeeded starts the count again. */
  succeeded(who: string): void {
    this.failures.delete(who);
  }

  private recent(who: string): number[] {
    const times = this.failures.get(who);
    if (times === undefined) return [];
    const from = this.now() - WINDOW_MS;
    while (times.length > 0 && times[0]! <= from) times.shift();
    return times;
  }
}

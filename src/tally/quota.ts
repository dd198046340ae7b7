// Day quotas that span a restart (architecture.md §4 Limits): anonymous computing 5/day/IP, demo keys
// 10/day, and the free ZID allowance when enforcement is switched on. A slot is reserved in memory before
// the work and persisted in the sealing batch; a failed computation gives its slot back.
import { ServiceError } from '../kernel/errors.js';
import type { Counters } from '../store/counters.js';
import type { Op } from '../store/db.js';
import { DAY_COUNTER_PREFIXES, anonymousDayCounter, demoDayCounter, identityDayCounter } from './counter-keys.js';
import { dayKey, nextMidnightUtc, type Caller } from './ledger.js';

export interface QuotaOptions {
  anonymousPerDay: number;
  demoPerDay: number;
  freeDailyComputations: number;
  enforceDailyQuota: boolean;
}

export interface Reservation {
  /** Counter names to persist in the sealing batch. */
  names: string[];
  release(): void;
}

export function dailyLimitError(limit: number, used: number, unixMs: number): ServiceError {
  const reset = nextMidnightUtc(unixMs);
  const seconds = Math.max(1, Math.ceil((reset - unixMs) / 1000));
  return new ServiceError(429, 'SVC_DAILY_LIMIT', `daily quota of ${limit} used up`, {
    daily_limit: limit,
    used_today: used,
    reset_at: new Date(reset).toISOString(),
    hours_until_reset: Math.round((seconds / 3600) * 100) / 100,
    retry_after_seconds: seconds,
  });
}

export class QuotaService {
  private currentDay: string | null = null;

  constructor(
    private readonly counters: Counters,
    private readonly options: QuotaOptions,
    /** Writes the deletions of past days' counters (the store's commit). */
    private readonly commit: (ops: Op[]) => Promise<void>,
  ) {}

  /**
   * Day counters of past days are never read again: drop them when a new UTC day is first seen (and at start),
   * so the counters do not grow with every IP and identity that ever called.
   */
  async pruneOldDays(unixMs: number): Promise<number> {
    const day = dayKey(unixMs);
    this.currentDay = day;
    const ops = DAY_COUNTER_PREFIXES.flatMap((prefix) => this.counters.pruneBefore(prefix, `${prefix}${day}`));
    if (ops.length > 0) await this.commit(ops);
    return ops.length;
  }

  usedToday(zid: string, unixMs: number): number {
    return this.counters.get(identityDayCounter(dayKey(unixMs), zid));
  }

  /** Computations of a demo key today. */
  demoUsedToday(keyId: string, unixMs: number): number {
    return this.counters.get(demoDayCounter(dayKey(unixMs), keyId));
  }

  /** Reserve one computation for the caller today, or throw 429 SVC_DAILY_LIMIT. */
  reserve(caller: Caller, unixMs: number): Reservation {
    const day = dayKey(unixMs);
    if (day !== this.currentDay) void this.pruneOldDays(unixMs).catch(() => undefined);
    let name: string;
    let limit: number | null;
    if (caller.kind === 'anonymous') {
      name = anonymousDayCounter(day, caller.ip);
      limit = this.options.anonymousPerDay;
    } else if (caller.kind === 'demo') {
      name = demoDayCounter(day, caller.key.key_id);
      limit = this.options.demoPerDay;
    } else {
      name = identityDayCounter(day, caller.zid);
      limit = this.options.enforceDailyQuota ? this.options.freeDailyComputations : null;
    }
    const used = this.counters.get(name);
    if (limit !== null && used >= limit) throw dailyLimitError(limit, used, unixMs);
    this.counters.reserve(name, 1);
    let released = false;
    return {
      names: [name],
      release: () => {
        if (!released) this.counters.revert(name, 1);
        released = true;
      },
    };
  }
}

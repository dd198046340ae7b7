// Day quotas that span a restart (architecture.md §4 Limits): anonymous computing 5/day/IP, demo keys
// 10/day, and an identity's tier allowance (tiers.ts) when enforcement is switched on. A slot is reserved in memory
// before the work and persisted in the sealing batch; a failed computation gives its slot back.
import { ServiceError } from '../kernel/errors.js';
import type { Counters } from '../store/counters.js';
import type { Op } from '../store/db.js';
import { DAY_COUNTER_PREFIXES, anonymousDayCounter, demoDayCounter, identityDayCounter } from '../store/counter-keys.js';
import { dayKey, nextMidnightUtc } from '../util/utc-day.js';
import type { Tier } from './tiers.js';
import type { Caller } from '../records/types.js';

export interface QuotaOptions {
  anonymousPerDay: number;
  demoPerDay: number;
  enforceDailyQuota: boolean;
  /** An identity's sealed computations per UTC day, by tier (tiers.ts). */
  dailyAllowance: Record<Tier, number>;
}

export interface Reservation {
  /** Counter names to persist in the sealing batch. */
  names: string[];
  release(): void;
}

export function dailyLimitError(limit: number, used: number, unixMs: number, extra: Record<string, unknown> = {}): ServiceError {
  const reset = nextMidnightUtc(unixMs);
  const seconds = Math.max(1, Math.ceil((reset - unixMs) / 1000));
  return new ServiceError(429, 'SVC_DAILY_LIMIT', `daily quota of ${limit} used up`, {
    daily_limit: limit,
    used_today: used,
    reset_at: new Date(reset).toISOString(),
    hours_until_reset: Math.round((seconds / 3600) * 100) / 100,
    retry_after_seconds: seconds,
    ...extra,
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

  /** The day limit of a caller of `tier`, or null when none is enforced. */
  limitOf(caller: Caller, tier: Tier): number | null {
    if (caller.kind === 'anonymous') return this.options.anonymousPerDay;
    if (caller.kind === 'demo') return this.options.demoPerDay;
    return this.options.enforceDailyQuota ? this.options.dailyAllowance[tier] : null;
  }

  /** Reserve one computation for the caller (of `tier`) today, or throw 429 SVC_DAILY_LIMIT. */
  reserve(caller: Caller, unixMs: number, tier: Tier): Reservation {
    const day = dayKey(unixMs);
    if (day !== this.currentDay) void this.pruneOldDays(unixMs).catch(() => undefined);
    const name =
      caller.kind === 'anonymous'
        ? anonymousDayCounter(day, caller.ip)
        : caller.kind === 'demo'
          ? demoDayCounter(day, caller.key.key_id)
          : identityDayCounter(day, caller.zid);
    const limit = this.limitOf(caller, tier);
    const used = this.counters.get(name);
    if (limit !== null && used >= limit) throw dailyLimitError(limit, used, unixMs, caller.kind === 'identity' ? { tier } : {});
    this.counters.reserve(name, 1);
    let released = false;
    return {
      names: [name],
      release: () => {
        // The reservation goes (a failed seal's batch unsettled its count back into one); the count stays as written.
        if (!released) this.counters.unreserve(name, 1);
        released = true;
      },
    };
  }
}

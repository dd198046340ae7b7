// The five tiers of part 8 ("tier daily allowances 143, 500, 2500, 7500, 25000 across five tiers"): free and four
// paid ones, what each allows (a daily allowance of sealed computations and the compute time limit), and every
// identity's tier. The names are ours (part 8 names free, standard and professional in its time-outs only). An
// operator grant (grants.ts) sets an identity's tier at its home node, and the tier record travels with the identity's
// ledger (custody/ledger-ops.ts: a grant is an entry of the identity), so a home that takes the identity over keeps
// it; anonymous and demo callers are free.
import { JsonText, type Op, type Store, type Sublevel } from '../store/db.js';
import type { Caller } from '../records/types.js';

export const TIERS = ['free', 'starter', 'standard', 'professional', 'enterprise'] as const;
export type Tier = (typeof TIERS)[number];

/** Part 8: sealed computations per identity and UTC day (enforced with limits.enforceDailyQuota). */
export const TIER_DAILY_ALLOWANCE: Record<Tier, number> = { free: 143, starter: 500, standard: 2500, professional: 7500, enterprise: 25000 };

/**
 * Part 8's compute time-out: 30 s free, 120 s standard, 600 s professional. The two tiers it does not name take the
 * limit of the named tier below them (starter as free, enterprise as professional): no figure is invented.
 */
export const TIER_TIME_LIMIT_SECONDS: Record<Tier, number> = { free: 30, starter: 30, standard: 120, professional: 600, enterprise: 600 };

/** The longest time limit of any tier: what a node waits for a home that computes for a caller of unknown tier. */
export const LONGEST_TIME_LIMIT_SECONDS = Math.max(...Object.values(TIER_TIME_LIMIT_SECONDS));

export function tierRank(tier: Tier): number {
  return TIERS.indexOf(tier);
}

/** What the tiers allow on a node: part 8's figures, or a test's smaller ones. */
export interface TierPolicy {
  dailyAllowance: Record<Tier, number>;
  timeLimitSeconds: Record<Tier, number>;
}

export function tierPolicy(overrides: { dailyAllowance?: Partial<Record<Tier, number>>; timeLimitSeconds?: Partial<Record<Tier, number>> } = {}): TierPolicy {
  return {
    dailyAllowance: { ...TIER_DAILY_ALLOWANCE, ...overrides.dailyAllowance },
    timeLimitSeconds: { ...TIER_TIME_LIMIT_SECONDS, ...overrides.timeLimitSeconds },
  };
}

/** The stored record of an identity's tier (the `tiers` sublevel, key = ZID), written in the grant's batch. */
export interface TierRecord {
  tier: Tier;
  grant_id: string;
  svcond: number;
  unix_ms: number;
}

/**
 * Every identity's tier on its home node. Only identities an operator granted a tier have a record (so the map is
 * bounded by the operator's grants, not by callers); all others are free. Read synchronously on every computation,
 * so it is kept in memory, loaded at start and updated after the grant's batch is durable (the next request sees it).
 */
export class TierBook {
  private readonly sub: Sublevel;
  private readonly known = new Map<string, Tier>();

  constructor(
    private readonly store: Store,
    readonly policy: TierPolicy,
  ) {
    this.sub = store.sub('tiers');
  }

  async load(): Promise<void> {
    for (const { key, value } of await this.store.range<TierRecord>(this.sub)) {
      if ((TIERS as readonly string[]).includes(value?.tier)) this.known.set(key, value.tier);
    }
  }

  /** An identity's tier: what the last grant that named one set, else free. */
  of(zid: string): Tier {
    return this.known.get(zid) ?? 'free';
  }

  /**
   * A caller's tier. An identity computes at its home (forward.ts sends it there), which holds its record; anonymous
   * and demo callers are free.
   */
  ofCaller(caller: Caller): Tier {
    return caller.kind === 'identity' ? this.of(caller.zid) : 'free';
  }

  /** The op that stores a tier record (add it to the grant's batch; then call applied). */
  putOp(zid: string, record: TierRecord): Op {
    return { type: 'put', sub: this.sub, key: zid, value: record };
  }

  /** The record's batch is durable: requests from now on see the tier. */
  applied(zid: string, tier: Tier): void {
    this.known.set(zid, tier);
  }

  /** Tier records written past the grant (a custody chain replayed): the tiers they name apply from now on. */
  replayed(ops: readonly Op[]): void {
    for (const op of ops) {
      if (op.sub !== this.sub || op.type !== 'put') continue;
      const value = (op.value instanceof JsonText ? JSON.parse(op.value.text) : op.value) as Partial<TierRecord> | null;
      if ((TIERS as readonly string[]).includes(value?.tier as string)) this.known.set(op.key, value!.tier!);
    }
  }

  allowance(tier: Tier): number {
    return this.policy.dailyAllowance[tier];
  }

  timeLimitSeconds(tier: Tier): number {
    return this.policy.timeLimitSeconds[tier];
  }
}

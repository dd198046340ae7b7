// Demo keys: one shared per node and caller-minted ones, both plan 'demo' with a 10/day quota (tally/quota.ts).
// The shared key is public by design (handed to anyone who asks), so its text is kept to hand out again;
// like every key, it authenticates by its SHA-256 digest. Minting needs no key, so it is limited per IP per UTC day
// (each own key is another day's quota): the count is a day counter in the store, written in the batch that stores
// the key, so a restart keeps it.
import { ServiceError } from '../kernel/errors.js';
import type { Clock } from '../kernel/clock.js';
import type { Counters } from '../store/counters.js';
import type { Store, Sublevel } from '../store/db.js';
import { dayKey, nextMidnightUtc } from '../util/utc-day.js';
import { demoMintCounter } from '../store/counter-keys.js';
import type { IdentityService } from './service.js';

export interface DemoKeysOptions {
  counters: Counters;
  clock: Clock;
  /** Own demo keys one IP may mint per UTC day. */
  mintsPerDay: number;
}

export class DemoKeys {
  private readonly meta: Sublevel;
  /** One creation at a time: concurrent first callers share the same promise, so only one key is made. */
  private shared: Promise<string> | null = null;

  constructor(
    private readonly store: Store,
    private readonly identity: IdentityService,
    private readonly options: DemoKeysOptions,
  ) {
    this.meta = store.sub('meta');
  }

  /** The shared demo key (public by design, so its text is kept to hand out again). */
  sharedKey(): Promise<string> {
    this.shared ??= this.loadOrCreate().catch((err: unknown) => {
      this.shared = null;
      throw err;
    });
    return this.shared;
  }

  private async loadOrCreate(): Promise<string> {
    const existing = await this.store.get<string>(this.meta, 'shared_demo_key');
    if (existing) return existing;
    const { key } = await this.identity.demoKey(true);
    await this.store.commit([{ type: 'put', sub: this.meta, key: 'shared_demo_key', value: key }]);
    return key;
  }

  /**
   * A caller's own demo key, shown once; at most mintsPerDay per IP per UTC day, else 429 SVC_RATE_LIMIT until
   * midnight UTC. The slot is taken in memory before the write (concurrent mints cannot pass the limit together)
   * and given back when the write fails.
   */
  async mint(ip: string): Promise<string> {
    const { counters, clock, mintsPerDay } = this.options;
    const now = Number(clock.nowNs() / 1_000_000n);
    const name = demoMintCounter(dayKey(now), ip);
    const used = counters.get(name);
    if (used >= mintsPerDay) {
      const reset = nextMidnightUtc(now);
      throw new ServiceError(429, 'SVC_RATE_LIMIT', `too many demo keys: ${mintsPerDay} per IP per UTC day; the shared one is at GET /api/demo-key`, {
        limit: mintsPerDay,
        used_today: used,
        window_seconds: 86_400,
        retry_after_seconds: Math.max(1, Math.ceil((reset - now) / 1000)),
        reset_at: new Date(reset).toISOString(),
      });
    }
    // Counted in memory now, with nothing awaited since the check: a concurrent mint sees it; written in the key's batch.
    const { key, ops } = this.identity.demoKeyOps(false);
    counters.bump(name, 1);
    try {
      await this.store.commit([...ops, counters.persistOp(name)]);
      return key;
    } catch (err) {
      counters.revert(name, 1);
      throw err;
    }
  }
}

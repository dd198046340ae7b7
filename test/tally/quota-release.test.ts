// A day-quota slot given back (QuotaService.reserve's release: the work failed, or its seal's batch did) leaves the
// day's count as it was, in memory and in what the next sealing batch writes: the count a restart or a new home reads
// is the one the home showed (GET /api/compute/usage `used`).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { identityDayCounter } from '../../src/store/counter-keys.js';
import { Counters } from '../../src/store/counters.js';
import { Store } from '../../src/store/db.js';
import { QuotaService } from '../../src/tally/quota.js';
import { TIER_DAILY_ALLOWANCE } from '../../src/tally/tiers.js';
import { dayKey } from '../../src/util/utc-day.js';

const zid = `zid_${'a'.repeat(32)}`;
const NOW = Date.UTC(2026, 0, 2, 12);
const caller = { kind: 'identity', zid, slug: 'm-x' } as never;
let dir: string;
let store: Store;
let counters: Counters;
let quota: QuotaService;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-quota-release-'));
  store = await Store.open(dir, { sync: false });
  counters = new Counters(store);
  await counters.load();
  quota = new QuotaService(counters, { anonymousPerDay: 5, demoPerDay: 10, enforceDailyQuota: true, dailyAllowance: TIER_DAILY_ALLOWANCE }, (ops) =>
    store.commit(ops),
  );
});

afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe('a day-quota slot given back', () => {
  it('leaves the count shown and the count written equal', async () => {
    const name = identityDayCounter(dayKey(NOW), zid);
    // A computation that fails before its seal.
    quota.reserve(caller, NOW, 'free').release();
    expect(quota.usedToday(zid, NOW)).toBe(0);
    // One whose seal's batch fails: settled, then unsettled, then given back.
    const failed = quota.reserve(caller, NOW, 'free');
    counters.settle(name);
    counters.unsettle(name);
    failed.release();
    expect(quota.usedToday(zid, NOW)).toBe(0);
    // Then one that seals: one computation today, shown and written.
    const sealed = quota.reserve(caller, NOW, 'free');
    counters.settle(name);
    await store.commit(counters.persistOps(sealed.names));
    expect(quota.usedToday(zid, NOW)).toBe(1);
    expect(await store.get(store.sub('counters'), name)).toBe(1);
    const reread = new Counters(store);
    await reread.load();
    expect(reread.get(name)).toBe(1);
  });
});

// Usage, envelopes and balances (spec 2.4, 4.6).
import type Router from '@koa/router';
import { z } from 'zod';
import { ServiceError } from '../../kernel/errors.js';
import type { HttpKit } from '../kit.js';
import type { RouteGroup } from '../route-group.js';
import type { QuotaService } from '../../tally/quota.js';
import type { TierBook } from '../../tally/tiers.js';
import { balanceResponse, envelopeFoldersResponse, envelopeListResponse, usageResponse } from '../responses.js';
import { identityOf, requireIdentityKey, requireKey } from '../auth.js';
import { query, responds, validate } from '../validate.js';
import { forwardToHome } from '../forward.js';
import type { Caller } from '../../records/types.js';
import type { Ledger } from '../../tally/ledger.js';

const envelopeQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(500).default(50),
    offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
    folder: z.string().min(1).max(64).optional(),
    q: z.string().min(1).max(128).optional(),
    key: z.string().optional(),
  })
  .strict();

function forbidden(message: string): ServiceError {
  return new ServiceError(403, 'SVC_FORBIDDEN', message);
}

export interface LedgerRouteServices {
  ledger: Ledger;
  quota: QuotaService;
  tiers: TierBook;
}

/** Usage, envelopes and balances of the caller's identity, at its home. */
export function ledgerRoutes(s: LedgerRouteServices): RouteGroup {
  return { name: 'ledger', register: (router, kit) => registerLedgerRoutes(router, kit, s) };
}

function registerLedgerRoutes(router: Router, kit: HttpKit, s: LedgerRouteServices): void {
  const auth = kit.auth;
  const home = forwardToHome(kit);

  router.get('/api/compute/usage', responds(usageResponse), requireKey(auth), home, (ctx) => {
    const c = ctx.state.caller as Caller;
    const now = kit.time.nowMs();
    // The bundle is the published statement for a free ZID (10 a day) and a demo key (10); a paid tier's bundle is its
    // allowance. The tier's allowance is the cap limits.enforceDailyQuota enforces for an identity (a demo key's cap is
    // its bundle, always enforced).
    const tier = s.tiers.ofCaller(c);
    const allowance = c.kind === 'demo' ? kit.config.limits.demoKeyPerDay : s.tiers.allowance(tier);
    const bundle = c.kind === 'demo' ? allowance : tier === 'free' ? kit.config.limits.freeDailyComputations : allowance;
    const used = c.kind === 'identity' ? s.quota.usedToday(c.zid, now) : c.kind === 'demo' ? s.quota.demoUsedToday(c.key.key_id, now) : 0;
    ctx.body = {
      used,
      bundle,
      remaining: Math.max(0, bundle - used),
      overage: Math.max(0, used - bundle),
      enforced: kit.config.limits.enforceDailyQuota,
      tier,
      daily_allowance: allowance,
      allowance_remaining: Math.max(0, allowance - used),
    };
  });

  router.get('/api/tally/balance', responds(balanceResponse), requireKey(auth), home, async (ctx) => {
    const c = identityOf(ctx);
    const w = await s.ledger.wallet(c.zid);
    ctx.body = { zid: c.zid, free: w.free, paid: w.paid, total: w.free + w.paid };
  });

  router.get('/api/tally/envelopes/:zid', responds(envelopeListResponse), requireIdentityKey(auth), home, query(envelopeQuery), async (ctx) => {
    const c = identityOf(ctx);
    const zid = String(ctx.params.zid);
    if (zid !== c.zid) throw forbidden('envelopes are listed to their owner only');
    const q = validate(envelopeQuery, ctx.query);
    const { total, items } = await s.ledger.listEnvelopes(zid, { limit: q.limit, offset: q.offset, folder: q.folder, q: q.q });
    // Each envelope also names its tick as `tick` (part 2.7's field, as the sealed result's envelope names it).
    ctx.body = { zid, total, limit: q.limit, offset: q.offset, folder: q.folder ?? null, items: items.map((e) => ({ ...e, tick: e.svcond })) };
  });

  router.get('/api/tally/envelopes/:zid/folders', responds(envelopeFoldersResponse), requireIdentityKey(auth), home, async (ctx) => {
    const c = identityOf(ctx);
    const zid = String(ctx.params.zid);
    if (zid !== c.zid) throw forbidden('folders are listed to their owner only');
    for (let p = s.ledger.loadCounts(zid); p !== undefined; p = s.ledger.loadCounts(zid)) await p;
    ctx.body = { zid, folders: s.ledger.folders(zid) };
  });
}

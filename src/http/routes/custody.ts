// Custody's routes (architecture.md §5, docs/decisions.md "Custody"): where an identity's ledger is held and what this
// node holds of it, each answer with the seq it speaks for and its finality (custody/finality.ts).
import type Router from '@koa/router';
import { z } from 'zod';
import { ServiceError } from '../../kernel/errors.js';
import { ZID_PATTERN } from '../../custody/entry.js';
import type { CustodyView } from '../../custody/view.js';
import type { HttpKit } from '../kit.js';
import type { RouteGroup } from '../route-group.js';
import { custodyEntriesResponse, custodyResponse } from '../responses.js';
import { query, responds, validate } from '../validate.js';

const zidParam = z.string().regex(ZID_PATTERN, 'a zid: zid_ and 32 hex characters');
const entriesQuery = z
  .object({
    from: z.coerce.number().int().min(1).default(1),
    limit: z.coerce.number().int().min(1).max(500).default(100),
  })
  .strict();

export function custodyRoutes(view: CustodyView): RouteGroup {
  return { name: 'custody', register: (router, kit) => registerCustodyRoutes(router, kit, view) };
}

function zidOf(raw: unknown): string {
  const parsed = zidParam.safeParse(raw);
  if (!parsed.success)
    throw new ServiceError(400, 'SVC_INVALID_INPUT', 'zid must be zid_ and 32 hex characters', { field: 'zid', reason: 'format', allowed: null });
  return parsed.data;
}

function registerCustodyRoutes(router: Router, _kit: HttpKit, view: CustodyView): void {
  router.get('/api/mesh/custody/:zid', responds(custodyResponse), async (ctx) => {
    const zid = zidOf(ctx.params.zid);
    const status = await view.status(zid);
    if (status === null) throw new ServiceError(404, 'SVC_NOT_FOUND', `no identity ${zid} is known here`);
    ctx.body = status;
  });

  router.get('/api/mesh/custody/:zid/entries', responds(custodyEntriesResponse), query(entriesQuery), async (ctx) => {
    const zid = zidOf(ctx.params.zid);
    const { from, limit } = validate(entriesQuery, ctx.query);
    const held = await view.entries(zid, from, limit);
    if (held === null) throw new ServiceError(404, 'SVC_NOT_FOUND', `no entries of ${zid} are held here`);
    ctx.body = held;
  });
}

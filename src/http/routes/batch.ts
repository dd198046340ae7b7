// Batch computations: POST /api/svc/batch → 202 with the batch id; GET /api/svc/batch/:id for its owner.
import type Router from '@koa/router';
import { z } from 'zod';
import type { HttpKit } from '../kit.js';
import { batchAcceptedResponse, batchResponse } from '../responses.js';
import type { RouteGroup } from '../route-group.js';
import type { Webhooks } from '../../webhooks/service.js';
import { requireKey } from '../auth.js';
import { forwardToHome } from '../forward.js';
import { body, responds, validate } from '../validate.js';
import type { Caller } from '../../records/types.js';
import { BATCH_MAX, type BatchRecord, type BatchService } from '../../compute/batches.js';
import { answerInBatch } from '../idempotency.js';

const solverItem = z.object({ solver: z.string().min(1).max(64), inputs: z.record(z.string(), z.any()).optional(), initialState: z.any().optional() }).strict();
const chainItem = z
  .object({ domain: z.string().min(1).max(64), operators: z.array(z.string().min(1).max(64)).min(1), inputs: z.record(z.string(), z.any()).optional() })
  .strict();
const batchBody = z
  .object({
    items: z
      .array(z.union([solverItem, chainItem]))
      .min(1)
      .max(BATCH_MAX),
    webhook: z.string().min(1).max(64).optional(),
  })
  .strict()
  // A chain item's inputs are required, as compute's (part 2.1; {} asks for every default). Checked here rather than
  // in chainItem, where the union's failure would name the item, not the missing member.
  .superRefine((b, ctx) =>
    b.items.forEach((item, i) => {
      if ('domain' in item && item.inputs === undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['items', i, 'inputs'],
          message: "required: an object of the chain's input keys with numeric values ({} takes every default)",
        });
    }),
  );

export interface BatchRouteServices {
  batches: BatchService;
  /** A batch's webhook must be the caller's own. */
  webhooks: Webhooks;
}

export function batchRoutes(s: BatchRouteServices): RouteGroup {
  return { name: 'batch', register: (router, kit) => registerBatchRoutes(router, kit, s) };
}

function registerBatchRoutes(router: Router, kit: HttpKit, s: BatchRouteServices): void {
  const { batches } = s;
  const auth = kit.auth;

  router.post('/api/svc/batch', responds(batchAcceptedResponse, { status: 202 }), requireKey(auth), forwardToHome(kit), body(batchBody), async (ctx) => {
    const b = validate(batchBody, ctx.request.body);
    const caller = ctx.state.caller as Caller;
    if (b.webhook !== undefined) await s.webhooks.assertOwned(caller, b.webhook);
    const accepted = (rec: BatchRecord) => ({
      id: rec.id,
      status: 'accepted',
      total: rec.items.length,
      status_url: `${kit.publicUrl()}/api/svc/batch/${rec.id}`,
    });
    const kept = answerInBatch(ctx);
    const rec = await batches.submit(caller, b.items, b.webhook ?? null, kept && ((r) => kept(202, accepted(r))));
    ctx.status = 202;
    ctx.body = accepted(rec);
  });

  router.get('/api/svc/batch/:id', responds(batchResponse), requireKey(auth), forwardToHome(kit), async (ctx) => {
    const caller = ctx.state.caller as Caller;
    ctx.body = await batches.view(ctx.params.id!, caller.kind === 'identity' ? caller.zid : '');
  });
}

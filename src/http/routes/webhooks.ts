// Webhook management (spec part 6 operations; its routes are not shown, ours are): register, list, read, update,
// delete, test, delivery history with limit and status filter. The signing secret is in the registration answer only.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import type { HttpKit } from '../kit.js';
import type { RouteGroup } from '../route-group.js';
import type { Webhooks } from '../../webhooks/service.js';
import { requireIdentityKey } from '../auth.js';
import { forwardToHome } from '../forward.js';
import { body, query, responds, validate } from '../validate.js';
import {
  deliveryListResponse,
  webhookCreatedResponse,
  webhookDeletedResponse,
  webhookListResponse,
  webhookResponse,
  webhookTestResponse,
} from '../responses.js';
import type { Caller } from '../../records/types.js';
import { EVENT_TYPES } from '../../webhooks/events.js';
import { webhookView } from '../../webhooks/registry.js';
import { deliveryView } from '../../webhooks/outbox.js';

const events = z.array(z.enum(EVENT_TYPES)).min(1).max(EVENT_TYPES.length);
const headers = z.record(z.string(), z.string());
const metadata = z.record(z.string(), z.any()).refine((m) => JSON.stringify(m).length <= 4096, { message: 'metadata is at most 4 KiB of JSON' });
const registerBody = z.object({ url: z.string().min(1).max(2048), events, headers: headers.optional(), metadata: metadata.optional() }).strict();
const updateBody = z
  .object({
    url: z.string().min(1).max(2048).optional(),
    events: events.optional(),
    headers: headers.optional(),
    metadata: metadata.optional(),
    status: z.enum(['enabled', 'disabled']).optional(),
  })
  .strict();
const deliveriesQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(100).default(20),
    status: z.enum(['pending', 'delivered', 'failed']).optional(),
    // The key may travel as ?key= (spec 5.2).
    key: z.string().optional(),
  })
  .strict();

/** What the registration answer says of its secret: shown once, and how a receiver checks a delivery with it. */
export const SECRET_NOTICE =
  'the signing secret is shown once; keep it to verify deliveries. The HMAC-SHA256 key is the bytes the base64 after whsec_ decodes to (not the text): ' +
  'X-Svc-Signature is sha256=<hex HMAC of the raw body>; webhook-signature is Standard Webhooks v1 (base64 HMAC of "webhook-id.webhook-timestamp.body")';

export interface WebhookRouteServices {
  webhooks: Webhooks;
}

export function webhookRoutes(s: WebhookRouteServices): RouteGroup {
  return { name: 'webhooks', register: (router, kit) => registerWebhookRoutes(router, kit, s) };
}

function registerWebhookRoutes(router: Router, kit: HttpKit, s: WebhookRouteServices): void {
  const hooks = s.webhooks;
  const auth = kit.auth;
  const guard = [requireIdentityKey(auth), forwardToHome(kit)] as const;
  const caller = (ctx: Context) => ctx.state.caller as Caller;

  router.post('/api/webhooks', responds(webhookCreatedResponse, { status: 201 }), ...guard, body(registerBody), async (ctx) => {
    const b = validate(registerBody, ctx.request.body);
    const { webhook, secret } = await hooks.register(caller(ctx), b);
    ctx.status = 201;
    ctx.body = { ...webhookView(webhook), secret, secret_notice: SECRET_NOTICE };
  });
  router.get('/api/webhooks', responds(webhookListResponse), ...guard, async (ctx) => {
    ctx.body = { webhooks: (await hooks.list(caller(ctx))).map(webhookView) };
  });
  router.get('/api/webhooks/:id', responds(webhookResponse), ...guard, async (ctx) => {
    ctx.body = webhookView(await hooks.get(caller(ctx), ctx.params.id!));
  });
  router.patch('/api/webhooks/:id', responds(webhookResponse), ...guard, body(updateBody), async (ctx) => {
    const b = validate(updateBody, ctx.request.body);
    ctx.body = webhookView(await hooks.update(caller(ctx), ctx.params.id!, b));
  });
  router.delete('/api/webhooks/:id', responds(webhookDeletedResponse), ...guard, async (ctx) => {
    await hooks.remove(caller(ctx), ctx.params.id!);
    ctx.body = { id: ctx.params.id, deleted: true };
  });
  router.post('/api/webhooks/:id/test', responds(webhookTestResponse, { status: 202 }), ...guard, async (ctx) => {
    ctx.status = 202;
    ctx.body = await hooks.test(caller(ctx), ctx.params.id!);
  });
  router.get('/api/webhooks/:id/deliveries', responds(deliveryListResponse), ...guard, query(deliveriesQuery), async (ctx) => {
    const q = validate(deliveriesQuery, ctx.query);
    ctx.body = { deliveries: (await hooks.deliveries(caller(ctx), ctx.params.id!, q.limit, q.status)).map(deliveryView) };
  });
}

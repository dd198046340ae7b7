// The Koa application: middleware order is trace id → self-API (the caller address of an internal request) → metrics →
// error rendering → Host check → body parsing → idempotent writes → the route groups, in the order given → 404/405. Each group comes built
// with its own services; what several share comes in the kit (kit.ts). Discovery reads the routes from this router:
// the composition root builds it from the solver registry, library and tiers (discovery.ts); GET /api and the MCP
// card call it with their router, the 404 body here. The MCP and chat tools are requests to this app's own routes,
// built by the root on the kit's self-API, whose middleware runs here.
import { loggedPath } from './logged-path.js';
import Koa from 'koa';
import Router from '@koa/router';
import { ServiceError } from '../kernel/errors.js';
import type { HttpKit } from './kit.js';
import type { RouteGroup } from './route-group.js';
import { errorMiddleware, errorPayload, sendError } from './errors.js';
import { jsonBody } from './body.js';
import { routes } from './dispatch.js';
import { traceIdSource } from './trace.js';
import { REACTOR_READ_PATHS } from './routes/reactor.js';

/** Read routes that take a body: they also answer QUERY (safe, idempotent; spec part 4). */
const QUERY_ROUTES = [
  '/api/svc/operator-spec',
  '/api/svc/lib-search',
  '/api/svc/verify',
  '/api/svc/prove/verify',
  '/api/svc/shift',
  '/api/svc/lattice',
  '/api/playground/compute',
  '/api/svc/streams/:id/verify',
  '/api/mesh/verify',
  '/api/protocol/pohc/verify',
  '/api/auth/verify',
];

export function createApp(kit: HttpKit, groups: readonly RouteGroup[]): { app: Koa; router: Router } {
  const app = new Koa({ proxy: false });
  const router = new Router();

  const nextTraceId = traceIdSource();
  const debug = kit.logger.isLevelEnabled('debug');
  app.use(async (ctx, next) => {
    const traceId = nextTraceId();
    ctx.state.traceId = traceId;
    ctx.set('X-Trace-Id', traceId);
    await next();
    if (ctx.status >= 400) {
      // A 4xx is the node refusing a request (a bad key, a scanner's 404, a limit), told by its code; a 5xx is a fault.
      const code = (ctx.body as { error?: { code?: unknown } } | null | undefined)?.error?.code;
      const line = { trace_id: traceId, method: ctx.method, path: loggedPath(ctx.path), status: ctx.status, ...(typeof code === 'string' ? { code } : {}) };
      kit.logger.info(line, ctx.status >= 500 ? 'request failed' : 'request refused');
    } else if (debug) kit.logger.debug({ trace_id: traceId, method: ctx.method, path: loggedPath(ctx.path), status: ctx.status }, 'request');
  });
  app.use(kit.selfApi.middleware());
  if (kit.metrics) app.use(kit.metrics.middleware());
  app.use(errorMiddleware(kit.logger));
  // RFC 9112 §3.2: an HTTP/1.1 request without Host is refused with 400 (Node's own check, turned off in server.ts,
  // would answer with no body).
  app.use((ctx, next) => {
    if (ctx.req.headers.host === undefined && ctx.req.httpVersionMajor === 1 && ctx.req.httpVersionMinor === 1) {
      ctx.set('Connection', 'close');
      throw new ServiceError(400, 'SVC_BAD_REQUEST', 'an HTTP/1.1 request must carry a Host header');
    }
    return next();
  });
  app.use(jsonBody());
  if (kit.idempotentWrites) app.use(kit.idempotentWrites.middleware);

  for (const group of groups) {
    const before = router.stack.length;
    group.register(router, kit);
    for (const layer of router.stack.slice(before)) kit.metrics?.routeGroup(String(layer.path), group.name);
  }

  for (const path of [...QUERY_ROUTES, ...REACTOR_READ_PATHS]) {
    const layer = router.stack.find((l) => l.path === path && l.methods.includes('POST'));
    if (layer) router.register(path, ['QUERY'], layer.stack);
  }

  app.use(routes(router));
  app.use(async (ctx) => {
    if (ctx.body !== undefined && ctx.body !== null) return;
    const allowed = new Set(router.match(ctx.path, ctx.method).path.flatMap((l) => l.methods));
    if (allowed.size > 0) {
      ctx.set('Allow', [...allowed].join(', '));
      sendError(ctx, new ServiceError(405, 'SVC_METHOD_NOT_ALLOWED', `${ctx.method} is not allowed on ${ctx.path}`, { allow: [...allowed] }));
      return;
    }
    {
      ctx.status = 404;
      ctx.body = { ...errorPayload(ctx, 404, 'SVC_NOT_FOUND', `no route ${ctx.method} ${ctx.path}`), discovery: kit.discovery(router) };
    }
  });
  return { app, router };
}

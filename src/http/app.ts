// The Koa application: middleware order is trace id → error rendering → body parsing → routes → 404/405.
import { randomBytes } from 'node:crypto';
import Koa from 'koa';
import Router from '@koa/router';
import { ServiceError } from '../kernel/errors.js';
import { KEY_PREFIX } from '../identity/keys.js';
import { categories } from '../kernel/operators/registry.js';
import { Library } from '../compute/library.js';
import type { HttpServices } from './context.js';
import { errorMiddleware, errorPayload, sendError } from './errors.js';
import { jsonBody } from './body.js';
import { routes } from './dispatch.js';
import { systemRoutes } from './routes/system.js';
import { computeRoutes } from './routes/compute.js';
import { identityRoutes } from './routes/identity.js';
import { ledgerRoutes } from './routes/ledger.js';
import { tallyRoutes } from './routes/tally.js';
import { costSheet } from '../tally/costs.js';
import { meshRoutes } from './routes/mesh.js';

/** Read routes that take a body: they also answer QUERY (safe, idempotent; spec part 4). */
const QUERY_ROUTES = [
  '/api/svc/operator-spec',
  '/api/svc/lib-search',
  '/api/svc/verify',
  '/api/svc/prove/verify',
  '/api/svc/shift',
  '/api/svc/lattice',
  '/api/playground/compute',
];

/** Spec route groups this node does not serve (yet); listed in discovery so clients know. */
const NOT_HERE = [
  '/api/svc/reactor/*',
  '/api/svc/agent/*',
  '/api/svc/llm/credentials/*',
  '/api/llm/chat',
  '/api/genesis/execute',
  '/api/svc/streams/*',
  '/ws/stream',
  '/api/svc/mmio',
  '/api/contribute/*',
  '/api/tally/envelopes/transfer-bulk',
  '/api/protocol/pohc/*',
  'webhooks (planned, part 6)',
];

export function createApp(s: HttpServices): { app: Koa; router: Router; library: Library } {
  const app = new Koa({ proxy: false });
  const router = new Router();
  const library = new Library(s.compute.registry);

  const endpoints = (): { method: string; path: string }[] => {
    const seen = new Set<string>();
    const out: { method: string; path: string }[] = [];
    for (const layer of router.stack) {
      for (const method of layer.methods) {
        if (method === 'HEAD') continue;
        const key = `${method} ${layer.path}`;
        if (!seen.has(key)) {
          seen.add(key);
          out.push({ method, path: String(layer.path) });
        }
      }
    }
    return out;
  };
  const discovery = (): Record<string, unknown> => ({
    ok: true,
    node: s.nodeId(),
    kernel_version: s.config.kernel.version,
    counts: { libraries: library.entries.length, categories: categories().length, solvers: s.compute.registry.ids().length, keys: Object.keys(KEY_PREFIX).length },
    endpoints: endpoints(),
    costs: costSheet(),
    not_here: NOT_HERE,
  });

  // Trace ids: a random per-process prefix and a counter — unique, cheap, and not a secret.
  const tracePrefix = `tr_${randomBytes(4).toString('hex')}`;
  let traceCounter = 0;
  const debug = s.logger.isLevelEnabled('debug');
  app.use(async (ctx, next) => {
    const traceId = `${tracePrefix}${(traceCounter++).toString(16).padStart(8, '0')}`;
    ctx.state.traceId = traceId;
    ctx.set('X-Trace-Id', traceId);
    await next();
    if (ctx.status >= 400) s.logger.info({ trace_id: traceId, method: ctx.method, path: ctx.path, status: ctx.status }, 'request failed');
    else if (debug) s.logger.debug({ trace_id: traceId, method: ctx.method, path: ctx.path, status: ctx.status }, 'request');
  });
  app.use(errorMiddleware(s.logger));
  app.use(jsonBody());

  systemRoutes(router, s, library, discovery);
  computeRoutes(router, s);
  identityRoutes(router, s);
  // Before ledgerRoutes: the literal /api/tally/envelopes/folder and /transfer-bulk paths before /api/tally/envelopes/:zid.
  tallyRoutes(router, s);
  ledgerRoutes(router, s);
  meshRoutes(router, s);
  for (const register of s.extraRouters ?? []) register(router);

  for (const path of QUERY_ROUTES) {
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
      ctx.body = { ...errorPayload(ctx, 404, 'SVC_NOT_FOUND', `no route ${ctx.method} ${ctx.path}`), discovery: discovery() };
    }
  });
  return { app, router, library };
}

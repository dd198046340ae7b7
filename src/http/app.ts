// The Koa application: middleware order is trace id → error rendering → body parsing → routes → 404/405.
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
import { notHere } from './spec-routes.js';
import { traceIdSource } from './trace.js';
import { systemRoutes } from './routes/system.js';
import { computeRoutes } from './routes/compute.js';
import { identityRoutes } from './routes/identity.js';
import { ledgerRoutes } from './routes/ledger.js';
import { tallyRoutes } from './routes/tally.js';
import { costSheet } from '../tally/costs.js';
import { tierSheet } from '../tally/tier-gates.js';
import { meshRoutes } from './routes/mesh.js';
import { contributeRoutes } from './routes/contribute.js';
import { consensusRoutes } from './routes/consensus.js';
import { pohcRoutes } from './routes/pohc.js';
import { recordRoutes } from './routes/record.js';
import { streamRoutes } from './routes/streams.js';
import { batchRoutes } from './routes/batch.js';
import { webhookRoutes } from './routes/webhooks.js';
import { mcpRoutes } from './routes/mcp.js';
import { llmRoutes } from './routes/llm.js';
import { SelfApi } from './self-request.js';
import { LocalTools } from './local-tools.js';
import { REACTOR_READ_PATHS, reactorRoutes } from './routes/reactor.js';
import { mmioRoutes } from './routes/mmio.js';
import { agentRoutes } from './routes/agents.js';
import { genesisRoutes } from './routes/genesis.js';
import { ROUTE_BODIES } from './route-bodies.js';
import { docsRoutes } from './routes/docs.js';
import { dashboardRoutes } from './routes/dashboard.js';

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

export function createApp(s: HttpServices): { app: Koa; router: Router; library: Library } {
  const app = new Koa({ proxy: false });
  const router = new Router();
  const library = new Library(s.compute.registry);
  // Tools (MCP, chat) are requests to this node's own routes on the caller's behalf.
  const selfApi = new SelfApi();
  const tools = new LocalTools(s.compute.registry, selfApi, s.config.kernel.version);

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
    counts: {
      libraries: library.entries.length,
      categories: categories().length,
      solvers: s.compute.registry.ids().length,
      keys: Object.keys(KEY_PREFIX).length,
    },
    endpoints: endpoints(),
    costs: costSheet(),
    tiers: tierSheet(s.tiers.policy, s.config.limits.enforceDailyQuota),
    // WS /ws/stream is served on the same server, outside the router (ws-stream.ts).
    not_here: notHere(endpoints()).filter((e) => !(s.streams && e === 'WS /ws/stream') && !(s.webhooks && e === 'webhooks (planned, part 6)')),
    bodies: ROUTE_BODIES,
  });

  const nextTraceId = traceIdSource();
  const debug = s.logger.isLevelEnabled('debug');
  app.use(async (ctx, next) => {
    const traceId = nextTraceId();
    ctx.state.traceId = traceId;
    ctx.set('X-Trace-Id', traceId);
    await next();
    if (ctx.status >= 400) s.logger.info({ trace_id: traceId, method: ctx.method, path: ctx.path, status: ctx.status }, 'request failed');
    else if (debug) s.logger.debug({ trace_id: traceId, method: ctx.method, path: ctx.path, status: ctx.status }, 'request');
  });
  app.use(selfApi.middleware());
  if (s.metrics) app.use(s.metrics.middleware());
  app.use(errorMiddleware(s.logger));
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

  systemRoutes(router, s, library, discovery);
  computeRoutes(router, s);
  identityRoutes(router, s);
  // Before ledgerRoutes: the literal /api/tally/envelopes/folder and /transfer-bulk paths before /api/tally/envelopes/:zid.
  tallyRoutes(router, s);
  ledgerRoutes(router, s);
  meshRoutes(router, s);
  contributeRoutes(router, s);
  consensusRoutes(router, s);
  pohcRoutes(router, s);
  recordRoutes(router, s);
  streamRoutes(router, s);
  batchRoutes(router, s);
  webhookRoutes(router, s);
  mcpRoutes(router, s, tools, selfApi, discovery);
  llmRoutes(router, s, tools, selfApi);
  if (s.reactor) reactorRoutes(router, { ...s, reactor: s.reactor });
  if (s.mmio) mmioRoutes(router, { ...s, mmio: s.mmio });
  if (s.genesis) genesisRoutes(router, { ...s, genesis: s.genesis });
  if (s.agents && s.agentStream) agentRoutes(router, { ...s, agents: s.agents }, s.agentStream.count, { heartbeatMs: s.agentStream.heartbeatMs });
  docsRoutes(router, s);
  dashboardRoutes(router);
  for (const register of s.extraRouters ?? []) register(router);

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
      ctx.body = { ...errorPayload(ctx, 404, 'SVC_NOT_FOUND', `no route ${ctx.method} ${ctx.path}`), discovery: discovery() };
    }
  });
  return { app, router, library };
}

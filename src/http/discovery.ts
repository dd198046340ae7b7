// The discovery document (GET /api, the MCP card, every 404): the routes the router serves, read from the router
// itself, and what this node computes and charges. The composition root builds it once from the solver registry, the
// library and the tiers; the app and the groups that show it pass their router.
import type Router from '@koa/router';
import type { NodeConfig } from '../config/schema.js';
import type { Library } from '../compute/library.js';
import type { SolverRegistry } from '../solvers/registry.js';
import { KEY_PREFIX } from '../identity/keys.js';
import { categories } from '../kernel/operators/registry.js';
import { costSheet } from '../tally/costs.js';
import { tierSheet } from '../tally/tier-gates.js';
import type { TierBook } from '../tally/tiers.js';
import { ROUTE_BODIES } from './route-bodies.js';
import { notHere, type Endpoint } from './spec-routes.js';

export interface DiscoveryDeps {
  config: NodeConfig;
  nodeId: () => string;
  registry: SolverRegistry;
  library: Library;
  tiers: TierBook;
}

/** Every method and path the router answers, once each, in registration order (HEAD comes with GET). */
export function routerEndpoints(router: Router): Endpoint[] {
  const seen = new Set<string>();
  const out: Endpoint[] = [];
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
}

/** Spec entries the node serves outside the router: the WebSocket stream (ws-stream.ts) and webhook deliveries. */
const SERVED_OUTSIDE_ROUTER = new Set(['WS /ws/stream', 'webhooks (planned, part 6)']);

export function discoveryOf(d: DiscoveryDeps): (router: Router) => Record<string, unknown> {
  return (router) => {
    const endpoints = routerEndpoints(router);
    return {
      ok: true,
      node: d.nodeId(),
      kernel_version: d.config.kernel.version,
      counts: {
        libraries: d.library.entries.length,
        categories: categories().length,
        solvers: d.registry.ids().length,
        keys: Object.keys(KEY_PREFIX).length,
      },
      endpoints,
      costs: costSheet(),
      tiers: tierSheet(d.tiers.policy, d.config.limits.enforceDailyQuota),
      not_here: notHere(endpoints).filter((e) => !SERVED_OUTSIDE_ROUTER.has(e)),
      bodies: ROUTE_BODIES,
    };
  };
}

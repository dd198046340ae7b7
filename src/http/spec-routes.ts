// The routes of the spec's part 4, as it writes them: discovery's `not_here` is this list minus what the router
// serves, so it cannot fall behind either. A method of null means the spec names the path without one (any method
// serves it); a path ending in /* stands for a group of sub-paths (served when the router has any of them).

export interface SpecRoute {
  method: string | null;
  path: string;
}

/** A served route as discovery lists it. */
export interface Endpoint {
  method: string;
  path: string;
}

const SOLVER_PATHS = [
  'action',
  'evolve',
  'heat',
  'lorenz',
  'wave',
  'flow',
  'fracture',
  'epi',
  'quant',
  'zeta',
  'sat',
  'gauge',
  'fea',
  'grid',
  'device',
  'react',
  'opt',
  'climate',
  'dock',
  'solve',
  'multibody',
  'auto',
];

const any = (...paths: string[]): SpecRoute[] => paths.map((path) => ({ method: null, path }));
const get = (...paths: string[]): SpecRoute[] => paths.map((path) => ({ method: 'GET', path }));
const post = (...paths: string[]): SpecRoute[] => paths.map((path) => ({ method: 'POST', path }));

export const SPEC_ROUTES: readonly SpecRoute[] = [
  // 4.1 Keyless ("POST /api/svc/auth (see 4.2)" is a pointer to 4.2, which has no such route).
  ...get('/api/health', '/api/svc/pulse'),
  ...post('/api/svc/prove', '/api/svc/prove/verify'),
  ...get('/api/demo-key'),
  ...post('/api/demo-key/mint'),
  ...get('/api/operators', '/api/operators/categories', '/api/kernel/prompt', '/api/kernel', '/api/mcp'),
  ...post('/api/mcp', '/api/svc/lib-search', '/api/svc/operator-spec'),
  // 4.2 Compute and verification
  ...post('/api/svc/compute', '/api/svc/verify', '/api/svc/lattice', '/api/svc/shift', '/api/genesis/execute', '/api/llm/chat', '/api/playground/compute'),
  // 4.3 Solver endpoints
  ...post(...SOLVER_PATHS.map((id) => `/api/svc/${id}`)),
  // 4.4 Identity
  ...post('/api/auth/register', '/api/auth/login', '/api/auth/verify', '/api/auth/session-key'),
  ...get('/api/auth/salt/:email'),
  ...post('/api/svc-auth/register-v3'),
  // 4.5 Streams (the close operation has no method or path in the spec)
  ...post('/api/svc/streams', '/api/svc/stream/channels', '/api/svc/streams/:id/tick'),
  ...get('/api/svc/streams/:id', '/api/svc/streams/:id/latest'),
  ...post('/api/svc/streams/:id/link'),
  ...get('/api/svc/streams/:id/pull'),
  ...post('/api/svc/streams/:id/secure/open'),
  ...get('/api/svc/streams/:id/secure/pull'),
  { method: 'WS', path: '/ws/stream' },
  // 4.6 Envelopes, tally and usage
  ...get('/api/tally/envelopes/:zid', '/api/tally/envelopes/:zid/folders'),
  ...post('/api/tally/envelopes/folder', '/api/tally/envelopes/transfer-bulk'),
  ...get('/api/tally/record', '/api/compute/usage'),
  // 4.7 Contribution
  ...get('/api/contribute/policy', '/api/contribute/status'),
  ...post('/api/contribute/bond', '/api/contribute/release', '/api/contribute/mode'),
  // 4.8 Other route groups
  ...get('/api/svc/mmio', '/api/svc/mmio/registers'),
  ...post('/api/svc/reactor'),
  ...any(...['step', 'observe', 'state', 'trajectory', 'telemetry', 'next'].map((p) => `/api/svc/reactor/${p}`)),
  ...post('/api/mesh/gossip'),
  ...get('/api/mesh/status'),
  ...any('/api/mesh/verify', '/api/dns/resolve', '/api/dns/register', '/api/dns/lookup', '/api/dns/status'),
  ...post('/api/chain/state-machines'),
  ...get('/api/chain/:slug/explore', '/api/chain/:slug/pohc/validate', '/api/chain/aggregate/list'),
  { method: 'PATCH', path: '/api/chain/:slug/settings' },
  ...any('/api/chain/:slug/contracts/*', '/api/chain/:slug/tally/*'),
  ...any('/api/tally/transparency', '/api/tally/consensus', '/api/tally/clock', '/api/tally/health', '/api/tally/settings/publish-default'),
  ...any('/api/transparency/now', '/api/transparency/history', '/api/transparency/breakdown', '/api/transparency/revenue'),
  ...any('/api/protocol/pohc/*', '/api/svc/agent/*', '/api/svc/llm/credentials/*'),
  ...get('/api/system/capabilities'),
  ...any('/api/svc/pulse/stream'),
];

/** Parameter names differ between the spec and the router (:id, :zid): compare the shapes. */
const shape = (path: string): string => path.replace(/:[A-Za-z_]+/g, ':');

function served(route: SpecRoute, endpoints: readonly Endpoint[]): boolean {
  const methodOk = (e: Endpoint) => route.method === null || e.method === route.method;
  if (route.path.endsWith('/*')) {
    const prefix = shape(route.path.slice(0, -1));
    return endpoints.some((e) => methodOk(e) && shape(e.path).startsWith(prefix));
  }
  const p = shape(route.path);
  return endpoints.some((e) => methodOk(e) && shape(e.path) === p);
}

/** The spec's routes the router does not serve, in spec order: "METHOD path", or the path alone when the spec gives none. */
export function notServed(endpoints: readonly Endpoint[]): string[] {
  return SPEC_ROUTES.filter((r) => !served(r, endpoints)).map((r) => (r.method ? `${r.method} ${r.path}` : r.path));
}

/** Discovery's not_here: the spec routes not served, and the planned webhooks of part 6 (no route of their own). */
export function notHere(endpoints: readonly Endpoint[]): string[] {
  return [...notServed(endpoints), 'webhooks (planned, part 6)'];
}

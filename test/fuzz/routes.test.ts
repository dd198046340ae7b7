// Property-based fuzzing of every route the node lists in its discovery (the router's own routes): hostile bodies,
// queries and path parameters, with and without a valid key. Properties: no 5xx but SVC_SOLVER_ERROR / SVC_TIMEOUT;
// every error in the part-7 shape with its trace_id in X-Trace-Id; the node healthy afterwards.
// Bounded to about a minute: a fixed seed (FUZZ_SEED replays another), runs per route sized to it, and a time cap per
// route. FUZZ_SCALE=10 runs ten times as many.
// Robust under load: the time cap is a run gate (budget.ts), not fast-check's interruptAfterTimeLimit,
// which raced each run against a clock started at fc.assert and failed a route whose first request alone outlasted
// the cap ("interrupted after 0 tests"; fast-check counts an interrupt with no success as a failure). Every run
// that starts is awaited to its answer (or REQUEST_DEADLINE_MS, a failure naming the request), a floor of runs is
// always sent, and each route's test has its own timeout sized to that, not the suite's 30 s.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, startTestNode, WITH_WORKERS, zkIdentity, type TestNode } from '../helpers/node.js';
import { anyKey, jsonText, jsonValue, numberish, pathParam, queryString, solverInputs } from './arbitraries.js';
import { runGate } from './budget.js';

const SEED = Number(process.env.FUZZ_SEED ?? 17_017);
const SCALE = Number(process.env.FUZZ_SCALE ?? 1);
/** Solver runs that pass validation are cut at this limit (SVC_TIMEOUT is an allowed answer). */
const TIME_LIMIT_SECONDS = 1;
const ALLOWED_5XX = new Set(['SVC_SOLVER_ERROR', 'SVC_TIMEOUT']);
/**
 * Part 7: the gossip entrance of a node without a mesh secret answers 503 (this node has none); so does the other
 * node-to-node entrances, a cross-node transfer's delivery and a remote charge's settlement, checked by the same validator.
 */
const GOSSIP = new Set(['POST /api/mesh/gossip', 'POST /api/tally/transfers/deliver', 'POST /api/mesh/chain-charges/settle']);
/** Streams (server-sent events) never end: a stream that opens is let go at its headers; its refusals are checked. */
const STREAMS = new Set(['/api/svc/pulse/stream', '/api/svc/agent/stream']);
/** FUZZ_ROUTES=<regex>: only the routes whose "METHOD /path" matches (to search one area longer). */
const ONLY = process.env.FUZZ_ROUTES ? new RegExp(process.env.FUZZ_ROUTES) : null;
/** One answer may take this long on a loaded machine before its run fails as a hang. */
const REQUEST_DEADLINE_MS = 45_000;
/** A route's test: its floor of runs each at the deadline would still fit (a hang fails by the deadline first). */
const ROUTE_TIMEOUT_MS = 240_000;

interface Endpoint {
  method: string;
  path: string;
}
interface SolverInfo {
  id: string;
  endpoint: string | null;
  inputs: string[];
}
interface OperatorInfo {
  id: string;
  domain: string;
  inputs: { key: string }[];
}

let t: TestNode;
let key: string;
let demoKey: string;
let endpoints: Endpoint[] = [];
let solvers: SolverInfo[] = [];
let operators: OperatorInfo[] = [];
let domains: string[] = [];
const seen = { requests: 0, byStatus: new Map<number, number>() };

// Discovery happens at collection time in a real node, so the routes are known before the tests are made.
const boot = (async () => {
  t = await startTestNode(WITH_WORKERS, { initialCredits: 10_000_000, timeLimitSeconds: TIME_LIMIT_SECONDS });
  key = (await zkIdentity(t.url, 'fuzz')).key;
  demoKey = (await call(t.url, 'POST', '/api/demo-key/mint', {})).body.key;
  endpoints = ((await call(t.url, 'GET', '/api')).body.endpoints as Endpoint[]).filter((e) => !ONLY || ONLY.test(`${e.method} ${e.path}`));
  const caps = (await call(t.url, 'GET', '/api/system/capabilities')).body;
  domains = caps.domains;
  operators = (await call(t.url, 'GET', '/api/operators')).body.operators;
  const specs = await Promise.all(
    (caps.solvers as { id: string; endpoint: string | null }[]).map(async (s) => {
      const spec = await call(t.url, 'POST', '/api/svc/operator-spec', { solver: s.id });
      const inputs = Array.isArray(spec.body?.inputs) ? (spec.body.inputs as { key: string }[]).map((i) => i.key) : [];
      return { id: s.id, endpoint: s.endpoint, inputs };
    }),
  );
  solvers = specs;
})();

beforeAll(async () => {
  await boot;
  console.log(`fuzz: seed ${SEED} (FUZZ_SEED=${SEED} replays it), scale ${SCALE}, ${endpoints.length} routes, ${solvers.length} solvers`);
});
afterAll(async () => {
  console.log(`fuzz: ${seen.requests} requests; statuses ${JSON.stringify(Object.fromEntries([...seen.byStatus].sort((a, b) => a[0] - b[0])))}`);
  await t?.destroy();
});

type Auth = 'none' | 'valid' | 'demo' | 'garbage';
const auth: fc.Arbitrary<Auth> = fc.constantFrom<Auth>('none', 'valid', 'valid', 'demo', 'garbage');
function authHeaders(a: Auth): Record<string, string> {
  if (a === 'valid') return bearer(key);
  if (a === 'demo') return bearer(demoKey);
  if (a === 'garbage') return bearer('sk_not-a-key-\u00e9');
  return {};
}

/** The body generator a route gets: shaped for solver and compute routes, any JSON elsewhere. */
function bodyFor(path: string): fc.Arbitrary<unknown> {
  const solver = solvers.find((s) => s.endpoint === path);
  const anyBody = fc.oneof(fc.dictionary(anyKey, jsonValue, { maxKeys: 5 }), jsonValue);
  if (solver) {
    return fc.oneof(
      { weight: 4, arbitrary: solverInputs(solver.inputs) },
      { weight: 1, arbitrary: solverInputs(solver.inputs).map((inputs) => ({ inputs })) },
      { weight: 1, arbitrary: anyBody },
    );
  }
  if (path === '/api/svc/solve') {
    const ids = solvers.map((s) => s.id);
    return fc.oneof(
      {
        weight: 4,
        arbitrary: fc
          .constantFrom(...solvers)
          .chain((s) => fc.record({ solver: fc.constant(s.id), inputs: solverInputs(s.inputs) }, { requiredKeys: ['solver'] })),
      },
      {
        weight: 1,
        arbitrary: fc.record({ solver: fc.oneof(fc.constantFrom(...ids), jsonValue), inputs: jsonValue, initialState: jsonValue }, { requiredKeys: [] }),
      },
    );
  }
  if (path === '/api/svc/compute' || path === '/api/playground/compute' || path === '/api/svc/prove') {
    const chain = fc.constantFrom(...operators.filter((o) => o.id !== 'KO42')).chain((op) =>
      fc.record(
        {
          domain: fc.oneof(
            { weight: 4, arbitrary: fc.constant(op.domain) },
            { weight: 1, arbitrary: fc.constantFrom(...domains) },
            { weight: 1, arbitrary: jsonValue },
          ),
          operators: fc.oneof(
            { weight: 4, arbitrary: fc.constant(['KO42', op.id]) },
            { weight: 1, arbitrary: fc.array(fc.constantFrom(...operators.map((o) => o.id)), { maxLength: 12 }) },
            { weight: 1, arbitrary: jsonValue },
          ),
          inputs:
            op.inputs.length > 0 ? fc.dictionary(fc.constantFrom(...op.inputs.map((i) => i.key)), numberish, { maxKeys: op.inputs.length }) : fc.constant({}),
        },
        { requiredKeys: ['operators'] },
      ),
    );
    return fc.oneof({ weight: 4, arbitrary: chain }, { weight: 1, arbitrary: anyBody });
  }
  if (path === '/api/svc/auto') {
    return fc.record(
      {
        query: fc.oneof(fc.constantFrom('heat diffusion in a rod', 'lorenz attractor', 'black hole', 'tumour growth', 'bistable reaction front'), jsonValue),
        constants: fc.dictionary(anyKey, numberish, { maxKeys: 3 }),
      },
      { requiredKeys: [] },
    );
  }
  return anyBody;
}

/** Body text: mostly the generated value, sometimes a mangled text (broken JSON, a scalar, a BOM, empty). */
function bodyText(path: string): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 8, arbitrary: bodyFor(path).map(jsonText) },
    { weight: 1, arbitrary: fc.constantFrom('', '{', '[1,]', '42', '"x"', '\ufeff{}', '{"a":1}{"b":2}', 'null', '{"a":1e999999}', '{"a":-0.0e-400}') },
    // Nesting far past the depth limit, with a poisoning key at the bottom (a recursive walk overflows on these).
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.integer({ min: 1_000, max: 30_000 }), fc.constantFrom('{"constructor":{"prototype":{}}}', '{"__proto__":{}}', '[]'))
        .map(([n, inner]) => '{"a":'.repeat(n) + inner + '}'.repeat(n)),
    },
  );
}

function resolvePath(path: string): fc.Arbitrary<string> {
  const params = path.match(/:[A-Za-z_]+/g) ?? [];
  if (params.length === 0) return fc.constant(path);
  return fc.tuple(...params.map(() => pathParam)).map((values) => {
    let p = path;
    values.forEach((v, i) => (p = p.replace(params[i]!, v)));
    return p;
  });
}

interface Sample {
  path: string;
  query: string;
  body: string | undefined;
  auth: Auth;
}

function request(e: Endpoint): fc.Arbitrary<Sample> {
  const takesBody = e.method !== 'GET';
  return fc.record({
    path: resolvePath(e.path),
    query: queryString,
    body: takesBody ? bodyText(e.path) : fc.constant(undefined),
    auth,
  });
}

/** Send one sample and check the properties; throws, naming the request and the answer, when one does not hold. */
async function check(e: Endpoint, s: Sample): Promise<void> {
  const headers: Record<string, string> = { ...authHeaders(s.auth) };
  if (s.body !== undefined) headers['content-type'] = 'application/json';
  const abort = new AbortController();
  const deadline = setTimeout(() => abort.abort(new Error(`no answer in ${REQUEST_DEADLINE_MS} ms`)), REQUEST_DEADLINE_MS);
  let res: Response;
  try {
    res = await fetch(`${t.url}${s.path}${s.query}`, { method: e.method, headers, body: s.body, signal: abort.signal });
  } catch (err) {
    clearTimeout(deadline);
    throw new Error(`${e.method} ${s.path}${s.query} [${s.auth}] ${s.body?.slice(0, 300) ?? ''}: ${(err as Error).message}`, { cause: err });
  }
  if (STREAMS.has(e.path) && res.status < 400) {
    clearTimeout(deadline);
    abort.abort();
    seen.requests++;
    seen.byStatus.set(res.status, (seen.byStatus.get(res.status) ?? 0) + 1);
    return;
  }
  const text = await res.text().finally(() => clearTimeout(deadline));
  seen.requests++;
  seen.byStatus.set(res.status, (seen.byStatus.get(res.status) ?? 0) + 1);
  const where = `${e.method} ${s.path}${s.query} [${s.auth}] ${s.body?.slice(0, 300) ?? ''} → ${res.status} ${text.slice(0, 400)}`;
  if (res.status < 400) return;
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`error answer is not JSON: ${where}`);
  }
  const err = body?.error;
  if (!err || typeof err !== 'object') throw new Error(`no error object: ${where}`);
  // The MCP bridge answers in JSON-RPC 2.0, as MCP clients expect (its own error codes, no trace fields), once the
  // node's own entrance (body parsing, auth) has let the request through; what that refuses is in the part-7 shape.
  if (e.path === '/api/mcp' && e.method === 'POST' && body.jsonrpc !== undefined) {
    if (body.jsonrpc !== '2.0' || typeof err.code !== 'number' || typeof err.message !== 'string') throw new Error(`not a JSON-RPC error: ${where}`);
    return;
  }
  for (const f of ['code', 'message', 'trace_id', 'timestamp', 'documentation_url']) {
    if (typeof err[f] !== 'string' || err[f].length === 0) throw new Error(`error lacks ${f}: ${where}`);
  }
  if (res.headers.get('x-trace-id') !== err.trace_id) throw new Error(`X-Trace-Id ${res.headers.get('x-trace-id')} ≠ trace_id: ${where}`);
  const gossipOff = GOSSIP.has(`${e.method} ${e.path}`) && res.status === 503 && err.code === 'MESH_DISABLED';
  if (res.status >= 500 && !ALLOWED_5XX.has(err.code) && !gossipOff) throw new Error(`5xx ${err.code}: ${where}`);
}

/** Runs per route: solver routes run solvers (cut at TIME_LIMIT_SECONDS), so fewer. `minRuns` are sent whatever the clock. */
function budget(e: Endpoint): { numRuns: number; capMs: number; minRuns: number } {
  const computes = e.path.startsWith('/api/svc/') && (solvers.some((s) => s.endpoint === e.path) || ['/api/svc/solve', '/api/svc/auto'].includes(e.path));
  return computes ? { numRuns: 12 * SCALE, capMs: 1000 * SCALE, minRuns: 3 } : { numRuns: 40 * SCALE, capMs: 350 * SCALE, minRuns: 5 };
}

describe('fuzz: every route', async () => {
  await boot;
  it.each(endpoints.map((e) => [`${e.method} ${e.path}`, e] as const))(
    '%s',
    async (_name, e) => {
      const { numRuns, capMs, minRuns } = budget(e);
      const gate = runGate(capMs, minRuns);
      await fc.assert(
        fc.asyncProperty(request(e), async (s) => {
          if (gate.open()) await check(e, s);
        }),
        { seed: SEED, numRuns, endOnFailure: true },
      );
      expect(gate.ran).toBeGreaterThanOrEqual(Math.min(minRuns, numRuns));
    },
    ROUTE_TIMEOUT_MS,
  );

  it('leaves the node healthy: /api/health answers and a valid compute still seals', async () => {
    expect((await call(t.url, 'GET', '/api/health')).status).toBe(200);
    const r = await call(
      t.url,
      'POST',
      '/api/svc/compute',
      { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } },
      bearer(key),
    );
    expect(r.status, r.text).toBe(200);
    expect(r.body.value).toBe(9);
    const s = await call(t.url, 'POST', '/api/svc/heat', {}, bearer(key));
    expect(s.status, s.text).toBe(200);
  });
});

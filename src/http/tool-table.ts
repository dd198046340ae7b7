// The MCP tools (spec 4.1), in one table: each tool is a request to the route that serves it, described by that
// route's own zod schema (its JSON Schema is generated from it: local-tools.ts). A capability adds its tools here,
// in its own group, once its routes exist; the spec's tools whose capability is not built on this node yet are in
// PLANNED_TOOLS (discovery names them as not here), never listed as tools.
import { z } from 'zod';
import type { SolverRegistry, AnySolver } from '../solvers/registry.js';
import { SLUG_PATTERN } from '../mesh/machines.js';
import { autoBody, chainBody, latticeBody, shiftBody } from './routes/compute.js';
import { exploreQuery } from './routes/chain.js';
import { eventBody, transitionBody } from './routes/chain.js';
import { createBody as streamBody } from './routes/streams.js';
import { ContractSchema } from '../chain/contract-language.js';
import type { SelfRequest } from './self-request.js';
import { solverBodySchema } from './solver-body.js';

export interface ToolRow {
  name: string;
  description: string;
  /** The arguments: the route's zod schema (the body, or the path and query parameters of a read). */
  schema: z.ZodType;
  /** The request to this node's API that performs the tool, from arguments that passed `schema`. */
  request(args: Record<string, unknown>): SelfRequest;
}

const none = z.object({}).strict();
const slug = z.string().regex(SLUG_PATTERN, '3 … 48 of a-z, 0-9 and -').describe('the state machine slug');

function withQuery(path: string, query: Record<string, unknown>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null) q.set(k, String(v));
  const text = q.toString();
  return text ? `${path}?${text}` : path;
}

export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'QUERY'] as const;
/**
 * Paths svc_http does not take: the MCP endpoint and chat (no tool loops) and the push streams (they never end),
 * matched on the path as the router reads it (percent-decoded, case-insensitive, a trailing / or a fragment allowed).
 */
const NOT_BY_HTTP_TOOL = [/^\/api\/mcp(\/|$)/, /^\/api\/llm\/chat(\/|$)/, /\/stream\/?$/, /^\/api\/mesh\/events\/?$/];

/** The path part of a request target, percent-decoded and lower-cased (null when it does not decode). */
function routedPath(target: string): string | null {
  const path = target.split(/[?#]/, 1)[0]!;
  try {
    return decodeURIComponent(path).toLowerCase();
  } catch {
    return null;
  }
}

export const httpToolArgs = z
  .object({
    method: z.enum(HTTP_METHODS).describe('HTTP method'),
    path: z
      .string()
      .min(5)
      .max(2000)
      .regex(/^\/api(\/[^\s]*)?$/, 'a path of this node’s API, starting with /api')
      .refine((p) => !p.split(/[/?]/).includes('..'), 'no .. segments')
      .refine((p) => {
        const path = routedPath(p);
        return path !== null && !NOT_BY_HTTP_TOOL.some((r) => r.test(path));
      }, 'not the MCP endpoint, chat or a push stream')
      .describe('path under /api, with its query string, e.g. /api/tally/record?limit=5'),
    body: z.any().optional().describe('JSON body (POST, PUT, PATCH, DELETE, QUERY)'),
  })
  .strict();

const verifyArgs = z
  .object({ result: z.record(z.string(), z.unknown()).describe('a sealed result as svc_compute or a solver tool returned it, unchanged') })
  .strict();

/** Group: the surface itself. */
const surfaceTools: ToolRow[] = [
  {
    name: 'svc_api_catalog',
    description: "The map of this node's surface: endpoints, counts, costs, tiers and what is not here (GET /api).",
    schema: none,
    request: () => ({ method: 'GET', path: '/api' }),
  },
  {
    name: 'svc_http',
    description:
      "Any request to this node's own API (GET, POST, PUT, PATCH, DELETE or QUERY) with the caller's key; answers the route's JSON. Only this node: the path is under /api.",
    schema: httpToolArgs,
    request: (a) => ({ method: String(a.method), path: String(a.path), ...(a.body !== undefined && a.method !== 'GET' ? { body: a.body } : {}) }),
  },
];

/** Group: compute and verification (spec 4.2, 4.3). */
const computeTools: ToolRow[] = [
  {
    name: 'svc_compute',
    description:
      'A closed-form computation: an operator chain (KO42 first) on a domain with numeric inputs; returns the sealed result with its receipt (svcProof). Charged 1 credit per domain operator.',
    schema: chainBody,
    request: (a) => ({ method: 'POST', path: '/api/svc/compute', body: a }),
  },
  {
    name: 'svc_pulse',
    description: 'The 1.287 Hz system clock now: tick number (svcond), phase, R(t), the exact tick period.',
    schema: none,
    request: () => ({ method: 'GET', path: '/api/svc/pulse' }),
  },
  {
    name: 'svc_verify',
    description: 'Check a sealed result: its svcProof and tick receipt against this node (or its mesh) receipt key. Tampering any field makes it invalid.',
    schema: verifyArgs,
    request: (a) => ({ method: 'POST', path: '/api/svc/verify', body: { result: a.result } }),
  },
  {
    name: 'svc_lattice',
    description: 'A closed-form chain swept over one input (up to 64 points), stamped and signed.',
    schema: latticeBody,
    request: (a) => ({ method: 'POST', path: '/api/svc/lattice', body: a }),
  },
  {
    name: 'svc_shift',
    description: 'The metric shift (delta-alpha) the kernel applies for a tick variance above 0.0091 (rule 6).',
    schema: shiftBody,
    request: (a) => ({ method: 'POST', path: '/api/svc/shift', body: a }),
  },
  {
    name: 'svc_field_status',
    description:
      "The field now: tick, phase and R(t) with its distance from 1 against the 1e-3 bound, the tolerance gate and parity thresholds, and the mesh's coherenceScore (GET /api/svc/field/status).",
    schema: none,
    request: () => ({ method: 'GET', path: '/api/svc/field/status' }),
  },
  {
    name: 'svc_list_operators',
    description: 'Every operator of the kernel with its domain, inputs and formula (GET /api/operators).',
    schema: none,
    request: () => ({ method: 'GET', path: '/api/operators' }),
  },
  {
    name: 'svc_auto',
    description:
      'Ask in words (e.g. "heat diffusion in a 10 cm copper rod"): the router picks a solver, runs it with the constants given, and returns the sealed result. Charged as a solver run.',
    schema: autoBody,
    request: (a) => ({ method: 'POST', path: '/api/svc/auto', body: a }),
  },
];

/** Group: state-machine chains (spec 4.8) as far as they are built: reading and validating a machine's audit chain. */
const chainTools: ToolRow[] = [
  {
    name: 'svc_chain_state',
    description: "A state machine's hash-chained audit log: its head and rows from..to (public machines without a key).",
    schema: exploreQuery.omit({ key: true }).extend({ slug }),
    request: ({ slug: s, ...q }) => ({ method: 'GET', path: withQuery(`/api/chain/${encodeURIComponent(String(s))}/explore`, q) }),
  },
  {
    name: 'svc_chain_event',
    description:
      "Append an event to a state machine's audit chain (operator role or above): the row commits SHA-256 of the payload, never its bytes; sealed: true wraps it in a sealed envelope.",
    schema: eventBody.extend({ slug }),
    request: ({ slug: s, ...b }) => ({ method: 'POST', path: `/api/chain/${encodeURIComponent(String(s))}/events`, body: b }),
  },
  {
    name: 'svc_contract_deploy',
    description:
      'Deploy a JSON contract on a state machine (admin role or above): states, an initial state, transitions with guards and effects (docs/chain.md). Free; its audit row is appended.',
    schema: z.object({ slug, contract: ContractSchema }).strict(),
    request: (a) => ({ method: 'POST', path: `/api/chain/${encodeURIComponent(String(a.slug))}/contracts`, body: a.contract }),
  },
  {
    name: 'svc_contract_transition',
    description:
      "Apply an event to a deployed contract (operator role or above, 5 credits): the new state, or 409 naming the state and the event when the contract's table does not allow it.",
    schema: transitionBody.extend({ slug, contract_id: z.string().min(1).max(128).describe('the contract id its deploy returned') }),
    request: ({ slug: s, contract_id, ...b }) => ({
      method: 'POST',
      path: `/api/chain/${encodeURIComponent(String(s))}/contracts/${encodeURIComponent(String(contract_id))}/transition`,
      body: b,
    }),
  },
  {
    name: 'svc_chain_pohc_validate',
    description: "Re-walk a state machine's hash chain and report whether every link holds.",
    schema: z.object({ slug }).strict(),
    request: (a) => ({ method: 'GET', path: `/api/chain/${encodeURIComponent(String(a.slug))}/pohc/validate` }),
  },
];

/** Group: push and registers (spec 4.5, 4.8). */
const liveTools: ToolRow[] = [
  {
    name: 'svc_stream',
    description:
      'Open a ticking stream channel for one solver (stateful solvers continue from their head state) or an operator chain; answers the channel id and its key (shown once). Tick it with svc_http POST /api/svc/streams/:id/tick.',
    schema: streamBody,
    request: (a) => ({ method: 'POST', path: '/api/svc/streams', body: a }),
  },
  {
    name: 'svc_mmio',
    description: "The node's memory-mapped register map with live values (tick, phase, R_t, sealed count, peers, queue depth, coherence).",
    schema: none,
    request: () => ({ method: 'GET', path: '/api/svc/mmio' }),
  },
];

/** Group: the tally. */
const tallyTools: ToolRow[] = [
  {
    name: 'svc_tally_balance',
    description: "The caller's wallet: free and paid credits.",
    schema: none,
    request: () => ({ method: 'GET', path: '/api/tally/balance' }),
  },
];

function solverTool(solver: AnySolver): ToolRow {
  return {
    name: `svc_${solver.id}`,
    description: `Solver: ${solver.kind}. Runs with its reality check; a sealed result with receipt, or 422 when the check fails (nothing charged). Inputs: ${solver.inputs
      .map((i) => `${i.key} [${i.unit}] default ${JSON.stringify(i.default)}`)
      .join('; ')}.`,
    schema: solverBodySchema(solver),
    request: (a) => {
      if (solver.endpoint) return { method: 'POST', path: solver.endpoint, body: a };
      const { initialState, ...inputs } = a;
      return { method: 'POST', path: '/api/svc/solve', body: { solver: solver.id, inputs, ...(initialState !== undefined ? { initialState } : {}) } };
    },
  };
}

/** The spec's tools whose capability this node does not have yet, and what they wait for. */
export const PLANNED_TOOLS: readonly { name: string; waits_for: string }[] = [];

/** Every tool this node offers: the groups above, then one per solver. */
export function toolTable(registry: SolverRegistry): ToolRow[] {
  return [...surfaceTools, ...computeTools, ...chainTools, ...liveTools, ...tallyTools, ...registry.list().map(solverTool)];
}

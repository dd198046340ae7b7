// The offline assistant: what POST /api/llm/chat answers when no language model is configured. It is not a model and
// says so. It routes the question through the node's own tools, exactly as a client would: svc_auto (the /auto
// router picks a solver and runs it; sealed and charged as a solver run), and when the router finds no solver, the
// operator library (POST /api/svc/lib-search). Same question, same route, same value (rule 5); the stamp and proof
// are the run's own. Numbers with units in the question (quantities.ts) become the solver's constants or the
// operator's inputs, placed by dimension; the answer says what it placed where and what it left at its default.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ToolSource } from '../mcp/server.js';
import { errorCodeOf } from '../mcp/result.js';
import { routeQuery } from '../solvers/auto.js';
import { placeQuantities, placementText, readQuantities, type InputUnit, type Placed, type Quantity } from './quantities.js';

export interface ToolCallRecord {
  name: string;
  arguments: Record<string, unknown>;
  is_error: boolean;
  code: string | null;
}

export interface OfflineAnswer {
  text: string;
  /** The sealed result the answer rests on (pass it to svc_verify / POST /api/svc/verify), or null. */
  result: Record<string, unknown> | null;
  tool_calls: ToolCallRecord[];
}

const NOTE = 'Offline assistant of this node: a deterministic router over its solvers and operator library, not a language model.';
const QUERY_MAX = 2000;

function textOf(r: CallToolResult): string {
  return r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
}

function fmt(n: unknown): string {
  return typeof n === 'number' ? (Math.abs(n) >= 1e5 || (Math.abs(n) < 1e-3 && n !== 0) ? n.toExponential(6) : String(Number(n.toPrecision(10)))) : String(n);
}

/** The solver the /auto router would choose for the query, or null when it finds none (the same pure router). */
function routedSolver(query: string): string | null {
  try {
    return routeQuery(query).solver;
  } catch {
    return null;
  }
}

/** What the answer says about the question's quantities: where each went, and which found no input. */
function assumptions(placed: Placed | null, rest: string): string[] {
  if (placed === null) return [];
  const lines: string[] = [];
  if (placed.placed.length > 0) lines.push(`I read from your question: ${placementText(placed.placed)}; ${rest}.`);
  if (placed.unplaced.length > 0) lines.push(`No input of that dimension took: ${placed.unplaced.map((u) => `"${u}"`).join(', ')}.`);
  return lines;
}

/** `gone`: the asker left; the tool call under way stops and no other starts. */
export async function offlineAnswer(question: string, tools: ToolSource, gone?: AbortSignal): Promise<OfflineAnswer> {
  const calls: ToolCallRecord[] = [];
  const use = async (name: string, args: Record<string, unknown>): Promise<CallToolResult> => {
    gone?.throwIfAborted();
    const r = (await tools.call(name, args, gone)) ?? { isError: true, content: [{ type: 'text' as const, text: `no tool ${name}` }] };
    calls.push({ name, arguments: args, is_error: r.isError === true, code: r.isError ? errorCodeOf(r) : null });
    return r;
  };
  const query = question.trim().slice(0, QUERY_MAX) || '?';
  const quantities = readQuantities(query);
  /** The inputs (key, unit, default) of an operator or a solver, from POST /api/svc/operator-spec. */
  const specOf = async (ask: { solver: string } | { operator: string }): Promise<{ inputs: InputUnit[]; domain?: string; domains?: string[] } | null> => {
    const r = await use('svc_http', { method: 'POST', path: '/api/svc/operator-spec', body: ask });
    return r.isError ? null : (r.structuredContent as { inputs: InputUnit[]; domain?: string; domains?: string[] });
  };
  const solver = routedSolver(query);
  let placed: Placed | null = null;
  if (solver !== null && quantities.length > 0) {
    const spec = await specOf({ solver });
    if (spec) placed = placeQuantities(quantities, spec.inputs);
  }
  const auto = await use('svc_auto', { query, ...(placed && placed.placed.length > 0 ? { constants: placed.inputs } : {}) });
  if (!auto.isError) {
    const a = auto.structuredContent as { solver: string; matched: string[]; confidence: number; result?: Record<string, unknown> };
    const result = a.result ?? {};
    const charge = result.tally_charge as { cost?: number } | undefined;
    const check = result.check as { rel_error?: number } | undefined;
    const lines = [
      NOTE,
      `I routed your question to the ${String(a.solver)} solver (matched: ${a.matched.join(', ')}; confidence ${fmt(a.confidence)}) and ran it ` +
        (placed && placed.placed.length > 0 ? 'with the quantities of your question.' : 'at its default inputs.'),
      ...assumptions(placed, 'every other input at its default'),
      `Result: ${fmt(result.value)} ${String(result.unit ?? '')}, reality check passed (relative error ${fmt(check?.rel_error ?? null)}).`,
      `Sealed at tick ${String(result.svcond)} as ${String(result.result_id)}; receipt svcProof ${String(result.svcProof).slice(0, 16)}…` +
        (charge?.cost !== undefined ? `; charged ${charge.cost} credits.` : '.'),
      'The full sealed result is in `result`: pass it unchanged to svc_verify (POST /api/svc/verify) to check it. Change the inputs with POST /api/svc/' +
        `${String(a.solver)} or svc_${String(a.solver)}.`,
    ];
    return { text: lines.join('\n'), result, tool_calls: calls };
  }
  if (errorCodeOf(auto) !== 'SVC_INVALID_DOMAIN') {
    return { text: `${NOTE}\nI routed your question to a solver, but the run failed: ${textOf(auto).split('\n')[0]}`, result: null, tool_calls: calls };
  }
  const lib = await use('svc_http', { method: 'POST', path: '/api/svc/lib-search', body: { query: query.slice(0, 500), limit: 5 } });
  const hits = (lib.isError ? [] : ((lib.structuredContent as { results?: { kind: string; id: string; title: string }[] }).results ?? [])) as {
    kind: string;
    id: string;
    title: string;
  }[];
  const computed = await computeOperator(hits, quantities, specOf, use);
  if (computed !== null) return { ...computed, tool_calls: calls };
  if (hits.length === 0) {
    return {
      text: `${NOTE}\nNo solver matches your question and the operator library has nothing on it. Name a physical system or quantity (e.g. "heat in a copper rod", "pendulum period", "option price").`,
      result: null,
      tool_calls: calls,
    };
  }
  return {
    text: [
      NOTE,
      'No solver matches your question well enough to run one. The closest entries of the operator library:',
      ...hits.map((h) => `- ${h.kind} ${h.id}: ${h.title}`),
      'Compute an operator with svc_compute (POST /api/svc/compute, KO42 first), or run a solver with its svc_<solver> tool.',
    ].join('\n'),
    result: null,
    tool_calls: calls,
  };
}

/**
 * The question names an operator (a library hit) and gives quantities every one of which an input of it takes: the
 * operator is computed on them (KO42 first, sealed and charged as svc_compute), the rest of its inputs at defaults.
 */
async function computeOperator(
  hits: readonly { kind: string; id: string }[],
  quantities: readonly Quantity[],
  specOf: (ask: { operator: string }) => Promise<{ inputs: InputUnit[]; domain?: string; domains?: string[] } | null>,
  use: (name: string, args: Record<string, unknown>) => Promise<CallToolResult>,
): Promise<Omit<OfflineAnswer, 'tool_calls'> | null> {
  if (quantities.length === 0) return null;
  for (const hit of hits.filter((h) => h.kind === 'operator').slice(0, 3)) {
    const spec = await specOf({ operator: hit.id });
    if (!spec) continue;
    const placed = placeQuantities(quantities, spec.inputs);
    if (placed.unplaced.length > 0) continue;
    const domain = spec.domain === 'all' || spec.domain === undefined ? spec.domains?.[0] : spec.domain;
    const r = await use('svc_compute', { domain, operators: ['KO42', hit.id], inputs: placed.inputs });
    if (r.isError)
      return { text: `${NOTE}\nI computed ${hit.id} on the quantities of your question, but it failed: ${textOf(r).split('\n')[0]}`, result: null };
    const result = r.structuredContent as Record<string, unknown>;
    const charge = result.tally_charge as { cost?: number } | undefined;
    const lines = [
      NOTE,
      `No solver matches your question; the operator library's ${hit.id} does, so I computed it (KO42 first).`,
      ...assumptions(placed, 'every other input at its default'),
      `Result: ${fmt(result.value)} ${String(result.unit ?? '')}.`,
      `Sealed at tick ${String(result.svcond)} as ${String(result.result_id)}; receipt svcProof ${String(result.svcProof).slice(0, 16)}…` +
        (charge?.cost !== undefined ? `; charged ${charge.cost} credits.` : '.'),
      'The full sealed result is in `result`: pass it unchanged to svc_verify (POST /api/svc/verify) to check it.',
    ];
    return { text: lines.join('\n'), result };
  }
  return null;
}

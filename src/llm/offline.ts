// The offline assistant: what POST /api/llm/chat answers when no language model is configured. It is not a model and
// says so. It routes the question through the node's own tools, exactly as a client would: svc_auto (the /auto
// router picks a solver and runs it; sealed and charged as a solver run), and when the router finds no solver, the
// operator library (POST /api/svc/lib-search). Same question, same route, same value (rule 5); the stamp and proof
// are the run's own.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ToolSource } from '../mcp/server.js';
import { errorCodeOf } from '../mcp/result.js';

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

export async function offlineAnswer(question: string, tools: ToolSource): Promise<OfflineAnswer> {
  const calls: ToolCallRecord[] = [];
  const use = async (name: string, args: Record<string, unknown>): Promise<CallToolResult> => {
    const r = (await tools.call(name, args)) ?? { isError: true, content: [{ type: 'text' as const, text: `no tool ${name}` }] };
    calls.push({ name, arguments: args, is_error: r.isError === true, code: r.isError ? errorCodeOf(r) : null });
    return r;
  };
  const query = question.trim().slice(0, QUERY_MAX) || '?';
  const auto = await use('svc_auto', { query });
  if (!auto.isError) {
    const a = auto.structuredContent as { solver: string; matched: string[]; confidence: number; result?: Record<string, unknown> };
    const result = a.result ?? {};
    const charge = result.tally_charge as { cost?: number } | undefined;
    const check = result.check as { rel_error?: number } | undefined;
    const lines = [
      NOTE,
      `I routed your question to the ${String(a.solver)} solver (matched: ${a.matched.join(', ')}; confidence ${fmt(a.confidence)}) and ran it at its default inputs.`,
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

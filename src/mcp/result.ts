// An HTTP answer of this node's API as an MCP tool result: a 2xx JSON body is the result (text and, when it is an
// object, structuredContent); a part-7 error body is a tool error (isError) whose text starts with its code, so a
// model and a program both see SVC_INVALID_INPUT, SVC_TIER_LOCKED, INSUFFICIENT_BALANCE … as the route answered.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The code of a part-7 body, or null. */
export function errorCodeOf(result: CallToolResult): string | null {
  const e = isObject(result.structuredContent) ? result.structuredContent.error : undefined;
  return isObject(e) && typeof e.code === 'string' ? e.code : null;
}

export function answerToToolResult(status: number, text: string): CallToolResult {
  const body = parse(text);
  if (status < 400) {
    return { content: [{ type: 'text', text }], ...(isObject(body) ? { structuredContent: body } : {}) };
  }
  const error = isObject(body) && isObject(body.error) ? body.error : { code: `HTTP_${status}`, message: text.slice(0, 500), status };
  const message = typeof error.message === 'string' ? error.message : 'error';
  return {
    isError: true,
    content: [{ type: 'text', text: `${String(error.code)} (HTTP ${status}): ${message}\n${JSON.stringify({ error })}` }],
    structuredContent: { error },
  };
}

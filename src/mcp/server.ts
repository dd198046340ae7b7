// One MCP server over any tool source, with the official SDK's Server: the node's own tools at POST /api/mcp
// (http/routes/mcp.ts) and a remote node's tools over stdio (proxy.ts, `svc-node mcp`). The SDK's McpServer wraps the
// same Server but validates arguments itself and reduces every failure to a message; here the tools' own routes
// validate (the same 400 SVC_INVALID_INPUT as over HTTP) and a tool error keeps its part-7 code (result.ts), and a
// proxy relays another server's JSON Schemas as they are.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  InitializeRequestSchema,
  JSONRPCMessageSchema,
  ListToolsRequestSchema,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

/**
 * A JSON-RPC error for the SDK's Server to answer: the code, and the message as the caller should read it. Not an
 * McpError, whose message already carries "MCP error <code>: ", which the SDK client adds again on its side.
 */
export function protocolError(code: number, message: string): Error & { code: number } {
  return Object.assign(new Error(message), { code });
}

/**
 * The requests this server answers, by method, with the SDK's schema of each. A Map, not an object literal: a method
 * named `constructor`, `toString` or `__proto__` must find nothing here (the SDK then answers -32601 Method not
 * found), not an Object.prototype member without safeParse.
 */
const REQUESTS = new Map<string, { safeParse(v: unknown): { success: boolean; error?: { issues: { path: PropertyKey[]; message: string }[] } } }>([
  ['initialize', InitializeRequestSchema],
  ['tools/list', ListToolsRequestSchema],
  ['tools/call', CallToolRequestSchema],
]);

/**
 * The answer to a POST body the SDK's transport and server would answer with the wrong JSON-RPC code, or null to let
 * them answer it. The node has parsed the JSON already, so JSON that is no JSON-RPC message (an empty batch too, which
 * the transport would take as nothing) is -32600 Invalid Request, not the transport's -32700 parse error (JSON-RPC
 * 2.0 §5.1, §6); a request whose params do not fit its method is -32602 naming the member, where the SDK, parsing
 * before its handler runs, answers -32603 with the validator's dump.
 */
export function refusedMessage(body: unknown): { status: number; body: Record<string, unknown> } | null {
  const messages = Array.isArray(body) ? body : [body];
  if (messages.length === 0 || messages.some((m) => !JSONRPCMessageSchema.safeParse(m).success)) {
    const why = messages.length === 0 ? 'an empty batch' : 'the JSON is not a JSON-RPC 2.0 message';
    return { status: 400, body: { jsonrpc: '2.0', error: { code: -32600, message: `Invalid Request: ${why}` }, id: null } };
  }
  const bad = Array.isArray(body) ? null : invalidParams(body);
  if (bad === null) return null;
  return { status: 200, body: { jsonrpc: '2.0', id: (body as { id?: unknown }).id ?? null, error: { code: -32602, message: bad } } };
}

/** Why a request's params do not fit its method's schema, or null. */
function invalidParams(message: unknown): string | null {
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return null;
  const method = (message as { method?: unknown }).method;
  const schema = typeof method === 'string' ? REQUESTS.get(method) : undefined;
  if (!schema) return null;
  const parsed = schema.safeParse(message);
  if (parsed.success) return null;
  const issue = parsed.error!.issues[0]!;
  return `Invalid params: ${issue.path.map(String).join('.') || 'params'}: ${issue.message}`;
}

/**
 * The schema a handler is registered with: the method alone. The SDK parses a request with it before the handler
 * runs and answers a failure -32603; the handler checks the params itself (paramsOf), so a member of a batch, which
 * refusedMessage does not read one by one, is -32602 too.
 */
const methodOnly = <M extends string>(method: M) => z.object({ method: z.literal(method) }).passthrough();

/** The request as `schema` reads it, or a -32602 naming the member that does not fit. */
function paramsOf<T>(schema: { parse(v: unknown): T }, request: unknown): T {
  const bad = invalidParams(request);
  if (bad !== null) throw protocolError(ErrorCode.InvalidParams, bad);
  return schema.parse(request);
}

export interface ToolSource {
  list(): Promise<Tool[]>;
  /** The tool's result; null when there is no tool of that name. `signal`: the call's caller has gone, stop it. */
  call(name: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<CallToolResult | null>;
}

export interface ServerInfo {
  name: string;
  version: string;
  instructions?: string;
}

export function buildMcpServer(info: ServerInfo, source: ToolSource): Server {
  const server = new Server(
    { name: info.name, version: info.version },
    { capabilities: { tools: {} }, ...(info.instructions ? { instructions: info.instructions } : {}) },
  );
  // One page holds every tool, so no cursor is ever issued: one given is invalid (the pagination utility's -32602).
  server.setRequestHandler(methodOnly('tools/list'), async (raw) => {
    const request = paramsOf(ListToolsRequestSchema, raw);
    if (request.params?.cursor !== undefined) throw protocolError(ErrorCode.InvalidParams, 'invalid cursor: tools/list answers every tool on one page');
    return { tools: await source.list() };
  });
  // extra.signal: the SDK aborts it when the client cancels the request (notifications/cancelled) or the transport
  // closes (the stdio proxy's client went away); the HTTP route adds its own client's leaving (sourceFor).
  server.setRequestHandler(methodOnly('tools/call'), async (raw, extra) => {
    const request = paramsOf(CallToolRequestSchema, raw);
    const result = await source.call(request.params.name, (request.params.arguments ?? {}) as Record<string, unknown>, extra.signal);
    if (result === null) throw protocolError(ErrorCode.InvalidParams, `unknown tool ${request.params.name}`);
    return result;
  });
  return server;
}

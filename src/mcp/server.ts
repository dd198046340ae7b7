// One MCP server over any tool source, with the official SDK's Server: the node's own tools at POST /api/mcp
// (http/routes/mcp.ts) and a remote node's tools over stdio (proxy.ts, `svc-node mcp`). The SDK's McpServer wraps the
// same Server but validates arguments itself and reduces every failure to a message; here the tools' own routes
// validate (the same 400 SVC_INVALID_INPUT as over HTTP) and a tool error keeps its part-7 code (result.ts), and a
// proxy relays another server's JSON Schemas as they are.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';

export interface ToolSource {
  list(): Promise<Tool[]>;
  /** The tool's result; null when there is no tool of that name. */
  call(name: string, args: Record<string, unknown>): Promise<CallToolResult | null>;
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
  server.setRequestHandler(ListToolsRequestSchema, async (request) => {
    if (request.params?.cursor !== undefined) throw new McpError(ErrorCode.InvalidParams, 'invalid cursor: tools/list answers every tool on one page');
    return { tools: await source.list() };
  });
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const result = await source.call(request.params.name, (request.params.arguments ?? {}) as Record<string, unknown>);
    if (result === null) throw new McpError(ErrorCode.InvalidParams, `unknown tool ${request.params.name}`);
    return result;
  });
  return server;
}

// The MCP bridge (spec 4.1): POST /api/mcp is the official SDK's Streamable HTTP transport in stateless mode (a server
// and transport per request, JSON responses, no session), over this node's tools (local-tools.ts). GET /api/mcp is
// the discovery JSON, except a GET that asks for text/event-stream — the SDK client's request for a server-initiated
// stream, which this node does not offer — which gets 405, as the transport specification says, so the client goes on.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { ServiceError } from '../../kernel/errors.js';
import { TOOL_INSTRUCTIONS } from '../../mcp/instructions.js';
import type { HttpKit } from '../kit.js';
import { responds, body } from '../validate.js';
import { jsonRpcRequest, jsonRpcResponse, mcpDiscoveryResponse } from '../responses.js';
import type { RouteGroup } from '../route-group.js';
import type { LocalTools } from '../local-tools.js';
import { PLANNED_TOOLS } from '../tool-table.js';
import { clientGone } from '../client-gone.js';

/** Headers the transport needs, from a request that may come from curl or a forwarding node without them. */
function transportHeaders(ctx: Context): Headers {
  const headers = new Headers();
  for (const [k, v] of Object.entries(ctx.req.headers)) {
    if (v === undefined || k === 'content-length' || k === 'transfer-encoding') continue;
    headers.set(k, Array.isArray(v) ? v.join(', ') : v);
  }
  // Every answer here is JSON (enableJsonResponse): a client that did not list both types is served the same.
  const accept = headers.get('accept') ?? '';
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) headers.set('accept', 'application/json, text/event-stream');
  headers.set('content-type', 'application/json');
  return headers;
}

/**
 * The MCP transport's DNS-rebinding rule (a server MUST validate Origin, 403 when it is present and invalid): a tool
 * call from a web page is served only from the node's own origin — its public URL's, or the loopback names of its
 * port. A page elsewhere whose name was rebound to this node would otherwise call every tool with the caller's key.
 * Clients that are no browser send no Origin and are not concerned.
 */
function refuseForeignOrigin(ctx: Context, kit: HttpKit): void {
  const origin = ctx.get('origin');
  if (!origin) return;
  const own = new URL(kit.publicUrl());
  const port = own.port === '' ? '' : `:${own.port}`;
  const allowed = [own.origin, `http://127.0.0.1${port}`, `http://localhost${port}`, `http://[::1]${port}`];
  if (allowed.includes(origin)) return;
  throw new ServiceError(403, 'SVC_FORBIDDEN', `MCP requests from a page of another origin are refused (DNS rebinding protection): Origin ${origin}`, {
    origin,
    allowed,
  });
}

export interface McpRouteServices {
  /** This node's tools: requests to its own routes on the caller's behalf. */
  tools: LocalTools;
}

export function mcpRoutes(s: McpRouteServices): RouteGroup {
  return { name: 'mcp', register: (router, kit) => registerMcpRoutes(router, kit, s) };
}

function registerMcpRoutes(router: Router, kit: HttpKit, { tools }: McpRouteServices): void {
  router.get('/api/mcp', responds(mcpDiscoveryResponse), (ctx) => {
    if ((ctx.get('accept') ?? '').includes('text/event-stream')) {
      ctx.set('Allow', 'POST');
      throw new ServiceError(405, 'SVC_METHOD_NOT_ALLOWED', 'this node offers no server-initiated MCP stream: POST JSON-RPC to /api/mcp', { allow: ['POST'] });
    }
    const d = kit.discovery(router);
    ctx.body = {
      ok: true,
      name: 'svc-node',
      node: kit.nodeId(),
      url: kit.publicUrl(),
      machine_hash: tools.digest,
      kernel_version: kit.config.kernel.version,
      mcp: { endpoint: '/api/mcp', transport: 'streamable-http', stateless: true, methods: ['initialize', 'tools/list', 'tools/call'] },
      counts: { ...(d.counts as Record<string, unknown>), tools: tools.tools.length },
      tools: tools.tools.map((t) => ({ name: t.name, description: t.description })),
      endpoints: d.endpoints,
      not_here: [...(d.not_here as string[]), ...PLANNED_TOOLS.map((t) => `${t.name} (tool: ${t.waits_for})`)],
    };
  });

  router.post('/api/mcp', responds(jsonRpcResponse), body(jsonRpcRequest, { inHandler: true }), async (ctx) => {
    refuseForeignOrigin(ctx, kit);
    // The SDK is imported at the first call (the runtime keeps it after): its server and JSON Schema validator are
    // modules a node that serves no tool call would load at every start (docs/performance.md, "Start-up").
    const [{ buildMcpServer, refusedMessage }, { WebStandardStreamableHTTPServerTransport }] = await Promise.all([
      import('../../mcp/server.js'),
      import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'),
    ]);
    const refused = refusedMessage(ctx.request.body);
    if (refused !== null) {
      ctx.status = refused.status;
      ctx.body = refused.body;
      return;
    }
    const server = buildMcpServer(
      { name: 'svc-node', version: kit.config.kernel.version, instructions: TOOL_INSTRUCTIONS },
      // The SDK aborts a handler's signal only on its client's cancel or on the transport's close, which here comes
      // after the answer: the HTTP client leaving is this request's own close (clientGone).
      tools.sourceFor(kit.selfApi.targetOf(ctx), ctx.state.traceId as string, clientGone(ctx)),
    );
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    try {
      await server.connect(transport);
      const url = `http://${ctx.get('host') || 'localhost'}${ctx.originalUrl}`;
      const res = await transport.handleRequest(new Request(url, { method: 'POST', headers: transportHeaders(ctx) }), { parsedBody: ctx.request.body });
      ctx.status = res.status;
      const type = res.headers.get('content-type');
      if (type) ctx.type = type;
      ctx.body = await res.text();
    } finally {
      await transport.close().catch(() => undefined);
      await server.close().catch(() => undefined);
    }
  });
}

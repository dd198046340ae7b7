// The tool source of `svc-node mcp --url URL --key KEY`: a node's own MCP endpoint (POST URL/api/mcp) through the
// official SDK client over Streamable HTTP, so the stdio server offers exactly the tools, schemas and results of
// that node. The connection is opened at the first request and again after a failure (a desktop assistant may
// start before the node does). A call its client cancels (notifications/cancelled) cuts its HTTP request to the node,
// so the node sees its client leave and stops the call's work (http/client-gone.ts): the node is stateless, and a
// cancel notification relayed to it would arrive in another request, for nobody.
import { AsyncLocalStorage } from 'node:async_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { protocolError, type ToolSource } from './server.js';

export interface ProxyOptions {
  url: string;
  key: string | null;
  clientName: string;
  version: string;
}

export class RemoteTools implements ToolSource {
  private client: Client | null = null;
  private connecting: Promise<Client> | null = null;
  /**
   * The signal of the call whose request the SDK's transport is sending: the transport takes no signal per request,
   * and sends it in the call's own async context, where this finds it.
   */
  private readonly callSignal = new AsyncLocalStorage<AbortSignal>();

  constructor(private readonly options: ProxyOptions) {}

  private endpoint(): URL {
    return new URL('/api/mcp', this.options.url);
  }

  private async connect(): Promise<Client> {
    if (this.client) return this.client;
    this.connecting ??= (async () => {
      const headers: Record<string, string> = this.options.key ? { authorization: `Bearer ${this.options.key}` } : {};
      const client = new Client({ name: this.options.clientName, version: this.options.version });
      await client.connect(new StreamableHTTPClientTransport(this.endpoint(), { requestInit: { headers }, fetch: (url, init) => this.fetch(url, init) }));
      this.client = client;
      return client;
    })().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private async withClient<T>(fn: (c: Client) => Promise<T>): Promise<T> {
    const client = await this.connect();
    try {
      return await fn(client);
    } catch (err) {
      // The remote node's protocol error, relayed with its code and its own words (the client's McpError prefixed
      // them with "MCP error <code>: ", which the caller's client adds again).
      if (err instanceof McpError) throw protocolError(err.code, err.message.replace(/^MCP error -?\d+: /, ''));
      // A failed exchange may have been a lost node: reconnect next time. Closing matters too: the SDK keeps the
      // response handler of a request whose send failed (Protocol.request), and only a close drops it. A newer client,
      // made after another call's failure, is left to its callers.
      if (this.client === client) this.client = null;
      await client.close().catch(() => undefined);
      throw err;
    }
  }

  /** fetch, cut too when the call it is sent for is cancelled. */
  private fetch(url: string | URL, init?: RequestInit): Promise<Response> {
    const call = this.callSignal.getStore();
    if (!call) return fetch(url, init);
    return fetch(url, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, call]) : call });
  }

  async list(): Promise<Tool[]> {
    return this.withClient(async (c) => (await c.listTools()).tools);
  }

  async call(name: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<CallToolResult | null> {
    if (!signal) return this.withClient(async (c) => (await c.callTool({ name, arguments: args })) as CallToolResult);
    return this.withClient((c) =>
      this.callSignal.run(signal, async () => (await c.callTool({ name, arguments: args }, undefined, { signal })) as CallToolResult),
    );
  }

  async close(): Promise<void> {
    await this.client?.close();
    this.client = null;
  }
}

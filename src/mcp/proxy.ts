// The tool source of `svc-node mcp --url URL --key KEY`: a node's own MCP endpoint (POST URL/api/mcp) through the
// official SDK client over Streamable HTTP, so the stdio server offers exactly the tools, schemas and results of
// that node. The connection is opened at the first request and again after a failure (a desktop assistant may
// start before the node does).
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

  constructor(private readonly options: ProxyOptions) {}

  private endpoint(): URL {
    return new URL('/api/mcp', this.options.url);
  }

  private async connect(): Promise<Client> {
    if (this.client) return this.client;
    this.connecting ??= (async () => {
      const headers: Record<string, string> = this.options.key ? { authorization: `Bearer ${this.options.key}` } : {};
      const client = new Client({ name: this.options.clientName, version: this.options.version });
      await client.connect(new StreamableHTTPClientTransport(this.endpoint(), { requestInit: { headers } }));
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
      // A failed exchange may have been a lost node: reconnect next time.
      this.client = null;
      await client.close().catch(() => undefined);
      throw err;
    }
  }

  async list(): Promise<Tool[]> {
    return this.withClient(async (c) => (await c.listTools()).tools);
  }

  async call(name: string, args: Record<string, unknown>): Promise<CallToolResult | null> {
    return this.withClient(async (c) => (await c.callTool({ name, arguments: args })) as CallToolResult);
  }

  async close(): Promise<void> {
    await this.client?.close();
    this.client = null;
  }
}

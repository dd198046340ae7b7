// `svc-node mcp --url URL --key KEY`: the node's MCP tools over stdio, for desktop assistants that launch an MCP
// server as a process. The official SDK's stdio transport on stdin/stdout (nothing else is written to stdout); every
// tools/list and tools/call is relayed to the node's own /api/mcp (mcp/proxy.ts), so the tools, their schemas, the
// charges and the errors are that node's. A call the client cancels is cut at the node too (mcp/proxy.ts).
import type { Command } from 'commander';

export const STDIO_INSTRUCTIONS =
  'Tools of a Deterministic Computation Service node (relayed from its /api/mcp). Results are sealed with an HMAC receipt; pass a result unchanged to svc_verify to check it.';

export async function runStdioBridge(opts: { url: string; key: string | null; version: string }): Promise<() => Promise<void>> {
  // Loaded here, not at the top: the SDK and the tool table would cost every other command half a second of start-up.
  const [{ StdioServerTransport }, { buildMcpServer }, { RemoteTools }] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/stdio.js'),
    import('../mcp/server.js'),
    import('../mcp/proxy.js'),
  ]);
  const tools = new RemoteTools({ url: opts.url, key: opts.key, clientName: 'svc-node-mcp-stdio', version: opts.version });
  const server = buildMcpServer({ name: 'svc-node', version: opts.version, instructions: STDIO_INSTRUCTIONS }, tools);
  const transport = new StdioServerTransport();
  await server.connect(transport);
  return async () => {
    await server.close();
    await tools.close();
  };
}

export function mcpCommand(program: Command, version: string): void {
  program
    .command('mcp')
    .description("serve a node's MCP tools over stdio (for desktop assistants): every call goes to the node's /api/mcp")
    .requiredOption('--url <url>', 'the node, e.g. http://127.0.0.1:8787')
    .option('--key <key>', 'API key the tools use (Bearer); without it only keyless tools work')
    .action(async (opts: { url: string; key?: string }) => {
      try {
        new URL(opts.url);
      } catch {
        process.stderr.write(`svc-node: --url must be a URL such as http://127.0.0.1:8787\n`);
        process.exit(2);
      }
      const stop = await runStdioBridge({ url: opts.url, key: opts.key ?? null, version });
      const end = () => void stop().finally(() => process.exit(0));
      process.stdin.on('end', end);
      process.on('SIGINT', end);
      process.on('SIGTERM', end);
    });
}

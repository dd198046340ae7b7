// `svc-node mcp` over stdio with the official SDK's stdio client: the built CLI (dist, not tsx) relays the node's
// tools, results and part-7 errors, and a call its client cancels is cut at the node too.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { call, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { ROOT } from '../helpers/cli.js';
import { holdSolves } from '../helpers/held-solves.js';
import { waitUntil } from '../helpers/wait.js';

const DIST_CLI = join(ROOT, 'dist/cli/index.js');
let t: TestNode;
let client: Client;

beforeAll(async () => {
  if (!existsSync(DIST_CLI)) throw new Error('dist/cli/index.js is missing: run `npm run build` first (CI builds before testing)');
  t = await startTestNode({ solverThreads: 0, sealWorker: false }, { initialCredits: 1000 });
  const { key } = await zkIdentity(t.url, 'mcp-stdio');
  client = new Client({ name: 'stdio-test', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [DIST_CLI, 'mcp', '--url', t.url, '--key', key], stderr: 'pipe' }));
});
afterAll(async () => {
  await client?.close();
  await t?.destroy();
});

describe('svc-node mcp (stdio)', () => {
  it('offers the node’s tools and relays calls, results and errors', async () => {
    const { tools } = await client.listTools();
    const http = await call(t.url, 'POST', '/api/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(tools.map((x) => x.name)).toEqual(http.body.result.tools.map((x: { name: string }) => x.name));
    const r = (await client.callTool({
      name: 'svc_compute',
      arguments: { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } },
    })) as CallToolResult;
    const result = r.structuredContent as Record<string, unknown>;
    expect(result.value).toBe(9);
    const v = (await client.callTool({ name: 'svc_verify', arguments: { result } })) as CallToolResult;
    expect((v.structuredContent as { valid: boolean }).valid).toBe(true);
    const bad = (await client.callTool({ name: 'svc_shift', arguments: { variance: -1 } })) as CallToolResult;
    expect(bad.isError).toBe(true);
    expect((bad.structuredContent as { error: { code: string } }).error.code).toBe('SVC_INVALID_INPUT');
    // A protocol error of the node is relayed with its code and its words, prefixed once.
    const unknown = await client.callTool({ name: 'nope', arguments: {} }).catch((err: Error & { code?: number }) => err);
    expect(unknown).toMatchObject({ code: -32602, message: 'MCP error -32602: unknown tool nope' });
  });

  it('a call its client cancels (notifications/cancelled) is cut at the node: the solver run it started is told', async () => {
    const held = holdSolves(t.node.compute);
    try {
      const cancel = new AbortController();
      const pending = client
        .callTool({ name: 'svc_http', arguments: { method: 'POST', path: '/api/svc/heat', body: {} } }, undefined, { signal: cancel.signal })
        .catch((e: unknown) => e);
      await waitUntil(() => held.started === 1, 'the relayed call to start its solver run', 15_000);
      expect(held.gone).toEqual([]);
      cancel.abort(new Error('the user cancelled'));
      expect(await pending).toBeInstanceOf(Error);
      const [reason] = await waitUntil(() => held.gone.length > 0 && held.gone, 'the node to see the proxy leave', 10_000);
      expect(reason).toMatchObject({ status: 499, code: 'SVC_BAD_REQUEST' });
      expect(held.started).toBe(1);
    } finally {
      held.restore();
    }
    // The proxy keeps serving: the next call goes through.
    const r = (await client.callTool({ name: 'svc_pulse', arguments: {} })) as CallToolResult;
    expect(r.isError).toBeFalsy();
  }, 40_000);
});

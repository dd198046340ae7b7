// The stdio proxy's tool source (RemoteTools) against a fake MCP endpoint, no node: a request whose send fails is
// left registered by the SDK (Protocol.request keeps its response handler when transport.send rejects), so the proxy
// closes that client, which drops every handler it held, and the next call connects anew.
import { describe, expect, it } from 'vitest';
import { RemoteTools } from '../../src/mcp/proxy.js';

/** What the SDK's client keeps per request in flight (internal; the leak this test is about). */
type WithHandlers = { _responseHandlers: Map<number, unknown> };

/** A stateless MCP endpoint answering initialize and tools/list; `fail` makes its tools/list sends fail. */
function fakeEndpoint(state: { fail: boolean; initializes: number }) {
  return async (_url: string | URL, init?: RequestInit): Promise<Response> => {
    if ((init?.method ?? 'GET') !== 'POST') return new Response(null, { status: 405 });
    const message = JSON.parse(String(init!.body)) as { id?: number; method: string; params?: { protocolVersion?: string } };
    if (message.id === undefined) return new Response(null, { status: 202 });
    if (message.method === 'initialize') {
      state.initializes++;
      const result = { protocolVersion: message.params!.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'fake', version: '1' } };
      return Response.json({ jsonrpc: '2.0', id: message.id, result });
    }
    if (state.fail) throw new TypeError('fetch failed');
    return Response.json({ jsonrpc: '2.0', id: message.id, result: { tools: [{ name: 'svc_x', inputSchema: { type: 'object' } }] } });
  };
}

describe('RemoteTools: a failed send', () => {
  it('closes the client (its response handlers dropped) and the next call reconnects', async () => {
    const state = { fail: false, initializes: 0 };
    const tools = new RemoteTools({ url: 'http://127.0.0.1:9', key: null, clientName: 'test', version: '1' });
    // The transport's fetch goes through the instance's fetch (patched here: no server is needed).
    (tools as unknown as { fetch: ReturnType<typeof fakeEndpoint> }).fetch = fakeEndpoint(state);
    try {
      expect((await tools.list()).map((t) => t.name)).toEqual(['svc_x']);
      const first = (tools as unknown as { client: WithHandlers | null }).client!;
      expect(first._responseHandlers.size).toBe(0);

      state.fail = true;
      await expect(tools.list()).rejects.toThrow(/fetch failed/);
      // The SDK left the failed request's handler registered; closing the client dropped it, and the client with it.
      expect(first._responseHandlers.size).toBe(0);
      expect((tools as unknown as { client: WithHandlers | null }).client).toBeNull();

      state.fail = false;
      expect((await tools.list()).map((t) => t.name)).toEqual(['svc_x']);
      expect(state.initializes).toBe(2);
    } finally {
      await tools.close();
    }
  });
});

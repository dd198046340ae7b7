// The MCP bridge with the official SDK client over Streamable HTTP against a real node: initialize, tools/list,
// tools/call (svc_compute, a solver, svc_verify on its own output), a call whose client leaves, part-7 errors as tool
// errors, discovery.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { PLANNED_TOOLS } from '../../src/http/tool-table.js';
import { holdSolves } from '../helpers/held-solves.js';
import { waitUntil } from '../helpers/wait.js';

let t: TestNode;
let key: string;
let client: Client;

async function connect(headers: Record<string, string>): Promise<Client> {
  const c = new Client({ name: 'mcp-test', version: '1.0.0' });
  await c.connect(new StreamableHTTPClientTransport(new URL('/api/mcp', t.url), { requestInit: { headers } }));
  return c;
}

const SPEC_TOOLS = [
  'svc_api_catalog',
  'svc_http',
  'svc_compute',
  'svc_pulse',
  'svc_verify',
  'svc_lattice',
  'svc_shift',
  'svc_field_status',
  'svc_list_operators',
  'svc_auto',
  'svc_mmio',
  'svc_stream',
  'svc_chain_event',
  'svc_chain_state',
  'svc_chain_pohc_validate',
  'svc_contract_deploy',
  'svc_contract_transition',
  'svc_tally_balance',
];

beforeAll(async () => {
  t = await startTestNode({ solverThreads: 0, sealWorker: false }, { initialCredits: 1000 });
  key = (await zkIdentity(t.url, 'mcp')).key;
  client = await connect(bearer(key));
});
afterAll(async () => {
  await client?.close();
  await t?.destroy();
});

const structured = (r: unknown) => (r as CallToolResult).structuredContent as Record<string, any>;

describe('MCP over Streamable HTTP (official SDK client)', () => {
  it('initializes: server info and tools capability', () => {
    expect(client.getServerVersion()?.name).toBe('svc-node');
    expect(client.getServerCapabilities()?.tools).toBeDefined();
    expect(client.getInstructions()).toMatch(/svc_verify/);
  });

  it('lists every built spec tool and one tool per solver, each with a valid JSON Schema', async () => {
    const { tools } = await client.listTools();
    const solvers = t.node.compute.registry.ids();
    const built = SPEC_TOOLS.filter((n) => !PLANNED_TOOLS.some((p) => p.name === n));
    expect(tools.length).toBe(built.length + solvers.length);
    const names = new Set(tools.map((x) => x.name));
    for (const n of built) expect(names.has(n)).toBe(true);
    for (const id of solvers) expect(names.has(`svc_${id}`)).toBe(true);
    for (const p of PLANNED_TOOLS) expect(names.has(p.name)).toBe(false);
    const ajv = new AjvJsonSchemaValidator();
    for (const tool of tools) {
      expect(tool.inputSchema.type).toBe('object');
      expect(() => ajv.getValidator(tool.inputSchema), tool.name).not.toThrow();
    }
    // Generated from the solver's own zod schema: its keys, its bounds.
    const heat = tools.find((x) => x.name === 'svc_heat')!.inputSchema as any;
    expect(heat.properties.nx).toMatchObject({ type: 'integer', minimum: 11, maximum: 1001 });
    expect(heat.additionalProperties).toBe(false);
  });

  it('svc_field_status reads the field now: tick, phase and R(t) within its bound, the thresholds, the mesh', async () => {
    const before = (await call(t.url, 'GET', '/api/svc/pulse')).body.svcond as number;
    const r = (await client.callTool({ name: 'svc_field_status', arguments: {} })) as CallToolResult;
    expect(r.isError).toBeFalsy();
    const f = structured(r);
    expect(f.node).toBe(t.node.nodeId);
    expect(f.svcond).toBeGreaterThanOrEqual(before);
    expect(f.svcond - before).toBeLessThanOrEqual(2);
    expect(f.phase).toBeGreaterThanOrEqual(0);
    expect(f.phase).toBeLessThan(1);
    // Rule 2: R(t) = 1 + 1e-3 sin(2 pi phase + phi0), phi0 = 0 by default; |R - 1| <= 1e-3.
    expect(f.R_t).toBeCloseTo(1 + 1e-3 * Math.sin(2 * Math.PI * f.phase), 12);
    expect(f.modulation).toMatchObject({ amplitude: 1e-3, pulse_hz: 1.287, phi0: 0, within_bound: true });
    expect(f.modulation.deviation).toBeCloseTo(Math.abs(f.R_t - 1), 15);
    expect(f.zeqond_ns).toBe(777000777);
    expect(f.gate).toEqual({ tolerance: 1e-3, precision_bound: 1e-4 });
    expect(f.parity).toEqual({ variance_threshold: 0.0091 });
    // This node runs without a mesh: nobody to agree with.
    expect(f.mesh).toEqual({ enabled: false, coherenceScore: null, peers: 0, recentGossipCount: 0 });
    // The same answer keyless over HTTP (the tool is a request to the route).
    const http = await call(t.url, 'GET', '/api/svc/field/status');
    expect(http.status).toBe(200);
    expect(Object.keys(http.body).sort()).toEqual(Object.keys(f).sort());
  });

  it('svc_compute seals a result, svc_verify accepts it and rejects it tampered', async () => {
    const r = (await client.callTool({
      name: 'svc_compute',
      arguments: { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } },
    })) as CallToolResult;
    expect(r.isError).toBeFalsy();
    const result = structured(r);
    expect(result.value).toBe(9);
    expect(typeof result.svcProof).toBe('string');
    expect(result.tally_charge).toBeTruthy();
    const ok = structured(await client.callTool({ name: 'svc_verify', arguments: { result } }));
    expect(ok.valid).toBe(true);
    const bad = structured(await client.callTool({ name: 'svc_verify', arguments: { result: { ...result, value: 10 } } }));
    expect(bad.valid).toBe(false);
  });

  it('a solver tool runs the solver and seals', async () => {
    const r = (await client.callTool({ name: 'svc_heat', arguments: { nx: 51, t_end_s: 1 } })) as CallToolResult;
    expect(r.isError).toBeFalsy();
    const body = structured(r);
    expect(body.solver ?? body.operator_id).toBeTruthy();
    expect(Number.isFinite(body.value)).toBe(true);
    expect(structured(await client.callTool({ name: 'svc_verify', arguments: { result: body } })).valid).toBe(true);
  });

  it('a tool call stops when its client leaves: the solver run its loopback request started is told, and ends', async () => {
    const held = holdSolves(t.node.compute);
    const leaving = await connect(bearer(key));
    try {
      const pending = leaving.callTool({ name: 'svc_http', arguments: { method: 'POST', path: '/api/svc/heat', body: {} } }).catch((e: unknown) => e);
      await waitUntil(() => held.started === 1, 'the tool call to start its solver run');
      // Closing the SDK client aborts its HTTP request: the MCP request's connection closes mid-call.
      await leaving.close();
      await pending;
      const [reason] = await waitUntil(() => held.gone.length > 0 && held.gone, 'the run to be told its client left');
      expect(reason).toMatchObject({ status: 499, code: 'SVC_BAD_REQUEST' });
      expect(held.started).toBe(1);
    } finally {
      held.restore();
    }
  });

  it('errors are tool errors carrying the part-7 code', async () => {
    const bad = (await client.callTool({ name: 'svc_compute', arguments: { domain: 'mechanics', operators: ['KO42', 'NOPE'], inputs: {} } })) as CallToolResult;
    expect(bad.isError).toBe(true);
    expect(structured(bad).error.code).toBe('SVC_INVALID_OPERATOR');
    expect((bad.content[0] as { text: string }).text).toMatch(/^SVC_INVALID_OPERATOR/);
    const input = (await client.callTool({ name: 'svc_heat', arguments: { nx: 4 } })) as CallToolResult;
    expect(structured(input).error.code).toBe('SVC_INVALID_INPUT');
    // No key: the route's own 401.
    const anon = await connect({});
    try {
      const r = (await anon.callTool({ name: 'svc_tally_balance', arguments: {} })) as CallToolResult;
      expect(structured(r).error.code).toBe('SVC_NO_KEY');
    } finally {
      await anon.close();
    }
    await expect(client.callTool({ name: 'svc_nope', arguments: {} })).rejects.toThrow(/^MCP error -32602: unknown tool svc_nope$/);
  });

  it('the state-machine, stream and register tools act through their routes', async () => {
    const owner = await zkIdentity(t.url, 'mcp-chain');
    const c = await connect(bearer(owner.key));
    try {
      const ev = structured(await c.callTool({ name: 'svc_chain_event', arguments: { slug: owner.slug, payload: { reading: 42 } } }));
      expect(ev.slug).toBe(owner.slug);
      expect(ev.row.seq).toBeGreaterThanOrEqual(1);
      const contract = {
        name: 'door',
        states: ['closed', 'open'],
        initial: 'closed',
        variables: { opened: 0 },
        transitions: [{ from: 'closed', on: 'open', to: 'open', effects: [{ add: 'opened', by: { value: 1 } }] }],
      };
      const deployed = structured(await c.callTool({ name: 'svc_contract_deploy', arguments: { slug: owner.slug, contract } }));
      expect(deployed.state).toBe('closed');
      const moved = structured(
        await c.callTool({ name: 'svc_contract_transition', arguments: { slug: owner.slug, contract_id: deployed.contract_id, event: { type: 'open' } } }),
      );
      expect(moved.state).toBe('open');
      const refused = (await c.callTool({
        name: 'svc_contract_transition',
        arguments: { slug: owner.slug, contract_id: deployed.contract_id, event: { type: 'open' } },
      })) as CallToolResult;
      expect(refused.isError).toBe(true);
      expect(structured(refused).error.code).toBe('SVC_ILLEGAL_TRANSITION');
      const stream = structured(await c.callTool({ name: 'svc_stream', arguments: { solver: 'lorenz', inputs: {} } }));
      expect(stream.id).toMatch(/./);
      expect(typeof stream.key).toBe('string');
      const mmio = structured(await c.callTool({ name: 'svc_mmio', arguments: {} }));
      expect(Array.isArray(mmio.registers)).toBe(true);
    } finally {
      await c.close();
    }
  });

  it('svc_http reaches this node’s API only', async () => {
    const r = structured(await client.callTool({ name: 'svc_http', arguments: { method: 'GET', path: '/api/tally/balance' } }));
    expect(r.free).toBeGreaterThan(0);
    const out = (await client.callTool({ name: 'svc_http', arguments: { method: 'GET', path: 'http://example.com/api' } })) as CallToolResult;
    expect(structured(out).error.code).toBe('SVC_INVALID_INPUT');
    const loop = (await client.callTool({ name: 'svc_http', arguments: { method: 'POST', path: '/api/mcp' } })) as CallToolResult;
    expect(structured(loop).error.code).toBe('SVC_INVALID_INPUT');
    // A push stream never ends: refused however its path is written (the router takes each of these as the stream).
    for (const path of [
      '/api/svc/pulse/stream',
      '/api/svc/pulse/stream/',
      '/api/svc/pulse/stream#x',
      '/api/svc/pulse/str%65am',
      '/API/SVC/PULSE/STREAM',
      '/api/mesh/events/',
    ]) {
      const pushed = (await client.callTool({ name: 'svc_http', arguments: { method: 'GET', path } })) as CallToolResult;
      expect(structured(pushed).error.code, path).toBe('SVC_INVALID_INPUT');
    }
  });

  it('GET /api/mcp: discovery JSON; 405 for an event-stream GET', async () => {
    const d = await call(t.url, 'GET', '/api/mcp');
    expect(d.status).toBe(200);
    expect(d.body).toMatchObject({ ok: true, name: 'svc-node', url: t.url });
    expect(d.body.machine_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(d.body.counts).toMatchObject({ solvers: t.node.compute.registry.ids().length });
    expect(d.body.counts.tools).toBe(d.body.tools.length);
    // Only the tool the spec names without a capability to serve it is not here.
    expect(d.body.not_here.filter((x: string) => x.startsWith('svc_'))).toEqual(PLANNED_TOOLS.map((p) => `${p.name} (tool: ${p.waits_for})`));
    expect(d.body.tools.map((x: { name: string }) => x.name)).toEqual(expect.arrayContaining(['svc_mmio', 'svc_stream', 'svc_contract_transition']));
    const sse = await call(t.url, 'GET', '/api/mcp', undefined, { accept: 'text/event-stream' });
    expect(sse.status).toBe(405);
  });

  it('a plain JSON-RPC POST (curl) gets a JSON-RPC result', async () => {
    const r = await call(t.url, 'POST', '/api/mcp', { jsonrpc: '2.0', id: 7, method: 'tools/list' });
    expect(r.status).toBe(200);
    expect(r.body.id).toBe(7);
    expect(r.body.result.tools.length).toBeGreaterThan(30);
  });

  it('JSON that is no JSON-RPC request is -32600 Invalid Request; a cursor tools/list never issued is -32602', async () => {
    for (const body of [{ foo: 1 }, { jsonrpc: '1.0', id: 1, method: 'ping' }, []]) {
      const r = await call(t.url, 'POST', '/api/mcp', body);
      expect([r.status, r.body], JSON.stringify(body)).toEqual([
        400,
        { jsonrpc: '2.0', error: { code: -32600, message: expect.stringMatching(/^Invalid Request/) }, id: null },
      ]);
    }
    // Params that do not fit their method: -32602 naming the member, with the request's id.
    const noName = await call(t.url, 'POST', '/api/mcp', { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { arguments: {} } });
    expect(noName.body).toMatchObject({ id: 9, error: { code: -32602, message: expect.stringMatching(/^Invalid params: params\.name: /) } });
    const noParams = await call(t.url, 'POST', '/api/mcp', { jsonrpc: '2.0', id: 10, method: 'initialize' });
    expect(noParams.body).toMatchObject({ id: 10, error: { code: -32602, message: expect.stringMatching(/^Invalid params: params/) } });
    // In a batch too, each member whose params do not fit is -32602 (the SDK's message for tools/call), never -32603;
    // the others are answered.
    const batch = await call(t.url, 'POST', '/api/mcp', [
      { jsonrpc: '2.0', id: 11, method: 'tools/call', params: { arguments: {} } },
      { jsonrpc: '2.0', id: 12, method: 'tools/list' },
      { jsonrpc: '2.0', id: 13, method: 'tools/list', params: { cursor: 5 } },
    ]);
    expect(batch.status, batch.text).toBe(200);
    const byId = new Map((batch.body as { id: number }[]).map((m) => [m.id, m]));
    expect(byId.get(11)).toMatchObject({ error: { code: -32602, message: expect.stringMatching(/Invalid tools\/call request: .*"name"/s) } });
    expect(byId.get(12)).toMatchObject({ result: { tools: expect.arrayContaining([expect.objectContaining({ name: 'svc_compute' })]) } });
    expect(byId.get(13)).toMatchObject({ error: { code: -32602, message: expect.stringMatching(/^Invalid params: params\.cursor: /) } });
    const cursor = await call(t.url, 'POST', '/api/mcp', { jsonrpc: '2.0', id: 3, method: 'tools/list', params: { cursor: 'garbage' } });
    expect(cursor.status).toBe(200);
    expect(cursor.body).toMatchObject({ id: 3, error: { code: -32602, message: expect.stringContaining('invalid cursor') } });
  });

  it("a method named after an Object.prototype member is -32601 Method not found, with the request's id", async () => {
    let id = 20;
    for (const method of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf']) {
      const r = await call(t.url, 'POST', '/api/mcp', { jsonrpc: '2.0', id: ++id, method });
      expect(r.status, method).toBe(200);
      expect(r.body, method).toMatchObject({ jsonrpc: '2.0', id, error: { code: -32601, message: expect.stringMatching(/^Method not found/) } });
    }
    // In a batch, beside a method that is served.
    const batch = await call(t.url, 'POST', '/api/mcp', [
      { jsonrpc: '2.0', id: 31, method: 'constructor' },
      { jsonrpc: '2.0', id: 32, method: 'tools/list' },
    ]);
    expect(batch.status, batch.text).toBe(200);
    const byId = new Map((batch.body as { id: number }[]).map((m) => [m.id, m]));
    expect(byId.get(31)).toMatchObject({ error: { code: -32601 } });
    expect(byId.get(32)).toMatchObject({ result: { tools: expect.any(Array) } });
  });

  it('a POST from a page of another origin is refused 403 (DNS rebinding); the node’s own origin and loopback are served', async () => {
    const ping = { jsonrpc: '2.0', id: 8, method: 'ping' };
    const port = new URL(t.url).port;
    for (const origin of ['http://evil.example', `http://evil.example:${port}`, 'null']) {
      const e = expectError(await call(t.url, 'POST', '/api/mcp', ping, { origin }), 403, 'SVC_FORBIDDEN');
      expect(e.origin, origin).toBe(origin);
    }
    for (const origin of [t.url, `http://localhost:${port}`]) {
      const r = await call(t.url, 'POST', '/api/mcp', ping, { origin });
      expect([r.status, r.body.id], origin).toEqual([200, 8]);
    }
  });
});

// MMIO: the manifest is pinned (a register never moves within a map version), live values are read, and the caller's
// bank needs a key.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { CALLER_REGISTERS, MMIO_VERSION, NODE_REGISTERS } from '../../src/mmio/map.js';

/** Version 1.0 of the map, written out: changing any line here is a new map version (src/mmio/map.ts). */
const PINNED = [
  '0x0000 map_version u32 1',
  '0x0008 svcond u64 tick',
  '0x0010 phase f64 1',
  '0x0018 R_t f64 1',
  '0x0020 sealed_count u64 result',
  '0x0028 peers u32 node',
  '0x002c queue_depth u32 run',
  '0x0030 coherence f64 1',
  '0x0038 zeqond_ns u64 ns',
  '0x0040 agents_running u32 agent',
  '0x1000 balance_free u64 credit',
  '0x1008 balance_paid u64 credit',
  '0x1010 balance_total u64 credit',
  '0x1018 usage_today u32 computation',
  '0x101c allowance_today u32 computation',
  '0x1020 open_streams u32 connection',
  '0x1024 reactors u32 reactor',
  '0x1028 agents u32 agent',
  '0x102c agents_total u32 agent',
];

const line = (r: { address?: string; offset: number; name: string; type: string; unit: string }) =>
  `${r.address ?? `0x${r.offset.toString(16).padStart(4, '0')}`} ${r.name} ${r.type} ${r.unit}`;

describe('MMIO', () => {
  let t: TestNode;
  beforeAll(async () => {
    t = await startTestNode({ solverThreads: 0, sealWorker: false });
  });
  afterAll(async () => {
    await t?.destroy();
  });

  it('the map is version 1.0 and pinned; offsets are unique, aligned and inside their bank', () => {
    expect(MMIO_VERSION).toBe('1.0');
    expect([...NODE_REGISTERS, ...CALLER_REGISTERS].map(line)).toEqual(PINNED);
    const all = [...NODE_REGISTERS, ...CALLER_REGISTERS];
    expect(new Set(all.map((r) => r.offset)).size).toBe(all.length);
    for (const r of all) expect(r.offset % (r.type === 'u32' ? 4 : 8)).toBe(0);
    for (const r of NODE_REGISTERS) expect(r.offset).toBeLessThan(0x1000);
    for (const r of CALLER_REGISTERS) expect(r.offset).toBeGreaterThanOrEqual(0x1000);
  });

  it('GET /api/svc/mmio: keyless manifest with live values', async () => {
    const r = await call(t.url, 'GET', '/api/svc/mmio');
    expect(r.status).toBe(200);
    expect(r.body.version).toBe('1.0');
    expect(r.body.registers.map(line)).toEqual(PINNED.slice(0, NODE_REGISTERS.length));
    const v = Object.fromEntries(r.body.registers.map((x: any) => [x.name, x.value]));
    expect(v.svcond).toBeGreaterThan(0);
    expect(v.zeqond_ns).toBe(777000777);
    expect(Math.abs(v.R_t - 1)).toBeLessThanOrEqual(1e-3);
    expect(v.peers).toBe(0);
    expect(v.coherence).toBeNull();
    for (const x of r.body.registers) expect(typeof x.description).toBe('string');
    expect(r.body.caller_registers.registers.map(line)).toEqual(PINNED.slice(NODE_REGISTERS.length));
  });

  it("GET /api/svc/mmio/registers: the caller's own registers; no key is 401", async () => {
    expectError(await call(t.url, 'GET', '/api/svc/mmio/registers'), 401, 'SVC_NO_KEY');
    const id = await zkIdentity(t.url, 'mmio-caller');
    await call(t.url, 'POST', '/api/svc/lorenz', { t_end: 0.1 }, bearer(id.key));
    const before = (await call(t.url, 'GET', '/api/svc/mmio')).body.registers.find((x: any) => x.name === 'sealed_count').value;
    expect(before).toBeGreaterThanOrEqual(1);
    const r = await call(t.url, 'GET', '/api/svc/mmio/registers', undefined, bearer(id.key));
    expect(r.status).toBe(200);
    expect(r.body.zid).toBe(id.zid);
    const v = Object.fromEntries(r.body.registers.map((x: any) => [x.name, x.value]));
    expect(v.balance_total).toBe(v.balance_free + v.balance_paid);
    expect(v.usage_today).toBe(1);
    expect(v.reactors).toBe(0);
    expect(v.agents).toBe(0);
  });

  it('discovery lists every route this session defines a body for, with that body', async () => {
    const d = (await call(t.url, 'GET', '/api')).body;
    const listed = new Set(d.endpoints.map((e: { method: string; path: string }) => `${e.method} ${e.path}`));
    expect(Object.keys(d.bodies).length).toBeGreaterThanOrEqual(15);
    for (const [route, body] of Object.entries(d.bodies) as [string, { request: string; answer: string }][]) {
      expect(listed.has(route), route).toBe(true);
      expect(body.request.length > 0 && body.answer.length > 0).toBe(true);
    }
    for (const r of ['POST /api/genesis/execute', 'GET /api/svc/mmio', 'POST /api/svc/reactor/step', 'GET /api/svc/agent/stream'])
      expect(d.not_here).not.toContain(r);
  });
});

// The reactor over HTTP: N steps equal one solver run of N segments bit for bit (three stateful solvers), /next
// commits nothing, the trajectory and telemetry survive a restart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { defaultRegistry } from '../../src/solvers/registry.js';

const registry = defaultRegistry();
/** One direct run of the whole span (the solver itself, no HTTP, no sealing). */
function wholeRun(solver: string, inputs: Record<string, unknown>) {
  const def = registry.get(solver)!;
  return def.run(def.resolve(inputs));
}

describe('reactor', () => {
  let t: TestNode;
  let key: string;
  beforeAll(async () => {
    t = await startTestNode({ solverThreads: 0, sealWorker: false }, { initialCredits: 1000 });
    key = (await zkIdentity(t.url, 'reactor-owner')).key;
  });
  afterAll(async () => {
    await t?.destroy();
  });

  const post = (path: string, body: unknown, k = key) => call(t.url, 'POST', path, body, bearer(k));

  async function steps(solver: string, inputs: Record<string, unknown>, n: number) {
    const opened = await post('/api/svc/reactor', { solver, inputs });
    expect(opened.status).toBe(201);
    expect(opened.body.step).toBe(0);
    expect(opened.body.state).toBeNull();
    let last: any = null;
    for (let i = 0; i < n; i++) {
      const r = await post('/api/svc/reactor/step', { id: opened.body.id });
      expect(r.status).toBe(200);
      expect(r.body.step).toBe(i + 1);
      expect(r.body.result.sealed).not.toBe(false);
      expect(typeof r.body.result.svcProof).toBe('string');
      expect(r.body.result.state).toEqual(r.body.state);
      last = r.body;
    }
    return { id: opened.body.id as string, last };
  }

  it('N steps equal one run of N segments, bit for bit: lorenz (3), multibody (2), evolve (2)', async () => {
    const cases: [string, Record<string, unknown>, number, Record<string, unknown>][] = [
      ['lorenz', { t_end: 1 }, 3, { t_end: 3 }],
      ['multibody', { t_end_s: 3.15576e7 / 2 }, 2, { t_end_s: 3.15576e7 }],
      ['evolve', { steps: 60, seed: 2026 }, 2, { steps: 120, seed: 2026 }],
    ];
    for (const [solver, segment, n, whole] of cases) {
      const { last } = await steps(solver, segment, n);
      const direct = wholeRun(solver, whole);
      // JSON text compares every double's shortest round-trip form: equal text, equal bits.
      expect(JSON.stringify(last.state), solver).toBe(JSON.stringify(JSON.parse(JSON.stringify(direct.state))));
      expect(Object.is(last.value, direct.value), solver).toBe(true);
    }
  });

  it('an operator chain with a feedback rule: each step feeds its result back into the inputs, sealed as a compute', async () => {
    const body = {
      chain: { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 2 } },
      feedback: { mass_kg: '{{result.value}}' },
    };
    expectError(await post('/api/svc/reactor', { ...body, feedback: { mass_kg: '{{result.nope}}' } }), 400, 'SVC_INVALID_INPUT');
    // A chain no step could run is refused at the opening, as a compute would refuse it.
    const misspelt = expectError(await post('/api/svc/reactor', { ...body, chain: { ...body.chain, inputs: { mass: 2 } } }), 400, 'SVC_INVALID_INPUT');
    expect(misspelt.closest).toContain('mass_kg');
    expectError(await post('/api/svc/reactor', { ...body, chain: { ...body.chain, inputs: { mass_kg: -2, velocity_m_s: 2 } } }), 400, 'SVC_INVALID_INPUT');
    expectError(await post('/api/svc/reactor', { ...body, chain: { ...body.chain, operators: ['KO42', 'EM_OHM_CURRENT'] } }), 400, 'SVC_INVALID_OPERATOR');
    const opened = await post('/api/svc/reactor', body);
    expect(opened.status).toBe(201);
    expect(opened.body.kind).toBe('chain');
    const next = await post('/api/svc/reactor/next', { id: opened.body.id });
    expect(next.body).toMatchObject({ committed: false, value: 4, state: { mass_kg: 4, velocity_m_s: 2 } });
    const values: number[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await post('/api/svc/reactor/step', { id: opened.body.id });
      expect(r.status).toBe(200);
      expect(r.body.result.svcProof).toMatch(/^[0-9a-f]{64}$/);
      values.push(r.body.value);
    }
    // KE = ½ m v² with v = 2 is 2m: the mass doubles every step.
    expect(values).toEqual([4, 8, 16]);
    expect((await post('/api/svc/reactor/state', { id: opened.body.id })).body.state).toEqual({ mass_kg: 16, velocity_m_s: 2 });
  });

  it('/next previews the next state and commits nothing; the step then lands on it', async () => {
    const { id } = await steps('lorenz', { t_end: 0.5 }, 1);
    const before = await post('/api/svc/reactor/state', { id });
    const balance = (await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(key))).body.total;
    const next = await post('/api/svc/reactor/next', { id });
    expect(next.status).toBe(200);
    expect(next.body.committed).toBe(false);
    expect(next.body.step).toBe(2);
    const after = await post('/api/svc/reactor/state', { id });
    expect(after.body).toEqual(before.body);
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(key))).body.total).toBe(balance);
    expect((await post('/api/svc/reactor/trajectory', { id })).body.total).toBe(1);
    const stepped = await post('/api/svc/reactor/step', { id });
    expect(JSON.stringify(stepped.body.state)).toBe(JSON.stringify(next.body.state));
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(key))).body.total).toBe(balance - 10);
  });

  it('observe and telemetry: invariant drift where the solver has one; errors in the part-7 shape', async () => {
    const { id } = await steps('multibody', { t_end_s: 3.15576e7 / 4 }, 2);
    const obs = await post('/api/svc/reactor/observe', { id });
    expect(obs.body.step).toBe(2);
    expect(obs.body.measurement.unit).toBe('J');
    expect(obs.body.invariant.name).toBe('total_energy');
    const tel = await post('/api/svc/reactor/telemetry', { id });
    expect(tel.body.steps).toBe(2);
    expect(tel.body.invariant.rel_drift).toBeLessThan(1e-3);
    expect(tel.body.ms_per_step.mean).toBeGreaterThanOrEqual(0);
    const lor = await steps('lorenz', { t_end: 0.1 }, 1);
    expect((await post('/api/svc/reactor/telemetry', { id: lor.id })).body.invariant).toBeNull();
    expectError(await post('/api/svc/reactor', { solver: 'heat', inputs: {} }), 400, 'SVC_INVALID_INPUT');
    expectError(await post('/api/svc/reactor/step', { id: 'rx_nope' }), 404, 'SVC_NOT_FOUND');
    const other = await zkIdentity(t.url, 'reactor-other');
    expectError(await post('/api/svc/reactor/state', { id }, other.key), 403, 'SVC_FORBIDDEN');
    expectError(await call(t.url, 'POST', '/api/svc/reactor/state', { id }), 401, 'SVC_NO_KEY');
  });

  it('the trajectory (paged) and the state survive a restart, and stepping goes on from there', async () => {
    const { id, last } = await steps('lorenz', { t_end: 0.25 }, 3);
    t = await t.restart();
    const page = await post('/api/svc/reactor/trajectory', { id, offset: 1, limit: 1 });
    expect(page.status).toBe(200);
    expect(page.body.total).toBe(3);
    expect(page.body.items.map((r: any) => r.step)).toEqual([2]);
    const state = await post('/api/svc/reactor/state', { id });
    expect(JSON.stringify(state.body.state)).toBe(JSON.stringify(last.state));
    const fourth = await post('/api/svc/reactor/step', { id });
    expect(fourth.body.step).toBe(4);
    expect(JSON.stringify(fourth.body.state)).toBe(JSON.stringify(JSON.parse(JSON.stringify(wholeRun('lorenz', { t_end: 1 }).state))));
  });
});

describe('reactors per identity', () => {
  let t: TestNode;
  let owner: { zid: string; key: string };
  beforeAll(async () => {
    t = await startTestNode({ limits: { reactorsPerIdentity: 2 } }, { initialCredits: 1000 });
    owner = await zkIdentity(t.url, 'reactor-capped');
  });
  afterAll(async () => {
    await t?.destroy();
  });
  const post = (path: string, body: unknown, k = owner.key) => call(t.url, 'POST', path, body, bearer(k));
  const open = () => post('/api/svc/reactor', { solver: 'lorenz', inputs: { t_end: 0.1 } });
  const reactors = async () => (await t.node.store.range(t.node.store.sub('reactors'))).length;

  it('opens up to the cap, refuses one more with 409 and nothing written, and closing one (with its trajectory) frees a slot', async () => {
    const a = await open();
    const b = await post('/api/svc/reactor', {
      chain: { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 2 } },
      feedback: { mass_kg: '{{result.value}}' },
    });
    expect([a.status, b.status], b.text).toEqual([201, 201]);
    expect((await post('/api/svc/reactor/step', { id: a.body.id })).status).toBe(200);
    const before = await reactors();
    const e = expectError((await open()) as never, 409, 'SVC_CONFLICT');
    expect(e).toMatchObject({
      message: 'an identity holds at most 2 reactors on this node (it holds 2); close one (POST /api/svc/reactor/close) to open another',
      limit: 2,
      count: 2,
      resource: 'reactors',
    });
    expect(await reactors()).toBe(before);
    expect(await t.node.reactor.countOf(owner.zid)).toBe(2);

    // Only the owner closes: another identity's key is 403 and nothing changes.
    const other = await zkIdentity(t.url, 'reactor-capped-other');
    expectError((await post('/api/svc/reactor/close', { id: a.body.id }, other.key)) as never, 403, 'SVC_FORBIDDEN');
    const closed = await post('/api/svc/reactor/close', { id: a.body.id });
    expect(closed.status, closed.text).toBe(200);
    expect(closed.body).toMatchObject({ id: a.body.id, step: 1, owner: owner.zid });
    expect(await reactors()).toBe(before - 1);
    expect((await t.node.store.range(t.node.store.sub('reactor_steps'), { gte: `${a.body.id}!`, lt: `${a.body.id}!~` })).length).toBe(0);
    expectError((await post('/api/svc/reactor/state', { id: a.body.id })) as never, 404, 'SVC_NOT_FOUND');
    expectError((await post('/api/svc/reactor/close', { id: a.body.id })) as never, 404, 'SVC_NOT_FOUND');
    expect((await open()).status).toBe(201);
    expectError((await open()) as never, 409, 'SVC_CONFLICT');
  }, 30_000);

  it('parallel opens cannot pass the cap, and a restart keeps the count', async () => {
    const who = await zkIdentity(t.url, 'reactor-race');
    const raced = await Promise.all(Array.from({ length: 4 }, () => post('/api/svc/reactor', { solver: 'lorenz', inputs: {} }, who.key)));
    expect(raced.map((r) => r.status).sort()).toEqual([201, 201, 409, 409]);
    t = await t.restart();
    expectError((await post('/api/svc/reactor', { solver: 'lorenz', inputs: {} }, who.key)) as never, 409, 'SVC_CONFLICT');
  }, 30_000);
});

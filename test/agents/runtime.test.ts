// Agents over an injected clock: spawn, ticks, derive within limits, kill (with its subtree), the SSE stream read by
// an EventSource-style client in order and resumed by Last-Event-ID, heartbeats, a stop when the owner cannot pay,
// and agents going on across a restart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { SseClient } from '../helpers/sse.js';
import { waitFor } from '../mesh/helpers.js';
import { ManualClock, TICK_NS } from '../../src/kernel/clock.js';

const clock = new ManualClock(1_800_000_000n * 1_000_000_000n + TICK_NS / 2n);

describe('agents', () => {
  let t: TestNode;
  const streams: SseClient[] = [];
  beforeAll(async () => {
    t = await startTestNode(
      { solverThreads: 0, sealWorker: false },
      { clock, initialCredits: 200, agents: { autoTick: false, heartbeatMs: 40, limits: { maxDepth: 2, maxChildren: 4 } } },
    );
  });
  afterAll(async () => {
    for (const s of streams) await s.close();
    await t?.destroy();
  });

  const stream = async (key: string, lastEventId?: string) => {
    const s = new SseClient(`${t.url}/api/svc/agent/stream`, bearer(key));
    streams.push(s);
    await s.connect(lastEventId);
    expect(s.status).toBe(200);
    return s;
  };
  /** Advance the clock by n ticks and run what is due. */
  const tick = async (n = 1) => {
    clock.advanceTicks(n);
    await t.node.agents.pump();
  };

  const program = {
    every: 2,
    state: { m: 2, last: 0 },
    step: { kind: 'compute', domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: '{{state.m}}', velocity_m_s: 3 } },
    assign: { last: '{{result.value}}' },
    derive: { every: 1, max_children: 1, max_depth: 1 },
  };

  it('a stream opened with a key ends within a heartbeat once that key is revoked', async () => {
    const me = await zkIdentity(t.url, 'agent-revoked');
    const spare = (await call(t.url, 'POST', '/api/auth/keys', { kind: 'sk_test' }, bearer(me.key))).body;
    const s = await stream(spare.key);
    let ended = false;
    void s.ended().then(() => (ended = true));
    await new Promise((r) => setTimeout(r, 150));
    expect(ended).toBe(false);
    expect((await call(t.url, 'DELETE', `/api/auth/keys/${spare.key_id}`, undefined, bearer(me.key))).status).toBe(200);
    await waitFor(async () => ended, 5_000, 'the stream ended');
  });

  it('a HEAD of the stream answers its head at once', async () => {
    const me = await zkIdentity(t.url, 'agent-head');
    const res = await fetch(`${t.url}/api/svc/agent/stream`, { method: 'HEAD', headers: bearer(me.key), signal: AbortSignal.timeout(10_000) });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
  });

  it('spawn (75), ticks every k-th tick, derives within limits, kill takes the subtree; the stream in order and resumed', async () => {
    const owner = await zkIdentity(t.url, 'agent-owner');
    const live = await stream(owner.key);
    expectError(
      await call(t.url, 'POST', '/api/svc/agent/spawn', { program: { ...program, assign: { last: '{{state.nope}}' } } }, bearer(owner.key)),
      400,
      'SVC_INVALID_INPUT',
    );
    // A compute step's chain is checked at spawn with the compute's codes; nothing is charged.
    const spawnWith = (chain: object) =>
      call(t.url, 'POST', '/api/svc/agent/spawn', { program: { ...program, step: { ...program.step, ...chain } } }, bearer(owner.key));
    expectError(await spawnWith({ operators: ['KO42', 'MECH_KINETIC_ENERGI'] }), 400, 'SVC_INVALID_OPERATOR');
    expectError(await spawnWith({ domain: 'alchemy' }), 400, 'SVC_INVALID_DOMAIN');
    expectError(await spawnWith({ operators: ['KO42', ...Array(10).fill('MECH_KINETIC_ENERGY')] }), 400, 'SVC_TOO_MANY_OPERATORS');
    const spawned = await call(t.url, 'POST', '/api/svc/agent/spawn', { program }, bearer(owner.key));
    expect(spawned.status).toBe(201);
    const parent = spawned.body.id as string;
    expect(spawned.body.slug).toBe(owner.slug);
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(owner.key))).body.total).toBe(200 - 75);

    await tick(1); // not due yet (every 2)
    expect((await call(t.url, 'GET', `/api/svc/agent/${parent}`, undefined, bearer(owner.key))).body.ticks).toBe(0);
    await tick(1); // parent tick 1 → derive a child (depth 1)
    await tick(2); // parent tick 2 (max_children 1: no second child); child tick 1 (max_depth 1: no grandchild)
    const list = await call(t.url, 'GET', '/api/svc/agent/list', undefined, bearer(owner.key));
    expect(list.body.total).toBe(2);
    const [p, c] = list.body.items;
    expect(p.id).toBe(parent);
    expect(p.ticks).toBe(2);
    expect(p.state).toEqual({ m: 2, last: 9 });
    expect(c.parent).toBe(parent);
    expect(c.depth).toBe(1);
    expect(c.ticks).toBe(1);
    // Each tick sealed on the machine's chain (its audit rows), paid by the owner: 75 + 75 (derive) + 3 computes.
    const rows = await call(t.url, 'GET', `/api/chain/${owner.slug}/explore?from=1&to=50`, undefined, bearer(owner.key));
    expect(rows.body.rows.filter((r: any) => r.transitionType === 'compute_sealed')).toHaveLength(3);
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(owner.key))).body.total).toBe(200 - 150 - 3);

    const killed = await call(t.url, 'POST', `/api/svc/agent/${parent}/kill`, undefined, bearer(owner.key));
    expect(killed.body.status).toBe('killed');
    expect((await call(t.url, 'GET', `/api/svc/agent/${c.id}`, undefined, bearer(owner.key))).body.status).toBe('killed');
    await tick(2);
    expect((await call(t.url, 'GET', `/api/svc/agent/${parent}`, undefined, bearer(owner.key))).body.ticks).toBe(2);

    const expected = ['spawn', 'tick', 'derive', 'spawn', 'tick', 'tick', 'kill', 'kill'];
    await waitFor(() => live.events.length >= expected.length, 10_000, 'the live events');
    expect(live.events.map((e) => e.type)).toEqual(expected);
    const ids = live.events.map((e) => Number(e.id));
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    const data = live.json();
    expect(data[1]).toMatchObject({ type: 'tick', agent: parent, data: { tick: 1, kind: 'compute', value: 9, unit: 'J' } });
    expect(data[2]).toMatchObject({ type: 'derive', agent: parent, data: { child: c.id, depth: 1 } });
    await waitFor(() => live.comments >= 2, 10_000, 'heartbeats');

    // A reconnect with Last-Event-ID gets exactly what followed, in order.
    const resumed = await stream(owner.key, live.events[2]!.id);
    await waitFor(() => resumed.events.length >= expected.length - 3, 10_000, 'the resumed events');
    expect(resumed.events.map((e) => e.id)).toEqual(live.events.slice(3).map((e) => e.id));
    expect(resumed.events.map((e) => e.data)).toEqual(live.events.slice(3).map((e) => e.data));
    // Another identity's stream hears none of it.
    const other = await zkIdentity(t.url, 'agent-bystander');
    expectError(await call(t.url, 'GET', `/api/svc/agent/${parent}`, undefined, bearer(other.key)), 403, 'SVC_FORBIDDEN');
  });

  it('a kill while its subtree is mid-tick wins: no killed agent runs again or is written back as running', async () => {
    const owner = await zkIdentity(t.url, 'agent-race');
    const spawned = await call(
      t.url,
      'POST',
      '/api/svc/agent/spawn',
      { program: { every: 1, step: { kind: 'append', event: 'e' }, derive: { every: 1, max_children: 1, max_depth: 1 } } },
      bearer(owner.key),
    );
    await tick(1); // the parent ticks and derives its child
    const caller = { kind: 'identity', zid: owner.zid, slug: owner.slug, home: t.node.nodeId, key: {} } as never;
    const ticking = tick(1); // parent and child both due
    const killing = t.node.agents.kill(caller, spawned.body.id);
    await Promise.all([ticking, killing]);
    await tick(2);
    const list = (await call(t.url, 'GET', '/api/svc/agent/list', undefined, bearer(owner.key))).body.items;
    expect(list).toHaveLength(2);
    for (const a of list) expect(a.status).toBe('killed');
    t = await t.restart();
    await tick(1);
    const after = (await call(t.url, 'GET', '/api/svc/agent/list', undefined, bearer(owner.key))).body.items;
    expect(after.map((a: any) => [a.status, a.ticks])).toEqual(list.map((a: any) => [a.status, a.ticks]));
  });

  it('an agent whose owner cannot pay stops with a stop event; spawn is 402 when it cannot be paid', async () => {
    const poor = await zkIdentity(t.url, 'agent-poor');
    const live = await stream(poor.key);
    const r = await call(
      t.url,
      'POST',
      '/api/svc/agent/spawn',
      { program: { every: 1, step: { kind: 'solver', solver: 'lorenz', inputs: { t_end: 0.01 }, carry_state: true } } },
      bearer(poor.key),
    );
    expect(r.status).toBe(201);
    // 125 credits left: 12 runs of 10, then the 13th cannot be paid.
    for (let i = 0; i < 13; i++) await tick(1);
    const a = await call(t.url, 'GET', `/api/svc/agent/${r.body.id}`, undefined, bearer(poor.key));
    expect(a.body.status).toBe('stopped');
    expect(a.body.stop_reason).toBe('insufficient_balance');
    expect(a.body.ticks).toBe(12);
    await waitFor(() => live.events.some((e) => e.type === 'stop'), 10_000, 'the stop event');
    expect(live.json().at(-1)).toMatchObject({ type: 'stop', data: { reason: 'insufficient_balance', code: 'INSUFFICIENT_BALANCE' } });
    expectError(
      await call(t.url, 'POST', '/api/svc/agent/spawn', { program: { every: 1, step: { kind: 'append', event: 'x' } } }, bearer(poor.key)),
      402,
      'INSUFFICIENT_BALANCE',
    );
  });

  it('agents keep running across a restart; the stream resumes from the stored events', async () => {
    const owner = await zkIdentity(t.url, 'agent-restart');
    expect((await call(t.url, 'PATCH', `/api/chain/${owner.slug}/settings`, { inject_agent_rail: true }, bearer(owner.key))).status).toBe(200);
    const r = await call(
      t.url,
      'POST',
      '/api/svc/agent/spawn',
      {
        program: {
          every: 1,
          state: { n: 0 },
          step: { kind: 'append', event: 'beat', payload: { tick: '{{tick}}', at: '{{svcond}}' } },
          assign: { n: '{{tick}}' },
        },
      },
      bearer(owner.key),
    );
    await tick(1);
    const before = await call(t.url, 'GET', `/api/svc/agent/${r.body.id}`, undefined, bearer(owner.key));
    expect(before.body.ticks).toBe(1);
    for (const s of streams.splice(0)) await s.close();
    t = await t.restart();
    await tick(1);
    const after = await call(t.url, 'GET', `/api/svc/agent/${r.body.id}`, undefined, bearer(owner.key));
    expect(after.body.status).toBe('running');
    expect(after.body.ticks).toBe(2);
    expect(after.body.state).toEqual({ n: 2 });
    const rows = (await call(t.url, 'GET', `/api/chain/${owner.slug}/explore?from=1&to=50`, undefined, bearer(owner.key))).body.rows;
    expect(rows.filter((x: any) => x.transitionType === 'agent_event')).toHaveLength(2);
    const resumed = await stream(owner.key, '0');
    await waitFor(() => resumed.events.length >= 3, 10_000, 'stored events');
    expect(resumed.events.map((e) => e.type)).toEqual(['spawn', 'tick', 'tick']);
    const regs = await call(t.url, 'GET', '/api/svc/mmio/registers', undefined, bearer(owner.key));
    const v = Object.fromEntries(regs.body.registers.map((x: any) => [x.name, x.value]));
    expect(v.agents).toBe(1);
    expect(v.open_streams).toBe(1);
  });

  it('a contract-transition step: the event from placeholders, charged 5 a transition, a refused event a tick that changes nothing', async () => {
    const owner = await zkIdentity(t.url, 'agent-contract');
    const contract = {
      name: 'counter',
      states: ['low', 'high'],
      initial: 'low',
      variables: { count: 0 },
      transitions: [
        {
          from: 'low',
          on: 'inc',
          to: 'low',
          guards: [{ left: { var: 'count' }, op: '<', right: { value: 2 } }],
          effects: [{ add: 'count', by: { event: 'by' } }],
        },
        {
          from: 'low',
          on: 'inc',
          to: 'high',
          guards: [{ left: { var: 'count' }, op: '>=', right: { value: 2 } }],
          effects: [{ add: 'count', by: { event: 'by' } }],
        },
      ],
    };
    const deployed = await call(t.url, 'POST', `/api/chain/${owner.slug}/contracts`, contract, bearer(owner.key));
    expect(deployed.status).toBe(201);
    const id = deployed.body.contract_id as string;
    const program = (contractId: string) => ({
      every: 1,
      state: { by: 1, seen: null },
      step: { kind: 'contract', contract_id: contractId, event: { type: 'inc', by: '{{state.by}}', note: 'tick {{tick}}' } },
      assign: { seen: '{{result.contract_state}}' },
    });
    const bad = await call(t.url, 'POST', '/api/svc/agent/spawn', { program: program(`ctr_${'0'.repeat(24)}`) }, bearer(owner.key));
    expect(expectError(bad, 400, 'SVC_INVALID_INPUT').field).toBe('program.step.contract_id');
    expectError(
      await call(
        t.url,
        'POST',
        '/api/svc/agent/spawn',
        { program: { ...program(id), step: { ...program(id).step, event: { type: '{{state.nope}}' } } } },
        bearer(owner.key),
      ),
      400,
      'SVC_INVALID_INPUT',
    );
    const spawned = await call(t.url, 'POST', '/api/svc/agent/spawn', { program: program(id) }, bearer(owner.key));
    expect(spawned.status).toBe(201);
    for (let i = 0; i < 4; i++) await tick(1); // count 0 → 1 → 2 (low), 2 → 3 (high), then no transition from high
    const after = await call(t.url, 'GET', `/api/chain/${owner.slug}/contracts/${id}`, undefined, bearer(owner.key));
    expect(after.body).toMatchObject({ state: 'high', vars: { count: 3 }, transitions_applied: 3 });
    const agent = await call(t.url, 'GET', `/api/svc/agent/${spawned.body.id}`, undefined, bearer(owner.key));
    expect(agent.body).toMatchObject({ status: 'running', ticks: 4, state: { by: 1, seen: 'high' } });
    // Three transitions (5 each) and one refused event (1: no tick is free).
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(owner.key))).body.total).toBe(200 - 75 - 3 * 5 - 1);
    const rows = (await call(t.url, 'GET', `/api/chain/${owner.slug}/explore?from=1&to=50`, undefined, bearer(owner.key))).body.rows;
    expect(rows.filter((r: any) => r.transitionType === 'contract_transition')).toHaveLength(3);
    const charges = await call(t.url, 'GET', `/api/chain/${owner.slug}/tally/charges`, undefined, bearer(owner.key));
    expect(charges.body.items.filter((c: any) => c.action === 'contract_transition')).toHaveLength(3);

    const s = await stream(owner.key, '0');
    await waitFor(() => s.events.length >= 5, 10_000, 'the stored events');
    const ticks = s.json().filter((e: any) => e.type === 'tick');
    expect(ticks.map((e: any) => [e.data.contract.from, e.data.contract.to])).toEqual([
      ['low', 'low'],
      ['low', 'low'],
      ['low', 'high'],
      [undefined, undefined],
    ]);
    expect(ticks[2].data.contract).toMatchObject({ contract_id: id, event: 'inc', vars: { count: 3 }, charge: { action: 'contract_transition', cost: 5 } });
    expect(ticks[2].data.chain.seq).toBe(rows.at(-1).seq);
    expect(ticks[3].data.contract.refused).toEqual({ state: 'high', event: 'inc', reason: 'no transition' });
    expect(ticks[3].data.contract.charge).toMatchObject({ action: 'agent_refused_transition', cost: 1 });
    expect(ticks[3].data.chain).toBeUndefined();
  });

  it('the agent rail: an append step writes on the chain only when the machine injects the agent rail', async () => {
    const owner = await zkIdentity(t.url, 'agent-rail');
    const spawned = await call(
      t.url,
      'POST',
      '/api/svc/agent/spawn',
      { program: { every: 1, step: { kind: 'append', event: 'beat', payload: { tick: '{{tick}}' } } } },
      bearer(owner.key),
    );
    expect(spawned.status).toBe(201);
    const chainRows = async () =>
      (await call(t.url, 'GET', `/api/chain/${owner.slug}/explore?from=1&to=50`, undefined, bearer(owner.key))).body.rows.filter(
        (r: any) => r.transitionType === 'agent_event',
      );
    const balance = async () => (await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(owner.key))).body.total;
    for (let i = 0; i < 2; i++) await tick(1); // off (the default): the agent rail only, nothing on the chain; 1 a step
    expect(await chainRows()).toHaveLength(0);
    expect(await balance()).toBe(200 - 75 - 2);
    expect((await call(t.url, 'PATCH', `/api/chain/${owner.slug}/settings`, { inject_agent_rail: true }, bearer(owner.key))).status).toBe(200);
    await tick(1); // on: an agent_event row, charged 1 as well
    const rows = await chainRows();
    expect(rows).toHaveLength(1);
    expect(await balance()).toBe(200 - 75 - 3);
    expect((await call(t.url, 'PATCH', `/api/chain/${owner.slug}/settings`, { inject_agent_rail: false }, bearer(owner.key))).status).toBe(200);
    await tick(1);
    expect(await chainRows()).toHaveLength(1);
    expect(await balance()).toBe(200 - 75 - 4);

    const s = await stream(owner.key, '0');
    await waitFor(() => s.events.length >= 5, 10_000, 'the stored events');
    const ticks = s.json().filter((e: any) => e.type === 'tick');
    expect(ticks.map((e: any) => e.data.rail.injected)).toEqual([false, false, true, false]);
    expect(ticks[2].data.chain).toMatchObject({ slug: owner.slug, seq: rows[0].seq, hash: rows[0].hash });
    // The same entry digest whether injected or not: the row commits exactly what the rail names.
    expect(ticks[2].data.rail.entry_sha256).toBe(rows[0].payload_sha256);
    expect(ticks.every((e: any) => /^[0-9a-f]{64}$/.test(e.data.rail.entry_sha256))).toBe(true);
  });

  it("an agent writes with its owner's role of now: an operator's agent stops when the role is taken", async () => {
    const owner = await zkIdentity(t.url, 'agent-role-owner');
    const op = await zkIdentity(t.url, 'agent-role-op');
    expect((await call(t.url, 'PATCH', `/api/chain/${owner.slug}/settings`, { roles: { [op.zid]: 'operator' } }, bearer(owner.key))).status).toBe(200);
    const spawned = await call(
      t.url,
      'POST',
      '/api/svc/agent/spawn',
      { slug: owner.slug, program: { every: 1, step: { kind: 'append', event: 'beat' } } },
      bearer(op.key),
    );
    expect(spawned.status).toBe(201);
    await tick(1);
    expect((await call(t.url, 'GET', `/api/svc/agent/${spawned.body.id}`, undefined, bearer(op.key))).body).toMatchObject({ status: 'running', ticks: 1 });
    expect((await call(t.url, 'PATCH', `/api/chain/${owner.slug}/settings`, { roles: { [op.zid]: null } }, bearer(owner.key))).status).toBe(200);
    await tick(1);
    expect((await call(t.url, 'GET', `/api/svc/agent/${spawned.body.id}`, undefined, bearer(op.key))).body).toMatchObject({
      status: 'stopped',
      stop_reason: 'step_failed: SVC_FORBIDDEN',
      ticks: 1,
    });
  });
});

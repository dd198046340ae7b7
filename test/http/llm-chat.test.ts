// POST /api/llm/chat against a fake OpenAI-style provider (a tool round trip, the step cap, a provider error), the
// offline assistant, and the free messages of a day, then the page-chat charge; a chat whose client leaves stops its
// provider request and its tool call.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { lastUserText, openAiAnswer, startFakeProvider, type FakeAnswer, type FakeProvider } from '../helpers/fake-llm.js';
import { holdSolves } from '../helpers/held-solves.js';
import { waitUntil } from '../helpers/wait.js';
import { chatDayCounter } from '../../src/store/counter-keys.js';
import { dayKey } from '../../src/util/utc-day.js';

const NODE_KEY = 'sk-node-provider-key-0123456789';
let t: TestNode;
let fake: FakeProvider;
/** Answers the turns held open ('HOLD' questions) at the end of their test. */
const heldTurns: (() => void)[] = [];

beforeAll(async () => {
  fake = await startFakeProvider((req) => {
    const text = lastUserText(req.body);
    if (text.includes('FAIL')) return { status: 401, body: { error: { message: `Incorrect API key provided: ${NODE_KEY}` } } };
    if (text.includes('HOLD')) return new Promise<FakeAnswer>((resolve) => heldTurns.push(() => resolve({ body: openAiAnswer('too late') })));
    if (text.includes('LEAVE') && !(req.body.messages as any[]).some((m) => m.role === 'tool')) {
      return { body: openAiAnswer(null, [{ id: 'call_leave', name: 'svc_http', args: { method: 'POST', path: '/api/svc/heat', body: {} } }]) };
    }
    if (text.includes('LOOP')) return { body: openAiAnswer(null, [{ id: `c${fake.requests.length}`, name: 'svc_pulse', args: {} }]) };
    const toolMsg = (req.body.messages as any[]).find((m) => m.role === 'tool');
    if (text.includes('kinetic') && !toolMsg) {
      return {
        body: openAiAnswer(null, [
          {
            id: 'call_1',
            name: 'svc_compute',
            args: { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } },
          },
        ]),
      };
    }
    if (toolMsg) return { body: openAiAnswer(`The tool said value ${JSON.parse(toolMsg.content).value}`) };
    return { body: openAiAnswer(`echo: ${text}`) };
  });
  t = await startTestNode(
    {
      solverThreads: 0,
      sealWorker: false,
      llm: { provider: { kind: 'openai', baseUrl: `${fake.url}/v1`, apiKey: NODE_KEY, model: 'gpt-test' }, freeMessagesPerDay: 2, maxToolSteps: 2 },
    },
    { initialCredits: 1000 },
  );
});
afterAll(async () => {
  await t?.destroy();
  await fake?.close();
});

const chat = (key: string, body: unknown) => call(t.url, 'POST', '/api/llm/chat', body, bearer(key));
const user = (content: string) => [{ role: 'user', content }];

describe('chat with an OpenAI-compatible provider', () => {
  it('a tool call round trip: the model calls svc_compute, the node runs it, the model answers', async () => {
    const { key } = await zkIdentity(t.url, 'chat-openai');
    const r = await chat(key, { messages: user('What is the kinetic energy of 2 kg at 3 m/s?'), tools: true });
    expect(r.status).toBe(200);
    expect(r.body.reply).toEqual({ role: 'assistant', content: 'The tool said value 9' });
    expect(r.body).toMatchObject({ provider: 'openai', model: 'gpt-test', steps: 2, stopped: 'answer' });
    expect(r.body.tool_calls).toEqual([expect.objectContaining({ name: 'svc_compute', is_error: false })]);
    const first = fake.requests.at(-2)!;
    expect(first.path).toBe('/v1/chat/completions');
    expect(first.headers.authorization).toBe(`Bearer ${NODE_KEY}`);
    expect(first.body.model).toBe('gpt-test');
    const compute = first.body.tools.find((x: any) => x.function.name === 'svc_compute');
    expect(compute.function.parameters.properties.operators.type).toBe('array');
  });

  it('a model that keeps calling tools is stopped at the step cap', async () => {
    const { key } = await zkIdentity(t.url, 'chat-loop');
    const r = await chat(key, { messages: user('LOOP'), tools: true });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ stopped: 'step_cap', steps: 3 });
    expect(r.body.tool_calls).toHaveLength(2);
  });

  it('a provider error is a clear 502 SVC_LLM_PROVIDER_ERROR, without the key, and is not counted', async () => {
    const { key } = await zkIdentity(t.url, 'chat-fail');
    const r = await chat(key, { messages: user('FAIL please') });
    const e = expectError(r, 502, 'SVC_LLM_PROVIDER_ERROR');
    expect(e).toMatchObject({ provider: 'openai', provider_status: 401 });
    expect(r.text).not.toContain(NODE_KEY);
    const ok = await chat(key, { messages: user('hello') });
    expect(ok.body).toMatchObject({ free_message: true, free_messages_left: 1 });
  });

  it('the free messages of a day, then 25 credits each (80/20 split)', async () => {
    const { key } = await zkIdentity(t.url, 'chat-allowance');
    const balance = async () => (await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(key))).body.total as number;
    const before = await balance();
    for (let i = 0; i < 2; i++) {
      const r = await chat(key, { messages: user(`hi ${i}`) });
      expect(r.body).toMatchObject({ free_message: true, tally_charge: null, reply: { content: `echo: hi ${i}` } });
    }
    expect(await balance()).toBe(before);
    const paid = await chat(key, { messages: user('hi paid') });
    expect(paid.status).toBe(200);
    expect(paid.body.free_message).toBe(false);
    expect(paid.body.tally_charge).toMatchObject({ action: 'page_chat', cost: 25, burned: 20, foundation: 5 });
    expect(await balance()).toBe(before - 25);
  });

  describe('a chat whose client leaves', () => {
    /** Sends the chat, waits for `started`, then leaves: aborts the request, which closes its connection. */
    const leaveWhen = async (key: string, question: string, started: () => boolean): Promise<void> => {
      const left = new AbortController();
      const sent = fetch(`${t.url}/api/llm/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...bearer(key) },
        body: JSON.stringify({ messages: user(question), tools: true }),
        signal: left.signal,
      }).catch((e: unknown) => e);
      await waitUntil(started, `the chat "${question}" to get under way`);
      left.abort();
      await sent;
    };
    const dayCount = (zid: string) => t.node.counters.get(chatDayCounter(dayKey(Date.now()), zid));

    it('stops its provider request: the provider sees the connection close, and the message is not counted', async () => {
      const { key, zid } = await zkIdentity(t.url, 'chat-leave-provider');
      const asked = fake.requests.length;
      try {
        const before = fake.left;
        await leaveWhen(key, 'HOLD on', () => fake.requests.length > asked);
        // The node's provider deadline is a minute: only the client's leaving closes the turn's request this soon.
        await waitUntil(() => fake.left > before, 'the provider request to be closed');
        await waitUntil(() => dayCount(zid) === 0, 'the message to be uncounted');
      } finally {
        for (const answer of heldTurns.splice(0)) answer();
      }
    });

    it('stops its tool call: the solver run the tool started is told its client left, and the message is not counted', async () => {
      const { key, zid } = await zkIdentity(t.url, 'chat-leave-tool');
      const held = holdSolves(t.node.compute);
      const asked = fake.requests.length;
      try {
        await leaveWhen(key, 'LEAVE mid-run', () => held.started === 1);
        const [reason] = await waitUntil(() => held.gone.length > 0 && held.gone, 'the run to be told its client left');
        expect(reason).toMatchObject({ status: 499, code: 'SVC_BAD_REQUEST' });
        await waitUntil(() => dayCount(zid) === 0, 'the message to be uncounted');
        // No turn after the tool call: the model is not asked again for a caller who has gone.
        expect(fake.requests.length).toBe(asked + 1);
      } finally {
        held.restore();
      }
    });
  });

  it('needs a key', async () => {
    expectError(await call(t.url, 'POST', '/api/llm/chat', { messages: user('x') }), 401, 'SVC_NO_KEY');
  });
});

describe('the offline assistant', () => {
  it('answers five questions: sealed results with their proof through /auto, or the operator library', async () => {
    const { key } = await zkIdentity(t.url, 'chat-offline');
    const routed: [string, string][] = [
      ['What does Black Scholes give for a European call option price?', 'quant'],
      ['How do foxes and rabbits cycle in a predator prey model?', 'predator_prey'],
      ['Critical buckling load of a steel column', 'buckling'],
      ['Show me the Lorenz strange attractor', 'lorenz'],
    ];
    for (const [question, solver] of routed) {
      const r = await chat(key, { messages: user(question), provider: 'offline' });
      expect(r.status, r.text).toBe(200);
      expect(r.body.provider).toBe('offline');
      expect(r.body.reply.content).toMatch(/^Offline assistant/);
      expect(r.body.reply.content).toContain(`${solver} solver`);
      expect(r.body.tool_calls[0]).toMatchObject({ name: 'svc_auto', is_error: false });
      const result = r.body.result;
      expect(result.svcProof).toMatch(/^[0-9a-f]{64}$/);
      expect(r.body.reply.content).toContain(String(result.svcond));
      const v = await call(t.url, 'POST', '/api/svc/verify', { result }, bearer(key));
      expect(v.body.valid).toBe(true);
    }
    const lib = await chat(key, { messages: user('kinetic energy'), provider: 'offline' });
    expect(lib.status).toBe(200);
    expect(lib.body.result).toBeNull();
    expect(lib.body.tool_calls.map((c: any) => c.name)).toEqual(['svc_auto', 'svc_http']);
    expect(lib.body.reply.content).toMatch(/MECH_KINETIC_ENERGY/);
  });

  it('reads numbers with units from the question: an operator computed on them (½·m·v², m·g·h), a solver run with them', async () => {
    const { key } = await zkIdentity(t.url, 'chat-quantities');
    const ask = async (question: string) => {
      const r = await chat(key, { messages: user(question), provider: 'offline' });
      expect(r.status, r.text).toBe(200);
      return r.body;
    };
    // Three phrasings of one kinetic energy: ½ · 2 kg · (3 m/s)² = 9 J, whatever the units and the order.
    for (const question of [
      'kinetic energy of a 2 kg mass at 3 m/s',
      'What is the kinetic energy at 10.8 km/h of a 2000 g cart?',
      'kinetic energy: 3 m/s, 2 kg',
    ]) {
      const a = await ask(question);
      expect(a.result, question).toMatchObject({ value: 9, unit: 'J', operators: ['KO42', 'MECH_KINETIC_ENERGY'] });
      expect(a.reply.content).toContain('mass_kg = 2 kg');
      expect(a.reply.content).toContain('velocity_m_s = 3 m/s');
      expect(a.reply.content).toContain('Result: 9 J');
      expect(a.tool_calls.at(-1)).toMatchObject({ name: 'svc_compute', is_error: false, arguments: { inputs: { mass_kg: 2, velocity_m_s: 3 } } });
      expect((await call(t.url, 'POST', '/api/svc/verify', { result: a.result }, bearer(key))).body.valid).toBe(true);
    }
    // m·g·h with g at its default (9.80665 m/s²), said so.
    const potential = await ask('potential energy of 5 kg raised 2 m');
    expect(potential.result.value).toBeCloseTo(5 * 9.80665 * 2, 9);
    expect(potential.reply.content).toContain('every other input at its default');
    // A pendulum of 1 m: T = 2π√(L/g).
    const pendulum = await ask('pendulum period of a 1 m pendulum');
    expect(pendulum.result.value).toBeCloseTo(2 * Math.PI * Math.sqrt(1 / 9.80665), 9);
    // A solver: the tube of 60 cm goes to length_m = 0.6 (the run equals the acoustic route's own at that length).
    const tube = await ask('Which note does a clarinet-like closed tube of 60 cm play?');
    expect(tube.reply.content).toContain('length_m = 0.6 m (from "60 cm")');
    const direct = await call(t.url, 'POST', '/api/svc/solve', { solver: 'acoustic', inputs: { length_m: 0.6 } }, bearer(key));
    expect(direct.status, direct.text).toBe(200);
    expect(tube.result.value).toEqual(direct.body.value);
    // A quantity no input takes is named, not silently dropped.
    const extra = await ask('Which note does a clarinet-like closed tube of 60 cm and 2 kg play?');
    expect(extra.reply.content).toContain('No input of that dimension took: "2 kg"');
  });
});

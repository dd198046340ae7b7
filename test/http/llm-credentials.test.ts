// Provider credentials (spec 5.10): paid tier only, AES-256-GCM at rest (the store holds no plaintext), a prefix only
// in every answer, never in the logs; a stored Anthropic credential answers chat with a tool round trip.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Level } from 'level';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { anthropicAnswer, lastUserText, startFakeProvider, type FakeProvider } from '../helpers/fake-llm.js';
import { CREDENTIAL_SECRET_FILE } from '../../src/config/credential-secret.js';

const API_KEY = 'sk-ant-api03-SECRETSECRETSECRET-0123456789abcdef';
const logLines: string[] = [];
let t: TestNode;
let fake: FakeProvider;
let key: string;
let zid: string;

beforeAll(async () => {
  fake = await startFakeProvider((req) => {
    if (req.headers['x-api-key'] !== API_KEY)
      return { status: 401, body: { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } } };
    const results = (req.body.messages as any[]).flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((b: any) => b.type === 'tool_result');
    if (results.length > 0) return { body: anthropicAnswer(`tick is ${JSON.parse(results[0].content).svcond}`) };
    if (lastUserText(req.body).includes('tick')) return { body: anthropicAnswer('Let me look.', [{ id: 'toolu_1', name: 'svc_pulse', input: {} }]) };
    return { body: anthropicAnswer('ok') };
  });
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logLines.push(chunk.toString('utf8'));
      done();
    },
  });
  // The fake provider listens on 127.0.0.1: this node lets credentials point at loopback (the default refuses it).
  t = await startTestNode(
    { solverThreads: 0, sealWorker: false, llm: { baseUrls: { allowLoopback: true, allowHosts: [] } } },
    { initialCredits: 1000, logger: pino({ level: 'trace' }, sink) },
  );
  ({ key, zid } = await zkIdentity(t.url, 'credentials'));
});
afterAll(async () => {
  await t?.destroy();
  await fake?.close();
});

const create = (body: unknown) => call(t.url, 'POST', '/api/svc/llm/credentials', body, bearer(key));
const anthropic = () => ({ kind: 'anthropic', api_key: API_KEY, base_url: `${fake.url}/v1`, model: 'claude-test' });

describe('provider credentials', () => {
  it('a free identity is SVC_TIER_LOCKED', async () => {
    const e = expectError(await create(anthropic()), 403, 'SVC_TIER_LOCKED');
    expect(e).toMatchObject({ required_tier: 'starter', current_tier: 'free' });
  });

  it('create, list, test, use in chat and delete at a paid tier; only the prefix is ever shown', async () => {
    const token = (await readFile(join(t.dataDir, 'operator-token'), 'utf8')).trim();
    expect((await call(t.url, 'POST', '/api/tally/grants', { zid, credits: 0, tier: 'starter' }, bearer(token))).status).toBe(201);
    expectError(await create({ ...anthropic(), kind: 'nope' }), 400, 'SVC_INVALID_INPUT');
    expectError(await create({ kind: 'openai_compatible', api_key: API_KEY }), 400, 'SVC_INVALID_INPUT');
    const made = await create(anthropic());
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ kind: 'anthropic', prefix: 'sk-ant-a…', model: 'claude-test' });
    expect(made.text).not.toContain(API_KEY.slice(8));
    const id = made.body.id as string;

    const list = await call(t.url, 'GET', '/api/svc/llm/credentials', undefined, bearer(key));
    expect(list.body.credentials).toEqual([expect.objectContaining({ id, prefix: 'sk-ant-a…' })]);
    expect(list.text).not.toContain(API_KEY.slice(8));

    const test = await call(t.url, 'POST', `/api/svc/llm/credentials/${id}/test`, {}, bearer(key));
    expect(test.body).toMatchObject({ ok: true, provider: 'anthropic', reply: 'ok' });

    // Chat uses the identity's own credential: an Anthropic tool_use / tool_result round trip.
    const chat = await call(t.url, 'POST', '/api/llm/chat', { messages: [{ role: 'user', content: 'what tick is it?' }], tools: true }, bearer(key));
    expect(chat.status, chat.text).toBe(200);
    expect(chat.body).toMatchObject({ provider: 'anthropic', model: 'claude-test', steps: 2 });
    expect(chat.body.reply.content).toMatch(/^tick is \d+$/);
    expect(chat.body.tool_calls).toEqual([expect.objectContaining({ name: 'svc_pulse', is_error: false })]);
    const sent = fake.requests.at(-2)!;
    expect(sent.path).toBe('/v1/messages');
    expect(sent.headers['anthropic-version']).toBe('2023-06-01');
    expect(sent.body.tools.some((x: any) => x.name === 'svc_heat' && x.input_schema.type === 'object')).toBe(true);

    // A wrong key: the test reports the provider's refusal, and a chat with it is a clear 502.
    const wrong = await create({ ...anthropic(), api_key: 'sk-ant-wrong-key-000000000' });
    const bad = await call(t.url, 'POST', `/api/svc/llm/credentials/${wrong.body.id}/test`, {}, bearer(key));
    expect(bad.body).toMatchObject({ ok: false, error: { code: 'SVC_LLM_PROVIDER_ERROR', provider_status: 401 } });
    const badChat = await call(t.url, 'POST', '/api/llm/chat', { messages: [{ role: 'user', content: 'hi' }], provider: 'anthropic' }, bearer(key));
    expectError(badChat, 502, 'SVC_LLM_PROVIDER_ERROR');

    expect((await call(t.url, 'DELETE', `/api/svc/llm/credentials/${wrong.body.id}`, undefined, bearer(key))).body).toMatchObject({ deleted: true });
    expectError(await call(t.url, 'DELETE', `/api/svc/llm/credentials/${wrong.body.id}`, undefined, bearer(key)), 404, 'SVC_NOT_FOUND');
    expect((await call(t.url, 'GET', '/api/svc/llm/credentials', undefined, bearer(key))).body.credentials).toHaveLength(1);
  });

  it('at rest: AES-256-GCM records with no plaintext, the secret file 0600; and the key never reaches the logs', async () => {
    expect(logLines.length).toBeGreaterThan(10);
    for (const line of logLines) expect(line).not.toContain(API_KEY);
    const { stat } = await import('node:fs/promises');
    expect((await stat(join(t.dataDir, CREDENTIAL_SECRET_FILE))).mode & 0o777).toBe(0o600);
    await t.stop();
    const db = new Level(join(t.dataDir, 'db'), { valueEncoding: 'utf8' });
    let records = 0;
    try {
      for await (const [k, v] of db.iterator()) {
        expect(v).not.toContain(API_KEY);
        expect(v).not.toContain(API_KEY.slice(8, 24));
        if (k.includes('llm_credentials')) {
          records++;
          const rec = JSON.parse(v);
          expect(rec.enc).toMatchObject({ v: 1, iv: expect.any(String), tag: expect.any(String), ct: expect.any(String) });
          expect(Buffer.from(rec.enc.ct, 'base64').length).toBe(API_KEY.length);
        }
      }
    } finally {
      await db.close();
    }
    expect(records).toBe(1);
  });
});

describe('provider credentials on a node with the default URL policy', () => {
  it('a base URL inside the node network is refused (400 on base_url) and nothing is kept', async () => {
    const strict = await startTestNode({ solverThreads: 0, sealWorker: false }, { initialCredits: 1000 });
    try {
      const me = await zkIdentity(strict.url, 'credentials-strict');
      const token = (await readFile(join(strict.dataDir, 'operator-token'), 'utf8')).trim();
      expect((await call(strict.url, 'POST', '/api/tally/grants', { zid: me.zid, credits: 0, tier: 'starter' }, bearer(token))).status).toBe(201);
      for (const base_url of [`${fake.url}/v1`, 'http://169.254.169.254/latest', 'http://10.0.0.7/v1', 'http://localhost:11434/v1', 'file:///etc/passwd']) {
        const e = expectError(
          await call(strict.url, 'POST', '/api/svc/llm/credentials', { kind: 'openai_compatible', api_key: API_KEY, base_url, model: 'm' }, bearer(me.key)),
          400,
          'SVC_INVALID_INPUT',
        );
        expect(e, base_url).toMatchObject({ field: 'base_url' });
      }
      expect((await call(strict.url, 'GET', '/api/svc/llm/credentials', undefined, bearer(me.key))).body.credentials).toEqual([]);
      const ok = await call(
        strict.url,
        'POST',
        '/api/svc/llm/credentials',
        { kind: 'openai_compatible', api_key: API_KEY, base_url: 'https://llm.example.com/v1', model: 'm' },
        bearer(me.key),
      );
      expect(ok.status).toBe(201);
    } finally {
      await strict.destroy();
    }
  });
});

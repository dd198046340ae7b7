// Per-identity caps decided across an await are the race of unique names (test/http/claims.test.ts) in another form: parallel
// creations each read the count before any has committed, and all pass. Webhooks (16), provider credentials (16) and
// running agents (limits.maxPerOwner) are each asked for many at once: exactly the cap is created, the rest refused.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, startTestNode, zkIdentity, type Reply, type TestNode } from '../helpers/node.js';
import { WEBHOOKS_PER_IDENTITY } from '../../src/webhooks/registry.js';
import { CREDENTIALS_PER_IDENTITY_MAX } from '../../src/llm/credentials.js';
import { AGENT_STREAMS_PER_IDENTITY } from '../../src/http/routes/agents.js';

const PARALLEL = 40;
const AGENT_CAP = 3;
let t: TestNode;

beforeAll(async () => {
  t = await startTestNode(
    { solverThreads: 0, sealWorker: false, webhooks: { allowLoopback: true } },
    { initialCredits: 100_000, agents: { autoTick: false, limits: { maxPerOwner: AGENT_CAP } } },
  );
});
afterAll(async () => {
  await t?.destroy();
});

function tally(replies: Reply[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const r of replies) out[r.status] = (out[r.status] ?? 0) + 1;
  return out;
}

describe(`${PARALLEL} parallel creations against a per-identity cap`, () => {
  it(`webhooks: exactly ${WEBHOOKS_PER_IDENTITY} are registered, the rest 409 SVC_CONFLICT`, async () => {
    const me = await zkIdentity(t.url, 'cap-webhooks');
    const replies = await Promise.all(
      Array.from({ length: PARALLEL }, (_, i) =>
        call(t.url, 'POST', '/api/webhooks', { url: `http://127.0.0.1:9/hook/${i}`, events: ['webhook.test'] }, bearer(me.key)),
      ),
    );
    expect(tally(replies)).toEqual({ 201: WEBHOOKS_PER_IDENTITY, 409: PARALLEL - WEBHOOKS_PER_IDENTITY });
    for (const r of replies)
      if (r.status === 409)
        expect(r.body.error).toMatchObject({ code: 'SVC_CONFLICT', limit: WEBHOOKS_PER_IDENTITY, count: WEBHOOKS_PER_IDENTITY, resource: 'webhooks' });
    const list = await call(t.url, 'GET', '/api/webhooks', undefined, bearer(me.key));
    expect(list.status, list.text).toBe(200);
    expect((list.body.webhooks ?? list.body.items ?? list.body).length).toBe(WEBHOOKS_PER_IDENTITY);
  });

  it(`provider credentials: exactly ${CREDENTIALS_PER_IDENTITY_MAX} are kept, the rest 409 SVC_CONFLICT`, async () => {
    const me = await zkIdentity(t.url, 'cap-credentials');
    // Credentials are for paid tiers: the operator grants one.
    const token = (await readFile(join(t.dataDir, 'operator-token'), 'utf8')).trim();
    expect((await call(t.url, 'POST', '/api/tally/grants', { zid: me.zid, credits: 0, tier: 'starter' }, bearer(token))).status).toBe(201);
    const replies = await Promise.all(
      Array.from({ length: PARALLEL }, (_, i) =>
        call(
          t.url,
          'POST',
          '/api/svc/llm/credentials',
          { kind: 'anthropic', api_key: `sk-ant-api03-race-${i}-0123456789abcdef`, base_url: 'https://llm.example.com/v1', model: 'm' },
          bearer(me.key),
        ),
      ),
    );
    expect(tally(replies)).toEqual({ 201: CREDENTIALS_PER_IDENTITY_MAX, 409: PARALLEL - CREDENTIALS_PER_IDENTITY_MAX });
    for (const r of replies)
      if (r.status === 409)
        expect(r.body.error).toMatchObject({
          code: 'SVC_CONFLICT',
          limit: CREDENTIALS_PER_IDENTITY_MAX,
          count: CREDENTIALS_PER_IDENTITY_MAX,
          resource: 'provider credentials',
        });
    const list = await call(t.url, 'GET', '/api/svc/llm/credentials', undefined, bearer(me.key));
    expect(list.body.credentials.length).toBe(CREDENTIALS_PER_IDENTITY_MAX);
  });

  it(`running agents: exactly limits.maxPerOwner (${AGENT_CAP}) spawn and are charged, the rest 429 SVC_RATE_LIMIT uncharged`, async () => {
    const me = await zkIdentity(t.url, 'cap-agents');
    const before = (await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(me.key))).body.total;
    const program = { every: 4, step: { kind: 'append', event: 'note', payload: { at: '{{tick}}' } } };
    const replies = await Promise.all(Array.from({ length: PARALLEL }, () => call(t.url, 'POST', '/api/svc/agent/spawn', { program }, bearer(me.key))));
    expect(tally(replies)).toEqual({ 201: AGENT_CAP, 429: PARALLEL - AGENT_CAP });
    for (const r of replies) if (r.status === 429) expect(r.body.error.code).toBe('SVC_RATE_LIMIT');
    expect(t.node.agents.runningOf(me.zid)).toBe(AGENT_CAP);
    const after = (await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(me.key))).body.total;
    expect(before - after).toBe(AGENT_CAP * 75);
  });
});

describe('genesis documents claiming one slug at once', () => {
  it('10 identities, 10 documents, one slug: one 201 and 9 × 409; only the winner is charged', async () => {
    const ids = await Promise.all(Array.from({ length: 10 }, (_, i) => zkIdentity(t.url, `cap-genesis-${i}`)));
    const balance = async (key: string) => (await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(key))).body.total as number;
    const before = await Promise.all(ids.map((id) => balance(id.key)));
    const replies = await Promise.all(
      ids.map((id, i) =>
        call(t.url, 'POST', '/api/genesis/execute', { document: { slug: 'genesis-race', events: [{ type: 'note', payload: i }] } }, bearer(id.key)),
      ),
    );
    expect(tally(replies)).toEqual({ 201: 1, 409: 9 });
    const winner = replies.findIndex((r) => r.status === 201);
    const after = await Promise.all(ids.map((id) => balance(id.key)));
    ids.forEach((_, i) => expect(before[i]! - after[i]!).toBe(i === winner ? 50 : 0));
  });

  it('one identity sending one document 10 times at once: one 201, the others its replay (200)', async () => {
    const me = await zkIdentity(t.url, 'cap-genesis-same');
    const document = { slug: 'genesis-same', events: [{ type: 'note', payload: 'once' }] };
    const replies = await Promise.all(Array.from({ length: 10 }, () => call(t.url, 'POST', '/api/genesis/execute', { document }, bearer(me.key))));
    expect(tally(replies)).toEqual({ 200: 9, 201: 1 });
    for (const r of replies) if (r.status === 200) expect(r.body.replayed).toBe(true);
  });
});

describe('agent streams per identity', () => {
  it(`${PARALLEL} opened at once: ${AGENT_STREAMS_PER_IDENTITY} open, the rest 429 with Retry-After; closing one lets another open`, async () => {
    const me = await zkIdentity(t.url, 'cap-streams');
    const abort = new AbortController();
    const open = () => fetch(`${t.url}/api/svc/agent/stream`, { headers: bearer(me.key), signal: abort.signal });
    try {
      const replies = await Promise.all(Array.from({ length: PARALLEL }, open));
      const statuses: Record<number, number> = {};
      for (const r of replies) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      expect(statuses).toEqual({ 200: AGENT_STREAMS_PER_IDENTITY, 429: PARALLEL - AGENT_STREAMS_PER_IDENTITY });
      const refused = replies.find((r) => r.status === 429)!;
      expect(refused.headers.get('retry-after')).toBe('5');
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('SVC_RATE_LIMIT');
      expect(t.node.agentStreams.of(me.zid)).toBe(AGENT_STREAMS_PER_IDENTITY);
    } finally {
      abort.abort();
    }
    // The server sees the clients go: the count falls back and a stream opens again.
    for (const end = Date.now() + 10_000; t.node.agentStreams.of(me.zid) > 0 && Date.now() < end;) await new Promise((r) => setTimeout(r, 20));
    expect(t.node.agentStreams.of(me.zid)).toBe(0);
    const again = new AbortController();
    const r = await fetch(`${t.url}/api/svc/agent/stream`, { headers: bearer(me.key), signal: again.signal });
    expect(r.status).toBe(200);
    again.abort();
  });
});

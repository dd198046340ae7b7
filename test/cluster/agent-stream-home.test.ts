// The agent stream of an identity homed on A, opened at B: a client with its key in a header is redirected to A's
// URL; one with its key in the query string (an EventSource cannot send headers) is relayed from A, so no Location
// carries its key to another node.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, startNodePair, zkIdentity, type TestNode } from '../helpers/node.js';

let a: TestNode;
let b: TestNode;
const meshConfig = (bootstrap: string[]) => ({
  receiptSecret: 'ab'.repeat(32),
  mesh: { secret: 'agent-stream-home-secret-0123456789', p2pPort: 0, bootstrap, tickEvery: 1 },
});

beforeAll(async () => {
  [a, b] = await startNodePair(meshConfig, { mesh: { redialMinMs: 100, redialMaxMs: 1000 } });
}, 120_000);
afterAll(async () => {
  await Promise.all([a, b].map((n) => n?.destroy()));
});

describe('the agent stream opened away from its home', () => {
  it('redirects a header key to the home and relays a query-string key, never putting the key in a Location', async () => {
    const id = await zkIdentity(a.url, 'agent-stream-home');
    const redirected = await fetch(`${b.url}/api/svc/agent/stream`, { headers: bearer(id.key), redirect: 'manual', signal: AbortSignal.timeout(20_000) });
    expect(redirected.status).toBe(307);
    expect(redirected.headers.get('location')).toBe(`${a.url}/api/svc/agent/stream`);

    const abort = new AbortController();
    const relayed = await fetch(`${b.url}/api/svc/agent/stream?key=${encodeURIComponent(id.key)}`, { redirect: 'manual', signal: abort.signal });
    try {
      expect(relayed.status).toBe(200);
      expect(relayed.headers.get('location')).toBeNull();
      expect(relayed.headers.get('content-type')).toMatch(/^text\/event-stream/);
    } finally {
      abort.abort();
    }
  }, 60_000);
});

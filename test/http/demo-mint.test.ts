// Minting own demo keys: limited per IP per UTC day, counted in the store so a restart keeps
// the count; beyond it 429 SVC_RATE_LIMIT with Retry-After and the part-7 fields. Without the limit, each mint was 10
// more computations a day for anyone, past the anonymous cap of 5.
import { request } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { call, expectError, startTestNode, type Reply, type TestNode } from '../helpers/node.js';
import { ManualClock } from '../../src/kernel/clock.js';

const nodes: TestNode[] = [];
afterAll(async () => {
  for (const n of nodes) await n.destroy();
});

/** POST /api/demo-key/mint from another loopback address (Linux answers all of 127/8). */
function mintFrom(url: string, localAddress: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/api/demo-key/mint`, { method: 'POST', localAddress, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text), headers: new Headers(res.headers as Record<string, string>), text }));
    });
    req.on('error', reject);
    req.end('{}');
  });
}

// 2026-11-25T18:00:00Z: six hours before midnight UTC.
const EVENING_NS = BigInt(Date.UTC(2026, 10, 25, 18)) * 1_000_000n;

describe('POST /api/demo-key/mint', () => {
  it('one own demo key per IP per day by default; the next is 429 SVC_RATE_LIMIT until midnight UTC, after a restart too', async () => {
    const clock = new ManualClock(EVENING_NS);
    let t = await startTestNode({}, { clock });
    nodes.push(t);
    const first = await call(t.url, 'POST', '/api/demo-key/mint', {});
    expect(first.status, first.text).toBe(201);
    expect(first.body).toMatchObject({ plan: 'demo', dailyLimit: 10 });
    expect(first.body.key).toMatch(/^sk_/);

    const second = await call(t.url, 'POST', '/api/demo-key/mint', {});
    const e = expectError(second, 429, 'SVC_RATE_LIMIT');
    expect(e).toMatchObject({ limit: 1, used_today: 1, window_seconds: 86_400, retry_after_seconds: 6 * 3600, reset_at: '2026-11-26T00:00:00.000Z' });
    expect(second.headers.get('retry-after')).toBe(String(6 * 3600));

    // The count is in the store: a restart does not give the IP a new allowance.
    t = await t.restart();
    nodes.push(t);
    expectError(await call(t.url, 'POST', '/api/demo-key/mint', {}), 429, 'SVC_RATE_LIMIT');
    // Another address has its own allowance.
    expect((await mintFrom(t.url, '127.0.0.2')).status).toBe(201);
    expectError(await mintFrom(t.url, '127.0.0.2'), 429, 'SVC_RATE_LIMIT');
    // The shared demo key is not affected.
    expect((await call(t.url, 'GET', '/api/demo-key')).status).toBe(200);

    // A new UTC day, a new allowance.
    clock.set(EVENING_NS + 7n * 3600n * 1_000_000_000n);
    expect((await call(t.url, 'POST', '/api/demo-key/mint', {})).status).toBe(201);
  }, 60_000);

  it('the limit is limits.demoKeyMintsPerDay; a mint whose batch fails is not counted', async () => {
    const t = await startTestNode({ limits: { demoKeyMintsPerDay: 3 } });
    nodes.push(t);
    // One failed write: the mint answers 503 and its slot is given back.
    type Batch = { put: (key: string, ...rest: unknown[]) => unknown; write: (o?: unknown) => Promise<void> };
    const db = t.node.store.db as unknown as { batch: (...a: unknown[]) => Batch };
    const batch = db.batch.bind(db);
    db.batch = (...a: unknown[]) => {
      const b = batch(...a);
      const put = b.put.bind(b);
      let ours = false;
      b.put = (key, ...rest) => ((ours ||= key.startsWith('!keys!')), put(key, ...rest));
      const write = b.write.bind(b);
      b.write = async (o?: unknown) => {
        if (!ours) return write(o);
        db.batch = batch;
        throw new Error('No space left on device (injected)');
      };
      return b;
    };
    expect((await call(t.url, 'POST', '/api/demo-key/mint', {})).status).toBe(503);
    const replies = await Promise.all(Array.from({ length: 6 }, () => call(t.url, 'POST', '/api/demo-key/mint', {})));
    expect(replies.filter((r) => r.status === 201)).toHaveLength(3);
    for (const r of replies.filter((x) => x.status !== 201)) expect(expectError(r, 429, 'SVC_RATE_LIMIT').limit).toBe(3);
  });
});

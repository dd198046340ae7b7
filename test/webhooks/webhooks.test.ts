import { createHmac, timingSafeEqual } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { ManualClock } from '../../src/kernel/clock.js';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { failNextBatch } from '../helpers/fail-batch.js';
import { startReceiver, until, type Receiver } from './receiver.js';

const clock = new ManualClock(BigInt(Date.now()) * 1_000_000n);
let t: TestNode;
let rx: Receiver;
const chain = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: {} };

beforeAll(async () => {
  rx = await startReceiver();
  t = await startTestNode(
    { solverThreads: 0, sealWorker: false, webhooks: { allowLoopback: true } },
    { initialCredits: 10_000, clock, webhookManualDispatch: true },
  );
});
afterAll(async () => {
  await t.destroy();
  await rx.close();
});

/** The receiver's constant-time check of X-Svc-Signature (spec 6.2), from the secret alone. */
function svcSignatureOk(secret: string, body: string, header: unknown): boolean {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const expected = Buffer.from(`sha256=${createHmac('sha256', key).update(body).digest('hex')}`);
  const given = Buffer.from(String(header));
  return given.length === expected.length && timingSafeEqual(given, expected);
}

async function register(key: string, events: string[]) {
  const r = await call(t.url, 'POST', '/api/webhooks', { url: rx.url, events, headers: { 'X-Team': 'blue' }, metadata: { app: 'test' } }, bearer(key));
  expect(r.status, r.text).toBe(201);
  return r.body;
}

describe('webhooks', () => {
  it('a sealed computation is delivered once durable, verifiable by standardwebhooks and by X-Svc-Signature', async () => {
    const me = await zkIdentity(t.url, 'wh-a');
    const hook = await register(me.key, ['computation.complete']);
    expect(hook.secret).toMatch(/^whsec_/);
    // The answer says how a receiver checks a delivery: the key is the decoded bytes, as svcSignatureOk takes it.
    expect(hook.secret_notice).toContain('the bytes the base64 after whsec_ decodes to');
    expect(hook).toMatchObject({ status: 'enabled', failure_count: 0, last_delivery_at: null, events: ['computation.complete'], metadata: { app: 'test' } });
    const listed = await call(t.url, 'GET', '/api/webhooks', undefined, bearer(me.key));
    expect(listed.body.webhooks).toHaveLength(1);
    // A custom header's value may be a receiver's credential: shown by name, its value hidden, here and at registration.
    expect(listed.body.webhooks[0].headers).toEqual({ 'X-Team': '********' });
    expect(hook.headers).toEqual({ 'X-Team': '********' });
    expect(listed.text).not.toContain('blue');
    expect(listed.text).not.toContain(hook.secret);
    expect(listed.text).not.toContain('whsec_');

    const start = rx.received.length;
    const sealed = await call(t.url, 'POST', '/api/svc/compute', chain, bearer(me.key));
    expect(sealed.status).toBe(200);
    await until(() => rx.received.length === start + 1);
    const got = rx.received[start]!;
    const h = got.headers as Record<string, string>;
    expect(new Webhook(hook.secret).verify(got.body, h)).toEqual(got.json);
    expect(svcSignatureOk(hook.secret, got.body, h['x-svc-signature'])).toBe(true);
    expect(svcSignatureOk(hook.secret, got.body + ' ', h['x-svc-signature'])).toBe(false);
    expect(h['x-svc-delivery-id']).toBe(h['webhook-id']);
    expect(h['x-svc-timestamp']).toBe(h['webhook-timestamp']);
    expect(h['x-team']).toBe('blue');
    expect(got.json).toMatchObject({
      event: 'computation.complete',
      computation_id: sealed.body.result_id,
      timestamp: Number(h['x-svc-timestamp']),
      delivery_attempt: 1,
    });
    expect(got.json.data.result).toEqual(sealed.body);
    expect(got.json.data.proof).toBe(sealed.body.svcProof);
    expect(got.json.data.metadata.time_quantum).toBe(sealed.body.svcond);
    expect(typeof got.json.data.metadata.execution_time_ms).toBe('number');
    await until(
      async () => (await call(t.url, 'GET', `/api/webhooks/${hook.id}/deliveries?status=delivered`, undefined, bearer(me.key))).body.deliveries.length === 1,
    );
    const d = (await call(t.url, 'GET', `/api/webhooks/${hook.id}/deliveries`, undefined, bearer(me.key))).body.deliveries[0];
    expect(d).toMatchObject({ id: h['webhook-id'], status: 'delivered', attempt: 1, response_status: 200, response_body: 'thanks', next_retry_at: null });
    // Part 5 item 2: the key may travel as ?key= instead of the header, beside the route's own query.
    const byQuery = await call(t.url, 'GET', `/api/webhooks/${hook.id}/deliveries?status=delivered&key=${encodeURIComponent(me.key)}`);
    expect(byQuery.status, byQuery.text).toBe(200);
    expect(byQuery.body.deliveries).toEqual([d]);
    expectError(await call(t.url, 'GET', `/api/webhooks/${hook.id}/deliveries?key=zsm_not_a_key`), 401, 'SVC_INVALID_KEY');
    const after = (await call(t.url, 'GET', `/api/webhooks/${hook.id}`, undefined, bearer(me.key))).body;
    expect(after.last_delivery_at).not.toBeNull();
  });

  it('the six event types', async () => {
    const me = await zkIdentity(t.url, 'wh-b');
    const all = ['computation.complete', 'computation.error', 'batch.progress', 'batch.complete', 'batch.error'];
    const hook = await register(me.key, all);
    const start = rx.received.length;
    const ofMine = () => rx.received.slice(start).filter((r) => r.json && r.headers['x-team'] === 'blue');
    // webhook.test goes to the webhook it names, subscribed or not.
    const test = await call(t.url, 'POST', `/api/webhooks/${hook.id}/test`, undefined, bearer(me.key));
    expect(test.status).toBe(202);
    await until(() => ofMine().some((r) => r.json.event === 'webhook.test'));
    expect(ofMine().find((r) => r.json.event === 'webhook.test')!.json.data).toEqual({ test_id: test.body.test_id, message: expect.any(String) });
    // computation.error: a failed computation.
    expectError(await call(t.url, 'POST', '/api/svc/lorenz', { t_end: -1 }, bearer(me.key)), 400, 'SVC_INVALID_INPUT');
    await until(() => ofMine().some((r) => r.json.event === 'computation.error'));
    expect(ofMine().find((r) => r.json.event === 'computation.error')!.json.data.error).toMatchObject({ code: 'SVC_INVALID_INPUT', status: 400 });
    // A batch of 10 with one failure: computation.complete per sealed item, batch.progress, batch.complete, batch.error.
    const items = Array.from({ length: 10 }, (_, i) => (i === 3 ? { solver: 'nope' } : chain));
    const b = await call(t.url, 'POST', '/api/svc/batch', { items }, bearer(me.key));
    // Deliveries go out side by side: wait for every one of them, not for the last one sent.
    const count = (event: string) => ofMine().filter((r) => r.json.event === event).length;
    await until(() => count('batch.error') === 1 && count('batch.complete') === 1 && count('computation.complete') >= 9);
    const events = ofMine().map((r) => r.json.event);
    expect(events.filter((e) => e === 'computation.complete')).toHaveLength(9);
    expect(events.filter((e) => e === 'batch.progress').length).toBeGreaterThan(0);
    const complete = ofMine().find((r) => r.json.event === 'batch.complete')!.json;
    expect(complete.computation_id).toBe(b.body.id);
    expect(complete.data.results).toHaveLength(10);
    expect(complete.data.proofs.filter((p: unknown) => typeof p === 'string')).toHaveLength(9);
    const error = ofMine().find((r) => r.json.event === 'batch.error')!.json;
    expect(error.data.errors).toEqual([expect.objectContaining({ index: 3, code: 'SVC_INVALID_INPUT' })]);
    const progress = ofMine().find((r) => r.json.event === 'batch.progress')!.json.data;
    expect(progress).toEqual({ completed: expect.any(Number), total: 10, percentage: expect.any(Number) });
  });

  it('retries on the schedule of 6.3 on the injected clock, then disables the webhook after the 5th failure', async () => {
    const me = await zkIdentity(t.url, 'wh-c');
    const hook = await register(me.key, ['computation.complete']);
    rx.mode = 'fail';
    const start = rx.received.length;
    const mine = () => rx.received.slice(start).filter((r) => r.json.event === 'computation.complete');
    await call(t.url, 'POST', '/api/svc/compute', chain, bearer(me.key));
    await until(() => mine().length === 1);
    const dispatcher = t.node.webhooks.dispatcher;
    const delivery = async () => (await call(t.url, 'GET', `/api/webhooks/${hook.id}/deliveries`, undefined, bearer(me.key))).body.deliveries[0];
    await until(async () => (await delivery()).attempt === 1);
    for (const [n, delay] of [
      [2, 5_000],
      [3, 30_000],
      [4, 300_000],
      [5, 3_600_000],
    ] as const) {
      const d = await delivery();
      expect(d).toMatchObject({ status: 'pending', attempt: n - 1, response_status: 500 });
      const failedAt = Date.parse(d.next_retry_at) - delay;
      expect(failedAt).toBeLessThanOrEqual(Number(clock.nowNs() / 1_000_000n));
      clock.set(BigInt(Date.parse(d.next_retry_at) - 1) * 1_000_000n);
      await dispatcher.runDue();
      expect(mine()).toHaveLength(n - 1);
      clock.set(BigInt(Date.parse(d.next_retry_at)) * 1_000_000n);
      await dispatcher.runDue();
      expect(mine()).toHaveLength(n);
      expect(mine()[n - 1]!.json.delivery_attempt).toBe(n);
      expect(mine()[n - 1]!.headers['webhook-id']).toBe(mine()[0]!.headers['webhook-id']);
    }
    expect(await delivery()).toMatchObject({ status: 'failed', attempt: 5, next_retry_at: null });
    const w = (await call(t.url, 'GET', `/api/webhooks/${hook.id}`, undefined, bearer(me.key))).body;
    expect(w).toMatchObject({ status: 'disabled', failure_count: 5 });
    clock.set(clock.nowNs() + 10n * 3_600_000_000_000n);
    await dispatcher.runDue();
    await call(t.url, 'POST', '/api/svc/compute', chain, bearer(me.key));
    await dispatcher.runDue();
    expect(mine()).toHaveLength(5);
    rx.mode = 'ok';
    // Enabled again by its owner: deliveries resume with a fresh count.
    const again = await call(t.url, 'PATCH', `/api/webhooks/${hook.id}`, { status: 'enabled' }, bearer(me.key));
    expect(again.body).toMatchObject({ status: 'enabled', failure_count: 0 });
  });

  it('nothing is owed or sent for a seal whose batch failed', async () => {
    const me = await zkIdentity(t.url, 'wh-d');
    const hook = await register(me.key, ['computation.complete']);
    const start = rx.received.length;
    failNextBatch(t, 5, /^!results!/); // the seal's batch, not a delivery outcome of an earlier test written meanwhile
    const r = await call(t.url, 'POST', '/api/svc/compute', chain, bearer(me.key));
    expect(r.status).toBe(503);
    await t.node.webhooks.dispatcher.runDue();
    expect(rx.received.slice(start).filter((x) => x.headers['x-team'] === 'blue' && x.json.event === 'computation.complete')).toHaveLength(0);
    expect((await call(t.url, 'GET', `/api/webhooks/${hook.id}/deliveries`, undefined, bearer(me.key))).body.deliveries).toHaveLength(0);
  });

  it('management: validation, ownership, update, delete', async () => {
    const me = await zkIdentity(t.url, 'wh-e');
    const other = await zkIdentity(t.url, 'wh-f');
    expectError(await call(t.url, 'POST', '/api/webhooks', { url: 'ftp://example.com/x', events: ['webhook.test'] }, bearer(me.key)), 400, 'SVC_INVALID_INPUT');
    expectError(
      await call(t.url, 'POST', '/api/webhooks', { url: 'http://u:p@example.com/', events: ['webhook.test'] }, bearer(me.key)),
      400,
      'SVC_INVALID_INPUT',
    );
    expectError(await call(t.url, 'POST', '/api/webhooks', { url: rx.url, events: ['nope'] }, bearer(me.key)), 400, 'SVC_INVALID_INPUT');
    expectError(
      await call(t.url, 'POST', '/api/webhooks', { url: rx.url, events: ['webhook.test'], headers: { 'X-Svc-Signature': 'x' } }, bearer(me.key)),
      400,
      'SVC_INVALID_INPUT',
    );
    expectError(await call(t.url, 'POST', '/api/webhooks', { url: rx.url, events: ['webhook.test'] }), 401, 'SVC_NO_KEY');
    const hook = await register(me.key, ['webhook.test']);
    expectError(await call(t.url, 'GET', `/api/webhooks/${hook.id}`, undefined, bearer(other.key)), 404, 'SVC_NOT_FOUND');
    expectError(await call(t.url, 'DELETE', `/api/webhooks/${hook.id}`, undefined, bearer(other.key)), 404, 'SVC_NOT_FOUND');
    const up = await call(t.url, 'PATCH', `/api/webhooks/${hook.id}`, { events: ['batch.complete'], metadata: { v: 2 } }, bearer(me.key));
    expect(up.body).toMatchObject({ events: ['batch.complete'], metadata: { v: 2 } });
    expectError(await call(t.url, 'GET', `/api/webhooks/${hook.id}/deliveries?status=nope`, undefined, bearer(me.key)), 400, 'SVC_INVALID_INPUT');
    expect((await call(t.url, 'DELETE', `/api/webhooks/${hook.id}`, undefined, bearer(me.key))).body).toEqual({ id: hook.id, deleted: true });
    expectError(await call(t.url, 'GET', `/api/webhooks/${hook.id}`, undefined, bearer(me.key)), 404, 'SVC_NOT_FOUND');
  });
});

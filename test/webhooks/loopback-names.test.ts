// A node that refuses loopback receivers refuses them at registration, by name as well as by address: the names a
// hosts file gives this machine, with or without the trailing dot of a fully qualified name; and the IPv6 forms that
// carry an inside IPv4 or name a non-public range, with the refusal of any private address.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

let t: TestNode;

beforeAll(async () => {
  t = await startTestNode({ solverThreads: 0, sealWorker: false });
});
afterAll(async () => {
  await t.destroy();
});

/** A refusal without what differs from one answer to the next (trace id, timestamp). */
const same = (e: Record<string, unknown>): Record<string, unknown> => {
  const { trace_id: _t, timestamp: _ts, ...rest } = e;
  return rest;
};

describe('webhook registration on a node that refuses loopback', () => {
  it('answers 400 SVC_INVALID_INPUT for the local names of this machine, and registers nothing', async () => {
    expect(t.node.config.webhooks.allowLoopback).toBe(false);
    const me = await zkIdentity(t.url, 'wh-loopback-names');
    for (const host of ['localhost', 'localhost.', 'localhost.localdomain', 'ip6-localhost', 'ip6-loopback', 'hooks.localdomain.', '127.0.0.1']) {
      const r = await call(t.url, 'POST', '/api/webhooks', { url: `http://${host}:9/hook`, events: ['webhook.test'] }, bearer(me.key));
      const e = expectError(r, 400, 'SVC_INVALID_INPUT');
      expect(e.message, host).toMatch(/url/);
    }
    expect((await call(t.url, 'GET', '/api/webhooks', undefined, bearer(me.key))).body.webhooks).toEqual([]);
    const ok = await call(t.url, 'POST', '/api/webhooks', { url: 'https://hooks.example.com./in', events: ['webhook.test'] }, bearer(me.key));
    expect(ok.status, ok.text).toBe(201);
  });

  it('answers the same 400 for IPv6 forms that reach an inside IPv4 or a non-public range, and registers nothing', async () => {
    const me = await zkIdentity(t.url, 'wh-embedded-v4');
    const v4 = expectError(
      await call(t.url, 'POST', '/api/webhooks', { url: 'http://10.0.0.1/hook', events: ['webhook.test'] }, bearer(me.key)),
      400,
      'SVC_INVALID_INPUT',
    );
    for (const host of [
      '[::127.0.0.1]',
      '[::ffff:127.0.0.1]',
      '[::ffff:7f00:1]',
      '[64:ff9b::10.0.0.1]',
      '[64:ff9b:1::a00:1]',
      '[2002:a00:1::1]',
      '[fec0::1]',
      '[100::1]',
    ]) {
      const r = await call(t.url, 'POST', '/api/webhooks', { url: `http://${host}:9/hook`, events: ['webhook.test'] }, bearer(me.key));
      const e = expectError(r, 400, 'SVC_INVALID_INPUT');
      expect(same(e), host).toEqual(same(v4));
    }
    expect((await call(t.url, 'GET', '/api/webhooks', undefined, bearer(me.key))).body.webhooks).toEqual([]);
    const ok = await call(t.url, 'POST', '/api/webhooks', { url: 'https://[2606:4700::1111]/in', events: ['webhook.test'] }, bearer(me.key));
    expect(ok.status, ok.text).toBe(201);
    // An update is held to the same policy.
    const id = (ok.body as { id: string }).id;
    expectError(await call(t.url, 'PATCH', `/api/webhooks/${id}`, { url: 'http://[64:ff9b::7f00:1]/in' }, bearer(me.key)), 400, 'SVC_INVALID_INPUT');
  });
});

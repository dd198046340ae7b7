// A node that refuses loopback receivers refuses them at registration, by name as well as by address: the names a
// hosts file gives this machine, with or without the trailing dot of a fully qualified name.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

let t: TestNode;

beforeAll(async () => {
  t = await startTestNode({ solverThreads: 0, sealWorker: false });
});
afterAll(async () => {
  await t.destroy();
});

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
});

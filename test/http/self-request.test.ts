// Tools' requests to the node's own API: the caller's IP counts only beside this process's internal token.
import { describe, expect, it } from 'vitest';
import type { Context } from 'koa';
import { SelfApi } from '../../src/http/self-request.js';

function fakeCtx(headers: Record<string, string>): Context {
  const request = { ip: '127.0.0.1' };
  return { request, get: (h: string) => headers[h.toLowerCase()] ?? '' } as unknown as Context;
}

describe('SelfApi', () => {
  it('takes the named client IP only with the internal token', async () => {
    const self = new SelfApi();
    const token = (self as unknown as { token: string }).token;
    const mw = self.middleware();
    const forged = fakeCtx({ 'x-svc-internal': 'f'.repeat(64), 'x-svc-client-ip': '203.0.113.9' });
    await mw(forged, () => Promise.resolve());
    expect(forged.request.ip).toBe('127.0.0.1');
    const none = fakeCtx({ 'x-svc-client-ip': '203.0.113.9' });
    await mw(none, () => Promise.resolve());
    expect(none.request.ip).toBe('127.0.0.1');
    const internal = fakeCtx({ 'x-svc-internal': token, 'x-svc-client-ip': '203.0.113.9' });
    await mw(internal, () => Promise.resolve());
    expect(internal.request.ip).toBe('203.0.113.9');
    self.close();
  });
});

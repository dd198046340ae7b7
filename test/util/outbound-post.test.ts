// One POST the node makes for a caller: the policy is applied where the name is resolved, not only to the URL's text.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postOnce } from '../../src/util/outbound-post.js';

let server: Server;
let port: number;
const seen: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      seen.push(body);
      res.writeHead(201, { 'content-type': 'text/plain' });
      res.end('x'.repeat(5000));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('postOnce', () => {
  it('refuses a name that resolves to loopback under a strict policy, and never connects', async () => {
    const strict = { allowLoopback: false, allowHosts: [] };
    await expect(postOnce(`http://localhost:${port}/`, {}, 'a', { policy: strict, keepBytes: 10 })).rejects.toThrow(/private address/);
    await expect(postOnce(`http://127.0.0.1:${port}/`, {}, 'b', { policy: strict, keepBytes: 10 })).rejects.toThrow(/private address refused/);
    expect(seen).toEqual([]);
  });

  it('refuses an IPv6 literal that embeds an inside IPv4 under a strict policy, and never connects', async () => {
    const strict = { allowLoopback: false, allowHosts: [] };
    for (const host of ['[::127.0.0.1]', '[::ffff:7f00:1]', '[64:ff9b::7f00:1]', '[2002:7f00:1::1]', '[fec0::1]', '[100::1]'])
      await expect(postOnce(`http://${host}:${port}/`, {}, host, { policy: strict, keepBytes: 10 }), host).rejects.toThrow(/private address refused/);
    expect(seen).toEqual([]);
  });

  it('posts when loopback is allowed, keeping at most keepBytes of the answer', async () => {
    const answer = await postOnce(`http://localhost:${port}/`, { 'content-type': 'text/plain' }, 'hello', {
      policy: { allowLoopback: true, allowHosts: [] },
      keepBytes: 100,
    });
    expect(answer.status).toBe(201);
    expect(answer.body).toBe('x'.repeat(100));
    expect(seen).toEqual(['hello']);
  });

  it('an aborted signal ends the call', async () => {
    const ac = new AbortController();
    ac.abort();
    await expect(
      postOnce(`http://127.0.0.1:${port}/`, {}, 'c', { policy: { allowLoopback: true, allowHosts: [] }, keepBytes: 1, signal: ac.signal }),
    ).rejects.toThrow();
  });
});

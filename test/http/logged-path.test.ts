// What a log line says of a request's path: credentials in it cut to their prefix, everything else as it was; and a
// node's request log, at its most verbose, holding no key a caller put in a path.
import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { bearer, call, startTestNode, zkIdentity } from '../helpers/node.js';
import { loggedPath } from '../../src/http/logged-path.js';
import { mintKey } from '../../src/identity/keys.js';
import { newSecret } from '../../src/webhooks/signing.js';

describe('loggedPath', () => {
  it('cuts every kind of key, a channel key and a webhook secret to its prefix, wherever it stands in the path', () => {
    const sk = mintKey('sk');
    const test = mintKey('sk_test');
    const pub = mintKey('zsm_pub');
    const channel = `stk_${'0a'.repeat(24)}`;
    const whsec = newSecret();
    expect(loggedPath(`/api/auth/keys/${sk}`)).toBe('/api/auth/keys/sk_…');
    expect(loggedPath(`/api/auth/salt/${test}/x`)).toBe('/api/auth/salt/sk_test_…/x');
    expect(loggedPath(`/${pub}`)).toBe('/zsm_pub_…');
    expect(loggedPath(`/api/svc/streams/str_1/${channel}`)).toBe('/api/svc/streams/str_1/stk_…');
    expect(loggedPath(`/api/webhooks/${encodeURIComponent(whsec)}`)).toBe('/api/webhooks/whsec_…');
    for (const secret of [sk, test, pub, channel, encodeURIComponent(whsec)]) expect(loggedPath(`/a/${secret}`)).not.toContain(secret.slice(-12));
  });

  it('leaves ids, slugs and short words alone', () => {
    for (const path of [
      '/api/auth/keys/sk_1a2b3c4d',
      '/api/chain/m-0123456789abcdef/explore',
      '/api/svc/streams/str_0a1b/tick',
      '/api/tally/envelopes/zid_' + '0'.repeat(32),
    ])
      expect(loggedPath(path)).toBe(path);
  });
});

/** A logger at `level` whose lines are kept, one JSON text each. */
function capturedLog(level: string): { lines: string[]; logger: pino.Logger } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { lines, logger: pino({ level }, sink) };
}

describe("a node's request log", () => {
  it('does not hold a key sent in a path (a DELETE by the key instead of its key id), at level trace', async () => {
    const { lines, logger } = capturedLog('trace');
    const t = await startTestNode({ solverThreads: 0, sealWorker: false }, { logger });
    try {
      const id = await zkIdentity(t.url, 'logged-path');
      const r = await call(t.url, 'DELETE', `/api/auth/keys/${id.key}`, undefined, bearer(id.key));
      expect(r.body.error.status).toBe(r.status);
      expect(r.status).toBeGreaterThanOrEqual(400);
      const logged = lines.filter((l) => l.includes('/api/auth/keys/'));
      expect(logged.length).toBeGreaterThan(0);
      for (const line of lines) expect(line).not.toContain(id.key.slice(3));
      expect(logged.some((l) => l.includes('/api/auth/keys/sk_…'))).toBe(true);
    } finally {
      await t.destroy();
    }
  }, 60_000);

  it('tells a refused request (4xx) by its code as "request refused", at info', async () => {
    const { lines, logger } = capturedLog('info');
    const t = await startTestNode({ solverThreads: 0, sealWorker: false }, { logger });
    try {
      expect((await call(t.url, 'GET', '/no/such/route')).status).toBe(404);
      expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(`sk_${'ab'.repeat(24)}`))).status).toBe(401);
      const refused = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'request refused');
      expect(refused.map((l) => [l.path, l.status, l.code, l.level])).toEqual([
        ['/no/such/route', 404, 'SVC_NOT_FOUND', 30],
        ['/api/tally/balance', 401, 'SVC_INVALID_KEY', 30],
      ]);
      expect(lines.some((l) => l.includes('request failed'))).toBe(false);
    } finally {
      await t.destroy();
    }
  }, 60_000);
});

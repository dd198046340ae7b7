// Sessions are kept by the identity's home (http/routes/identity.ts servedAtHome): on a line of three real nodes
// (A — B — C, each knowing only the one before it), an identity registered at A logs in at C, and its session cookie
// opens verify, session-key, api-key and logout at any node, each relayed to A and answered there. A wrong equation
// with the identity's zid is refused by A; a cookie whose secret part was altered, or that names another identity, is
// no session anywhere; once A is stopped, a login or a session route at C answers 503 SVC_HOME_UNREACHABLE (a client
// keeps its session), never a refusal of the credentials.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, sparseMeshConfig, startMesh, type TestNode } from '../helpers/node.js';

const SECRET = 'sessions-any-node-secret-0123456789abcdef';
const FORWARD_TIMEOUT_MS = 1_500;
const equation = createHash('sha256').update('sessions-any-node').digest('hex');
let a: TestNode, b: TestNode, c: TestNode;
let zid: string;

const cookieOf = (r: { headers: Headers }): string => (r.headers.get('set-cookie') ?? '').split(';')[0]!;
const post = (n: TestNode, path: string, body: unknown, cookie?: string) => call(n.url, 'POST', path, body, cookie ? { cookie } : {});

beforeAll(async () => {
  const sparse = sparseMeshConfig(SECRET);
  const config = (bootstrap: string[]) => {
    const c = sparse(bootstrap);
    return { ...c, mesh: { ...(c.mesh as Record<string, unknown>), forwardTimeoutMs: FORWARD_TIMEOUT_MS } };
  };
  const nodes = await startMesh(3, config, {}, 'line');
  [a, b, c] = [nodes[0]!, nodes[1]!, nodes[2]!];
  const reg = await post(a, '/api/svc-auth/register-v3', { equation_sha256: equation });
  expect(reg.status, reg.text).toBe(201);
  zid = reg.body.zid;
}, 90_000);

afterAll(async () => {
  await Promise.all([a, b, c].map((n) => n?.destroy()));
});

describe('a session of an identity homed on another node', () => {
  it('logs in at the far end of a line, and its cookie opens the session routes at every node', async () => {
    const login = await post(c, '/api/svc-auth/login-v3', { equation_sha256: equation });
    expect(login.status, login.text).toBe(200);
    expect(login.headers.get('x-svc-served-by')).toBe(a.node.nodeId);
    expect(login.body).toMatchObject({ zid });
    const cookie = cookieOf(login);
    expect(cookie).toMatch(new RegExp(`^session=${zid}\\.[A-Za-z0-9_-]{43}$`));
    expect(login.headers.get('set-cookie')).toMatch(/HttpOnly/i);

    for (const n of [a, b, c]) {
      const verified = await post(n, '/api/auth/verify', undefined, cookie);
      expect(verified.body, n.url).toMatchObject({ valid: true, zid });
    }
    // The safe form of the check (QUERY) is relayed as sent.
    const queried = await call(c.url, 'QUERY', '/api/auth/verify', undefined, { cookie });
    expect([queried.status, queried.headers.get('x-svc-served-by')]).toEqual([200, a.node.nodeId]);
    expect(queried.body).toMatchObject({ valid: true, zid });
    // A key minted through B's door is the identity's, at its home and wherever it is presented.
    const minted = await post(b, '/api/auth/api-key', { kind: 'sk' }, cookie);
    expect(minted.status, minted.text).toBe(201);
    expect(minted.headers.get('x-svc-served-by')).toBe(a.node.nodeId);
    for (const n of [a, c]) expect((await call(n.url, 'GET', '/api/auth/whoami', undefined, bearer(minted.body.key))).body).toMatchObject({ zid });
    const sessionKey = await post(c, '/api/auth/session-key', undefined, cookie);
    expect(sessionKey.status, sessionKey.text).toBe(200);
    expect(sessionKey.body.sessionKey).toMatch(/^sk_/);
    expect((await call(a.url, 'GET', '/api/auth/whoami', undefined, bearer(sessionKey.body.sessionKey))).body).toMatchObject({ zid });

    // Logging out through C ends the session at A: no node opens it after.
    const out = await post(c, '/api/auth/logout', undefined, cookie);
    expect(out.status, out.text).toBe(200);
    expect(out.headers.get('set-cookie')).toMatch(/^session=;/);
    for (const n of [a, b, c]) expect((await post(n, '/api/auth/verify', undefined, cookie)).body).toMatchObject({ valid: false, zid: null });
  });

  it("refuses a wrong equation with the identity's zid at its home, and an altered or misnamed cookie everywhere", async () => {
    const wrong = `${equation.slice(0, 32)}${'0'.repeat(32)}`;
    expect(wrong).not.toBe(equation);
    const refused = await post(c, '/api/svc-auth/login-v3', { equation_sha256: wrong });
    expectError(refused, 401, 'SVC_INVALID_CREDENTIALS');
    expect(refused.headers.get('x-svc-served-by')).toBe(a.node.nodeId);
    expect(refused.headers.get('set-cookie')).toBeNull();

    const cookie = cookieOf(await post(b, '/api/svc-auth/login-v3', { equation_sha256: equation }));
    const last = cookie.at(-1)!;
    const altered = `${cookie.slice(0, -1)}${last === 'A' ? 'B' : 'A'}`;
    const otherZid = cookie.replace(zid, `zid_${'0'.repeat(32)}`);
    for (const bad of [altered, otherZid]) {
      for (const n of [a, c]) expect((await post(n, '/api/auth/verify', undefined, bad)).body).toMatchObject({ valid: false, zid: null });
      expectError(await post(c, '/api/auth/api-key', { kind: 'sk' }, bad), 401, 'SVC_NO_SESSION');
    }
    expect((await post(c, '/api/auth/verify', undefined, cookie)).body).toMatchObject({ valid: true, zid });
  });

  it('with the home stopped, a login or a session route elsewhere is 503 SVC_HOME_UNREACHABLE, not a refusal', async () => {
    const cookie = cookieOf(await post(c, '/api/svc-auth/login-v3', { equation_sha256: equation }));
    expect(cookie).toContain(zid);
    await a.stop();
    const login = await post(c, '/api/svc-auth/login-v3', { equation_sha256: equation });
    expect(expectError(login, 503, 'SVC_HOME_UNREACHABLE')).toMatchObject({ home: a.node.nodeId, zid });
    expect(login.headers.get('retry-after')).not.toBeNull();
    const verified = await post(b, '/api/auth/verify', undefined, cookie);
    expect(expectError(verified, 503, 'SVC_HOME_UNREACHABLE')).toMatchObject({ home: a.node.nodeId });
  });
});

// A role on a private machine held by an identity homed on another node: read and append as the role allows from any
// node. The key travels to its own home only; the home vouches for the caller to the machine's home (chain-delegation.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { CHAIN_CALLER_HEADER } from '../../src/http/chain-delegation.js';
import { FORWARDED_HEADER } from '../../src/http/forward.js';
import { chainCallerResponse } from '../../src/http/responses.js';
import { waitUntil } from '../helpers/wait.js';

const MESH_SECRET = 'chain-roles-mesh-secret-0123456789';
const meshConfig = (bootstrap: string[]) => ({ mesh: { secret: MESH_SECRET, p2pPort: 0, bootstrap, tickEvery: 1 } });
const opts = { mesh: { redialMinMs: 100, redialMaxMs: 1000 }, initialCredits: 1000 };
const SLUG = 'shared-book';

let nodes: TestNode[] = [];
let owner: { zid: string; key: string };
let operator: { zid: string; key: string };
let stranger: { zid: string; key: string };

beforeAll(async () => {
  const a = await startTestNode(meshConfig([]), opts);
  const addrA = a.node.mesh.multiaddrs()[0]!;
  const b = await startTestNode(meshConfig([addrA]), opts);
  const c = await startTestNode(meshConfig([addrA, b.node.mesh.multiaddrs()[0]!]), opts);
  nodes = [a, b, c];
  await waitUntil(async () => nodes.every((n) => n.node.mesh.peers().filter((p) => p.url).length >= 2), 'tick events from every peer');
  owner = await zkIdentity(a.url, 'roles-mesh-owner');
  operator = await zkIdentity(b.url, 'roles-mesh-operator');
  stranger = await zkIdentity(b.url, 'roles-mesh-stranger');
  const made = await call(a.url, 'POST', '/api/chain/state-machines', { slug: SLUG }, bearer(owner.key));
  expect(made.status, made.text).toBe(201);
  // The machine's home knows the operator's identity (and its home) from identity gossip.
  await waitUntil(async () => (await a.node.identity.getIdentity(operator.zid))?.home === b.node.nodeId, 'the operator known at A');
  const r = await call(a.url, 'PATCH', `/api/chain/${SLUG}/settings`, { roles: { [operator.zid]: 'operator' } }, bearer(owner.key));
  expect(r.status, r.text).toBe(200);
}, 60_000);
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.destroy()));
});

describe('a role held by an identity homed on another node', () => {
  it('reads and appends from any node (served by the machine’s home); what the role does not allow stays 403', async () => {
    const [a, b, c] = nodes as [TestNode, TestNode, TestNode];
    // By header from C, B and A; by ?key= from C.
    const byQuery = await call(c.url, 'GET', `/api/chain/${SLUG}/explore?key=${operator.key}`);
    expect(byQuery.status, byQuery.text).toBe(200);
    for (const n of [c, b, a]) {
      const read = await call(n.url, 'GET', `/api/chain/${SLUG}/explore`, undefined, bearer(operator.key));
      expect(read.status, `${n === a ? 'A' : n === b ? 'B' : 'C'}: ${read.text}`).toBe(200);
      if (n !== a) expect(read.headers.get('x-svc-served-by')).toBe(a.node.nodeId);
      const appended = await call(n.url, 'POST', `/api/chain/${SLUG}/events`, { payload: { from: n.url } }, bearer(operator.key));
      expect(appended.status, appended.text).toBe(201);
    }
    const rows = await call(a.url, 'GET', `/api/chain/${SLUG}/explore`, undefined, bearer(owner.key));
    expect(rows.body.rows.filter((r: { transitionType: string }) => r.transitionType === 'event')).toHaveLength(3);
    const settings = await call(c.url, 'PATCH', `/api/chain/${SLUG}/settings`, { is_public: true }, bearer(operator.key));
    expect(expectError(settings as never, 403, 'SVC_FORBIDDEN')).toMatchObject({ action: 'settings', role: 'operator' });
    // No role, asked anywhere: 403, as at the home.
    for (const n of [c, b])
      expectError((await call(n.url, 'GET', `/api/chain/${SLUG}/explore`, undefined, bearer(stranger.key))) as never, 403, 'SVC_FORBIDDEN');
  });

  it('a voucher is good for its one request: replayed, or for another request, it is refused', async () => {
    const [a, b] = nodes as [TestNode, TestNode];
    const path = `/api/chain/${SLUG}/explore`;
    const v = await call(
      b.url,
      'POST',
      '/api/mesh/chain-caller',
      { method: 'GET', path, body_sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' },
      bearer(operator.key),
    );
    expect(v.status, v.text).toBe(200);
    chainCallerResponse.parse(v.body);
    const voucher = Buffer.from(JSON.stringify(v.body)).toString('base64url');
    const vouched = (p: string) => call(a.url, 'GET', p, undefined, { [FORWARDED_HEADER]: b.node.nodeId, [CHAIN_CALLER_HEADER]: voucher });
    expect(expectError((await vouched(`/api/chain/${SLUG}/settings`)) as never, 401, 'SVC_INVALID_KEY').reason).toBe('for another request');
    expect((await vouched(path)).status).toBe(200);
    expect(expectError((await vouched(path)) as never, 401, 'SVC_INVALID_KEY').reason).toBe('used before');
    // A node vouches only for its own identities.
    expect((await call(a.url, 'POST', '/api/mesh/chain-caller', { method: 'GET', path, body_sha256: '0'.repeat(64) }, bearer(operator.key))).status).toBe(403);
  });
});

// Three real nodes (HTTP + libp2p on 127.0.0.1) sharing a mesh secret: any-node API, identity assertions,
// forwarding to the home node, gossip entrance over HTTP, mesh verify, DNS, transparency.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, connectedIndexes, expectError, startMesh, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { keyDigest, keyId } from '../../src/identity/keys.js';
import { buildEnvelope } from '../../src/mesh/wire.js';
import { stampAt } from '../../src/kernel/clock.js';
import { waitUntil } from '../helpers/wait.js';
import { MESH_VERIFY_PER_MINUTE } from '../../src/http/routes/mesh-identity.js';

const MESH_SECRET = 'cluster-test-secret-0123456789abcdef';
// Hex, as every receipt secret is (docs/protocol.md): the UTF-8 of the text this test used before.
const RECEIPT_SECRET = Buffer.from('cluster-receipt-secret-0123456789ab', 'utf8').toString('hex');

const waitFor = <T>(fn: () => Promise<T | null | false | undefined> | T | null | false | undefined, what: string, timeoutMs = 10_000) =>
  waitUntil(fn, what, timeoutMs, 50);

let a: TestNode;
let b: TestNode;
let c: TestNode;

const meshConfig = (bootstrap: string[]) => ({ receiptSecret: RECEIPT_SECRET, mesh: { secret: MESH_SECRET, p2pPort: 0, bootstrap, tickEvery: 1 } });
const opts = { mesh: { redialMinMs: 100, redialMaxMs: 1000 } };

beforeAll(async () => {
  a = await startTestNode(meshConfig([]), opts);
  const addrA = a.node.mesh.multiaddrs()[0]!;
  b = await startTestNode(meshConfig([addrA]), opts);
  c = await startTestNode(meshConfig([addrA, b.node.mesh.multiaddrs()[0]!]), opts);
  // Every node has heard a tick event (with its URL) from both others.
  await waitFor(
    async () => {
      const urls = [a, b, c].map((n) => n.node.mesh.peers().filter((p) => p.url).length);
      return urls.every((n) => n >= 2);
    },
    'tick events from every peer',
    15_000,
  );
}, 60_000);

afterAll(async () => {
  await Promise.all([a, b, c].map((n) => n?.destroy()));
});

describe('tick events and status', () => {
  it('every node sees the other two, with a coherence score', async () => {
    for (const n of [a, b, c]) {
      const s = await call(n.url, 'GET', '/api/mesh/status');
      expect(s.status).toBe(200);
      expect(s.body.meshSize).toBe(3);
      expect(s.body.peers).toHaveLength(2);
      expect(s.body.coherenceScore).toBeGreaterThan(0);
      expect(s.body.coherenceScore).toBeLessThanOrEqual(1);
      expect(s.body.recentGossipCount).toBeGreaterThan(0);
      expect(Number.isInteger(s.body.lastGossipZeqond)).toBe(true);
      expect(s.body.multiaddrs[0]).toContain('/p2p/');
    }
    const ev = await call(b.url, 'GET', '/api/mesh/events?limit=5');
    expect(ev.body.events.length).toBeGreaterThan(0);
    expect(ev.body.events.length).toBeLessThanOrEqual(5);
  });
});

/** A key minted on `a` authenticates on `b`, and a write through `b` lands exactly once at `a` (`c` reads it). */
async function writeThroughAnotherNode(a: TestNode, b: TestNode, c: TestNode, seed: string): Promise<void> {
  const id = await zkIdentity(a.url, seed);
  // Gossip (or the signed lookup) brings the key to B.
  const r = await call(b.url, 'POST', '/api/svc/compute', { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: {} }, bearer(id.key));
  expect(r.status, r.text).toBe(200);
  expect(r.headers.get('x-svc-served-by')).toBe(a.node.nodeId);
  expect(r.body.node).toBe(a.node.nodeId);
  expect(r.body.envelope).not.toBeNull();
  // Exactly once, at A: one envelope and one chain row there; nothing sealed on B.
  // An identity's counters are read into memory on demand (store/counters.ts).
  await a.node.counters.loadIdentity(id.zid);
  await b.node.counters.loadIdentity(id.zid);
  expect(a.node.counters.get(`env:${id.zid}`)).toBe(1);
  expect(b.node.counters.get(`env:${id.zid}`)).toBe(0);
  expect(b.node.counters.get('sealed_total')).toBe(0);
  const list = await call(c.url, 'GET', `/api/tally/envelopes/${id.zid}`, undefined, bearer(id.key));
  expect(list.body.total).toBe(1);
  expect(list.body.items[0].token_id).toBe(r.body.envelope.token_id);
  // The home announced the seal to the mesh once it was durable, with the others of its tick interval: counted, not
  // listed, since its owner does not publish (the default): its value is not told.
  type Announced = {
    event: { type: string; sender: string; body: { count: number; from_svcond: number; to_svcond: number; results: { result_id: string }[] } };
  };
  const announced = (await waitFor(async () => {
    const ev = await call(c.url, 'GET', '/api/mesh/events?limit=200');
    return (ev.body.events as Announced[]).find(
      (e) =>
        e.event.type === 'results.sealed' &&
        e.event.sender === a.node.nodeId &&
        e.event.body.from_svcond <= r.body.svcond &&
        r.body.svcond <= e.event.body.to_svcond,
    );
  }, 'results.sealed on C')) as Announced;
  expect(announced.event.body.count).toBeGreaterThanOrEqual(1);
  expect(announced.event.body.results.map((s) => s.result_id)).not.toContain(r.body.result_id);
  // Any node verifies any node's receipt (shared receipt secret).
  expect((await call(c.url, 'POST', '/api/svc/verify', r.body, bearer(id.key))).body.valid).toBe(true);
}

describe('any-node API', () => {
  it('a key minted on A authenticates on B, and a write through B lands exactly once at A', async () => {
    await writeThroughAnotherNode(a, b, c, 'any-node');
  });

  it("a key that was never gossiped to B is found by B from A's signed answer", async () => {
    const { key } = await a.node.identity.mintKeyFor((await zkIdentity(a.url, 'lookup')).zid, 'sk', null);
    const digest = keyDigest(key);
    const signed = await call(a.url, 'GET', `/api/mesh/keys/${digest}`);
    expect(signed.status).toBe(200);
    expect(signed.body).toMatchObject({ type: 'identity.assert', sender: a.node.nodeId, body: { digest } });
    expect((await call(b.url, 'GET', `/api/mesh/keys/${digest}`)).status).toBe(404);
    const who = await call(c.url, 'GET', '/api/auth/whoami', undefined, bearer(key));
    expect(who.status).toBe(200);
  });

  it('a node cannot assert keys for an identity homed elsewhere', async () => {
    const id = await zkIdentity(a.url, 'victim');
    await waitFor(async () => (await call(b.url, 'GET', `/api/mesh/identity/${id.zid}`)).body.verified, 'identity stub on B');
    const forgedKey = `sk_${'F'.repeat(32)}`;
    const now = Date.now();
    const forged = {
      digest: keyDigest(forgedKey),
      key: {
        key_id: 'sk_forged',
        kind: 'sk',
        zid: id.zid,
        slug: null,
        plan: 'standard',
        created_unix_ms: now,
        expires_unix_ms: null,
        revoked_unix_ms: null,
        home: c.node.nodeId,
      },
      identity: { zid: id.zid, home: c.node.nodeId, default_machine: null },
    };
    expect(await b.node.identity.applyAssertion(forged, c.node.nodeId)).toBe(false);
    // Claiming to be A does not help either: the signer must be the home.
    expect(await b.node.identity.applyAssertion({ ...forged, key: { ...forged.key, home: a.node.nodeId } }, c.node.nodeId)).toBe(false);
    expectError(await call(b.url, 'GET', '/api/auth/whoami', undefined, bearer(forgedKey)), 401, 'SVC_INVALID_KEY');
  });

  it('a revocation asked for at B is made at the home A and reaches every node over the gossip: 401 with revoked_at on each', async () => {
    const id = await zkIdentity(a.url, 'revoke-me');
    await waitFor(async () => (await call(b.url, 'GET', '/api/auth/whoami', undefined, bearer(id.adminKey))).status === 200, 'key on B');
    const d = await call(b.url, 'DELETE', `/api/auth/keys/${keyId(id.adminKey)}`, undefined, bearer(id.key));
    expect(d.status, d.text).toBe(200);
    expect(d.headers.get('x-svc-served-by')).toBe(a.node.nodeId);
    const revokedAt = d.body.revoked_at as string;
    expect(Date.parse(revokedAt)).not.toBeNaN();
    for (const n of [b, c]) {
      await waitFor(async () => (await call(n.url, 'GET', '/api/auth/whoami', undefined, bearer(id.adminKey))).status === 401, 'revocation on a peer');
    }
    for (const n of [a, b, c]) {
      const e = expectError(await call(n.url, 'GET', '/api/auth/whoami', undefined, bearer(id.adminKey)), 401, 'SVC_INVALID_KEY');
      expect(e).toMatchObject({ reason: 'revoked', revoked_at: revokedAt, key_id: keyId(id.adminKey) });
    }
    expect((await call(b.url, 'GET', '/api/auth/whoami', undefined, bearer(id.key))).status).toBe(200);
  });

  it('POST /api/mesh/verify asks the peers and reaches consensus', async () => {
    const id = await zkIdentity(a.url, 'verify-me');
    await waitFor(async () => (await call(c.url, 'GET', `/api/mesh/identity/${id.zid}`)).body.verified, 'identity on C');
    const v = await call(b.url, 'POST', '/api/mesh/verify', { zid: id.zid });
    expect(v.body).toMatchObject({ zid: id.zid, verified: true, consensusReached: true, quorum: 2 });
    expect(v.body.meshNodes).toHaveLength(3);
    expect(v.body.meshNodes.map((n: { nodeId: string }) => n.nodeId).sort()).toEqual([a, b, c].map((n) => n.node.nodeId).sort());
    const unknown = await call(b.url, 'POST', '/api/mesh/verify', { zid: `zid_${'0'.repeat(32)}` });
    expect(unknown.body).toMatchObject({ verified: false, consensusReached: true });
    // Each call asks the whole mesh: 10 a minute per caller address, then 429.
    for (let i = 2; i < MESH_VERIFY_PER_MINUTE; i++) expect((await call(b.url, 'POST', '/api/mesh/verify', { zid: id.zid })).status).toBe(200);
    const over = await call(b.url, 'POST', '/api/mesh/verify', { zid: id.zid });
    expect(over.status).toBe(429);
    expect(over.body.error).toMatchObject({ code: 'SVC_RATE_LIMIT', limit: MESH_VERIFY_PER_MINUTE, window_seconds: 60 });
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });
});

describe('chain reads on any node', () => {
  const kinetic = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: {} };
  const validate = (slug: string, q = '') => `/api/chain/${slug}/pohc/validate${q}`;
  const explore = (slug: string, q = '') => `/api/chain/${slug}/explore${q}`;
  const servedBy = (r: { headers: Headers }) => r.headers.get('x-svc-served-by');
  let owner: { zid: string; key: string; slug: string };

  beforeAll(async () => {
    owner = await zkIdentity(a.url, 'chain-reads');
    for (let i = 0; i < 2; i++) {
      const r = await call(a.url, 'POST', '/api/svc/compute', kinetic, bearer(owner.key));
      expect(r.status, r.text).toBe(200);
    }
  });

  it('validate and explore of a chain homed on A answer the same through B and C, with X-Svc-Served-By', async () => {
    // A default machine follows its owner: B knows the owner homed at A (its gossiped assertion), holds no directory
    // entry for the slug (an admin key's assertion teaches none), and does not hold the chain.
    expect(await waitFor(async () => (await b.node.identity.getIdentity(owner.zid))?.home, 'the owner known on B')).toBe(a.node.nodeId);
    expect(await b.node.mesh.machines.known(owner.slug)).toBeNull();
    expect(await b.node.chain.getMachine(owner.slug)).toBeUndefined();

    const onA = await call(a.url, 'GET', validate(owner.slug), undefined, bearer(owner.key));
    expect(onA.status, onA.text).toBe(200);
    expect(onA.body).toMatchObject({ slug: owner.slug, valid: true, rows: 2, first_bad: null });
    expect(servedBy(onA)).toBeNull();
    for (const n of [b, c]) {
      const r = await call(n.url, 'GET', validate(owner.slug), undefined, bearer(owner.key));
      expect(r.status, r.text).toBe(200);
      expect(r.body).toEqual(onA.body);
      expect(servedBy(r)).toBe(a.node.nodeId);
      expect(r.headers.get('content-type')).toContain('application/json');
    }

    const exA = await call(a.url, 'GET', explore(owner.slug, '?from=1&to=2'), undefined, bearer(owner.key));
    expect(exA.status, exA.text).toBe(200);
    expect(exA.body.rows.map((r: { seq: number }) => r.seq)).toEqual([1, 2]);
    expect(exA.body.head).toEqual({ seq: 2, hash: exA.body.rows[1].hash });
    const exB = await call(b.url, 'GET', explore(owner.slug, '?from=1&to=2'), undefined, bearer(owner.key));
    expect(exB.status, exB.text).toBe(200);
    expect(exB.body).toEqual(exA.body);
    expect(servedBy(exB)).toBe(a.node.nodeId);
    // The key as ?key= travels with the query.
    const byQuery = await call(b.url, 'GET', explore(owner.slug, `?from=2&key=${owner.key}`));
    expect(byQuery.status, byQuery.text).toBe(200);
    expect(byQuery.body.rows.map((r: { seq: number }) => r.seq)).toEqual([2]);
    expect(servedBy(byQuery)).toBe(a.node.nodeId);
    // A bad query is the home's 400, relayed.
    const bad = expectError(await call(b.url, 'GET', explore(owner.slug, '?from=0'), undefined, bearer(owner.key)), 400, 'SVC_INVALID_INPUT');
    expect(bad.status).toBe(400);

    // Nothing is cached on B: a new row at A is there on the next read through B.
    expect((await call(b.url, 'POST', '/api/svc/compute', kinetic, bearer(owner.key))).status).toBe(200);
    const again = await call(b.url, 'GET', validate(owner.slug), undefined, bearer(owner.key));
    expect(again.body).toMatchObject({ valid: true, rows: 3 });
    expect(again.body).toEqual((await call(a.url, 'GET', validate(owner.slug), undefined, bearer(owner.key))).body);
  });

  it('keys and public-machine rules are those of the home: bad key 401, no access 403, private without a key 401, public without a key 200', async () => {
    const unknownKey = `zsm_${'0'.repeat(32)}`;
    const e = expectError(await call(b.url, 'GET', validate(owner.slug), undefined, bearer(unknownKey)), 401, 'SVC_INVALID_KEY');
    expect(e.reason).toBe('unknown');
    expectError(await call(b.url, 'GET', validate(owner.slug), undefined, bearer('not-a-key')), 401, 'SVC_INVALID_KEY');
    expectError(await call(b.url, 'GET', explore(owner.slug, '?key=sk_short')), 401, 'SVC_INVALID_KEY');
    expectError(await call(b.url, 'GET', validate(owner.slug), undefined, { authorization: 'Basic abc' }), 401, 'SVC_INVALID_KEY');

    // Another identity homed on A: forwarded, and A refuses it.
    const otherA = await zkIdentity(a.url, 'chain-reads-other-a');
    const fa = await call(b.url, 'GET', validate(owner.slug), undefined, bearer(otherA.key));
    expectError(fa, 403, 'SVC_FORBIDDEN');
    expect(servedBy(fa)).toBe(a.node.nodeId);
    // Another identity homed on C: its key never leaves for A; C vouches for it (chain-delegation.ts) and A, the
    // machine's home, refuses it for want of a role.
    const otherC = await zkIdentity(c.url, 'chain-reads-other-c');
    const fc = await call(b.url, 'GET', validate(owner.slug), undefined, bearer(otherC.key));
    expectError(fc, 403, 'SVC_FORBIDDEN');
    expect(servedBy(fc)).toBe(a.node.nodeId);

    // A private chain without a key: the home's 401, nothing of the chain leaks.
    const nokey = await call(b.url, 'GET', explore(owner.slug));
    expectError(nokey, 401, 'SVC_NO_KEY');
    expect(servedBy(nokey)).toBe(a.node.nodeId);
    expect(nokey.text).not.toContain('"rows"');

    // A public machine is readable without a key through any node.
    const made = await call(b.url, 'POST', '/api/chain/state-machines', { slug: 'any-node-open-book', is_public: true }, bearer(owner.key));
    expect(made.status, made.text).toBe(201);
    expect(servedBy(made)).toBe(a.node.nodeId);
    expect(await a.node.chain.getMachine('any-node-open-book')).toMatchObject({ is_public: true, home: a.node.nodeId });
    expect((await call(a.url, 'POST', '/api/svc/compute', kinetic, bearer(made.body.admin_key))).status).toBe(200);
    const pubA = await call(a.url, 'GET', validate('any-node-open-book'));
    expect(pubA.body).toMatchObject({ slug: 'any-node-open-book', valid: true, rows: 1 });
    for (const n of [b, c]) {
      const r = await call(n.url, 'GET', validate('any-node-open-book'));
      expect(r.status, r.text).toBe(200);
      expect(r.body).toEqual(pubA.body);
      expect(servedBy(r)).toBe(a.node.nodeId);
      const ex = await call(n.url, 'GET', explore('any-node-open-book'));
      expect(ex.body).toEqual((await call(a.url, 'GET', explore('any-node-open-book'))).body);
    }
    // A public machine is readable by anyone keyed or not: another identity's key homed on A (forwarded with its key),
    // one homed on C (forwarded without it: the key never leaves for A), a demo key. A bad key is still 401.
    for (const [n, key] of [
      [a, otherA.key],
      [b, otherA.key],
      [b, otherC.key],
      [c, otherC.key],
      [b, (await call(b.url, 'GET', '/api/demo-key')).body.key],
    ] as const) {
      const r = await call(n.url, 'GET', validate('any-node-open-book'), undefined, bearer(key));
      expect(r.status, r.text).toBe(200);
      expect(r.body).toEqual(pubA.body);
    }
    const byQuery = await call(b.url, 'GET', explore('any-node-open-book', `?key=${otherC.key}`));
    expect(byQuery.status, byQuery.text).toBe(200);
    expect(servedBy(byQuery)).toBe(a.node.nodeId);
    expectError(await call(b.url, 'GET', validate('any-node-open-book'), undefined, bearer(`sk_${'B'.repeat(32)}`)), 401, 'SVC_INVALID_KEY');
    // A private machine stays closed to them: 403 on the home and through B.
    expectError(await call(a.url, 'GET', validate(owner.slug), undefined, bearer(otherA.key)), 403, 'SVC_FORBIDDEN');
    expectError(await call(c.url, 'GET', explore(owner.slug, `?key=${otherC.key}`)), 403, 'SVC_FORBIDDEN');
  });

  it('an unknown slug is 404 on every node, with or without a key', async () => {
    for (const n of [a, b, c]) {
      expectError(await call(n.url, 'GET', validate('no-such-machine')), 404, 'SVC_NOT_FOUND');
      expectError(await call(n.url, 'GET', explore('no-such-machine'), undefined, bearer(owner.key)), 404, 'SVC_NOT_FOUND');
      expectError(await call(n.url, 'GET', validate('BAD%20SLUG!')), 404, 'SVC_NOT_FOUND');
      expectError(await call(n.url, 'GET', validate('x'.repeat(300))), 404, 'SVC_NOT_FOUND');
    }
    expect(await b.node.mesh.machines.known('no-such-machine')).toBeNull();
  });

  it("a machine nobody announced is found from its home's signed answer", async () => {
    // v1 registration creates a default machine and announces nothing.
    const reg = await call(a.url, 'POST', '/api/auth/register', { email: 'chain-v1@example.com', password: 'correct horse battery' });
    expect(reg.status, reg.text).toBe(201);
    const slug = `m-${reg.body.zid.slice(4, 20)}`;
    expect(await a.node.chain.getMachine(slug)).toMatchObject({ home: a.node.nodeId });
    expect(await b.node.mesh.machines.known(slug)).toBeNull();

    const signed = await call(a.url, 'GET', `/api/mesh/machines/${slug}`);
    expect(signed.status).toBe(200);
    expect(signed.body).toMatchObject({ type: 'machine.home', sender: a.node.nodeId, body: { slug, home: a.node.nodeId } });
    expectError(await call(b.url, 'GET', `/api/mesh/machines/${slug}`), 404, 'SVC_NOT_FOUND');
    expectError(await call(a.url, 'GET', '/api/mesh/machines/NOT_A_SLUG'), 400, 'SVC_INVALID_INPUT');

    const r = await call(b.url, 'GET', validate(slug));
    expectError(r, 401, 'SVC_NO_KEY');
    expect(servedBy(r)).toBe(a.node.nodeId);
    expect(await b.node.mesh.machines.known(slug)).toBe(a.node.nodeId);
    // Its owner's key (minted on A) reads it through C.
    const { key } = await a.node.identity.mintKeyFor(reg.body.zid, 'sk', null);
    const v = await call(c.url, 'GET', validate(slug), undefined, bearer(key));
    expect(v.status, v.text).toBe(200);
    // An empty log's Merkle root is SHA-256 of nothing (RFC 6962 §2.1).
    expect(v.body).toEqual({ slug, valid: true, rows: 0, head: '0'.repeat(64), root_hash: createHash('sha256').digest('hex'), first_bad: null });
    expect(servedBy(v)).toBe(a.node.nodeId);
  });

  it('a forwarded request is never forwarded again, and an unreachable home is 503 with retry_after_seconds', async () => {
    const loop = await call(b.url, 'GET', validate(owner.slug), undefined, { ...bearer(owner.key), 'x-svc-forwarded-by': c.node.nodeId });
    expectError(loop, 503, 'SVC_HOME_UNREACHABLE');
    expect(servedBy(loop)).toBeNull();
    // A home the mesh knows but has no URL for.
    expect(await b.node.mesh.machines.learn({ slug: 'ghost-machine', home: 'ghost-peer-not-in-the-mesh', created_unix_ms: 1 })).toBe(true);
    const ghostReply = await call(b.url, 'GET', validate('ghost-machine'));
    const ghost = expectError(ghostReply, 503, 'SVC_HOME_UNREACHABLE');
    expect(ghost.retry_after_seconds).toBe(5);
    expect(ghostReply.headers.get('retry-after')).toBe('5');
    expect(ghost.home).toBe('ghost-peer-not-in-the-mesh');
  });
});

describe('the HTTP gossip entrance', () => {
  it('refuses missing, wrong, moved and stale handshakes and bad signatures; accepts a good event once', async () => {
    const priv = a.node.nodeIdentity.privateKey;
    const sender = a.node.nodeId;
    const now = stampAt(BigInt(Date.now()) * 1_000_000n).svcond;
    const good = await buildEnvelope(priv, sender, MESH_SECRET, 'note', now, { text: 'hello' });
    // Tick events keep arriving in the background, so count only this test's 'note' events.
    const notes = async () =>
      (await call(b.url, 'GET', '/api/mesh/events?limit=500')).body.events.filter((e: { event: { type: string } }) => e.event.type === 'note');
    expectError(await call(b.url, 'POST', '/api/mesh/gossip', good.event), 401, 'MISSING_HANDSHAKE');
    expectError(await call(b.url, 'POST', '/api/mesh/gossip', good.event, { 'x-node-handshake': 'v1=' + '0'.repeat(64) }), 401, 'INVALID_HANDSHAKE');
    const other = await buildEnvelope(priv, sender, MESH_SECRET, 'note', now, { text: 'other body' });
    expectError(await call(b.url, 'POST', '/api/mesh/gossip', good.event, { 'x-node-handshake': other.handshake }), 401, 'INVALID_HANDSHAKE');
    const stale = await buildEnvelope(priv, sender, MESH_SECRET, 'note', now - 500, { text: 'old' });
    expectError(await call(b.url, 'POST', '/api/mesh/gossip', stale.event, { 'x-node-handshake': stale.handshake }), 401, 'STALE_HANDSHAKE');
    const forged = { ...good.event, signature: good.event.signature.replace(/^./, (ch) => (ch === 'A' ? 'B' : 'A')) };
    expectError(await call(b.url, 'POST', '/api/mesh/gossip', forged, { 'x-node-handshake': good.handshake }), 401, 'INVALID_SIGNATURE');
    expect(await notes()).toHaveLength(0);
    const ok = await call(b.url, 'POST', '/api/mesh/gossip', good.event, { 'x-node-handshake': good.handshake });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ accepted: true, duplicate: false });
    const dup = await call(b.url, 'POST', '/api/mesh/gossip', good.event, { 'x-node-handshake': good.handshake });
    expect(dup.body).toMatchObject({ accepted: true, duplicate: true });
    const stored = await notes();
    expect(stored).toHaveLength(1);
    expect(stored[0].event.body).toEqual({ text: 'hello' });
    const rejected = (await call(b.url, 'GET', '/api/mesh/status')).body.rejected.http;
    expect(rejected).toMatchObject({ MISSING_HANDSHAKE: 1, INVALID_HANDSHAKE: 2, STALE_HANDSHAKE: 1, INVALID_SIGNATURE: 1 });
  });

  it('a node without a mesh secret answers 503', async () => {
    const alone = await startTestNode();
    try {
      const r = await call(alone.url, 'POST', '/api/mesh/gossip', {}, { 'x-node-handshake': 'v1=00' });
      expect(r.status).toBe(503);
      expect(r.body.error.code).toBe('MESH_DISABLED');
    } finally {
      await alone.destroy();
    }
  });
});

describe('DNS and transparency over HTTP', () => {
  it('a name registered on A resolves on C', async () => {
    const id = await zkIdentity(a.url, 'dns');
    const reg = await call(a.url, 'POST', '/api/dns/register', { name: 'alpha.svc' }, bearer(id.key));
    expect(reg.status).toBe(201);
    expect(reg.body.record).toMatchObject({ name: 'alpha.svc', peerId: a.node.nodeId, url: a.url });
    const res = await waitFor(async () => {
      const r = await call(c.url, 'GET', '/api/dns/resolve?name=alpha.svc');
      return r.status === 200 ? r : null;
    }, 'name on C');
    expect(res.body.peerId).toBe(a.node.nodeId);
    const look = await call(c.url, 'GET', `/api/dns/lookup?peerId=${a.node.nodeId}`);
    expect(look.body.names.map((n: { name: string }) => n.name)).toContain('alpha.svc');
    expectError(await call(c.url, 'GET', '/api/dns/resolve?name=nobody.svc'), 404, 'SVC_NOT_FOUND');
    expectError(await call(a.url, 'POST', '/api/dns/register', { name: 'x.svc' }), 401, 'SVC_NO_KEY');
  });

  it('snapshots every 4 ticks: now, history, breakdown, revenue', async () => {
    const snap = await waitFor(
      async () => {
        const r = await call(b.url, 'GET', '/api/transparency/history?n=2');
        return r.body.count >= 2 ? r : null;
      },
      'two snapshots',
      12_000,
    );
    const [newer, older] = snap.body.snapshots;
    // One snapshot per 4-tick slot: consecutive snapshots sit in consecutive slots.
    expect(Math.floor(newer.svcond / 4) - Math.floor(older.svcond / 4)).toBe(1);
    expect(newer.node).toBe(b.node.nodeId);
    const now = await call(b.url, 'GET', '/api/transparency/now');
    expect(now.body.svcond).toBeGreaterThanOrEqual(newer.svcond);
    const br = await call(b.url, 'GET', '/api/transparency/breakdown');
    expect(br.body.nodes[0]).toMatchObject({ self: true, nodeId: b.node.nodeId });
    const rev = await call(a.url, 'GET', '/api/transparency/revenue');
    expect(rev.body.total).toBe(rev.body.burned + rev.body.foundation);
    expect(rev.body.burned).toBe(a.node.counters.get('burned_total'));
    expectError(await call(b.url, 'GET', '/api/transparency/history?n=1000'), 400, 'SVC_INVALID_INPUT');
  });
});

// Keep the digest helper honest: the key route takes SHA-256 hex of the key.
it('keyDigest is SHA-256 hex', () => {
  expect(keyDigest('sk_x')).toBe(createHash('sha256').update('sk_x').digest('hex'));
});

// The same on a line: the key's home and the node the write comes in at are its ends, with no connection between them.
describe('any-node API on a line', () => {
  let line: TestNode[] = [];
  beforeAll(async () => {
    line = await startMesh(3, (bootstrap) => meshConfig(bootstrap), opts, 'line');
  }, 60_000);
  afterAll(async () => {
    await Promise.all(line.map((n) => n.destroy()));
  });

  it('a key minted at one end authenticates at the other, and a write there lands exactly once at its home', async () => {
    const [home, middle, far] = line as [TestNode, TestNode, TestNode];
    expect(connectedIndexes(home, line)).toEqual([1]);
    expect(connectedIndexes(far, line)).toEqual([1]);
    await writeThroughAnotherNode(home, far, middle, 'any-node-line');
  }, 60_000);
});

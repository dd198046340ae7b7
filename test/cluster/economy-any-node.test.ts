// The economy on three meshed nodes: claims and folder moves made through any node land at the identity's home
// (once per UTC day per identity mesh-wide; the home counts the caller's address, stated by the forwarding node under
// the mesh secret); a grant for an identity homed elsewhere is refused, naming the home (the operator token never
// leaves its node).
import { request } from 'node:http';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { solveChallenge } from '../../src/tally/claim-proof.js';
import { hourKey } from '../../src/tally/claim.js';
import { claimAddressCounter } from '../../src/store/counter-keys.js';
import { FORWARDED_HEADER } from '../../src/http/forward.js';
import { FORWARDED_FOR_HEADER } from '../../src/http/forwarded-address.js';
import { TOPICS } from '../../src/mesh/wire.js';
import { waitFor } from '../mesh/helpers.js';
import { waitUntil } from '../helpers/wait.js';

const MESH_SECRET = 'economy-cluster-secret-0123456789abcdef';
const RECEIPT_SECRET = 'ab'.repeat(32);

let a: TestNode;
let b: TestNode;
let c: TestNode;
const meshConfig = (bootstrap: string[]) => ({
  receiptSecret: RECEIPT_SECRET,
  mesh: { secret: MESH_SECRET, p2pPort: 0, bootstrap, tickEvery: 1 },
  limits: { claimDifficultyBits: 4 },
});
const opts = { mesh: { redialMinMs: 100, redialMaxMs: 1000 }, initialCredits: 0 };
/** The POST body answering a claim's challenge (GET /api/tally/claim's answer). */
const proofFor = (st: { body: { challenge: string; difficulty: number } }) => ({
  challenge: st.body.challenge,
  nonce: solveChallenge(st.body.challenge, st.body.difficulty),
});

beforeAll(async () => {
  a = await startTestNode(meshConfig([]), opts);
  [b, c] = await Promise.all([
    startTestNode(meshConfig([a.node.mesh.multiaddrs()[0]!]), opts),
    startTestNode(meshConfig([a.node.mesh.multiaddrs()[0]!]), opts),
  ]);
  await waitUntil(
    () => [b, c].every((n) => n.node.mesh.peerUrl(a.node.nodeId)) && a.node.mesh.peers().some((p) => p.url),
    'the nodes hearing each other',
    60_000,
    100,
  );
}, 120_000);
afterAll(async () => {
  await Promise.all([a, b, c].map((n) => n?.destroy()));
});

describe('economy through any node', () => {
  it("a claim and a folder move through B land once at A; a grant at B for A's identity names A", async () => {
    const id = await zkIdentity(a.url, 'economy-any-node');
    const st = await call(b.url, 'GET', '/api/tally/claim', undefined, bearer(id.key));
    expect(st.status, st.text).toBe(200);
    expect(st.headers.get('x-svc-served-by')).toBe(a.node.nodeId);
    expect(st.body.claimable).toBe(true);
    const r = await call(b.url, 'POST', '/api/tally/claim', proofFor(st), bearer(id.key));
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get('x-svc-served-by')).toBe(a.node.nodeId);
    expect((await a.node.ledger.wallet(id.zid)).free).toBe(128);

    const sealed = await call(
      b.url,
      'POST',
      '/api/svc/compute',
      { domain: 'thermodynamics', operators: ['KO42', 'THERMO_CARNOT_EFFICIENCY'], inputs: {} },
      bearer(id.key),
    );
    expect(sealed.status, sealed.text).toBe(200);
    const m = await call(b.url, 'POST', '/api/tally/envelopes/folder', { folder: 'kept', token_ids: [sealed.body.envelope.token_id] }, bearer(id.key));
    expect(m.status, m.text).toBe(200);
    expect(m.body).toMatchObject({ moved: 1, folders: [{ folder: 'kept', count: 1 }] });
    expect(a.node.ledger.folders(id.zid)).toEqual([{ folder: 'kept', count: 1 }]);

    // B knows A's identity (from its assertion) and refuses to grant it: A's operator grants it.
    const tokenB = (await readFile(join(b.dataDir, 'operator-token'), 'utf8')).trim();
    const e = expectError(await call(b.url, 'POST', '/api/tally/grants', { zid: id.zid, credits: 5 }, bearer(tokenB)), 409, 'SVC_CONFLICT');
    expect(e).toMatchObject({ home: a.node.nodeId, home_url: a.url });
    const tokenA = (await readFile(join(a.dataDir, 'operator-token'), 'utf8')).trim();
    expect(tokenA).not.toBe(tokenB);
    expect((await call(a.url, 'POST', '/api/tally/grants', { zid: id.zid, credits: 5 }, bearer(tokenA))).body.balance).toMatchObject({ paid: 5 });
  }, 120_000);
});

/** A request sent from a given loopback address (127.0.0.0/8 is all this host's), so nodes see callers apart. */
function callFrom(localAddress: string, url: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; body: any; text: string; servedBy: string | undefined }>((resolve, reject) => {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      url + path,
      { method, localAddress, headers: { ...headers, ...(text === undefined ? {} : { 'content-type': 'application/json' }) } },
      (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (data += d));
        res.on('end', () => {
          let parsed: unknown = data;
          try {
            parsed = JSON.parse(data);
          } catch {
            /* text */
          }
          resolve({ status: res.statusCode ?? 0, body: parsed, text: data, servedBy: res.headers['x-svc-served-by'] as string | undefined });
        });
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

describe('the daily claim across the mesh', () => {
  /** Claims counted at A for an address this hour (the hour may turn during the test: both are summed). */
  const addressClaims = (ip: string, hours: string[]) => [...new Set(hours)].reduce((n, h) => n + a.node.counters.get(claimAddressCounter(h, ip)), 0);

  it('an identity claims through B, then through C the same day: the second is refused at its home', async () => {
    const id = await zkIdentity(a.url, 'claim-b-then-c');
    const st = await call(b.url, 'GET', '/api/tally/claim', undefined, bearer(id.key));
    expect(st.status, st.text).toBe(200);
    const ok = await call(b.url, 'POST', '/api/tally/claim', proofFor(st), bearer(id.key));
    expect(ok.status, ok.text).toBe(200);
    const again = await call(c.url, 'GET', '/api/tally/claim', undefined, bearer(id.key));
    expect(again.headers.get('x-svc-served-by')).toBe(a.node.nodeId);
    expect(again.body).toMatchObject({ claimable: false, reason: 'already_claimed_today', challenge: null });
    const refused = await call(c.url, 'POST', '/api/tally/claim', proofFor(st), bearer(id.key));
    expect(expectError(refused, 400, 'SVC_BAD_REQUEST').reason).toBe('already_claimed_today');
    expect(refused.headers.get('x-svc-served-by')).toBe(a.node.nodeId);
    expect((await a.node.ledger.wallet(id.zid)).free).toBe(128);
    // B and C kept nothing of it: no wallet, no day counter of their own.
    for (const n of [b, c]) expect(n.node.counters.get(`claimed:${ok.body.day}:${id.zid}`)).toBe(0);
  }, 60_000);

  it("the home counts the caller's address, stated by the forwarding node; a stated address without the mesh's mac is ignored", async () => {
    const id = await zkIdentity(a.url, 'claim-from-127.0.0.2');
    const hours = [hourKey(Date.now())];
    const loopbackBefore = addressClaims('127.0.0.1', hours); // this file's other claims come from 127.0.0.1
    // The challenge through B, the proof through C: both state the caller's address, so the challenge (bound to it) holds.
    const st = await callFrom('127.0.0.2', b.url, 'GET', '/api/tally/claim', undefined, bearer(id.key));
    expect(st.status, st.text).toBe(200);
    expect(st.servedBy).toBe(a.node.nodeId);
    const ok = await callFrom('127.0.0.2', c.url, 'POST', '/api/tally/claim', proofFor(st), bearer(id.key));
    expect(ok.status, ok.text).toBe(200);
    hours.push(hourKey(Date.now()));
    expect(addressClaims('127.0.0.2', hours)).toBe(1);
    expect(addressClaims('127.0.0.1', hours)).toBe(loopbackBefore); // the forwarding nodes' own address is not the caller's

    // A caller naming another address itself (a forged mac, a bare x-forwarded-for) is counted at its own.
    const other = await zkIdentity(a.url, 'claim-forged-address');
    const forged = {
      ...bearer(other.key),
      [FORWARDED_HEADER]: b.node.nodeId,
      [FORWARDED_FOR_HEADER]: `127.0.0.9;${Date.now()};v1=${'0'.repeat(64)}`,
      'x-forwarded-for': '127.0.0.9',
    };
    const st2 = await callFrom('127.0.0.3', a.url, 'GET', '/api/tally/claim', undefined, forged);
    expect(st2.status, st2.text).toBe(200);
    // The challenge was made for 127.0.0.3: a plain request from there answers it.
    const ok2 = await callFrom('127.0.0.3', a.url, 'POST', '/api/tally/claim', proofFor(st2), bearer(other.key));
    expect(ok2.status, ok2.text).toBe(200);
    hours.push(hourKey(Date.now()));
    expect(addressClaims('127.0.0.3', hours)).toBe(1);
    expect(addressClaims('127.0.0.9', hours)).toBe(0);
  }, 60_000);

  it("an address's claims at one home count at the others: past the cap at B, a claim at A from that address is 429", async () => {
    const toNextHour = 3_600_000 - (Date.now() % 3_600_000);
    if (toNextHour < 20_000) await new Promise((r) => setTimeout(r, toNextHour + 100)); // the test stays in one hour
    const hour = hourKey(Date.now());
    await waitFor(() => b.node.mesh.p2p?.topicPeers(TOPICS.events).includes(a.node.nodeId), 30_000, "B's events topic reaching A");
    const atB = await zkIdentity(b.url, 'claim-cap-homed-on-b');
    const atA = await zkIdentity(a.url, 'claim-cap-homed-on-a');
    // 63 claims from 127.0.0.4 already served at B this hour (planted), and the 64th made there now: B's cap is reached.
    b.node.counters.bump(claimAddressCounter(hour, '127.0.0.4'), 63);
    const st = await callFrom('127.0.0.4', b.url, 'GET', '/api/tally/claim', undefined, bearer(atB.key));
    expect(st.body).toMatchObject({ claimable: true, difficulty: 4 + 8 });
    const ok = await callFrom('127.0.0.4', b.url, 'POST', '/api/tally/claim', proofFor(st), bearer(atB.key));
    expect(ok.status, ok.text).toBe(200);

    // A learns B's count from its gossip: the same address is at the cap there too, for A's own identities.
    const atCap = await waitFor(
      async () => {
        const r = await callFrom('127.0.0.4', a.url, 'GET', '/api/tally/claim', undefined, bearer(atA.key));
        return r.body.reason === 'hourly_cap' ? r : null;
      },
      30_000,
      "A hearing B's claim count",
    );
    expect(atCap?.body).toMatchObject({ claimable: false, challenge: null });
    const refused = await callFrom('127.0.0.4', a.url, 'POST', '/api/tally/claim', { challenge: st.body.challenge, nonce: '1' }, bearer(atA.key));
    expect(refused.status, refused.text).toBe(429);
    expect(refused.body.error).toMatchObject({ code: 'SVC_RATE_LIMIT', limit: 64 });
    // Another address is not touched.
    expect((await callFrom('127.0.0.5', a.url, 'GET', '/api/tally/claim', undefined, bearer(atA.key))).body).toMatchObject({ claimable: true, difficulty: 4 });
    expect(a.node.claimAddresses.elsewhere(hour, '127.0.0.4')).toBe(64);
  }, 90_000);
});

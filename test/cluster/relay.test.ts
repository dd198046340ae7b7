// A node behind NAT, end to end: H listens on no TCP address (only /p2p-circuit), reserves a slot on the relay R, and
// its URL does not connect. O, bootstrapped to R alone, holds no connection to H: what O is asked for H goes through
// R over libp2p — a forwarded request, an offloaded run, a WebSocket of a channel H holds and the agent stream of an
// identity homed on H. With H stopped, O answers 503 SVC_HOME_UNREACHABLE, and closes a WebSocket with 1013.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { SseClient } from '../helpers/sse.js';
import { bearer, call, expectError, operatorBond, SPARSE_PEERS, startTestNode, waitMeshHeard, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitUntil } from '../helpers/wait.js';
import { verifyExecution } from '../../src/consensus/executed-by.js';
import { verifyText } from '../../src/mesh/wire.js';
import { PEER_STREAM_PROTOCOL, peerStreamOverMesh } from '../../src/mesh/peer-stream.js';
import { freePort } from '../helpers/free-port.js';

const MESH_SECRET = 'relay-cluster-secret-0123456789abcdef';
const BOND = 3;
const COMPUTE = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: {} };
const contribution = (offload: string) => ({
  bondEnvelopes: BOND,
  committeeSize: 3,
  settleTicks: 4,
  deadlineTicks: 12,
  challengeStake: 20,
  bondTermDays: 30,
  offload,
});
const config = (bootstrap: string[], offload: string, mesh: Record<string, unknown> = {}) => ({
  solverThreads: 0,
  sealWorker: false,
  contribution: contribution(offload),
  mesh: { secret: MESH_SECRET, p2pPort: 0, bootstrap, tickEvery: 1, ...mesh },
});
const opts = { initialCredits: 10_000, reannounceTicks: 2, mesh: { redialMinMs: 100, redialMaxMs: 1000 } };

const waitFor = <T>(fn: () => Promise<T | null | false | undefined> | T | null | false | undefined, what: string, timeoutMs = 20_000) =>
  waitUntil(fn, what, timeoutMs, 50);

interface WsClient {
  ws: WebSocket;
  hello: unknown;
  frames: string[];
  closed: { code: number; reason: string } | null;
}

/** A WebSocket of /ws/stream at `url`: resolves with its first frame (the hello), or its close when that comes first. */
function openWs(url: string, query: string, headers: Record<string, string> = {}): Promise<WsClient> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/ws/stream?${query}`, { headers });
    const c: WsClient = { ws, hello: null, frames: [], closed: null };
    ws.on('message', (d) => {
      if (c.hello === null) {
        c.hello = JSON.parse(String(d));
        resolve(c);
      } else c.frames.push(String(d));
    });
    ws.on('close', (code, reason) => {
      c.closed = { code, reason: reason.toString() };
      resolve(c);
    });
    ws.on('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () =>
        reject(Object.assign(new Error(`refused ${res.statusCode}`), { status: res.statusCode, body: text, servedBy: res.headers['x-svc-served-by'] })),
      );
    });
    ws.on('error', reject);
  });
}

let r: TestNode;
let o: TestNode;
let h: TestNode;
/** Where H's server really listens (its advertised URL is a closed port). */
let hUrl: string;
let deadUrl: string;
/** A channel H holds, and its owner (homed on H). */
let channel: { id: string; key: string };
let owner: { zid: string; key: string };

beforeAll(async () => {
  r = await startTestNode(config([], 'never'), opts);
  const addrR = r.node.mesh.multiaddrs()[0]!;
  // O and H stay at their one connection (to R): nothing but R links them.
  o = await startTestNode(config([addrR], 'always', { peers: SPARSE_PEERS }), { ...opts, offloadAnswerTimeoutMs: 10_000 });
  const [port, dead] = [await freePort(), await freePort()];
  hUrl = `http://127.0.0.1:${port}`;
  deadUrl = `http://127.0.0.1:${dead}`;
  h = await startTestNode({ ...config([addrR], 'never', { listen: ['/p2p-circuit'], peers: SPARSE_PEERS }), port, publicUrl: deadUrl }, opts);
  await waitMeshHeard([r, o, h]);
  // O knows H by its tick events, relayed by R: a URL that does not connect, and its /p2p-circuit address.
  await waitFor(() => o.node.mesh.peers().find((p) => p.peerId === h.node.nodeId && p.multiaddrs.length > 0), 'H dialable at O');
}, 60_000);

afterAll(async () => {
  await Promise.all([r, o, h].map((n) => n?.destroy()));
});

describe('a node reachable only through a relay', () => {
  it('listens on no TCP address; O knows it only by its circuit address, through R', () => {
    expect(h.node.mesh.multiaddrs().length).toBeGreaterThan(0);
    expect(h.node.mesh.multiaddrs().every((m) => m.includes(`/p2p/${r.node.nodeId}/p2p-circuit`))).toBe(true);
    const atO = o.node.mesh.peers().find((p) => p.peerId === h.node.nodeId)!;
    expect(atO.url).toBe(deadUrl);
    // The relay's address with the circuit, never the relay's own address as H's.
    expect(atO.multiaddrs).toEqual(h.node.mesh.multiaddrs().map((m) => m.replace(`/p2p/${h.node.nodeId}`, '')));
    expect(o.node.mesh.p2p?.connectionKind(h.node.nodeId)).toBeNull();
  });

  it('a request for an identity homed on H, sent to O, is forwarded through R and answers as H would', async () => {
    const id = await zkIdentity(hUrl, 'relayed-home');
    await waitFor(
      () =>
        o.node.identity.resolveKey(id.key).then(
          () => true,
          () => false,
        ),
      'the key known at O',
    );
    const res = await call(o.url, 'POST', '/api/svc/compute', COMPUTE, bearer(id.key));
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get('x-svc-served-by')).toBe(h.node.nodeId);
    expect(res.body.node).toBe(h.node.nodeId);
    expect(res.body.envelope).not.toBeNull();
    // The same request at H's own URL gives the same result.
    const direct = await call(hUrl, 'POST', '/api/svc/compute', COMPUTE, bearer(id.key));
    expect(res.body.result_digest).toBe(direct.body.result_digest);
    // Sealed and charged at H, nothing at O; O reached H over a relayed connection it dialled for it.
    await h.node.counters.loadIdentity(id.zid);
    await o.node.counters.loadIdentity(id.zid);
    expect(h.node.counters.get(`env:${id.zid}`)).toBe(2);
    expect(o.node.counters.get(`env:${id.zid}`)).toBe(0);
    expect(o.node.mesh.p2p?.connectionKind(h.node.nodeId)).toBe('relayed');
    // H's own refusal comes back as H gave it.
    const bad = await call(o.url, 'POST', '/api/svc/compute', { ...COMPUTE, domain: 'nowhere' }, bearer(id.key));
    expectError(bad, 400, 'SVC_INVALID_DOMAIN');
    expect(bad.headers.get('x-svc-served-by')).toBe(h.node.nodeId);
  }, 30_000);

  it('a run at O, which offloads always, executes on H through the relay; the sealed result names H', async () => {
    const operator = await zkIdentity(hUrl, 'relayed-operator');
    for (let i = 0; i < BOND; i++) expect((await call(hUrl, 'POST', '/api/svc/compute', COMPUTE, bearer(operator.key))).status).toBe(200);
    const bond = await call(hUrl, 'POST', '/api/contribute/bond', {}, { ...bearer(operator.key), ...operatorBond(h) });
    expect(bond.status, bond.text).toBe(201);
    const mode = await call(hUrl, 'POST', '/api/contribute/mode', { mode: 'contributing' }, bearer(operator.key));
    expect(mode.status, mode.text).toBe(200);
    await waitFor(() => {
      const p = o.node.mesh.peers().find((x) => x.peerId === h.node.nodeId);
      return p?.mode === 'contributing' && p.bondId === bond.body.bond_id && o.node.bonds.ofNode(h.node.nodeId) !== null;
    }, 'H contributing, its bond known at O');
    const caller = await zkIdentity(o.url, 'relayed-offload-caller');
    const served = h.node.execHandler.stats.served;
    const res = await call(o.url, 'POST', '/api/svc/zeta', { n: 321, count: 1 }, bearer(caller.key));
    expect(res.status, res.text).toBe(200);
    expect(res.body.node).toBe(o.node.nodeId);
    expect(res.body.executed_by).toMatchObject({ node: h.node.nodeId, bond_id: bond.body.bond_id });
    expect(verifyExecution(verifyText, res.body.executed_by, res.body.result_digest)).toBe(true);
    expect(h.node.execHandler.stats.served).toBe(served + 1);
    expect(o.node.offloader!.stats.offloaded).toBe(1);
  }, 30_000);
});

describe('streams of a node reachable only through a relay', () => {
  beforeAll(async () => {
    owner = await zkIdentity(hUrl, 'relayed-channel-owner');
    channel = (await call(hUrl, 'POST', '/api/svc/streams', { solver: 'lorenz', inputs: { t_end: 0.05 } }, bearer(owner.key))).body;
    // O resolves the owner's key (gossiped by H, or looked up at H) to find its home.
    await waitFor(
      () =>
        o.node.identity.resolveKey(owner.key).then(
          () => true,
          () => false,
        ),
      'the key known at O',
    );
  }, 30_000);

  it('a WebSocket of a channel H holds, opened at O, is relayed over libp2p: the hello, every tick, closed with the client', async () => {
    const client = await openWs(o.url, `channel=${channel.id}`, bearer(owner.key));
    expect(client.closed).toBeNull();
    expect(client.hello).toEqual({ subscribed: channel.id, tick_count: 0 });
    await waitFor(() => h.node.streams.hub.count(channel.id) === 1, 'the subscriber at H');
    const ticks: string[] = [];
    for (let i = 0; i < 2; i++) ticks.push((await call(hUrl, 'POST', `/api/svc/streams/${channel.id}/tick`, undefined, bearer(channel.key))).text);
    await waitFor(() => client.frames.length === 2, 'both ticks at the client');
    expect(client.frames).toEqual(ticks);
    // H's refusal is the client's, from H: a wrong channel key.
    const wrong = await openWs(o.url, `channel=${channel.id}&key=stk_${'0'.repeat(40)}`).catch((e: { status: number; body: string; servedBy: string }) => e);
    expect((wrong as { status: number }).status).toBe(401);
    expect(JSON.parse((wrong as { body: string }).body).error.code).toBe('SVC_INVALID_KEY');
    expect((wrong as { servedBy: string }).servedBy).toBe(h.node.nodeId);
    client.ws.close();
    await waitFor(() => h.node.streams.hub.count(channel.id) === 0 && o.node.wsClients === 0, 'the client closing to close the relayed stream at H');
  }, 30_000);

  it('the agent stream of an identity homed on H, opened at O, is relayed over libp2p (no redirect to a dead URL)', async () => {
    const sse = new SseClient(`${o.url}/api/svc/agent/stream`, bearer(owner.key));
    await sse.connect();
    try {
      expect(sse.status).toBe(200);
      const program = {
        every: 2,
        state: { m: 2, last: 0 },
        step: { kind: 'compute', domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: '{{state.m}}', velocity_m_s: 3 } },
        assign: { last: '{{result.value}}' },
      };
      const spawned = await call(hUrl, 'POST', '/api/svc/agent/spawn', { program }, bearer(owner.key));
      expect(spawned.status, spawned.text).toBe(201);
      await waitFor(() => sse.events.length > 0, 'an agent event at the client');
      expect(sse.json()[0]).toMatchObject({ agent: spawned.body.id, owner: owner.zid });
    } finally {
      await sse.close();
    }
  }, 30_000);

  it('/svc/stream/1 refuses a request without the mesh handshake: a part-7 401 head, nothing opened at H', async () => {
    const mesh = o.node.mesh;
    const open = peerStreamOverMesh({
      openStream: (p, proto, signal) => mesh.openStream(p, proto, signal),
      selfId: () => mesh.nodeId,
      secret: 'another-mesh-secret-0123456789abcdef',
      nowSvcond: () => mesh.nowSvcond(),
    });
    const session = await open(
      h.node.nodeId,
      { kind: 'ws', path: `/ws/stream?channel=${channel.id}&key=${channel.key}`, headers: {} },
      AbortSignal.timeout(10_000),
    );
    expect(session.head.status).toBe(401);
    const body = JSON.parse(session.head.body);
    expect(body.error.code).toBe('INVALID_HANDSHAKE');
    expect(body.error.trace_id).toBe(session.head.headers['x-trace-id']);
    // The home ends the stream after its refusal.
    const rest: unknown[] = [];
    for await (const f of session.frames) rest.push(f);
    expect(rest).toEqual([]);
    expect(h.node.streams.hub.count(channel.id)).toBe(0);
    expect(PEER_STREAM_PROTOCOL).toBe('/svc/stream/1');
  }, 30_000);
});

describe('when nothing reaches the home', () => {
  it('with H stopped, O answers 503 SVC_HOME_UNREACHABLE naming H and both attempts, with Retry-After', async () => {
    const id = await zkIdentity(hUrl, 'relayed-gone');
    // O knows the key (its digest gossiped by H) before H goes.
    await waitFor(
      () =>
        o.node.identity.resolveKey(id.key).then(
          () => true,
          () => false,
        ),
      'the key known at O',
    );
    await h.stop();
    const res = await call(o.url, 'POST', '/api/svc/compute', COMPUTE, bearer(id.key));
    const e = expectError(res, 503, 'SVC_HOME_UNREACHABLE');
    expect(e.home).toBe(h.node.nodeId);
    expect(e.tried).toHaveLength(2);
    expect(e.tried[0]).toBe(`HTTP at ${deadUrl}: ECONNREFUSED`);
    expect(e.tried[1]).toMatch(/^libp2p \/svc\/http\/1: /);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // The agent stream: the same 503.
    const agentStream = await fetch(`${o.url}/api/svc/agent/stream`, { headers: bearer(owner.key), signal: AbortSignal.timeout(20_000) });
    const body = (await agentStream.json()) as { error: Record<string, any> };
    expect(agentStream.status).toBe(503);
    expect(body.error).toMatchObject({ code: 'SVC_HOME_UNREACHABLE', home: h.node.nodeId });
    expect(body.error.tried[1]).toMatch(/^libp2p \/svc\/stream\/1: /);
    expect(Number(agentStream.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // A WebSocket is accepted and closed with 1013 (try again later), naming the error: a browser sees why.
    const ws = await openWs(o.url, `channel=${channel.id}`, bearer(owner.key));
    expect(ws.hello).toBeNull();
    expect(ws.closed?.code).toBe(1013);
    expect(ws.closed?.reason).toMatch(/^SVC_HOME_UNREACHABLE: .*retry after \d+ s$/);
  }, 30_000);
});

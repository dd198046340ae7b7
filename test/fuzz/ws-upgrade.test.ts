// Property-based fuzzing of the WebSocket upgrade (/ws/stream, http/ws-stream.ts), sent as raw bytes on a socket so
// that nothing a client library would refuse to send is left out: missing, garbage, repeated and oversized channel,
// key and sig parameters; bad or missing Upgrade, Connection, Sec-WebSocket-Key and Sec-WebSocket-Version; other
// methods; a plain GET; upgrades on other paths; huge headers. Properties: every answer is a clean refusal — an HTTP
// status under 500 (or 503 SVC_HOME_UNREACHABLE) with a part-7 JSON body and its trace id in X-Trace-Id — or, when
// the handshake is done (101), a first frame that is the subscription or a close frame with a sendable code; no
// answer hangs; the node stays healthy and still serves a valid subscriber afterwards.
// Bounded: a fixed seed (FUZZ_SEED replays another), WS_FUZZ_RUNS runs (default 160), a time cap after a floor of runs.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { bearer, call, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { check, upgradeArb, type WsTarget } from './ws-upgrade.js';
import { runGate } from './budget.js';

const SEED = Number(process.env.FUZZ_SEED ?? 17_017);
const RUNS = Number(process.env.WS_FUZZ_RUNS ?? 160);
const CAP_MS = 12_000;
const MIN_RUNS = 40;

let t: TestNode;
let owner: { zid: string; key: string };
let other: { zid: string; key: string };
let channel: { id: string; key: string };
let sig: string;
const seen = { requests: 0, byStatus: new Map<number, number>() };

beforeAll(async () => {
  t = await startTestNode({ solverThreads: 0, sealWorker: false }, { initialCredits: 10_000 });
  owner = await zkIdentity(t.url, 'wsfuzz-owner');
  other = await zkIdentity(t.url, 'wsfuzz-other');
  channel = (await call(t.url, 'POST', '/api/svc/streams', { solver: 'lorenz', inputs: { t_end: 0.1 } }, bearer(owner.key))).body;
  sig = (await call(t.url, 'POST', `/api/svc/streams/${channel.id}/link`, {}, bearer(owner.key))).body.sig;
});
afterAll(async () => {
  console.log(
    `ws fuzz: seed ${SEED}, ${seen.requests} upgrades; statuses ${JSON.stringify(Object.fromEntries([...seen.byStatus].sort((a, b) => a[0] - b[0])))}`,
  );
  await t?.destroy();
});

const target = (): WsTarget => ({ url: t.url, owner, other, channel, sig, seen });

describe('fuzz: the WebSocket upgrade', () => {
  it('answers every upgrade with a clean refusal or a clean handshake', async () => {
    const gate = runGate(CAP_MS, MIN_RUNS);
    await fc.assert(
      fc.asyncProperty(upgradeArb, async (u) => {
        if (gate.open()) await check(target(), u);
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    expect(gate.ran).toBeGreaterThanOrEqual(Math.min(MIN_RUNS, RUNS));
  }, 120_000);

  it('leaves the node healthy: /api/health answers and a valid subscriber still gets its hello', async () => {
    expect((await call(t.url, 'GET', '/api/health')).status).toBe(200);
    const hello = await new Promise<any>((ok, no) => {
      const ws = new WebSocket(`${t.url.replace(/^http/, 'ws')}/ws/stream?channel=${channel.id}`, { headers: bearer(owner.key) });
      ws.on('message', (d) => {
        ok(JSON.parse(String(d)));
        ws.close();
      });
      ws.on('unexpected-response', (_r, res) => no(new Error(`refused ${res.statusCode}`)));
      ws.on('error', no);
    });
    expect(hello).toMatchObject({ subscribed: channel.id });
  });
});

// A caller that leaves a request another node forwards to its identity's home: the home sees its own client leave
// (http/client-gone.ts) and its solver run is told, whichever way the request went. Three real nodes on 127.0.0.1:
// F forwards; A is a home at its URL; H is a home whose advertised URL is a closed port, so F reaches it only over
// libp2p (/svc/http/1), where F resetting the stream is what H reads as its client leaving.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, startTestNode, waitMeshHeard, zkIdentity, type TestNode } from '../helpers/node.js';
import { holdSolves } from '../helpers/held-solves.js';
import { freePort } from '../helpers/free-port.js';
import { waitUntil } from '../helpers/wait.js';

const MESH_SECRET = 'client-leaves-secret-0123456789abcdef';
const config = (bootstrap: string[]) => ({ mesh: { secret: MESH_SECRET, p2pPort: 0, bootstrap, tickEvery: 1 } });
const opts = { mesh: { redialMinMs: 100, redialMaxMs: 1000 } };

let f: TestNode;
let a: TestNode;
let h: TestNode;
/** Where H's server listens (the URL it advertises is a closed port). */
let hUrl: string;

beforeAll(async () => {
  a = await startTestNode(config([]), opts);
  const [port, dead] = [await freePort(), await freePort()];
  hUrl = `http://127.0.0.1:${port}`;
  h = await startTestNode({ ...config([a.node.mesh.multiaddrs()[0]!]), port, publicUrl: `http://127.0.0.1:${dead}` }, opts);
  f = await startTestNode(config([a.node.mesh.multiaddrs()[0]!, h.node.mesh.multiaddrs()[0]!]), opts);
  await waitMeshHeard([f, a, h]);
}, 60_000);

afterAll(async () => {
  await Promise.all([f, a, h].map((n) => n?.destroy()));
});

/**
 * A solver run asked of F by a caller homed on `home`, who leaves once the home's run has started: the home's run
 * is told its client left (a 499), and F still serves the caller's next request from that home.
 */
async function leaveAtHome(home: TestNode, homeUrl: string, seed: string): Promise<void> {
  const caller = await zkIdentity(homeUrl, seed);
  const held = holdSolves(home.node.compute);
  try {
    const leaving = new AbortController();
    const pending = fetch(`${f.url}/api/svc/heat`, {
      method: 'POST',
      headers: { ...bearer(caller.key), 'content-type': 'application/json' },
      body: '{}',
      signal: leaving.signal,
    }).catch((err: unknown) => err);
    await waitUntil(() => held.started === 1, 'the forwarded run to start at the home', 15_000);
    expect(held.gone).toEqual([]);
    leaving.abort();
    expect(await pending).toMatchObject({ name: 'AbortError' });
    const [reason] = await waitUntil(() => held.gone.length > 0 && held.gone, 'the home to see its client leave', 10_000);
    expect(reason).toMatchObject({ status: 499, code: 'SVC_BAD_REQUEST' });
    expect(held.started).toBe(1);
  } finally {
    held.restore();
  }
  // The home was not taken for hung: the next request through F reaches it.
  const again = await call(f.url, 'GET', '/api/tally/balance', undefined, bearer(caller.key));
  expect(again.status, again.text).toBe(200);
  expect(again.headers.get('x-svc-served-by')).toBe(home.node.nodeId);
}

describe('a caller that leaves a forwarded request', () => {
  it('at the home’s URL: the forward is cut, and the home’s run is told', async () => {
    await leaveAtHome(a, a.url, 'leaves-at-url');
  }, 40_000);

  it('over libp2p: the stream is reset, and the home’s run is told', async () => {
    // F knows H only at a URL nothing listens on: the request goes over /svc/http/1.
    expect(f.node.mesh.peers().find((p) => p.peerId === h.node.nodeId)?.url).not.toBe(hUrl);
    await leaveAtHome(h, hUrl, 'leaves-over-libp2p');
  }, 40_000);
});

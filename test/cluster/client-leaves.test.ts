// A caller that leaves a request another node forwards to its identity's home: the home sees its own client leave
// (http/client-gone.ts) and its solver run is told. Two real nodes on 127.0.0.1: F forwards; A is a home at its URL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, startTestNode, waitMeshHeard, zkIdentity, type TestNode } from '../helpers/node.js';
import { holdSolves } from '../helpers/held-solves.js';
import { waitUntil } from '../helpers/wait.js';

const MESH_SECRET = 'client-leaves-secret-0123456789abcdef';
const config = (bootstrap: string[]) => ({ mesh: { secret: MESH_SECRET, p2pPort: 0, bootstrap, tickEvery: 1 } });
const opts = { mesh: { redialMinMs: 100, redialMaxMs: 1000 } };

let f: TestNode;
let a: TestNode;

beforeAll(async () => {
  a = await startTestNode(config([]), opts);
  f = await startTestNode(config([a.node.mesh.multiaddrs()[0]!]), opts);
  await waitMeshHeard([f, a]);
}, 60_000);

afterAll(async () => {
  await Promise.all([f, a].map((n) => n?.destroy()));
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
});

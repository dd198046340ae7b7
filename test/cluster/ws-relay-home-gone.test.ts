// A relayed WebSocket whose home dies (its process killed, no close frame): the relaying node closes its client with a
// close frame of its own (1013, SVC_HOME_UNREACHABLE and when to retry), not 1006; the next upgrade while the home is
// down is accepted and closed the same way. The home is a real `svc-node start` process.
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { bearer, call, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { CLI, ROOT, exitOf, tempDirs } from '../helpers/cli.js';
import { waitUntil } from '../helpers/wait.js';

const MESH_SECRET = 'ws-home-gone-secret-0123456789';
const FORWARD_TIMEOUT_MS = 3_000;
const tempDir = tempDirs('svc-ws-gone-');

let home: ChildProcess;
let homeLine: { url: string; node: string; multiaddrs: string[] };
let relay: TestNode;

/** Start a node process and read its listening line. */
function startHome(dataDir: string): Promise<{ child: ChildProcess; line: typeof homeLine }> {
  const child = spawn(process.execPath, [...CLI, 'start', '--port', '0', '--p2p-port', '0', '--mesh-secret', MESH_SECRET, '--data-dir', dataDir], {
    cwd: ROOT,
    env: { ...process.env, SVC_LOG_LEVEL: 'warn', SVC_SOLVER_THREADS: '0' },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error('the home did not start')), 60_000);
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      for (const text of buf.split('\n').slice(0, -1)) {
        const rec = JSON.parse(text) as Record<string, any>;
        if (rec.msg !== 'listening') continue;
        clearTimeout(timer);
        resolve({ child, line: rec as typeof homeLine });
      }
    });
    child.once('exit', (code) => reject(new Error(`the home exited with ${code}`)));
  });
}

beforeAll(async () => {
  ({ child: home, line: homeLine } = await startHome(await tempDir()));
  relay = await startTestNode(
    {
      mesh: { secret: MESH_SECRET, p2pPort: 0, bootstrap: [homeLine.multiaddrs[0]!], tickEvery: 1, forwardTimeoutMs: FORWARD_TIMEOUT_MS },
      solverThreads: 0,
      sealWorker: false,
    },
    { mesh: { redialMinMs: 100, redialMaxMs: 1000 } },
  );
  await waitUntil(() => relay.node.mesh.peerUrl(homeLine.node) === homeLine.url, "the relay to hear the home's URL", 60_000, 100);
}, 120_000);
afterAll(async () => {
  if (home.exitCode === null) home.kill('SIGKILL');
  await relay.destroy();
});

describe('a relayed WebSocket whose home dies', () => {
  it('is closed by the relay with 1013 and a reason, and so is the next upgrade while the home is down', async () => {
    const owner = await zkIdentity(homeLine.url, 'ws-home-gone-owner');
    const channel = (await call(homeLine.url, 'POST', '/api/svc/streams', { solver: 'lorenz', inputs: { t_end: 0.05 } }, bearer(owner.key))).body;
    expect(channel.id).toEqual(expect.any(String));
    const target = `${relay.url.replace(/^http/, 'ws')}/ws/stream?channel=${channel.id}&key=${channel.key}`;
    const ws = new WebSocket(target);
    const hello = await new Promise<any>((resolve, reject) => {
      ws.once('message', (d) => resolve(JSON.parse(String(d))));
      ws.once('error', reject);
    });
    expect(hello).toEqual({ subscribed: channel.id, tick_count: 0 });
    const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: String(reason) })));

    home.kill('SIGKILL');
    await exitOf(home);
    const { code, reason } = await closed;
    expect(code).toBe(1013);
    expect(reason).toBe(`SVC_HOME_UNREACHABLE: the home node of this stream channel could not be reached; retry after ${FORWARD_TIMEOUT_MS / 1000} s`);

    // The next upgrade while the home is down: accepted and closed at once the same way (a browser sees a close frame
    // and its reason, never an HTTP status).
    const again = new WebSocket(target);
    const refused = await new Promise<{ code: number; reason: string }>((resolve) => again.once('close', (c, r) => resolve({ code: c, reason: String(r) })));
    expect(refused).toEqual({ code: 1013, reason });
    // The relay's side of the socket ends just after the client has its close frame.
    await waitUntil(() => relay.node.wsClients === 0, 'the relay to hold no client', 5_000);
    expect((await call(relay.url, 'GET', '/api/health')).status).toBe(200);
  }, 90_000);
});

// A node started with another mesh secret than the node it bootstraps to: both say so in /api/health (the warning
// names the other peer, its count rises while the peer keeps sending) and in one warn log line each, not one per check.
// Once the misconfigured node is gone and the handshake window has passed, the warning clears with one info line.
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestNode, type TestNode } from '../helpers/node.js';
import { waitUntil } from '../helpers/wait.js';

/** A logger whose JSON lines the test reads (warn and above, plus the info line that ends an episode). */
function capturedLogger(): { logger: pino.Logger; lines: Record<string, any>[] } {
  const lines: Record<string, any>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const text of chunk.toString().split('\n')) if (text) lines.push(JSON.parse(text));
      done();
    },
  });
  return { logger: pino({ level: 'info' }, sink), lines };
}

const HANDSHAKE_WINDOW_S = 12;
const mesh = (secret: string, bootstrap: string[]) => ({
  mesh: { secret, bootstrap },
  health: { checkTicks: 1, handshakeWindowSeconds: HANDSHAKE_WINDOW_S },
  solverThreads: 0,
  sealWorker: false,
});

let a: TestNode;
let b: TestNode;
const logA = capturedLogger();
const logB = capturedLogger();

beforeAll(async () => {
  a = await startTestNode(mesh('first-mesh-secret-0123456789', []), { logger: logA.logger });
  b = await startTestNode(mesh('other-mesh-secret-0123456789', [a.node.mesh.multiaddrs()[0]!]), { logger: logB.logger });
}, 60_000);
afterAll(async () => {
  await b.destroy();
  await a.destroy();
});

const handshakeWarning = async (t: TestNode) => {
  const h = await call(t.url, 'GET', '/api/health');
  expect(h.status).toBe(200);
  return (h.body.warnings as Record<string, any>[]).find((w) => w.code === 'MESH_HANDSHAKE_REJECTED');
};
const warnLines = (lines: Record<string, any>[]) => lines.filter((l) => l.warning === 'MESH_HANDSHAKE_REJECTED' && l.level === 40);

describe('health warnings: another mesh secret', () => {
  it('both nodes show MESH_HANDSHAKE_REJECTED naming the other within 30 s, the count rises, one warn line each', async () => {
    const [wa, wb] = await Promise.all([
      waitUntil(() => handshakeWarning(a), "a's handshake warning", 30_000, 250),
      waitUntil(() => handshakeWarning(b), "b's handshake warning", 30_000, 250),
    ]);
    expect(wa).toMatchObject({ message: expect.stringContaining(b.node.nodeId), count: expect.any(Number) });
    expect(wa.message).toMatch(/mesh secret/);
    expect(wb.message).toContain(a.node.nodeId);
    expect(Date.parse(wa.since)).toBeGreaterThan(Date.now() - 60_000);
    const later = await waitUntil(
      async () => {
        const w = await handshakeWarning(a);
        return w && w.count > wa.count ? w : null;
      },
      'a rising count',
      20_000,
      250,
    );
    expect(later.since).toBe(wa.since);
    expect(warnLines(logA.lines)).toHaveLength(1);
    expect(warnLines(logB.lines)).toHaveLength(1);
    expect(warnLines(logA.lines)[0]!.msg).toContain(b.node.nodeId);
    // The counter it reads is the one mesh status shows; the refused peer, though connected, is not counted a member.
    const status = await call(a.url, 'GET', '/api/mesh/status');
    expect(status.body.peers.find((p: { peerId: string }) => p.peerId === b.node.nodeId)).toMatchObject({ connected: true });
    expect(status.body.meshSize).toBe(1);
    expect(status.body.rejected.gossip.INVALID_HANDSHAKE + (status.body.rejected.http.INVALID_HANDSHAKE ?? 0)).toBeGreaterThanOrEqual(later.count);
  }, 60_000);

  it('clears once the misconfigured peer is gone for the handshake window, with one info line', async () => {
    await b.stop();
    const stoppedAt = Date.now();
    await waitUntil(async () => (await handshakeWarning(a)) === undefined, "a's warning to clear", (HANDSHAKE_WINDOW_S + 20) * 1000, 250);
    expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual((HANDSHAKE_WINDOW_S - 4) * 1000);
    const cleared = logA.lines.filter((l) => l.warning === 'MESH_HANDSHAKE_REJECTED' && l.level === 30);
    expect(cleared).toHaveLength(1);
    expect(cleared[0]).toMatchObject({ msg: 'warning MESH_HANDSHAKE_REJECTED cleared', count: expect.any(Number) });
    expect(warnLines(logA.lines)).toHaveLength(1);
  }, 60_000);
});

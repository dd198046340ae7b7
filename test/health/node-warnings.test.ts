// The warnings a lone node raises from its own wiring: a bootstrap peer that never answers (no connection), an
// announced address nothing listens on (a real TCP probe), and a data dir's disk below the bound (a real statfs; the
// bound set above any free share). Each appears in /api/health with its code, message and count.
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestNode, type TestNode } from '../helpers/node.js';
import { waitUntil } from '../helpers/wait.js';
import { WARNING_CODES } from '../../src/health/warnings.js';

let t: TestNode;

/**
 * tcp/1 (tcpmux): a privileged port nothing on a test machine listens on. A port freed a moment ago is no closed port
 * where tests run in parallel: another node may bind it between the probe and the check.
 */
const deadPort = 1;

beforeAll(async () => {
  const nobody = peerIdFromPrivateKey((await generateKeyPair('Ed25519')) as never).toString();
  t = await startTestNode({
    mesh: {
      secret: 'lone-node-secret-0123456789',
      p2pPort: 0,
      bootstrap: [`/ip4/127.0.0.1/tcp/${deadPort}/p2p/${nobody}`],
      announce: [`/ip4/127.0.0.1/tcp/${deadPort}`],
    },
    health: { checkTicks: 1, noPeersGraceSeconds: 0, diskFreeMinPercent: 100 },
    solverThreads: 0,
    sealWorker: false,
  });
}, 60_000);
afterAll(async () => {
  await t.destroy();
});

describe('health warnings of a lone node', () => {
  it('lists MESH_NO_PEERS, MESH_ANNOUNCE_UNREACHABLE and DISK_LOW, in the closed list order, with rising counts', async () => {
    const codes = ['MESH_NO_PEERS', 'MESH_ANNOUNCE_UNREACHABLE', 'DISK_LOW'];
    const first = await waitUntil(
      async () => {
        const w = (await call(t.url, 'GET', '/api/health')).body.warnings as Record<string, any>[];
        return codes.every((c) => w.some((x) => x.code === c)) ? w : null;
      },
      'the three warnings',
      30_000,
      250,
    );
    expect(first.map((w) => w.code)).toEqual(WARNING_CODES.filter((c) => codes.includes(c)));
    const of = (ws: Record<string, any>[], code: string) => ws.find((w) => w.code === code)!;
    expect(of(first, 'MESH_NO_PEERS').message).toMatch(/no mesh connection for \d+ s although 1 bootstrap peer/);
    expect(of(first, 'MESH_ANNOUNCE_UNREACHABLE').message).toContain(`/ip4/127.0.0.1/tcp/${deadPort} (ECONNREFUSED)`);
    expect(of(first, 'DISK_LOW').message).toMatch(/the data dir's file system has \d+ MiB free of \d+ MiB/);
    for (const w of first) expect(w).toEqual({ code: w.code, message: expect.any(String), since: expect.any(String), count: expect.any(Number) });
    const later = await waitUntil(
      async () => {
        const w = (await call(t.url, 'GET', '/api/health')).body.warnings as Record<string, any>[];
        return of(w, 'DISK_LOW').count > of(first, 'DISK_LOW').count ? w : null;
      },
      'a rising count',
      15_000,
      250,
    );
    expect(of(later, 'DISK_LOW').since).toBe(of(first, 'DISK_LOW').since);
    expect((await call(t.url, 'GET', '/api/health')).body).toMatchObject({ ok: true, status: 'live' });
  }, 60_000);
});

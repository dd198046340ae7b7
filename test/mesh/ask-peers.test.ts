// Asking the peers (mesh/ask-peers.ts) at real HTTP servers on 127.0.0.1: every answer in the order asked, or the first
// one accepted without waiting for a peer that does not answer.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { askPeers, askPeersFirst } from '../../src/mesh/ask-peers.js';

const servers: Server[] = [];
/** Requests held open by silent peers, ended after the tests. */
const held: ServerResponse[] = [];

/** A peer answering `status` with `{n}`, or never answering when status is null. */
async function peer(n: number, status: number | null): Promise<{ peerId: string; url: string }> {
  const server = createServer((_req, res) => {
    if (status === null) return void held.push(res);
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ n }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return { peerId: `peer-${n}`, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

afterAll(async () => {
  for (const res of held) res.end();
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
});

const read = (body: unknown) => ((body as { n: number }).n % 2 === 0 ? (body as { n: number }).n : null);

describe('asking the peers', () => {
  it('askPeers gives every answer in the order asked: a refused status, an unread answer and a peer without a URL are null', async () => {
    const peers = [await peer(1, 200), await peer(2, 200), await peer(4, 500), { peerId: 'no-url', url: null }];
    const answers = await askPeers(peers, '/q', 5_000, null, read);
    expect(answers.map((a) => [a.peer.peerId, a.answer])).toEqual([
      ['peer-1', null],
      ['peer-2', 2],
      ['peer-4', null],
    ]);
  });

  // A peer that never answers is given a timeout far beyond the test's own: only an answer that does not wait for it
  // ends in time.
  it('askPeersFirst resolves with the first accepted answer while a silent peer is still asked', async () => {
    const peers = [await peer(0, null), await peer(3, 200), await peer(6, 200)];
    expect(await askPeersFirst(peers, '/q', 600_000, null, read)).toBe(6);
  }, 15_000);

  it('askPeersFirst is null when no answer is accepted, and when there is nobody to ask', async () => {
    expect(await askPeersFirst([await peer(5, 200), await peer(8, 404)], '/q', 5_000, null, read)).toBeNull();
    expect(await askPeersFirst([], '/q', 5_000, null, read)).toBeNull();
  });
});

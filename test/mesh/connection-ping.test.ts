// The connection monitor's ping timeout: a peer whose ping answer takes longer than libp2p's 5 s (a busy moment of its
// process) keeps its connection. The slow peer is a bare libp2p node composed in the test (TCP, noise, yamux) whose
// ping handler waits before it echoes; the node pings every connection every 8 s (a ping still pending at the next
// one would fail it: the ping protocol takes one outbound stream per connection).
import { noise } from '@chainsafe/libp2p-noise';
import { yamux } from '@chainsafe/libp2p-yamux';
import { tcp } from '@libp2p/tcp';
import { multiaddr } from '@multiformats/multiaddr';
import { createLibp2p, type Libp2p } from 'libp2p';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock, TICK_NS } from '../../src/kernel/clock.js';
import { CONNECTION_PING_TIMEOUT_MS } from '../../src/mesh/host.js';
import { startNode, type TestNode } from './helpers.js';
import { waitUntil } from '../helpers/wait.js';

const PING_PROTOCOL = '/ipfs/ping/1.0.0';
/** Longer than libp2p's 5-s ping timeout, well under the node's. */
const SLOW_ANSWER_MS = 6_000;
const PING_EVERY_MS = 8_000;

describe('connection pings', () => {
  let node: TestNode | null = null;
  let slow: Libp2p | null = null;
  afterEach(async () => {
    await slow?.stop();
    await node?.stop();
    slow = node = null;
  });

  it('keep a connection whose ping is answered after 6 s', async () => {
    expect(CONNECTION_PING_TIMEOUT_MS).toBeGreaterThan(SLOW_ANSWER_MS);
    node = await startNode({ clock: new ManualClock(BigInt(1_900_000_000) * TICK_NS), extra: { connectionPingMs: PING_EVERY_MS } });
    slow = await createLibp2p({
      addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
      transports: [tcp()],
      connectionEncrypters: [noise()],
      streamMuxers: [yamux()],
    });
    const answeredAt: number[] = [];
    await slow.handle(PING_PROTOCOL, ({ stream }) => {
      void (async () => {
        await new Promise((r) => setTimeout(r, SLOW_ANSWER_MS));
        await stream.sink(stream.source);
        answeredAt.push(Date.now());
      })().catch(() => stream.abort(new Error('ping echo failed')));
    });
    const conn = await slow.dial(multiaddr(node.mesh.multiaddrs()[0]!));
    // The node's first ping goes out 8 s after its start and is answered 6 s later, on the same connection.
    await waitUntil(() => answeredAt.length > 0, 'a ping answered', 20_000);
    expect(conn.status).toBe('open');
    expect(node.mesh.p2p!.isConnected(slow.peerId.toString())).toBe(true);
    expect(slow.getConnections().map((c) => c.id)).toEqual([conn.id]);
  });
});

// A peer's addresses as the peer store keeps them, and whether a peer can be reached without a connection.
import { describe, expect, it } from 'vitest';
import { multiaddr } from '@multiformats/multiaddr';
import { withoutPeerId } from '../../src/mesh/reachability.js';
import { isReachable, RECENT_WINDOW_TICKS } from '../../src/mesh/peer-table.js';

const RELAY = '12D3KooWAhV6gDiCQRWoaTCsnQVNrRQs5CuurrjLrF5RhyinGK46';
const NODE = '12D3KooWAtm3NPmpbXFeC2fyZ1mJK3tBwZxuq8hDLqZKKCVtmxWM';

describe('withoutPeerId', () => {
  it('removes a trailing /p2p/<id> only', () => {
    expect(withoutPeerId(multiaddr(`/ip4/127.0.0.1/tcp/4001/p2p/${NODE}`)).toString()).toBe('/ip4/127.0.0.1/tcp/4001');
    expect(withoutPeerId(multiaddr('/ip4/127.0.0.1/tcp/4001')).toString()).toBe('/ip4/127.0.0.1/tcp/4001');
  });

  it("keeps a circuit address's relay: never the relay's own address", () => {
    const circuit = `/ip4/127.0.0.1/tcp/4001/p2p/${RELAY}/p2p-circuit`;
    expect(withoutPeerId(multiaddr(circuit)).toString()).toBe(circuit);
    expect(withoutPeerId(multiaddr(`${circuit}/p2p/${NODE}`)).toString()).toBe(circuit);
  });
});

describe('isReachable', () => {
  const heard = { connected: false, multiaddrs: [`/ip4/127.0.0.1/tcp/4001/p2p/${RELAY}/p2p-circuit`], receivedSvcond: 1_000 };
  it('connected, or heard recently with addresses to dial', () => {
    expect(isReachable({ ...heard, connected: true, multiaddrs: [], receivedSvcond: null }, 5_000)).toBe(true);
    expect(isReachable(heard, 1_000 + RECENT_WINDOW_TICKS)).toBe(true);
  });
  it('not when heard too long ago, never, or without addresses', () => {
    expect(isReachable(heard, 1_001 + RECENT_WINDOW_TICKS)).toBe(false);
    expect(isReachable({ ...heard, receivedSvcond: null }, 1_000)).toBe(false);
    expect(isReachable({ ...heard, multiaddrs: [] }, 1_000)).toBe(false);
  });
});

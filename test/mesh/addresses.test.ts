// A peer's addresses as the peer store keeps them, and whether a peer can be reached without a connection.
import { describe, expect, it } from 'vitest';
import { multiaddr } from '@multiformats/multiaddr';
import { isPrivateHost, withoutPeerId } from '../../src/mesh/reachability.js';
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

describe('isPrivateHost', () => {
  it('is the outbound URL policy’s list of non-public ranges, IPv6 forms embedding a private IPv4 included; a name is not private', () => {
    for (const h of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.1.1', '100.64.1.1', '::1', 'fd00::1', 'fe80::1%eth0'])
      expect(isPrivateHost(h), h).toBe(true);
    // An advertised address in one of these forms reaches an inside IPv4: a peer told it would dial a private host.
    for (const h of ['::ffff:10.0.0.1', '::ffff:a00:1', '64:ff9b::c0a8:101', '2002:a00:1::1', 'fec0::1']) expect(isPrivateHost(h), h).toBe(true);
    for (const h of ['8.8.8.8', '2606:4700::1111', '64:ff9b::808:808', 'example.com']) expect(isPrivateHost(h), h).toBe(false);
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

// How other nodes can reach this one, read from libp2p's address manager: public (an address on a public IP that
// AutoNAT confirmed, or one the operator announced), relayed (a circuit relay v2 reservation: reachable through the
// relays named), private (only loopback and private-range addresses) or unknown (a public address not yet confirmed).
import { isIP } from 'node:net';
import type { Multiaddr } from '@multiformats/multiaddr';
import { isBlockedAddress } from '../util/url-policy.js';

export type Reachability = 'public' | 'relayed' | 'private' | 'unknown';

/** One address of this node as the address manager holds it. */
export interface HostAddress {
  multiaddr: Multiaddr;
  /** AutoNAT (or the operator, for announced addresses) confirmed it. */
  verified: boolean;
  type: string;
}

export interface ReachabilityStatus {
  reachability: Reachability;
  /** Peer ids of the relays this node holds a reservation on. */
  relays: string[];
  /** The operator's announced addresses (mesh.announce). */
  announce: string[];
  addresses: { multiaddr: string; type: string; verified: boolean }[];
}

const CIRCUIT = '/p2p-circuit';
/** Multicodec of the /p2p/<peer id> component. */
const P2P_CODE = 421;

/**
 * True for an IP address in a non-public range (addresses no outside node can dial): the outbound URL policy's one list
 * (url-policy.ts), IPv6 forms that embed a private IPv4 included. A name is not private here.
 */
export function isPrivateHost(host: string): boolean {
  return isIP(host.replace(/%.*$/, '')) !== 0 && isBlockedAddress(host);
}

function hostOf(ma: Multiaddr): string | null {
  const c = ma.getComponents().find((x) => x.name === 'ip4' || x.name === 'ip6' || x.name === 'dns4' || x.name === 'dns6' || x.name === 'dns');
  return c?.value ?? null;
}

/** The relay's peer id in a circuit address (/…/p2p/<relay>/p2p-circuit/…). */
export function relayOf(ma: Multiaddr): string | null {
  const comps = ma.getComponents();
  const at = comps.findIndex((c) => c.name === 'p2p-circuit');
  if (at <= 0) return null;
  const relay = comps[at - 1];
  return relay?.name === 'p2p' ? (relay.value ?? null) : null;
}

/**
 * The address without its trailing /p2p/<peer id>, as the peer store keeps it. Only a last component is removed: a
 * circuit address (/…/p2p/<relay>/p2p-circuit) keeps its relay's id, without which it would name the relay itself.
 */
export function withoutPeerId(ma: Multiaddr): Multiaddr {
  const comps = ma.getComponents();
  return comps[comps.length - 1]?.name === 'p2p' ? ma.decapsulateCode(P2P_CODE) : ma;
}

export function reachabilityOf(addresses: readonly HostAddress[], announce: readonly string[]): ReachabilityStatus {
  const relays = [...new Set(addresses.map((a) => relayOf(a.multiaddr)).filter((r): r is string => r !== null))];
  const direct = addresses.filter((a) => !a.multiaddr.toString().includes(CIRCUIT));
  const publicHost = (a: HostAddress): boolean => {
    const host = hostOf(a.multiaddr);
    return host !== null && !isPrivateHost(host);
  };
  let reachability: Reachability;
  if (direct.some((a) => publicHost(a) && (a.verified || a.type === 'announce'))) reachability = 'public';
  else if (relays.length > 0) reachability = 'relayed';
  else if (direct.every((a) => !publicHost(a))) reachability = 'private';
  else reachability = 'unknown';
  return {
    reachability,
    relays,
    announce: [...announce],
    addresses: addresses.map((a) => ({ multiaddr: a.multiaddr.toString(), type: a.type, verified: a.verified })),
  };
}

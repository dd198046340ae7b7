// The libp2p host of a node: TCP (and circuit relay v2) transports, noise, yamux, identify, ping, AutoNAT, DCUtR,
// gossipsub (StrictSign, no emitSelf, peer exchange, peer scoring) on the five versioned topics, and optionally a
// relay server, UPnP, mDNS and a Kademlia DHT. Every topic has a validator that defers to the caller (the one mesh
// validator). The peer set (peer-set.ts) keeps the connection count between its target and maximum from the
// persisted peer store (peer-store.ts); reachability.ts says how other nodes reach this one.
import { createHash } from 'node:crypto';
import { createLibp2p, type Libp2p } from 'libp2p';
import { tcp } from '@libp2p/tcp';
import { noise } from '@chainsafe/libp2p-noise';
import { yamux } from '@chainsafe/libp2p-yamux';
import { identify, type Identify } from '@libp2p/identify';
import { ping, type Ping } from '@libp2p/ping';
import { autoNAT } from '@libp2p/autonat';
import { dcutr } from '@libp2p/dcutr';
import { circuitRelayServer, circuitRelayTransport } from '@libp2p/circuit-relay-v2';
import { gossipsub, type GossipSub, type GossipsubEvents } from '@chainsafe/libp2p-gossipsub';
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr';
import type {
  ComponentLogger,
  ConnectionGater,
  Message,
  Metrics,
  PeerId,
  PrivateKey,
  PubSub,
  SignaturePolicy,
  Stream,
  TopicValidatorResult,
} from '@libp2p/interface';
import type { AddressManager } from '@libp2p/interface-internal';
import { peerIdFromString } from '@libp2p/peer-id';
import { ALL_TOPICS, TOPICS } from './wire.js';
import type { GossipVerdict } from './validator.js';
import { PeerSet, type SilentPeer } from './peer-set.js';
import type { PeerStore } from './peer-store.js';
import { PEER_EXCHANGE_PROTOCOL, PeerExchange } from './peer-exchange.js';
import { isPrivateHost, reachabilityOf, relayOf, withoutPeerId, type ReachabilityStatus } from './reachability.js';

export interface MeshLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

export const silentLogger: MeshLogger = { info: () => {}, warn: () => {}, debug: () => {} };

/** Circuit relay v2: serving as a relay (with limits) and reserving a slot on one. */
export interface RelayOptions {
  /** Serve as a relay for other nodes. */
  serve: boolean;
  /**
   * Reserve a slot on a relay and advertise the /p2p-circuit address: 'auto' when the node listens on no public or
   * loopback address and announces none (a node behind NAT), or always, or never.
   */
  reserve: 'auto' | 'always' | 'never';
  /** Reservations this node holds for others at once. */
  maxReservations: number;
  /** How long one relayed connection may last (ms) and how many bytes it may carry each way. */
  durationLimitMs: number;
  dataLimitBytes: number;
}

export const DEFAULT_RELAY: RelayOptions = { serve: true, reserve: 'auto', maxReservations: 32, durationLimitMs: 600_000, dataLimitBytes: 64 * 1024 * 1024 };

/** The peer set's bounds and periods (docs/decisions.md, "Mesh: a healthy peer set"). */
export interface PeerSetBounds {
  /** Connections kept open at least: known peers are dialled while under it. */
  target: number;
  /** Connections above which the worst-scored peers are disconnected. */
  max: number;
  /** Period of the dial/prune pass (ms). */
  maintainMs: number;
  /** A connection younger than this is not pruned (ms): a joining peer has time to learn other peers first. */
  graceMs: number;
}

export const DEFAULT_PEER_SET: PeerSetBounds = { target: 8, max: 24, maintainMs: 2_000, graceMs: 20_000 };

/** How often libp2p's connection monitor pings each open connection (and closes one that does not answer). */
export const CONNECTION_PING_MS = 60_000;
/**
 * How long a ping may take before the connection is closed. libp2p's is 5 s (its adaptive timeout is never fed in
 * libp2p 2.10), and a node pings all its connections at once: a busy moment past 5 s closed every connection of a node
 * whose peers were all alive, and it heard nothing until it had dialled new ones (docs/scale.md). A peer gone without
 * closing its side is still closed within CONNECTION_PING_MS plus this. It stays under CONNECTION_PING_MS: a ping
 * still pending at the next one fails it (the ping protocol takes one outbound stream per connection), which closes
 * the connection too.
 */
export const CONNECTION_PING_TIMEOUT_MS = 30_000;

export interface MeshHostOptions {
  privateKey: PrivateKey;
  /** Interface to listen on (an IPv4/IPv6 literal or 'localhost'). */
  host: string;
  /** TCP port, 0 = any free port. */
  port: number;
  /** Listen on these multiaddrs instead of host:port (e.g. only '/p2p-circuit': a node reachable through a relay only). */
  listen?: string[];
  bootstrap: string[];
  /** Addresses other nodes should dial (a port forward's public address): they replace the listen addresses in tick events. */
  announce?: string[];
  /** The persisted peer store (loaded): the peers this node has met. */
  known: PeerStore;
  peerSet?: Partial<PeerSetBounds>;
  relay?: Partial<RelayOptions>;
  /** Discover peers on the LAN by multicast DNS. */
  mdns?: boolean;
  /** Ask the router for a port mapping (UPnP IGD). */
  upnp?: boolean;
  /** Run a Kademlia DHT (random walk discovery, peer routing). */
  dht?: boolean;
  /** gossipsub peer exchange on prune (default true). */
  px?: boolean;
  /**
   * Peer exchange on first contact (/svc/peers/1, peer-exchange.ts), gated by the mesh handshake: the mesh secret and
   * this node's tick. Absent: not served and not asked.
   */
  exchange?: { secret: string; nowSvcond: () => number };
  /**
   * Inbound connections libp2p takes from one IP address a second (default max(5, peers max)). A simulation whose
   * nodes all share 127.0.0.1 raises it: real joiners arrive from their own addresses.
   */
  inboundPerIpPerSec?: number;
  logger?: MeshLogger;
  /** Topic validator for every mesh topic. */
  validate: (topic: string, data: Uint8Array, from: string) => Promise<GossipVerdict> | GossipVerdict;
  /** Called for every message the validator accepted (never for this node's own messages). */
  onMessage: (topic: string, data: Uint8Array, from: string) => void;
  onPeerChange?: (peerId: string, connected: boolean) => void;
  /** Peers heard recently that this node went deaf to (peer-table.ts silentPeers): the peer set dials them. */
  silentPeers?: () => readonly SilentPeer[];
  /** Redial backoff bounds in ms (default 250 .. 10 000). */
  redialMinMs?: number;
  redialMaxMs?: number;
  /** gossipsub seen-cache TTL in ms (default 120 s). */
  seenTtlMs?: number;
  /** How often each connection is pinged (ms; default CONNECTION_PING_MS); tests shorten it. */
  connectionPingMs?: number;
  /** libp2p's own component logger (absent: libp2p's default, the `debug` module, DEBUG=libp2p:*); the mesh simulation reads it. */
  libp2pLogger?: ComponentLogger;
  /** libp2p's own metrics (a factory such as @libp2p/prometheus-metrics', supplied by the mesh's wiring, node/mesh.ts). */
  metrics?: (components: { logger: ComponentLogger }) => Metrics;
  /**
   * Test composition only (architecture.md §8, never config): which connections libp2p refuses. The fault harness
   * (test/helpers/fault) partitions nodes with it; absent, libp2p's default allows every connection.
   */
  connectionGater?: Partial<ConnectionGater>;
}

/** A service that only hands the address manager out (libp2p keeps its components private). */
interface Addresses {
  addressManager: AddressManager;
}

type Services = { identify: Identify; ping: Ping; pubsub: PubSub<GossipsubEvents>; addresses: Addresses };

function listenAddr(host: string, port: number): string {
  const h = host === 'localhost' ? '127.0.0.1' : host;
  return h.includes(':') ? `/ip6/${h}/tcp/${port}` : `/ip4/${h}/tcp/${port}`;
}

/**
 * Score parameters. A rejected message (bad handshake or signature) costs its forwarder score on every topic. On the
 * tick topic a mesh peer that delivers less than half a tick event per decay window loses a little score: enough to
 * rank it among the first pruned when the node is over its maximum, never enough to cross the gossip threshold, so
 * a quiet peer (tick traffic is sparse) is not disconnected for it.
 */
function topicScores(): Record<string, object> {
  const out: Record<string, object> = {};
  for (const t of ALL_TOPICS) {
    const ticks = t === TOPICS.ticks;
    out[t] = {
      topicWeight: 1,
      timeInMeshWeight: 0.01,
      timeInMeshQuantum: 1000,
      timeInMeshCap: 3600,
      firstMessageDeliveriesWeight: 0.1,
      firstMessageDeliveriesDecay: 0.5,
      firstMessageDeliveriesCap: 100,
      meshMessageDeliveriesWeight: ticks ? -0.5 : 0,
      meshMessageDeliveriesDecay: 0.9,
      meshMessageDeliveriesCap: 20,
      meshMessageDeliveriesThreshold: 0.5,
      meshMessageDeliveriesWindow: 100,
      meshMessageDeliveriesActivation: 30_000,
      meshFailurePenaltyWeight: ticks ? -0.5 : 0,
      meshFailurePenaltyDecay: 0.9,
      invalidMessageDeliveriesWeight: -1,
      invalidMessageDeliveriesDecay: 0.5,
    };
  }
  return out;
}

/**
 * Score thresholds: below gossipThreshold a peer gets no gossip, below graylistThreshold its messages are ignored.
 * Peer exchange is accepted from peers above acceptPXThreshold (a peer that has delivered first messages).
 */
export const SCORE_THRESHOLDS = { gossipThreshold: -10, publishThreshold: -50, graylistThreshold: -80, acceptPXThreshold: 0.5, opportunisticGraftThreshold: 1 };

/** The gossipsub RPC message fields the fast id reads. */
interface RpcMessageFields {
  from?: Uint8Array;
  seqno?: Uint8Array;
  topic: string;
  data?: Uint8Array;
  signature?: Uint8Array;
  key?: Uint8Array;
}

function fastMsgId(m: RpcMessageFields): string {
  const h = createHash('sha256');
  for (const part of [m.from, m.seqno, Buffer.from(m.topic), m.data, m.signature, m.key]) {
    const b = part ?? new Uint8Array(0);
    const len = Buffer.alloc(4);
    len.writeUInt32BE(b.length);
    h.update(len).update(b);
  }
  return h.digest('base64');
}

/** Whether a node with these listen/announce addresses reserves a relay slot under 'auto'. */
function needsRelay(listen: readonly string[], announce: readonly string[]): boolean {
  if (announce.length > 0) return false;
  for (const text of listen) {
    const host = multiaddr(text)
      .getComponents()
      .find((c) => c.name === 'ip4' || c.name === 'ip6')?.value;
    if (host === undefined) continue;
    if (host.startsWith('127.') || host === '::1' || !isPrivateHost(host)) return false;
  }
  return true;
}

/** Protocols of a connection's own upkeep (identify, ping, AutoNAT, DCUtR, gossipsub, the exchange). */
const CLOSABLE_AFTER_FULL = /^\/(ipfs\/id|ipfs\/ping|libp2p\/autonat|libp2p\/dcutr|meshsub|svc\/peers)(\/|$)/;

export class MeshHost {
  private node: Libp2p<Services> | null = null;
  private peerSet: PeerSet | null = null;
  private readonly log: MeshLogger;
  private readonly bounds: PeerSetBounds;
  private readonly relay: RelayOptions;

  constructor(private readonly opts: MeshHostOptions) {
    this.log = opts.logger ?? silentLogger;
    this.bounds = { ...DEFAULT_PEER_SET, ...opts.peerSet };
    this.relay = { ...DEFAULT_RELAY, ...opts.relay };
  }

  get peerId(): string {
    if (!this.node) throw new Error('mesh host is not started');
    return this.node.peerId.toString();
  }

  get started(): boolean {
    return this.node !== null;
  }

  async start(): Promise<void> {
    if (this.node) return;
    const o = this.opts;
    const announce = o.announce ?? [];
    const listen = o.listen ?? [listenAddr(o.host, o.port)];
    const reserve = this.relay.reserve === 'always' || (this.relay.reserve === 'auto' && needsRelay(listen, announce));
    if (reserve && !listen.includes('/p2p-circuit')) listen.push('/p2p-circuit');
    const services = {
      identify: identify({ runOnLimitedConnection: true }),
      ping: ping(),
      addresses: (components: Addresses): Addresses => ({ addressManager: components.addressManager }),
      autonat: autoNAT(),
      dcutr: dcutr(),
      ...(this.relay.serve
        ? {
            relay: circuitRelayServer({
              reservations: {
                maxReservations: this.relay.maxReservations,
                defaultDurationLimit: this.relay.durationLimitMs,
                defaultDataLimit: BigInt(this.relay.dataLimitBytes),
              },
            }),
          }
        : {}),
      // The optional services are imported only when they are on: a node that runs none would load their modules at
      // every start (docs/performance.md, "Start-up").
      ...(o.upnp ? { upnp: (await import('@libp2p/upnp-nat')).uPnPNAT() } : {}),
      ...(o.dht ? { dht: (await import('@libp2p/kad-dht')).kadDHT({ protocol: '/svc/kad/1.0.0', clientMode: false }) } : {}),
      pubsub: gossipsub({
        globalSignaturePolicy: 'StrictSign' as SignaturePolicy,
        emitSelf: false,
        allowPublishToZeroTopicPeers: true,
        ignoreDuplicatePublishError: true,
        fallbackToFloodsub: false,
        floodPublish: true,
        doPX: o.px ?? true,
        // A node reachable only through a relay gossips over the relayed (limited) connection.
        runOnLimitedConnection: true,
        seenTTL: o.seenTtlMs ?? 120_000,
        // Copies of a message arriving from several mesh peers are recognised before their signature is checked
        // again. The fast id covers every field (a forged copy with other data or signature has another id, and
        // gossipsub caches a fast id only after the message passed its signature check).
        fastMsgIdFn: fastMsgId,
        scoreParams: { topics: topicScores() as never, IPColocationFactorWeight: 0 },
        scoreThresholds: SCORE_THRESHOLDS,
      }),
    };
    const node = (await createLibp2p({
      privateKey: o.privateKey,
      ...(o.libp2pLogger ? { logger: o.libp2pLogger } : {}),
      addresses: { listen, announce },
      transports: [tcp(), circuitRelayTransport()],
      connectionEncrypters: [noise()],
      streamMuxers: [yamux()],
      // libp2p refuses connections past twice the maximum: room for the peer set to choose whom to prune by score and for
      // every newcomer past the maximum to be answered `full` by the peer exchange, with other peers to dial, and leave
      // (one refused by libp2p itself learns nothing and retries the same full node), and inbound connections from one
      // IP address past `max` a second (nodes behind one NAT, a local cluster). It takes as many inbound handshakes at
      // once as the node keeps peers, not libp2p's 10: a handshake lasts round trips to the dialler, so the 10 capped a
      // seed under a mass join at 10 joiners per handshake time and refused the rest (docs/decisions.md).
      connectionManager: {
        maxConnections: this.bounds.max + Math.max(2, this.bounds.max),
        maxIncomingPendingConnections: Math.max(10, this.bounds.max),
        inboundConnectionThreshold: o.inboundPerIpPerSec ?? Math.max(5, this.bounds.max),
        dialTimeout: 5_000,
      },
      // libp2p pings every connection every 10 s on a new stream each time; at 8–24 connections that was half of an
      // idle node's CPU (docs/decisions.md, "Mesh: connection pings every 60 s").
      connectionMonitor: { pingInterval: o.connectionPingMs ?? CONNECTION_PING_MS, pingTimeout: { minTimeout: CONNECTION_PING_TIMEOUT_MS } },
      ...(o.mdns ? { peerDiscovery: [(await import('@libp2p/mdns')).mdns()] } : {}),
      ...(o.metrics ? { metrics: o.metrics } : {}),
      ...(o.connectionGater ? { connectionGater: o.connectionGater } : {}),
      services,
    })) as unknown as Libp2p<Services>;
    this.node = node;
    const pubsub = node.services.pubsub;
    for (const topic of ALL_TOPICS) {
      pubsub.topicValidators.set(topic, async (peer: PeerId, msg: Message): Promise<TopicValidatorResult> => {
        try {
          return (await o.validate(msg.topic, msg.data, peer.toString())) as TopicValidatorResult;
        } catch (err) {
          this.log.warn({ err: String(err), topic }, 'mesh validator threw; message rejected');
          return 'reject' as TopicValidatorResult;
        }
      });
      pubsub.subscribe(topic);
    }
    pubsub.addEventListener('message', (evt) => {
      const msg = evt.detail;
      const from = msg.type === 'signed' ? msg.from.toString() : '';
      try {
        o.onMessage(msg.topic, msg.data, from);
      } catch (err) {
        this.log.warn({ err: String(err), topic: msg.topic }, 'mesh message handler threw');
      }
    });
    const known = o.known;
    // Peers met are remembered with where they listen (identify) or were found (mDNS, the DHT).
    node.addEventListener('peer:identify', (evt) => {
      known.learn(
        evt.detail.peerId.toString(),
        evt.detail.listenAddrs.map((m) => withoutPeerId(m).toString()),
      );
    });
    node.addEventListener('peer:discovery', (evt) => {
      known.learn(
        evt.detail.id.toString(),
        evt.detail.multiaddrs.map((m) => withoutPeerId(m).toString()),
      );
    });
    this.peerSet = new PeerSet({
      node,
      known,
      bootstrap: o.bootstrap,
      target: this.bounds.target,
      max: this.bounds.max,
      maintainMs: this.bounds.maintainMs,
      graceMs: this.bounds.graceMs,
      redialMinMs: o.redialMinMs ?? 250,
      redialMaxMs: o.redialMaxMs ?? 10_000,
      score: (peerId) => this.peerScore(peerId),
      keep: (peerId) => this.reachability().relays.includes(peerId),
      ...(o.silentPeers ? { silent: o.silentPeers } : {}),
      log: this.log,
    });
    if (o.exchange) await this.startExchange(node, o.exchange, this.peerSet);
    node.addEventListener('peer:connect', (evt) => o.onPeerChange?.(evt.detail.toString(), true));
    node.addEventListener('peer:disconnect', (evt) => {
      const id = evt.detail.toString();
      this.peerSet?.disconnected(id);
      o.onPeerChange?.(id, false);
    });
    this.log.info({ peerId: node.peerId.toString(), multiaddrs: this.multiaddrs(), relayReservation: reserve }, 'mesh listening');
    await this.peerSet.start();
  }

  /**
   * Serve /svc/peers/1 and ask it on every connection this node opens. An answer's peers go to the peer store and the
   * peer set dials them (with its usual limits) if under its target; a peer that answers full is disconnected and
   * backed off. The exchange's stream keeps libp2p's own pruner off the connection until it completes
   * (safelyCloseConnectionIfUnused leaves connections with other protocols' streams open).
   */
  private async startExchange(node: Libp2p<Services>, gate: { secret: string; nowSvcond: () => number }, peerSet: PeerSet): Promise<void> {
    const known = this.opts.known;
    const exchange = new PeerExchange({
      selfId: () => node.peerId.toString(),
      secret: gate.secret,
      nowSvcond: gate.nowSvcond,
      known,
      connections: () => node.getConnections(),
      max: this.bounds.max,
      learnt: (peers) => {
        for (const p of peers) known.learn(p.peerId, p.addrs);
        peerSet.learnt();
      },
      full: (peerId, conn) => {
        peerSet.full(peerId);
        // A connection opened to carry a request (a /svc/http/1 or /svc/exec stream to a peer with no connection) is
        // kept until the peer set prunes it: closing it would cut the request.
        if (conn.streams.some((st) => st.protocol !== undefined && !CLOSABLE_AFTER_FULL.test(st.protocol))) return;
        this.log.debug({ peerId }, 'mesh peer is full: its exchange answer taken, the connection closed');
        void conn.close().catch((err: unknown) => conn.abort(err instanceof Error ? err : new Error(String(err))));
      },
      log: this.log,
    });
    await node.handle(PEER_EXCHANGE_PROTOCOL, ({ stream, connection }) => void exchange.serve(stream, connection), {
      maxInboundStreams: 2,
      maxOutboundStreams: 2,
      runOnLimitedConnection: true,
    });
    node.addEventListener('connection:open', (evt) => {
      if (evt.detail.direction === 'outbound') void exchange.ask(evt.detail);
    });
  }

  async stop(): Promise<void> {
    const node = this.node;
    const peerSet = this.peerSet;
    this.node = null;
    this.peerSet = null;
    if (peerSet) await peerSet.stop();
    if (node) await node.stop();
  }

  /** Dial an extra peer address now (not redialled). */
  async dial(addr: string): Promise<string> {
    if (!this.node) throw new Error('mesh host is not started');
    const conn = await this.node.dial(multiaddr(addr), { signal: AbortSignal.timeout(5_000) });
    return conn.remotePeer.toString();
  }

  /** Serve a stream protocol: `handler` gets each inbound stream and the (noise-authenticated) remote peer id. */
  async handle(protocol: string, handler: (stream: Stream, remotePeer: string) => void, maxInboundStreams = 64): Promise<void> {
    if (!this.node) throw new Error('mesh host is not started');
    await this.node.handle(protocol, ({ stream, connection }) => handler(stream, connection.remotePeer.toString()), {
      maxInboundStreams,
      maxOutboundStreams: 64,
      // A peer reachable only through a relay is served over the relayed connection.
      runOnLimitedConnection: true,
    });
  }

  /** Open a stream of `protocol` to a peer (dialling it if needed). */
  async dialProtocol(peerId: string, protocol: string, signal: AbortSignal): Promise<Stream> {
    if (!this.node) throw new Error('mesh host is not started');
    return this.node.dialProtocol(peerIdFromString(peerId), protocol, { signal, negotiateFully: false, runOnLimitedConnection: true });
  }

  /** A libp2p ping of a peer (dialled when not connected): its round trip in ms; rejects when it does not answer. */
  async ping(peerId: string, signal: AbortSignal): Promise<number> {
    if (!this.node) throw new Error('mesh host is not started');
    return this.node.services.ping.ping(peerIdFromString(peerId), { signal });
  }

  /** Publish raw message data on a topic; resolves to the number of peers it was sent to. */
  async publish(topic: string, data: Uint8Array): Promise<number> {
    if (!this.node) throw new Error('mesh host is not started');
    const res = await this.node.services.pubsub.publish(topic, data);
    return res.recipients.length;
  }

  multiaddrs(): string[] {
    return this.node ? this.node.getMultiaddrs().map((m) => m.toString()) : [];
  }

  /** The addresses other nodes can dial this host at (without the /p2p/<id> suffix), at most 8. */
  dialableAddrs(): string[] {
    if (!this.node) return [];
    return this.node
      .getMultiaddrs()
      .map((m) => withoutPeerId(m).toString())
      .slice(0, 8);
  }

  /**
   * Remember where a peer can be dialled (addresses from its signed tick events), so a stream to a peer this host has
   * no connection to can be opened. Malformed addresses are skipped.
   */
  learnAddresses(peerId: string, addrs: readonly string[]): void {
    const node = this.node;
    if (!node || peerId === node.peerId.toString()) return;
    const parsed: Multiaddr[] = [];
    for (const a of addrs) {
      try {
        parsed.push(withoutPeerId(multiaddr(a)));
      } catch {
        // not a multiaddr: ignored
      }
    }
    if (parsed.length === 0) return;
    this.opts.known.learn(
      peerId,
      parsed.map((m) => m.toString()),
    );
    node.peerStore.merge(peerIdFromString(peerId), { multiaddrs: parsed }).catch((err: unknown) => {
      this.log.debug({ peerId, err: String(err) }, 'mesh could not store peer addresses');
    });
  }

  connectedPeers(): string[] {
    if (!this.node) return [];
    // From the connections, not libp2p's getPeers(): that one turns every peer id into text and back (a base58
    // decode and a key parse per peer), which every accepted tick event paid through isConnected.
    const peers = new Set<string>();
    for (const c of this.node.getConnections()) peers.add(c.remotePeer.toString());
    return [...peers];
  }

  /** Has this node a connection to the peer? */
  isConnected(peerId: string): boolean {
    if (!this.node) return false;
    for (const c of this.node.getConnections()) if (c.remotePeer.toString() === peerId) return true;
    return false;
  }

  /** Is any peer known to be subscribed to a topic? */
  hasTopicPeers(topic: string): boolean {
    return this.node !== null && this.node.services.pubsub.getSubscribers(topic).length > 0;
  }

  /** Peers known to be subscribed to a topic. */
  topicPeers(topic: string): string[] {
    if (!this.node) return [];
    return this.node.services.pubsub.getSubscribers(topic).map((p) => p.toString());
  }

  /** Peers in this node's gossipsub mesh for a topic (the peers it forwards the topic's messages to at once). */
  meshPeers(topic: string): string[] {
    if (!this.node) return [];
    return (this.node.services.pubsub as unknown as GossipSub).getMeshPeers(topic);
  }

  /** gossipsub score this node gives a peer (negative after rejected messages). */
  peerScore(peerId: string): number {
    if (!this.node) return 0;
    return (this.node.services.pubsub as unknown as GossipSub).getScore(peerId);
  }

  /** How other nodes reach this one (reachability.ts). */
  reachability(): ReachabilityStatus {
    const node = this.node;
    if (!node) return reachabilityOf([], this.opts.announce ?? []);
    const addrs = node.services.addresses.addressManager.getAddressesWithMetadata();
    // Circuit addresses are listed by the transport, not the address manager.
    const circuits = node.getMultiaddrs().filter((m) => relayOf(m) !== null);
    return reachabilityOf([...addrs, ...circuits.map((m) => ({ multiaddr: m, verified: true, type: 'transport' }))], this.opts.announce ?? []);
  }

  /** The peer set's bounds and its open connections (direct, or through a relay). */
  connections(): { target: number; max: number; open: number; relayed: number } {
    const conns = this.node?.getConnections().filter((c) => c.status === 'open') ?? [];
    return {
      target: this.bounds.target,
      max: this.bounds.max,
      open: new Set(conns.map((c) => c.remotePeer.toString())).size,
      relayed: conns.filter((c) => c.remoteAddr.toString().includes('/p2p-circuit')).length,
    };
  }

  /** How this node is connected to a peer: 'direct', 'relayed' or null when it is not. */
  connectionKind(peerId: string): 'direct' | 'relayed' | null {
    const conns = this.node?.getConnections().filter((c) => c.status === 'open' && c.remotePeer.toString() === peerId) ?? [];
    if (conns.length === 0) return null;
    return conns.some((c) => !c.remoteAddr.toString().includes('/p2p-circuit')) ? 'direct' : 'relayed';
  }
}

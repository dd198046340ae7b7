// MeshService: the node's mesh as one domain service. It owns the node key, the libp2p host, the one validator
// for both entrances, the accepted-event log (event-log.ts), tick events and the peer table (peer-table.ts), the
// mesh DNS, the transparency oracle and the directory of machine homes. It never imports the HTTP layer: routes call
// acceptHttpEvent, status, recentEvents, dns.*, oracle.* and machines.*. Events are applied by the gossip handler
// table (`gossip`, gossip-handlers.ts): this service registers the tick and DNS rows, other capabilities their own.
import { z } from 'zod';
import type { Stream } from '@libp2p/interface';
import { sha256Hex } from '../kernel/bytes.js';
import { stampAt, type Clock } from '../kernel/clock.js';
import type { Store } from '../store/db.js';
import { DnsRegistry, DNS_EVENT_TYPE, parseDnsBody } from './dns.js';
import { GossipError, invalidEvent } from './gossip-error.js';
import { GossipHandlerTable, UNKNOWN_TYPES_PER_MINUTE } from './gossip-handlers.js';
import { MachineDirectory } from './machines.js';
import { MeshEventLog, type Entrance, type EventOrder, type StoredEvent } from './event-log.js';
import { DrawProofCheck, drawProver } from './draw-proof.js';
import { PeerTable, RECENT_WINDOW_TICKS, TICK_AHEAD_TICKS, TICK_EVENT_TYPE, tickBody, type PeerInfo, type StatusPeer, type TickAdvert } from './peer-table.js';
import { DEFAULT_TICK_RATE, nextTickInterval, tickDue, tickPhase } from './tick-interval.js';
import { MeshHost, silentLogger, type MeshHostOptions, type MeshLogger, type PeerSetBounds, type RelayOptions } from './host.js';
import { PeerStore } from './peer-store.js';
import type { ReachabilityStatus } from './reachability.js';
import { loadOrCreateNodeKey, type NodeIdentity } from './identity.js';
import { SNAPSHOT_RETENTION_DEFAULT, TransparencyOracle, type HeadState, type RevenueFigures } from './oracle.js';
import { MeshValidator, MAX_SKEW_TICKS, checkShape, gossipVerdict, type GossipVerdict, type Validation } from './validator.js';
import { meshPeerLinks } from './peer-http.js';
import {
  TOPICS,
  bodyDigest,
  decodeEnvelope,
  encodeEnvelope,
  eventId,
  handshakeFor,
  isMeshTopic,
  signEvent,
  signText,
  topicForType,
  type MeshEvent,
  type MeshTopic,
  type WireEnvelope,
} from './wire.js';
import { LruMap } from '../util/bounded-map.js';

/** A DNS registration's shape; parseDnsBody checks the name, peer id, URL and multiaddrs themselves. */
const dnsBody = z.object({
  name: z.string().max(253),
  peerId: z.string().max(128),
  url: z.string().max(2048),
  multiaddrs: z.array(z.string().max(512)).max(8).optional(),
  svcond: z.number().int().nonnegative(),
});
type DnsBody = z.infer<typeof dnsBody>;

export interface MeshConfig {
  /** Shared mesh secret; null → the node runs alone and the HTTP entrance answers 503. */
  secret: string | null;
  p2pPort: number;
  bootstrap: string[];
  /** Publish a tick event at least every this many ticks (default 4): the floor of the interval (tick-interval.ts). */
  tickEvery?: number;
  /** Tick events per second a node accepts, mesh-wide: the interval grows with the nodes heard to keep it (default 32). */
  tickRate?: number;
  /** Interface libp2p listens on (default 127.0.0.1). */
  host?: string;
  /** Multiaddrs other nodes should dial (a port forward's public address); carried by tick events. */
  announce?: string[];
  /** Listen on these multiaddrs instead of host:p2pPort (e.g. only '/p2p-circuit'). */
  listen?: string[];
  /** Peer set bounds (target and maximum connections). */
  peers?: Partial<PeerSetBounds>;
  relay?: Partial<RelayOptions>;
  /** Find peers on the LAN by multicast DNS. */
  mdns?: boolean;
  /** Ask the router for a port mapping (UPnP). */
  upnp?: boolean;
}

export interface MeshLimits {
  /** Accepted events kept in the store (oldest pruned). */
  eventsMax: number;
  /** Of them, events of types without a row here (event-log.ts: they evict only each other). */
  unknownEventsMax: number;
  /** Events of types without a row accepted a minute, from every sender together (gossip-handlers.ts). */
  unknownEventsPerMinute: number;
  /** Entries of the in-memory seen cache. */
  seenMax: number;
  /** Peers kept in the peer table. */
  peersMax: number;
  /** Peers kept in the persisted peer store (mesh-peers). */
  knownPeersMax: number;
  /** Names kept by the DNS registry. */
  dnsMaxNames: number;
  /** Oracle snapshots kept in the store (the oldest pruned in the batch that writes a new one). */
  snapshotsMax: number;
}

export interface MeshServiceOptions {
  store: Store;
  clock: Clock;
  config: MeshConfig;
  dataDir: string;
  /** This node's HTTP URL, carried in tick events. */
  httpUrl: string;
  headState: () => HeadState | Promise<HeadState>;
  /** The contribution fields of tick events (left out when absent). */
  advert?: () => TickAdvert;
  logger?: MeshLogger;
  limits?: Partial<MeshLimits>;
  /** Revenue figures for the transparency oracle (can also be set later with oracle.setRevenueProvider). */
  revenue?: () => RevenueFigures | Promise<RevenueFigures>;
  /** Poll the clock and run pulse() on a timer (default true). Tests with a ManualClock call pulse() themselves. */
  autoPulse?: boolean;
  /** Redial backoff bounds for bootstrap peers (ms). */
  redialMinMs?: number;
  redialMaxMs?: number;
  /** gossipsub seen-cache TTL (ms). */
  gossipSeenTtlMs?: number;
  /** How often libp2p pings each connection (ms; default 60 s, host.ts CONNECTION_PING_MS); tests shorten it. */
  connectionPingMs?: number;
  /** The peer set's dial/prune period and the grace of a new connection (ms; default 2 000 and 20 000). */
  peerSetTiming?: Partial<Pick<PeerSetBounds, 'maintainMs' | 'graceMs'>>;
  /**
   * Discovery beyond tick events and identify: a Kademlia DHT (default off), gossipsub peer exchange on prune (default
   * on), the peer exchange on first contact, /svc/peers/1 (default on; off only to measure without it).
   */
  dht?: boolean;
  px?: boolean;
  peerExchange?: boolean;
  /** Inbound connections taken from one IP address a second (host.ts; a simulation on one address raises it). */
  inboundPerIpPerSec?: number;
  /** libp2p's own component logger (host.ts). */
  libp2pLogger?: MeshHostOptions['libp2pLogger'];
  /** libp2p's own metrics (the mesh's wiring, node/mesh.ts, supplies @libp2p/prometheus-metrics'); none when absent. */
  libp2pMetrics?: MeshHostOptions['metrics'];
  /** Test composition only (never config): the libp2p connection gater (host.ts). */
  connectionGater?: MeshHostOptions['connectionGater'];
}

export interface EventMeta {
  id: string;
  topic: MeshTopic;
  via: Entrance;
  from: string;
}

export type EventHandler = (event: MeshEvent, meta: EventMeta) => void | Promise<void>;

export interface MeshStatus {
  nodeId: string;
  enabled: boolean;
  coherenceScore: number | null;
  recentGossipCount: number;
  lastGossip: number;
  lastGossipZeqond: number | null;
  /** Connected peers and peers whose tick event arrived in the last 120 ticks, at most STATUS_PEERS_MAX. */
  peers: StatusPeer[];
  meshSize: number;
  multiaddrs: string[];
  /** The configured floor of the tick interval (mesh.tickEvery). */
  tickEvery: number;
  /** The interval this node's tick events declare now (`every`), and the nodes heard that set it (itself included). */
  every: number;
  nodesHeard: number;
  svcond: number;
  rejected: { http: Record<string, number>; gossip: Record<string, number> };
  gossipVerdicts: Record<GossipVerdict, number>;
  duplicates: { http: number; gossip: number };
  storedEvents: number;
  /** How other nodes reach this node (reachability.ts). */
  reachability: ReachabilityStatus;
  /** The peer set: its bounds, open connections, and the peers in the persisted peer store. */
  connections: { target: number; max: number; open: number; relayed: number; known: number };
}

/** One peer of the persisted peer store, as `svc-node peers` shows it. */
export interface KnownPeerReport {
  peerId: string;
  addrs: string[];
  lastSeen: number | null;
  lastFailure: number | null;
  failures: number;
  connection: 'direct' | 'relayed' | null;
  /** The gossipsub score this node gives the peer; null when not connected. */
  score: number | null;
  /** Its HTTP URL and last tick, from its tick events. */
  url: string | null;
  lastTick: number | null;
}

export interface AcceptResult {
  accepted: boolean;
  duplicate: boolean;
  id: string;
}

export class MeshService {
  /** Event type → body schema → handler; register a capability's events here (see gossip-handlers.ts). */
  readonly gossip: GossipHandlerTable;
  readonly dns: DnsRegistry;
  readonly oracle: TransparencyOracle;
  /** Homes of state machines held by other nodes. */
  readonly machines: MachineDirectory;
  private identity: NodeIdentity | null = null;
  private readonly validator: MeshValidator;
  private host: MeshHost | null = null;
  private known: PeerStore | null = null;
  /** Stream protocols this node serves (offloaded execution), registered on the host at start. */
  private readonly streamHandlers = new Map<string, (stream: Stream, remotePeer: string) => void>();
  /** The accepted-event log (event-log.ts). */
  private readonly events: MeshEventLog;
  private readonly log: MeshLogger;
  private readonly limits: MeshLimits;
  private readonly tickEvery: number;
  private readonly tickRate: number;
  /** The interval the node ticks at (tick-interval.ts): its floor is tickEvery. */
  private every: number;
  private readonly handlers = new Map<string, Set<EventHandler>>();
  private readonly peerTable: PeerTable;
  private readonly pendingGossip = new WeakMap<Uint8Array, Validation>();
  private readonly recentBuckets = new Map<number, number>();
  /** Gossip refused on its handshake, by the peer it came from (likely another mesh secret): bounded, oldest first out. */
  private totalGossip = 0;
  private lastGossipSvcond: number | null = null;
  /** Tick of this node's previous tick event (null: none sent since start). */
  private lastTickSvcond: number | null = null;
  /** The previous tick event went to no peer on the tick topic (a node just started, or cut off): sent again once one is there. */
  private tickOwed = false;
  /** The latest signed tick event of each sender (a challenge's draw event is taken from them): the one heard longest ago first out. */
  private readonly latestTicks = new LruMap<string, MeshEvent>(4096);
  /** sha256 hex of the node id: where in its interval the node ticks. */
  private phaseSeed: string | null = null;
  private drawProver: ((svcond: number) => string) | null = null;
  /** Nodes bonded here (keepPeers): their tick events' draw proofs are always checked. */
  private bonded: (peerId: string) => boolean = () => false;
  private readonly drawProofs: DrawProofCheck;
  private timer: NodeJS.Timeout | null = null;
  private pulseChain: Promise<void> = Promise.resolve();
  private running = false;
  private readonly stats = {
    rejected: { http: {} as Record<string, number>, gossip: {} as Record<string, number> },
    verdicts: { accept: 0, ignore: 0, reject: 0 } as Record<GossipVerdict, number>,
    duplicates: { http: 0, gossip: 0 },
  };
  /** Handshakes refused, by the peer that sent them (health warnings); bounded, the least recently refused dropped. */
  private readonly handshakeRefused = new LruMap<string, number>(REFUSING_PEERS_MAX);
  /** The tick of each such peer's latest refused handshake: a connected peer refused since it was last heard is no member. */
  private readonly refusedAt = new LruMap<string, number>(REFUSING_PEERS_MAX);
  private staleRefused = 0;

  constructor(private readonly opts: MeshServiceOptions) {
    this.log = opts.logger ?? silentLogger;
    this.limits = {
      eventsMax: 10_000,
      unknownEventsMax: 1_000,
      unknownEventsPerMinute: UNKNOWN_TYPES_PER_MINUTE,
      seenMax: 20_000,
      peersMax: 1_024,
      knownPeersMax: 512,
      dnsMaxNames: 10_000,
      snapshotsMax: SNAPSHOT_RETENTION_DEFAULT,
      ...opts.limits,
    };
    this.gossip = new GossipHandlerTable({
      nowMs: () => Number(opts.clock.nowNs() / 1_000_000n),
      unknownTypesPerMinute: this.limits.unknownEventsPerMinute,
    });
    this.tickEvery = opts.config.tickEvery ?? 4;
    this.tickRate = opts.config.tickRate ?? DEFAULT_TICK_RATE;
    this.drawProofs = new DrawProofCheck({
      perSecond: Math.max(1, Math.ceil(2 * this.tickRate)),
      nowMs: () => Number(opts.clock.nowNs() / 1_000_000n),
      bonded: (peerId) => this.bonded(peerId),
    });
    this.every = this.tickEvery;
    this.validator = new MeshValidator({ secret: opts.config.secret, clock: opts.clock, seenMax: this.limits.seenMax });
    this.events = new MeshEventLog({
      store: opts.store,
      eventsMax: this.limits.eventsMax,
      unknownMax: Math.min(this.limits.unknownEventsMax, this.limits.eventsMax),
      nowSvcond: () => this.nowSvcond(),
      log: this.log,
    });
    this.peerTable = new PeerTable({
      peersMax: this.limits.peersMax,
      nowSvcond: () => this.nowSvcond(),
      isConnected: (peerId) => this.host?.isConnected(peerId) ?? false,
      defaultEvery: this.tickEvery,
    });
    this.dns = new DnsRegistry({
      store: opts.store,
      nodeId: () => this.nodeId,
      nowSvcond: () => this.nowSvcond(),
      publish: async (body) => {
        await this.publish(DNS_EVENT_TYPE, body, TOPICS.dns);
      },
      maxNames: this.limits.dnsMaxNames,
    });
    this.oracle = new TransparencyOracle({
      store: opts.store,
      nodeId: () => this.nodeId,
      sign: (text) => this.signText(text),
      headState: opts.headState,
      peers: () => this.peerTable.snapshotPeers(),
      revenue: opts.revenue,
      retention: this.limits.snapshotsMax,
    });
    this.machines = new MachineDirectory({
      store: opts.store,
      nodeId: () => this.nodeId,
      nowSvcond: () => this.nowSvcond(),
      nowMs: () => Number(opts.clock.nowNs() / 1_000_000n),
      peers: () => this.peers(),
      peersLearnt: () => this.peersLearnt(),
      overMesh: () => meshPeerLinks(this, opts.config.secret).overMesh,
    });
    this.gossip.register({
      type: TICK_EVENT_TYPE,
      body: tickBody,
      handle: (body, event) => {
        const now = this.nowSvcond();
        if (event.svcond > now + TICK_AHEAD_TICKS)
          throw new GossipError('ignore', 400, 'INVALID_EVENT', `a tick event dated ${event.svcond} is more than ${TICK_AHEAD_TICKS} ticks ahead (${now})`);
        const newer = (this.latestTicks.get(event.sender)?.svcond ?? -1) < event.svcond;
        const proof = body.drawProof === undefined ? 'none' : this.drawProofs.check(event.sender, event.svcond, body.drawProof, newer);
        if (proof === 'invalid')
          throw new GossipError('reject', 400, 'INVALID_EVENT', `the tick event's drawProof is not its sender's VRF proof over tick ${event.svcond}`);
        // A bond advertised without a checked draw proof (an older node, or one past the budget of checks) does not
        // count as contributing: such an event could be the first of a committee's nodes after a challenge and yet
        // give no seed.
        this.peerTable.applyTick(body.bondId && proof !== 'valid' ? { ...body, mode: undefined, bondId: undefined } : body, event);
        if ((this.latestTicks.get(event.sender)?.svcond ?? -1) < event.svcond) this.latestTicks.set(event.sender, event);
        if (body.multiaddrs?.length) this.host?.learnAddresses(event.sender, body.multiaddrs);
      },
    });
    this.gossip.register({ type: DNS_EVENT_TYPE, body: dnsBody, handle: (body, event) => this.applyDns(body, event) });
    this.gossip.register(this.machines.claimHandler());
  }

  /** This node's id (its libp2p peer id). Available after start(). */
  get nodeId(): string {
    if (!this.identity) throw new Error('mesh service is not started');
    return this.identity.nodeId;
  }

  /** True when a mesh secret is configured. */
  get enabled(): boolean {
    return this.validator.enabled;
  }

  /**
   * The replay window of gossip, for a signed event that reaches this node another way (a chain.caller voucher in a
   * header): true the first time its id is met within the skew window of its tick.
   */
  firstSight(id: string, svcond: number): boolean {
    return this.validator.firstSight(id, svcond);
  }

  nowSvcond(): number {
    return stampAt(this.opts.clock.nowNs()).svcond;
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.identity = await loadOrCreateNodeKey(this.opts.dataDir);
    const nodeId = this.identity.nodeId;
    await this.loadEvents();
    await this.dns.load();
    await this.oracle.load();
    await this.machines.load();
    if (this.enabled) {
      const c = this.opts.config;
      this.known = new PeerStore({ store: this.opts.store, max: this.limits.knownPeersMax });
      await this.known.load();
      this.host = new MeshHost({
        privateKey: this.identity.privateKey,
        host: c.host ?? '127.0.0.1',
        port: c.p2pPort,
        listen: c.listen,
        bootstrap: c.bootstrap,
        announce: c.announce,
        known: this.known,
        peerSet: { ...c.peers, ...this.opts.peerSetTiming },
        relay: c.relay,
        mdns: c.mdns,
        upnp: c.upnp,
        dht: this.opts.dht,
        px: this.opts.px,
        inboundPerIpPerSec: this.opts.inboundPerIpPerSec,
        ...(this.opts.peerExchange !== false && c.secret !== null ? { exchange: { secret: c.secret, nowSvcond: () => this.nowSvcond() } } : {}),
        logger: this.log,
        validate: (topic, data, from) => this.validateGossip(topic, data, from),
        onMessage: (topic, data, from) => this.onGossip(topic, data, from),
        onPeerChange: (peerId, connected) => this.peerTable.connectionChanged(peerId, connected),
        silentPeers: () => this.peerTable.silentPeers(this.nowSvcond()),
        redialMinMs: this.opts.redialMinMs,
        redialMaxMs: this.opts.redialMaxMs,
        seenTtlMs: this.opts.gossipSeenTtlMs,
        connectionPingMs: this.opts.connectionPingMs,
        metrics: this.opts.libp2pMetrics,
        libp2pLogger: this.opts.libp2pLogger,
        connectionGater: this.opts.connectionGater,
      });
      await this.host.start();
      for (const [protocol, handler] of this.streamHandlers) await this.host.handle(protocol, handler);
    } else {
      this.log.info({ nodeId }, 'mesh disabled: no mesh secret configured; the node runs alone');
    }
    this.running = true;
    if (this.opts.autoPulse !== false) {
      const every = Math.max(50, Math.min(250, Math.floor(777 / 4)));
      this.timer = setInterval(() => void this.pulse().catch(() => {}), every);
      this.timer.unref();
    }
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.pulseChain.catch(() => {});
    const host = this.host;
    this.host = null;
    if (host) await host.stop();
    await this.events.settled();
  }

  // ---------------------------------------------------------------- entrances

  /**
   * The HTTP entrance (POST /api/mesh/gossip, header x-node-handshake). Throws ServiceError with the part-7
   * status and code on every failure (503 MESH_DISABLED, 400 INVALID_EVENT, 401 MISSING_HANDSHAKE /
   * INVALID_HANDSHAKE / STALE_HANDSHAKE / INVALID_SIGNATURE), then the handler table's refusals (400 INVALID_EVENT
   * for a body failing its type's schema, or the handler's own GossipError). A new event is stored, dispatched and
   * published into the mesh; a duplicate is acknowledged ({accepted: true, duplicate: true}) and not stored again.
   */
  async acceptHttpEvent(event: unknown, handshakeHeader: string | string[] | undefined): Promise<AcceptResult> {
    const hs = Array.isArray(handshakeHeader) ? handshakeHeader[0] : handshakeHeader;
    const v = await this.validator.validate(event, hs);
    if (!v.ok) {
      bump(this.stats.rejected.http, v.error.code);
      this.noteRefusal(v.error.code, claimedSender(event));
      throw v.error;
    }
    if (v.duplicate) {
      this.stats.duplicates.http++;
      return { accepted: true, duplicate: true, id: v.id };
    }
    const topic = topicForType(v.event.type);
    const applied = await this.applyHandlers(v, topic);
    if (!applied.ok) {
      bump(this.stats.rejected.http, applied.error.code);
      throw applied.error;
    }
    try {
      await this.events.append(v.event, v.id, topic, 'http', '', !this.gossip.has(v.event.type));
    } catch (err) {
      this.validator.release(v.id);
      throw err;
    }
    await this.dispatch(v.event, v.id, topic, 'http', '');
    if (this.host) {
      try {
        await this.host.publish(topic, encodeEnvelope({ event: v.event, handshake: hs }));
      } catch (err) {
        this.log.warn({ err: String(err), id: v.id }, 'mesh relay of an HTTP event failed');
      }
    }
    return { accepted: true, duplicate: false, id: v.id };
  }

  /**
   * A direct node-to-node message (e.g. a transfer's delivery to the receiver's home): signed by this node, with the
   * mesh handshake, at the current tick; sent over HTTP to one peer, never gossiped.
   */
  async signDirect(type: string, body: unknown): Promise<WireEnvelope> {
    if (!this.identity) throw new Error('mesh service is not started');
    const secret = this.opts.config.secret;
    if (secret === null) throw new GossipError('ignore', 503, 'MESH_DISABLED', 'this node has no mesh secret configured');
    const svcond = this.nowSvcond();
    const event = await signEvent(this.identity.privateKey, this.identity.nodeId, type, svcond, body);
    return { event, handshake: handshakeFor(secret, event.sender, svcond, bodyDigest(body)) };
  }

  /**
   * Check a direct message with the one validator of both entrances (secret, shape, handshake, staleness, signature):
   * the same refusals as POST /api/mesh/gossip. It is neither stored in the event log nor gossiped; a repeat is
   * returned as valid (with duplicate: true), since the receiver's own records make its handling idempotent.
   */
  async verifyDirect(raw: unknown, handshakeHeader: string | string[] | undefined): Promise<{ event: MeshEvent; duplicate: boolean }> {
    const hs = Array.isArray(handshakeHeader) ? handshakeHeader[0] : handshakeHeader;
    const v = await this.validator.validate(raw, hs);
    if (!v.ok) {
      bump(this.stats.rejected.http, v.error.code);
      this.noteRefusal(v.error.code, claimedSender(raw));
      throw v.error;
    }
    return { event: v.event, duplicate: v.duplicate };
  }

  private async validateGossip(topic: string, data: Uint8Array, from: string): Promise<GossipVerdict> {
    const env = decodeEnvelope(data);
    let v: Validation = env
      ? await this.validator.validate(env.event, env.handshake)
      : { ok: false, error: invalidEvent('message data is not a JSON envelope') };
    if (v.ok && !v.duplicate && isMeshTopic(topic)) v = await this.applyHandlers(v, topic);
    const verdict = isMeshTopic(topic) ? gossipVerdict(v) : 'reject';
    this.stats.verdicts[verdict]++;
    if (!v.ok) {
      bump(this.stats.rejected.gossip, v.error.code);
      this.noteRefusal(v.error.code, from);
      this.log.debug({ topic, from, code: v.error.code }, 'mesh gossip refused');
    } else if (v.duplicate) {
      this.stats.duplicates.gossip++;
    } else {
      this.pendingGossip.set(data, v);
    }
    return verdict;
  }

  private onGossip(topic: string, data: Uint8Array, from: string): void {
    const v = this.pendingGossip.get(data);
    this.pendingGossip.delete(data);
    if (!isMeshTopic(topic)) return;
    if (!v) {
      // Delivered without passing validateGossip here: the table still decides before anything is kept.
      const env = decodeEnvelope(data);
      const shape = env ? checkShape(env.event) : 'undecodable';
      if (typeof shape === 'string') return;
      const claimed: Validation = {
        ok: true,
        duplicate: false,
        id: eventId(shape.event.sender, shape.event.svcond, shape.digest),
        digest: shape.digest,
        event: shape.event,
      };
      void this.gossip.run(shape.event, topic).then(
        () => this.keepGossip(claimed, topic, from),
        () => undefined,
      );
      return;
    }
    if (v.ok) this.keepGossip(v, topic, from);
  }

  private keepGossip(v: Validation, topic: MeshTopic, from: string): void {
    if (!v.ok) return;
    const ok = v;
    // Gossip has no acknowledgement: the write and the dispatch run side by side, so delivery to subscribers
    // does not wait for LevelDB's completion callback behind a burst of incoming messages.
    this.events.append(ok.event, ok.id, topic, 'gossip', from, !this.gossip.has(ok.event.type)).catch((err: unknown) => {
      this.log.warn({ err: String(err), id: ok.id }, 'mesh could not store a gossiped event');
    });
    this.dispatch(ok.event, ok.id, topic, 'gossip', from).catch((err: unknown) => {
      this.log.warn({ err: String(err), id: ok.id }, 'mesh could not apply a gossiped event');
    });
  }

  /**
   * Run the handler table on a new event (after the validator, before it is stored or relayed). A refusal gives
   * the claimed id back, so the same event sent again is judged again rather than taken for a duplicate.
   */
  private async applyHandlers(v: Validation & { ok: true }, topic: MeshTopic): Promise<Validation> {
    try {
      await this.gossip.run(v.event, topic);
      return v;
    } catch (err) {
      this.validator.release(v.id);
      if (!(err instanceof GossipError)) throw err;
      if (err.status >= 500) this.log.warn({ err: err.message, type: v.event.type, id: v.id }, 'mesh event handler failed');
      return { ok: false, error: err };
    }
  }

  /** Count an event from another node, then call subscribers (the handler table has applied it already). */
  private async dispatch(event: MeshEvent, id: string, topic: MeshTopic, via: Entrance, from: string): Promise<void> {
    const now = this.nowSvcond();
    this.totalGossip++;
    this.lastGossipSvcond = now;
    this.recentBuckets.set(now, (this.recentBuckets.get(now) ?? 0) + 1);
    if (this.recentBuckets.size > RECENT_WINDOW_TICKS * 2) this.pruneBuckets(now);
    const meta: EventMeta = { id, topic, via, from };
    for (const key of [topic, '*']) {
      const set = this.handlers.get(key);
      if (!set) continue;
      for (const h of set) {
        try {
          await h(event, meta);
        } catch (err) {
          this.log.warn({ err: String(err), topic, id }, 'mesh event handler threw');
        }
      }
    }
  }

  /** The DNS row: a registration folded into the registry (a full registry or a losing claim changes nothing). */
  private async applyDns(body: DnsBody, event: MeshEvent): Promise<void> {
    let rec;
    try {
      rec = parseDnsBody(body, event.sender);
    } catch (err) {
      throw new GossipError('reject', 400, 'DNS_INVALID_RECORD', (err as Error).message);
    }
    // [REJECT] A claim may not be dated after the event that carries it (re-announcements carry older claims).
    if (rec.svcond > event.svcond + MAX_SKEW_TICKS)
      throw new GossipError('reject', 400, 'DNS_INVALID_RECORD', 'the claim is dated after the event that carries it');
    await this.dns.apply(rec);
  }

  // ---------------------------------------------------------------- publishing

  /**
   * Sign an event as this node and publish it on a topic (default: by type, see topicForType). The event is
   * stored in the accepted-event log (via 'self'); this node's subscribers are not called for its own events.
   * Without a mesh secret the event is signed and stored but not sent (published: false).
   */
  async publish(type: string, body: unknown, topic?: MeshTopic): Promise<{ id: string; event: MeshEvent; published: boolean; recipients: number }> {
    if (!this.identity) throw new Error('mesh service is not started');
    const t = topic ?? topicForType(type);
    const svcond = this.nowSvcond();
    const event = await signEvent(this.identity.privateKey, this.identity.nodeId, type, svcond, body);
    const shape = checkShape(event);
    if (typeof shape === 'string') throw invalidEvent(shape);
    const id = eventId(event.sender, svcond, shape.digest);
    this.validator.markSeen(id, svcond);
    const stored = this.events.append(event, id, t, 'self', '');
    const secret = this.opts.config.secret;
    if (!this.host || secret === null) {
      await stored;
      return { id, event, published: false, recipients: 0 };
    }
    const handshake = handshakeFor(secret, event.sender, svcond, bodyDigest(body));
    // Send first, then wait for the local write: the event's delivery does not queue behind the disk.
    const sent = this.host.publish(t, encodeEnvelope({ event, handshake }));
    const [recipients] = await Promise.all([sent, stored]);
    return { id, event, published: true, recipients };
  }

  /** Subscribe to accepted events from other nodes on a topic ('*' = every topic). Returns the unsubscriber. */
  onEvent(topic: MeshTopic | '*', handler: EventHandler): () => void {
    let set = this.handlers.get(topic);
    if (!set) {
      set = new Set();
      this.handlers.set(topic, set);
    }
    set.add(handler);
    return () => {
      set.delete(handler);
    };
  }

  private async signText(text: string): Promise<string> {
    if (!this.identity) throw new Error('mesh service is not started');
    return signText(this.identity.privateKey, text);
  }

  // ---------------------------------------------------------------- ticks

  /**
   * One step of the node's mesh clock: publishes the tick event of the current slot of its interval (once per slot,
   * at the node's phase in it; the interval is set anew with each event, tick-interval.ts),
   * writes the oracle snapshot of the current 4-tick slot (once per slot) and re-announces DNS records.
   * Runs on a timer unless autoPulse is false; calls are serialised.
   */
  pulse(): Promise<void> {
    const run = this.pulseChain.then(() => this.pulseOnce());
    this.pulseChain = run.catch((err: unknown) => {
      this.log.warn({ err: String(err) }, 'mesh pulse failed');
    });
    return run;
  }

  private async pulseOnce(): Promise<void> {
    if (!this.running) return;
    const now = this.nowSvcond();
    // A tick event that reached nobody (the first one goes out at start, usually before any peer has told this node it
    // subscribes) is sent again as soon as a peer is on the topic: at a long interval the mesh would otherwise not hear
    // of this node, its URL and its addresses for a whole interval (21 minutes at 10,000 nodes, scale.md).
    const owedNow = this.tickOwed && (this.host?.hasTopicPeers(TOPICS.ticks) ?? false);
    if (this.enabled && (owedNow || tickDue(now, this.lastTickSvcond, this.every, this.phase()))) {
      this.lastTickSvcond = now;
      // The interval this event declares: the gap to this node's next tick event.
      this.every = nextTickInterval({ heard: this.nodesHeard(now), floor: this.tickEvery, rate: this.tickRate, current: this.every });
      const head = await this.opts.headState();
      const advert = this.opts.advert?.();
      const sent = await this.publish(
        TICK_EVENT_TYPE,
        {
          svcond: now,
          sealedCount: head.sealedCount,
          chainHeadsDigest: head.chainHeadsDigest,
          kernelVersion: head.kernelVersion,
          url: this.opts.httpUrl,
          multiaddrs: this.host?.dialableAddrs() ?? [],
          ...advert,
          every: this.every,
          ...(advert?.bondId ? { drawProof: this.drawProof(now) } : {}),
        },
        TOPICS.ticks,
      );
      // Owed by a slot's own tick event only: the one sent again is not sent a third time (a peer that is subscribed
      // but scores this node under gossipsub's publish threshold would otherwise get a tick event at every pulse).
      this.tickOwed = !owedNow && sent.published && sent.recipients === 0;
    }
    await this.oracle.maybeSnapshot(now);
    if (this.enabled) await this.dns.reannounce(now);
    this.pruneBuckets(now);
  }

  /**
   * Connected peers that are members of this mesh as far as this node can tell: every one but those whose gossip it
   * refused on the handshake (another mesh secret, or none) since it last heard a valid tick event of theirs.
   */
  private members(connected: ReadonlySet<string>): number {
    let n = 0;
    for (const peerId of connected) {
      const refused = this.refusedAt.get(peerId);
      if (refused === undefined || (this.peerTable.heardAt(peerId) ?? -1) >= refused) n++;
    }
    return n;
  }

  /** N_heard of the tick interval: the peers heard recently (each within its own interval's window), and this node. */
  private nodesHeard(now: number): number {
    return 1 + this.peerTable.heardCount(now);
  }

  /** This node's draw proof over its tick `svcond` (draw-proof.ts), for a tick event that advertises a bond. */
  private drawProof(svcond: number): string {
    if (!this.identity) throw new Error('mesh service is not started');
    this.drawProver ??= drawProver(this.identity.privateKey);
    return this.drawProver(svcond);
  }

  /** This node's place in its interval (tick-interval.ts tickPhase), from its node id. */
  private phase(): number {
    this.phaseSeed ??= this.identity ? sha256Hex(this.identity.nodeId) : null;
    return this.phaseSeed === null ? 0 : tickPhase(this.phaseSeed, this.every);
  }

  // ---------------------------------------------------------------- status

  /**
   * coherenceScore (docs/decisions.md, "Mesh: coherenceScore"): of the peers heard recently, the fraction that agree
   * with this node — last tick arrived within 2·every+1 ticks of the peer's own interval, its svcond within 1 tick of
   * this node's clock on arrival, and the same kernel version (peer-table.ts). null when no peer is heard.
   */
  coherenceScore(kernelVersion: string | null): number | null {
    return this.peerTable.coherenceScore(kernelVersion);
  }

  async status(): Promise<MeshStatus> {
    const head = await this.opts.headState();
    const now = this.nowSvcond();
    this.pruneBuckets(now);
    let recent = 0;
    for (const n of this.recentBuckets.values()) recent += n;
    const connected = new Set(this.host?.connectedPeers() ?? []);
    const peers = this.peerTable.statusPeers(connected, now);
    return {
      nodeId: this.nodeId,
      enabled: this.enabled,
      coherenceScore: this.coherenceScore(head.kernelVersion),
      recentGossipCount: recent,
      lastGossip: this.totalGossip,
      lastGossipZeqond: this.lastGossipSvcond,
      peers,
      meshSize: 1 + this.members(connected),
      multiaddrs: this.host?.multiaddrs() ?? [],
      tickEvery: this.tickEvery,
      every: this.every,
      nodesHeard: this.nodesHeard(now),
      svcond: now,
      rejected: { http: { ...this.stats.rejected.http }, gossip: { ...this.stats.rejected.gossip } },
      gossipVerdicts: { ...this.stats.verdicts },
      duplicates: { ...this.stats.duplicates },
      storedEvents: this.events.stored,
      reachability: this.reachability(),
      connections: { ...(this.host?.connections() ?? { target: 0, max: 0, open: 0, relayed: 0 }), known: this.known?.size ?? 0 },
    };
  }

  /**
   * Refused handshakes by the peer that sent them (gossip: the peer that forwarded the message; HTTP: the sender the
   * event names), and events refused as stale (a clock far off): what the health warnings read.
   */
  refusals(): { handshake: Record<string, number>; stale: number } {
    return { handshake: Object.fromEntries(this.handshakeRefused), stale: this.staleRefused };
  }

  private noteRefusal(code: string, peer: string): void {
    if (code === 'STALE_HANDSHAKE') this.staleRefused++;
    if (code !== 'INVALID_HANDSHAKE' && code !== 'MISSING_HANDSHAKE') return;
    this.handshakeRefused.set(peer, (this.handshakeRefused.get(peer) ?? 0) + 1);
    this.refusedAt.set(peer, this.nowSvcond());
  }

  /** How other nodes reach this node; 'private' with no addresses when the mesh is off. */
  reachability(): ReachabilityStatus {
    return this.host?.reachability() ?? { reachability: 'private', relays: [], announce: [], addresses: [] };
  }

  /** The persisted peer store with each peer's connection, score and what its tick events said; the most recently seen first. */
  knownPeers(): KnownPeerReport[] {
    const host = this.host;
    const table = new Map(this.peerTable.list().map((p) => [p.peerId, p]));
    return (this.known?.list() ?? [])
      .map((p) => {
        const connection = host?.connectionKind(p.peerId) ?? null;
        const heard = table.get(p.peerId);
        return {
          peerId: p.peerId,
          addrs: p.addrs,
          lastSeen: connection !== null ? Date.now() : p.lastSeen === 0 ? null : p.lastSeen,
          lastFailure: p.lastFailure,
          failures: p.failures,
          connection,
          score: connection !== null && host ? host.peerScore(p.peerId) : null,
          url: heard?.url ?? null,
          lastTick: heard?.lastTick ?? null,
        };
      })
      .sort((a, b) => (b.lastSeen ?? 0) - (a.lastSeen ?? 0));
  }

  /** Whether a connection to a peer is open now. */
  hearsPeers(): boolean {
    return (this.host?.connections().open ?? 0) > 0;
  }

  /** Peers the peer table keeps before others when it is full (bonded nodes: PeerTable.keep). */
  keepPeers(kept: (peerId: string) => boolean): void {
    this.peerTable.keep(kept);
    this.bonded = kept;
  }

  /** Peers known to the node (tick senders and connected peers). */
  peers(): PeerInfo[] {
    return this.peerTable.list();
  }

  /** Grows each time a peer is learnt (mesh/peer-table.ts `learnt`): what a lookup's miss is weighed against. */
  peersLearnt(): number {
    return this.peerTable.learnt();
  }

  /** The latest signed tick event heard from each sender (at most 4096 senders). */
  latestTickEvents(): MeshEvent[] {
    return [...this.latestTicks.values()];
  }

  /** A peer's HTTP URL from its tick events; null when it has not told us one. */
  peerUrl(peerId: string): string | null {
    return this.peerTable.url(peerId);
  }

  /** The ticks between this node's tick events now (the `every` they declare; tick-interval.ts). */
  tickInterval(): number {
    return this.every;
  }

  /** Listening multiaddrs (with /p2p/<nodeId>); empty when the mesh is disabled. */
  multiaddrs(): string[] {
    return this.host?.multiaddrs() ?? [];
  }

  /** Serve a libp2p stream protocol (registered now, or when the host starts). */
  async handleStream(protocol: string, handler: (stream: Stream, remotePeer: string) => void): Promise<void> {
    this.streamHandlers.set(protocol, handler);
    if (this.host?.started) await this.host.handle(protocol, handler);
  }

  /** Open a stream of `protocol` to a peer; throws when the mesh is not running. */
  openStream(peerId: string, protocol: string, signal: AbortSignal): Promise<Stream> {
    if (!this.host) return Promise.reject(new Error('the mesh is not running'));
    return this.host.dialProtocol(peerId, protocol, signal);
  }

  /** Does a peer answer a libp2p ping within the signal (false when the mesh is not running)? */
  async answersPing(peerId: string, signal: AbortSignal): Promise<boolean> {
    if (!this.host) return false;
    return this.host.ping(peerId, signal).then(
      () => true,
      () => false,
    );
  }

  /** The libp2p host (tests and diagnostics). */
  get p2p(): MeshHost | null {
    return this.host;
  }

  /**
   * Accepted events, newest first: by arrival on this node (default), or by the event's own tick (`'tick'`, where a
   * late-stamped event sorts among older ones); 1 ≤ limit ≤ 500.
   */
  recentEvents(limit = 50, order: EventOrder = 'arrival'): Promise<StoredEvent[]> {
    return this.events.recent(limit, order);
  }

  /** Has an event with this id been stored? */
  hasEvent(id: string): Promise<boolean> {
    return this.events.has(id);
  }

  // ---------------------------------------------------------------- internals

  private pruneBuckets(now: number): void {
    for (const t of this.recentBuckets.keys()) if (now - t > RECENT_WINDOW_TICKS || t > now + RECENT_WINDOW_TICKS) this.recentBuckets.delete(t);
  }

  private async loadEvents(): Promise<void> {
    await this.events.load();
    // Events still inside the staleness window are remembered, so a replay after a restart is a duplicate.
    const from = Math.max(0, this.nowSvcond() - 2 * MAX_SKEW_TICKS);
    for (const e of await this.events.stampedSince(from, this.limits.seenMax)) this.validator.markSeen(e.id, e.event.svcond);
  }
}

/** Peers whose refused handshakes are counted one by one. */
const REFUSING_PEERS_MAX = 256;

/** The sender an event names (unverified: its handshake failed), for the operator's eyes only. */
function claimedSender(event: unknown): string {
  const sender = (event as { sender?: unknown } | null)?.sender;
  return typeof sender === 'string' && sender.length > 0 && sender.length <= 128 ? sender : 'an HTTP caller';
}

function bump(rec: Record<string, number>, code: string): void {
  rec[code] = (rec[code] ?? 0) + 1;
}

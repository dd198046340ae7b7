// The libp2p host of a node: TCP on the configured host, noise, yamux, identify, gossipsub (StrictSign, no
// emitSelf) on the five versioned topics. Every topic has a validator that defers to the caller (the one mesh
// validator). Bootstrap multiaddrs are dialled at start and redialled with a bounded exponential backoff while
// they are away, so a peer that goes away and comes back is reconnected.
import { createHash } from 'node:crypto';
import { createLibp2p, type Libp2p } from 'libp2p';
import { tcp } from '@libp2p/tcp';
import { noise } from '@chainsafe/libp2p-noise';
import { yamux } from '@chainsafe/libp2p-yamux';
import { identify, type Identify } from '@libp2p/identify';
import { gossipsub, type GossipSub, type GossipsubEvents } from '@chainsafe/libp2p-gossipsub';
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr';
import type { ComponentLogger, Message, Metrics, PeerId, PrivateKey, PubSub, SignaturePolicy, Stream, TopicValidatorResult } from '@libp2p/interface';
import { peerIdFromString } from '@libp2p/peer-id';
import { ALL_TOPICS } from './wire.js';
import type { GossipVerdict } from './validator.js';

export interface MeshLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

export const silentLogger: MeshLogger = { info: () => {}, warn: () => {}, debug: () => {} };

export interface MeshHostOptions {
  privateKey: PrivateKey;
  /** Interface to listen on (an IPv4/IPv6 literal or 'localhost'). */
  host: string;
  /** TCP port, 0 = any free port. */
  port: number;
  bootstrap: string[];
  logger?: MeshLogger;
  /** Topic validator for every mesh topic. */
  validate: (topic: string, data: Uint8Array, from: string) => Promise<GossipVerdict> | GossipVerdict;
  /** Called for every message the validator accepted (never for this node's own messages). */
  onMessage: (topic: string, data: Uint8Array, from: string) => void;
  onPeerChange?: (peerId: string, connected: boolean) => void;
  /** Redial backoff bounds in ms (default 250 .. 10 000). */
  redialMinMs?: number;
  redialMaxMs?: number;
  /** gossipsub seen-cache TTL in ms (default 120 s). */
  seenTtlMs?: number;
  /** libp2p's own metrics (a factory such as @libp2p/prometheus-metrics', supplied by the mesh's wiring, node/mesh.ts). */
  metrics?: (components: { logger: ComponentLogger }) => Metrics;
}

type Services = { identify: Identify; pubsub: PubSub<GossipsubEvents> };

interface BootstrapTarget {
  addr: Multiaddr;
  text: string;
  /** Peer id named in the address, or learnt from the first successful dial. */
  peerId: string | null;
  backoffMs: number;
  nextAt: number;
  dialling: boolean;
}

/** Multicodec of the /p2p/<peer id> component. */
const P2P_CODE = 421;

function listenAddr(host: string, port: number): string {
  const h = host === 'localhost' ? '127.0.0.1' : host;
  return h.includes(':') ? `/ip6/${h}/tcp/${port}` : `/ip4/${h}/tcp/${port}`;
}

/** Score parameters: a rejected message (bad handshake or signature) costs its forwarder score on every topic. */
function topicScores(): Record<string, object> {
  const out: Record<string, object> = {};
  for (const t of ALL_TOPICS) {
    out[t] = {
      topicWeight: 1,
      timeInMeshWeight: 0.01,
      timeInMeshQuantum: 1000,
      timeInMeshCap: 3600,
      firstMessageDeliveriesWeight: 0.1,
      firstMessageDeliveriesDecay: 0.5,
      firstMessageDeliveriesCap: 100,
      // Tick traffic is sparse; do not punish quiet mesh peers.
      meshMessageDeliveriesWeight: 0,
      meshFailurePenaltyWeight: 0,
      invalidMessageDeliveriesWeight: -1,
      invalidMessageDeliveriesDecay: 0.5,
    };
  }
  return out;
}

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

export class MeshHost {
  private node: Libp2p<Services> | null = null;
  private readonly targets: BootstrapTarget[];
  private timer: NodeJS.Timeout | null = null;
  private stopping = false;
  private readonly log: MeshLogger;
  private readonly redialMin: number;
  private readonly redialMax: number;

  constructor(private readonly opts: MeshHostOptions) {
    this.log = opts.logger ?? silentLogger;
    this.redialMin = opts.redialMinMs ?? 250;
    this.redialMax = opts.redialMaxMs ?? 10_000;
    this.targets = [];
    for (const text of opts.bootstrap) {
      const addr = multiaddr(text);
      this.targets.push({ addr, text, peerId: addr.getPeerId(), backoffMs: this.redialMin, nextAt: 0, dialling: false });
    }
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
    this.stopping = false;
    const node = await createLibp2p<Services>({
      privateKey: this.opts.privateKey,
      addresses: { listen: [listenAddr(this.opts.host, this.opts.port)] },
      transports: [tcp()],
      connectionEncrypters: [noise()],
      streamMuxers: [yamux()],
      connectionManager: { maxConnections: 256, dialTimeout: 5_000 },
      ...(this.opts.metrics ? { metrics: this.opts.metrics } : {}),
      services: {
        identify: identify(),
        pubsub: gossipsub({
          globalSignaturePolicy: 'StrictSign' as SignaturePolicy,
          emitSelf: false,
          allowPublishToZeroTopicPeers: true,
          ignoreDuplicatePublishError: true,
          fallbackToFloodsub: false,
          floodPublish: true,
          doPX: false,
          seenTTL: this.opts.seenTtlMs ?? 120_000,
          // Copies of a message arriving from several mesh peers are recognised before their signature is checked
          // again. The fast id covers every field (a forged copy with other data or signature has another id, and
          // gossipsub caches a fast id only after the message passed its signature check).
          fastMsgIdFn: fastMsgId,
          scoreParams: { topics: topicScores() as never, IPColocationFactorWeight: 0 },
        }),
      },
    });
    this.node = node;
    const pubsub = node.services.pubsub;
    for (const topic of ALL_TOPICS) {
      pubsub.topicValidators.set(topic, async (peer: PeerId, msg: Message): Promise<TopicValidatorResult> => {
        try {
          return (await this.opts.validate(msg.topic, msg.data, peer.toString())) as TopicValidatorResult;
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
        this.opts.onMessage(msg.topic, msg.data, from);
      } catch (err) {
        this.log.warn({ err: String(err), topic: msg.topic }, 'mesh message handler threw');
      }
    });
    node.addEventListener('peer:connect', (evt) => this.opts.onPeerChange?.(evt.detail.toString(), true));
    node.addEventListener('peer:disconnect', (evt) => {
      const id = evt.detail.toString();
      for (const t of this.targets) {
        if (t.peerId === id) {
          t.backoffMs = this.redialMin;
          t.nextAt = Date.now() + this.redialMin;
        }
      }
      this.opts.onPeerChange?.(id, false);
    });
    this.log.info({ peerId: node.peerId.toString(), multiaddrs: this.multiaddrs() }, 'mesh listening');
    const self = node.peerId.toString();
    for (let i = this.targets.length - 1; i >= 0; i--) if (this.targets[i]!.peerId === self) this.targets.splice(i, 1);
    await Promise.all(this.targets.map((t) => this.dialTarget(t)));
    this.timer = setInterval(() => this.maintain(), Math.max(100, Math.min(this.redialMin, 500)));
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    const node = this.node;
    this.node = null;
    if (node) await node.stop();
  }

  private isConnected(t: BootstrapTarget): boolean {
    if (!this.node || t.peerId === null) return false;
    return this.node.getConnections().some((c) => c.remotePeer.toString() === t.peerId && c.status === 'open');
  }

  private maintain(): void {
    const now = Date.now();
    for (const t of this.targets) {
      if (t.dialling) continue;
      if (this.isConnected(t)) {
        t.backoffMs = this.redialMin;
        continue;
      }
      if (now >= t.nextAt) void this.dialTarget(t);
    }
  }

  private async dialTarget(t: BootstrapTarget): Promise<void> {
    const node = this.node;
    if (!node || this.stopping || t.dialling) return;
    t.dialling = true;
    try {
      const conn = await node.dial(t.addr, { signal: AbortSignal.timeout(5_000) });
      t.peerId = conn.remotePeer.toString();
      t.backoffMs = this.redialMin;
      this.log.debug({ addr: t.text }, 'mesh bootstrap peer connected');
    } catch (err) {
      if (!this.stopping) this.log.debug({ addr: t.text, err: String(err), retryInMs: t.backoffMs }, 'mesh bootstrap dial failed');
      t.nextAt = Date.now() + t.backoffMs;
      t.backoffMs = Math.min(t.backoffMs * 2, this.redialMax);
    } finally {
      t.dialling = false;
    }
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
    });
  }

  /** Open a stream of `protocol` to a peer (dialling it if needed). */
  async dialProtocol(peerId: string, protocol: string, signal: AbortSignal): Promise<Stream> {
    if (!this.node) throw new Error('mesh host is not started');
    return this.node.dialProtocol(peerIdFromString(peerId), protocol, { signal, negotiateFully: false });
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
      .map((m) => m.decapsulateCode(P2P_CODE).toString())
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
        parsed.push(multiaddr(a).decapsulateCode(P2P_CODE));
      } catch {
        // not a multiaddr: ignored
      }
    }
    if (parsed.length === 0) return;
    node.peerStore.merge(peerIdFromString(peerId), { multiaddrs: parsed }).catch((err: unknown) => {
      this.log.debug({ peerId, err: String(err) }, 'mesh could not store peer addresses');
    });
  }

  connectedPeers(): string[] {
    if (!this.node) return [];
    return [...new Set(this.node.getPeers().map((p) => p.toString()))];
  }

  /** Peers known to be subscribed to a topic. */
  topicPeers(topic: string): string[] {
    if (!this.node) return [];
    return this.node.services.pubsub.getSubscribers(topic).map((p) => p.toString());
  }

  /** gossipsub score this node gives a peer (negative after rejected messages). */
  peerScore(peerId: string): number {
    if (!this.node) return 0;
    return (this.node.services.pubsub as unknown as GossipSub).getScore(peerId);
  }
}

// A healthy peer set: the host's dialler and pruner. Every `maintainMs` it counts the open connections and asks the
// transition table (dial-decision.ts) what to do. Below the target it dials known peers (the persisted peer store: tick
// events, identify, discovery) that are not in their redial backoff, the most recently seen first (a peer whose dial
// failed since it was last seen after those whose did not), and the bootstrap addresses: a first contact, dialled at
// start and afterwards only as a last resort, while the node is under its target and has no connection or no known
// peer due. A peer that answered full waits longer at each such answer in a row. Every node of a mesh may have been
// told the same seed; were it redialled by all that are under their target, its handshake slots would go to nodes that
// have others to dial while a newcomer that knows only the seed is refused at every try (docs/scale.md). A node deaf to
// peers it heard recently (`silent`: a partition, or peers gone) dials them, one a pass and a few a minute, even at
// its target. Above the maximum it closes the connections of the worst-scored peers. A failed dial doubles that
// peer's backoff (bounded); an open connection resets it, and a closed one waits the longest backoff.
import type { Connection, PeerId } from '@libp2p/interface';
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr';
import type { KnownPeer, PeerStore } from './peer-store.js';
import type { MeshLogger } from './host.js';
import { SILENT_WINDOW_MS, SILENT_DIALS_PER_WINDOW, decideDials, type DialState } from './dial-decision.js';

/** What the peer set needs of the libp2p node. */
export interface Dialler {
  readonly peerId: PeerId;
  getConnections(): Connection[];
  dial(addrs: Multiaddr | Multiaddr[], options: { signal: AbortSignal }): Promise<Connection>;
}

export interface PeerSetOptions {
  node: Dialler;
  known: PeerStore;
  bootstrap: readonly string[];
  /** Connections the node keeps open at least (dials while under it). */
  target: number;
  /** Connections above which the worst-scored peers are disconnected. */
  max: number;
  redialMinMs: number;
  redialMaxMs: number;
  /** Period of the dial/prune pass (ms). */
  maintainMs: number;
  /** Connections younger than this are not pruned (ms). */
  graceMs: number;
  /** Dials in flight at once. */
  dialConcurrency?: number;
  /** How the node rates a peer (gossipsub score): the lowest are pruned first. */
  score: (peerId: string) => number;
  /** Peers never pruned (the relays this node holds a reservation on). */
  keep?: (peerId: string) => boolean;
  /**
   * Peers heard recently (tick events) that this node no longer hears and holds no connection to, the most recently
   * heard first, with the addresses their last tick event named: dialled within the caps of dial-decision.ts (at the
   * peer store's addresses, or these when the store has forgotten the peer). Absent: none.
   */
  silent?: () => readonly SilentPeer[];
  log: MeshLogger;
}

/** A peer this node went deaf to, and where its last tick event said it listens. */
export interface SilentPeer {
  peerId: string;
  addrs: readonly string[];
}

interface Backoff {
  backoffMs: number;
  nextAt: number;
}

interface BootstrapTarget extends Backoff {
  addr: Multiaddr;
  text: string;
  /** Peer id named in the address, or learnt from the first successful dial. */
  peerId: string | null;
}

/** Multicodec of the /p2p/<peer id> component. */
export const P2P_CODE = 421;
/** A peer answering full in a row waits at most this many times the longest redial backoff (160 s at defaults). */
const FULL_WAIT_MAX = 16;
/** The peer store is written at most this often (ms). */
const FLUSH_EVERY_MS = 5_000;

export class PeerSet {
  private readonly targets: BootstrapTarget[] = [];
  private readonly backoff = new Map<string, Backoff>();
  /** Peers that answered as full: until when they are not redialled, and the wait that set it. */
  private readonly fullAnswers = new Map<string, { until: number; waitMs: number }>();
  private readonly dialling = new Set<string>();
  /** When the dials to silent peers of the last SILENT_WINDOW_MS started (the node-wide cap). */
  private silentDials: number[] = [];
  /** The state of the last pass (dial-decision.ts): a partition found or left is logged once. */
  private lastState: DialState | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopping = false;
  private lastFlush = 0;
  private flushing: Promise<void> = Promise.resolve();
  private readonly self: string;

  constructor(private readonly o: PeerSetOptions) {
    this.self = o.node.peerId.toString();
    for (const text of o.bootstrap) {
      const addr = multiaddr(text);
      const peerId = addr.getPeerId();
      if (peerId === this.self) continue;
      this.targets.push({ addr, text, peerId, backoffMs: o.redialMinMs, nextAt: 0 });
    }
  }

  /** Dial the bootstrap addresses and known peers once, then keep the set on a timer. */
  async start(): Promise<void> {
    this.stopping = false;
    // The bootstrap dials are waited for (a node that starts connected publishes its first tick to someone); the
    // known peers are dialled alongside.
    void Promise.all(this.dialKnown(this.o.target));
    await Promise.all(this.targets.map((t) => this.dialBootstrap(t)));
    this.timer = setInterval(() => this.maintain(), this.o.maintainMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flushing;
    await this.o.known.flush();
  }

  /** Open connections per remote peer. */
  connected(): Set<string> {
    const out = new Set<string>();
    for (const c of this.o.node.getConnections()) if (c.status === 'open') out.add(c.remotePeer.toString());
    return out;
  }

  /**
   * A connection to the peer closed, unless it said it is full: as a known peer it waits the longest redial backoff
   * (it pruned this node over its maximum, or it left; redialled at once, the most recently seen peer would be the
   * first dialled and pruned again, while peers with room wait), and as a bootstrap peer it is due again soon (dialled
   * while it is the last resort).
   */
  disconnected(peerId: string): void {
    const now = Date.now();
    if ((this.fullAnswers.get(peerId)?.until ?? 0) > now) return;
    this.backoff.set(peerId, { backoffMs: this.o.redialMaxMs, nextAt: now + this.o.redialMaxMs });
    for (const t of this.targets) {
      if (t.peerId === peerId) {
        t.backoffMs = this.o.redialMinMs;
        t.nextAt = now + this.o.redialMinMs;
      }
    }
  }

  /**
   * The peer answered the peer exchange as full (over its maximum): it is not dialled again for the longest redial
   * backoff, doubled at each full answer that follows within a wait of the last one's end, up to FULL_WAIT_MAX times
   * it (a full node frees room only as its own peers leave or are pruned, and every answer gave this node others to
   * dial meanwhile; a seed that every node was told of is not redialled by each of them every few seconds). It is
   * alive, so the peer store counts no failure.
   */
  full(peerId: string): void {
    const now = Date.now();
    const last = this.fullAnswers.get(peerId);
    const waitMs = last === undefined ? this.o.redialMaxMs : Math.min(2 * last.waitMs, FULL_WAIT_MAX * this.o.redialMaxMs);
    const until = now + waitMs;
    this.fullAnswers.set(peerId, { until, waitMs });
    this.backoff.set(peerId, { backoffMs: this.o.redialMaxMs, nextAt: until });
    for (const t of this.targets) if (t.peerId === peerId) t.nextAt = until;
  }

  /** Peers were learnt (a peer exchange): dial them now if the node is under its target, not at the next pass. */
  learnt(): void {
    if (this.stopping) return;
    const connected = this.connected();
    if (connected.size < this.o.target) void Promise.all(this.dialKnown(this.o.target - connected.size, connected));
  }

  private maintain(): void {
    if (this.stopping) return;
    const now = Date.now();
    const connected = this.connected();
    for (const id of connected) {
      this.o.known.seen(id, now);
      if ((this.fullAnswers.get(id)?.until ?? 0) <= now) this.backoff.delete(id);
    }
    // A peer not answered full again within a wait of the last one's end starts over at the shortest wait.
    for (const [id, f] of this.fullAnswers) if (f.until + f.waitMs <= now) this.fullAnswers.delete(id);
    this.silentDials = this.silentDials.filter((at) => now - at < SILENT_WINDOW_MS);
    const silent = (this.o.silent?.() ?? []).filter((p) => p.peerId !== this.self && !connected.has(p.peerId));
    // The most recently heard first, but one whose dial failed since it was last seen after the rest: the peer heard
    // last is often the one that died, and it would otherwise take every dial each time its backoff ends.
    const failing = (p: SilentPeer) => Number((this.o.known.get(p.peerId)?.failures ?? 0) > 0);
    const silentDue = silent.filter((p) => this.isDueId(p.peerId, now, connected)).sort((a, b) => failing(a) - failing(b));
    const actions = decideDials({
      connected: connected.size,
      target: this.o.target,
      max: this.o.max,
      knownDue: this.o.known.list().filter((p) => this.isDue(p, now, connected)).length,
      silent: silent.length,
      silentDue: silentDue.length,
      silentBudget: SILENT_DIALS_PER_WINDOW - this.silentDials.length,
    });
    if (actions.state !== this.lastState && (actions.state === 'partitioned' || this.lastState === 'partitioned')) {
      this.o.log.info({ state: actions.state, connected: connected.size, silent: silent.length }, 'mesh peer set state');
    }
    this.lastState = actions.state;
    // Silent peers first: alive a moment ago, where the most recently seen known peer may be the one that died.
    for (const p of silentDue.slice(0, actions.silent)) {
      const addrs = this.o.known.get(p.peerId)?.addrs ?? p.addrs;
      if (addrs.length === 0) continue;
      this.silentDials.push(now);
      this.o.log.debug({ peerId: p.peerId }, 'mesh dials a peer it no longer hears');
      void this.dialPeer(p.peerId, [...addrs]);
    }
    for (const t of this.targets) {
      if (t.peerId !== null && connected.has(t.peerId)) t.backoffMs = this.o.redialMinMs;
      else if (actions.bootstrap && now >= t.nextAt) void this.dialBootstrap(t);
    }
    if (actions.known > 0) void Promise.all(this.dialKnown(actions.known, connected));
    if (actions.prune > 0) this.prune(connected);
    if (now - this.lastFlush >= FLUSH_EVERY_MS) {
      this.lastFlush = now;
      this.flushing = this.o.known.flush().catch((err: unknown) => this.o.log.warn({ err: String(err) }, 'mesh could not write its peer store'));
    }
  }

  /** Close the worst-scored connections past their grace period, down to the maximum. */
  private prune(connected: Set<string>): void {
    const young = new Set<string>();
    const now = Date.now();
    for (const c of this.o.node.getConnections()) if (now - c.timeline.open < this.o.graceMs) young.add(c.remotePeer.toString());
    const ranked = [...connected].filter((id) => !young.has(id) && !this.o.keep?.(id)).sort((a, b) => this.o.score(a) - this.o.score(b));
    const drop = new Set(ranked.slice(0, connected.size - this.o.max));
    for (const c of this.o.node.getConnections()) {
      if (!drop.has(c.remotePeer.toString())) continue;
      this.o.log.debug({ peerId: c.remotePeer.toString(), score: this.o.score(c.remotePeer.toString()) }, 'mesh prunes a peer over the maximum');
      void c.close().catch(() => c.abort(new Error('pruned')));
    }
  }

  /** A known peer a dial may go to now: not this node, not connected, not being dialled, out of its backoff. */
  private isDue(p: KnownPeer, now: number, connected: ReadonlySet<string>): boolean {
    return this.isDueId(p.peerId, now, connected);
  }

  private isDueId(peerId: string, now: number, connected: ReadonlySet<string>): boolean {
    return peerId !== this.self && !connected.has(peerId) && !this.dialling.has(peerId) && (this.backoff.get(peerId)?.nextAt ?? 0) <= now;
  }

  /**
   * Start dials to up to `wanted` known peers that are due: the most recently seen first, but a peer whose dial failed
   * since it was last seen after those whose did not (the peer a node was last connected to is often the one that
   * died, and it would otherwise take every dial of a node at target 1 each time its backoff ends).
   */
  private dialKnown(wanted: number, connected: ReadonlySet<string> = this.connected()): Promise<void>[] {
    const room = Math.min(wanted, (this.o.dialConcurrency ?? 4) - this.dialling.size);
    if (room <= 0) return [];
    const now = Date.now();
    return this.o.known
      .list()
      .filter((p) => this.isDue(p, now, connected))
      .sort((a, b) => Number(a.failures > 0) - Number(b.failures > 0) || b.lastSeen - a.lastSeen || a.failures - b.failures)
      .slice(0, room)
      .map((p) => this.dialPeer(p.peerId, p.addrs));
  }

  private async dialPeer(peerId: string, addrs: string[]): Promise<void> {
    const parsed: Multiaddr[] = [];
    for (const a of addrs) {
      try {
        parsed.push(multiaddr(a).encapsulate(`/p2p/${peerId}`));
      } catch {
        // a malformed stored address is skipped
      }
    }
    if (parsed.length === 0) return;
    this.dialling.add(peerId);
    try {
      await this.o.node.dial(parsed, { signal: AbortSignal.timeout(5_000) });
      this.backoff.delete(peerId);
      this.o.known.seen(peerId, Date.now());
    } catch (err) {
      if (this.stopping) return;
      const b = this.backoff.get(peerId) ?? { backoffMs: this.o.redialMinMs, nextAt: 0 };
      b.nextAt = Date.now() + b.backoffMs;
      b.backoffMs = Math.min(b.backoffMs * 2, this.o.redialMaxMs);
      this.backoff.set(peerId, b);
      this.o.known.failed(peerId, Date.now());
      this.o.log.debug({ peerId, err: String(err), retryInMs: b.nextAt - Date.now() }, 'mesh dial to a known peer failed');
    } finally {
      this.dialling.delete(peerId);
    }
  }

  private async dialBootstrap(t: BootstrapTarget): Promise<void> {
    const key = `bootstrap:${t.text}`;
    if (this.stopping || this.dialling.has(key)) return;
    this.dialling.add(key);
    try {
      const conn = await this.o.node.dial(t.addr, { signal: AbortSignal.timeout(5_000) });
      t.peerId = conn.remotePeer.toString();
      t.backoffMs = this.o.redialMinMs;
      this.o.log.debug({ addr: t.text }, 'mesh bootstrap peer connected');
    } catch (err) {
      if (!this.stopping) this.o.log.debug({ addr: t.text, err: String(err), retryInMs: t.backoffMs }, 'mesh bootstrap dial failed');
      t.nextAt = Date.now() + t.backoffMs;
      t.backoffMs = Math.min(t.backoffMs * 2, this.o.redialMaxMs);
    } finally {
      this.dialling.delete(key);
    }
  }
}

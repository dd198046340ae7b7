// The peer table: what this node knows of each peer, from the peer's tick events (the tick row of the gossip table)
// and from libp2p's connection changes. Bounded (a disconnected peer heard from longest ago goes first); it answers
// the peers mesh status lists, the coherence score, the nodes heard (the tick interval's N_heard) and the peers an
// oracle snapshot names. Every judgement of "heard recently" reads the peer's own tick interval (its `every`), not
// this node's: a peer in a large mesh ticks seldom and is no less alive for it.
import { z } from 'zod';
import type { SnapshotPeer } from './oracle.js';
import { MAX_TICK_INTERVAL } from './tick-interval.js';
import { MAX_SKEW_TICKS } from './validator.js';
import { VRF_PROOF_PATTERN } from './vrf.js';
import type { MeshEvent } from './wire.js';
import { LruMap } from '../util/bounded-map.js';

export const TICK_EVENT_TYPE = 'tick';

/**
 * How far ahead of this node's clock a tick event may be dated: a tick event says when it was signed, and one signed
 * for a later tick would be the first of its node after any tick up to it (a challenge's draw event, decided in
 * advance) and would pin the node's last tick in the future. Other events keep the replay window's ±120.
 */
export const TICK_AHEAD_TICKS = 4;

/** A tick event's body (the mesh's pulse writes it); fields a newer node adds are ignored. */
export const tickBody = z.object({
  svcond: z.number().int().optional(),
  sealedCount: z.number().optional(),
  chainHeadsDigest: z.string().optional(),
  kernelVersion: z.string().optional(),
  url: z.string().max(2048).optional(),
  // Where the sender's libp2p host can be dialled (its announced or listening multiaddrs), so a node that has no
  // connection to it can open a stream to it.
  multiaddrs: z.array(z.string().max(512)).max(8).optional(),
  // The node's operator's contribution (architecture.md §6); absent from an older node's ticks. The mode is any
  // short string, so a mode a newer node adds does not make its ticks invalid here.
  mode: z.string().max(32).optional(),
  bondId: z.string().max(64).nullable().optional(),
  freeSlots: z.number().int().min(0).max(4096).optional(),
  // The interval (ticks) at which the sender sends its tick events (tick-interval.ts); absent: the receiver's
  // mesh.tickEvery.
  every: z.number().int().min(1).max(MAX_TICK_INTERVAL).optional(),
  // The sender's VRF proof over its tick (draw-proof.ts), in every tick event that advertises a bond: what a
  // challenge's committee is drawn by when this event is its draw event.
  drawProof: z.string().regex(VRF_PROOF_PATTERN).optional(),
});
export type TickBody = z.infer<typeof tickBody>;

/** What a node advertises in its tick events about its operator's contribution (architecture.md §6). */
export interface TickAdvert {
  /** The operator's mode (the identity bonded on this node; idle without a bond). */
  mode: string;
  bondId: string | null;
  /** Solver runs this node could start now. */
  freeSlots: number;
}

export interface PeerInfo {
  peerId: string;
  url: string | null;
  /** The multiaddrs its latest tick event names (empty until one does). */
  multiaddrs: string[];
  /** svcond of the last tick event received from the peer. */
  lastTick: number | null;
  /** Local svcond when that tick event arrived. */
  receivedSvcond: number | null;
  kernelVersion: string | null;
  sealedCount: number | null;
  chainHeadsDigest: string | null;
  /** The peer's advertised operator mode, bond id and free execution slots (null until a tick carries them). */
  mode: string | null;
  bondId: string | null;
  freeSlots: number | null;
  /** The tick interval its latest tick event declares (this node's mesh.tickEvery when it declares none or none was heard). */
  every: number;
  connected: boolean;
}

/** A peer as mesh status lists it. */
export interface StatusPeer {
  peerId: string;
  url: string | null;
  lastTick: number | null;
  connected: boolean;
  mode: string | null;
  bondId: string | null;
  freeSlots: number | null;
  /** Its tick interval: it counts as behind once its last tick is more than 2·every + 1 ticks old. */
  every: number;
}

/** The window in which a peer, or gossip, counts as recently heard (for a peer: at least; see recentWindow). */
export const RECENT_WINDOW_TICKS = MAX_SKEW_TICKS;
/** A peer that ticks seldom stays recently heard for this many of its intervals (when longer than RECENT_WINDOW_TICKS). */
export const RECENT_INTERVALS = 4;

/** How long after its last tick event arrived a peer with tick interval `every` counts as recently heard. */
export function recentWindow(every: number): number {
  return Math.max(RECENT_WINDOW_TICKS, RECENT_INTERVALS * every);
}

/** How long after its last tick event arrived a peer is in step: its next event is due, with one more to spare. */
export function freshWindow(every: number): number {
  return 2 * every + 1;
}
/**
 * Ticks at least after which a peer whose tick events stopped counts as silent: a node whose event loop stalls a few
 * seconds (a loaded machine) is not taken for one cut off at the shortest intervals.
 */
export const SILENT_FLOOR_TICKS = 8;

/**
 * How long after its last tick event arrived a peer counts as silent: past its fresh window (it missed its next event
 * and one more), and at least SILENT_FLOOR_TICKS. It stays silent until its recent window ends.
 */
export function silentAfter(every: number): number {
  return Math.max(SILENT_FLOOR_TICKS, freshWindow(every));
}

/** Most peers listed in status (connected first, then the most recently heard). */
export const STATUS_PEERS_MAX = 64;

export interface PeerTableOptions {
  /** Peers kept at most. */
  peersMax: number;
  nowSvcond: () => number;
  /** Is libp2p connected to this peer now (for a peer first heard by its tick)? */
  isConnected: (peerId: string) => boolean;
  /** The interval of a peer whose tick events declare none: this node's mesh.tickEvery (default 4). */
  defaultEvery?: number;
  /** Senders counted for N_heard at most (default HEARD_MAX). */
  heardMax?: number;
}

/**
 * Senders kept for N_heard (the tick interval's count): a tick and an interval each, far more than the peer table
 * keeps, so that N_heard counts a mesh of tens of thousands of nodes, not the table's bound.
 */
export const HEARD_MAX = 65_536;

export class PeerTable {
  private readonly peers = new Map<string, PeerInfo>();
  /** Every sender heard (the peer table is bounded lower): when its last tick event arrived and the interval it declared; the one heard longest ago first. */
  private readonly heard: LruMap<string, { receivedSvcond: number; every: number }>;
  /** Peers learnt so far: a peer new to the table, or one whose URL is first or newly told. */
  private learntCount = 0;

  /**
   * A peer the table must not lose to newer ones (a bonded node: committees are drawn from them, and its liveness is
   * read from here; set by keep()). Peer ids cost nothing to make, so without it a flood of fresh keys could evict
   * every honest peer.
   */
  private kept: (peerId: string) => boolean = () => false;

  constructor(private readonly o: PeerTableOptions) {
    this.heard = new LruMap(o.heardMax ?? HEARD_MAX);
  }

  /** The tick row: a peer's latest tick (an older one arriving late changes nothing) updates its peer entry. */
  applyTick(b: TickBody, event: MeshEvent): void {
    const now = this.o.nowSvcond();
    const prev = this.peers.get(event.sender);
    if (prev && prev.lastTick !== null && prev.lastTick > event.svcond) return;
    this.heard.set(event.sender, { receivedSvcond: now, every: b.every ?? this.defaultEvery });
    if (prev === undefined || (b.url !== undefined && b.url !== prev.url)) this.learntCount++;
    this.peers.delete(event.sender);
    this.peers.set(event.sender, {
      peerId: event.sender,
      url: b.url ?? prev?.url ?? null,
      multiaddrs: b.multiaddrs ?? prev?.multiaddrs ?? [],
      lastTick: event.svcond,
      receivedSvcond: now,
      kernelVersion: b.kernelVersion ?? null,
      sealedCount: b.sealedCount ?? null,
      chainHeadsDigest: b.chainHeadsDigest ?? null,
      mode: b.mode ?? null,
      bondId: b.bondId ?? null,
      freeSlots: b.freeSlots ?? null,
      every: b.every ?? this.defaultEvery,
      connected: prev?.connected ?? this.o.isConnected(event.sender),
    });
    this.bound();
  }

  /** The tick at which a valid tick event of the peer last arrived (null: never, or not kept). */
  heardAt(peerId: string): number | null {
    return this.peers.get(peerId)?.receivedSvcond ?? null;
  }

  /** libp2p connected to or disconnected from a peer. */
  connectionChanged(peerId: string, connected: boolean): void {
    const p = this.peers.get(peerId);
    // A peer that leaves without ever sending a valid tick event (e.g. one that only forged) is forgotten.
    if (p && !connected && p.lastTick === null) this.peers.delete(peerId);
    else if (p) p.connected = connected;
    else if (connected) {
      this.learntCount++;
      this.peers.set(peerId, {
        peerId,
        url: null,
        multiaddrs: [],
        lastTick: null,
        receivedSvcond: null,
        kernelVersion: null,
        sealedCount: null,
        chainHeadsDigest: null,
        mode: null,
        bondId: null,
        freeSlots: null,
        every: this.defaultEvery,
        connected: true,
      });
      this.bound();
    }
  }

  private get defaultEvery(): number {
    return this.o.defaultEvery ?? 4;
  }

  /** Was the peer's last tick event received within its recent window (recentWindow of its own interval)? */
  private heardRecently(p: PeerInfo, now: number): boolean {
    return p.receivedSvcond !== null && p.lastTick !== null && now - p.receivedSvcond <= recentWindow(p.every);
  }

  /**
   * coherenceScore (docs/decisions.md, "Mesh: coherenceScore"): of the peers heard recently (recentWindow of each
   * peer's own interval), the fraction that agree with this node — last tick arrived within 2·every+1 ticks of the
   * peer's interval, its svcond within 1 tick of this node's clock on arrival, and the same kernel version. null
   * when no peer is heard.
   */
  coherenceScore(kernelVersion: string | null): number | null {
    const now = this.o.nowSvcond();
    let heard = 0;
    let agree = 0;
    for (const p of this.peers.values()) {
      if (!this.heardRecently(p, now) || p.receivedSvcond === null || p.lastTick === null) continue;
      heard++;
      const fresh = now - p.receivedSvcond <= freshWindow(p.every);
      const inStep = Math.abs(p.lastTick - p.receivedSvcond) <= 1;
      const sameKernel = kernelVersion === null || p.kernelVersion === kernelVersion;
      if (fresh && inStep && sameKernel) agree++;
    }
    return heard === 0 ? null : Math.round((agree / heard) * 10_000) / 10_000;
  }

  /**
   * Distinct peers heard recently (recentWindow of each one's own interval): the tick interval's N_heard, less this
   * node. Counted over every sender heard (up to heardMax), not only the peers the table keeps.
   */
  heardCount(now: number): number {
    let n = 0;
    for (const h of this.heard.values()) if (now - h.receivedSvcond <= recentWindow(h.every)) n++;
    return n;
  }

  /**
   * The peers status shows: connected now, or heard recently (a valid tick event within recentWindow of its own
   * interval); connected first, then by the latest tick heard; at most STATUS_PEERS_MAX; listed in peer id order.
   */
  statusPeers(connected: ReadonlySet<string>, now: number): StatusPeer[] {
    const shown: PeerInfo[] = [];
    for (const p of this.peers.values()) if (connected.has(p.peerId) || this.heardRecently(p, now)) shown.push(p);
    const heard = (p: PeerInfo): number => p.receivedSvcond ?? -1;
    shown.sort((a, b) => Number(connected.has(b.peerId)) - Number(connected.has(a.peerId)) || heard(b) - heard(a));
    return shown
      .slice(0, STATUS_PEERS_MAX)
      .map((p) => ({
        peerId: p.peerId,
        url: p.url,
        lastTick: p.lastTick,
        connected: connected.has(p.peerId),
        mode: p.mode,
        bondId: p.bondId,
        freeSlots: p.freeSlots,
        every: p.every,
      }))
      .sort((a, b) => (a.peerId < b.peerId ? -1 : 1));
  }

  /**
   * Peers this node went deaf to (docs/decisions.md, "Mesh: a partition is a reason to dial"): heard recently (within
   * their recent window) but not since silentAfter of their own interval, and not connected; the most recently heard
   * first, with the addresses their last tick event named. Each is on the other side of a partition, or gone.
   */
  silentPeers(now: number): { peerId: string; addrs: string[] }[] {
    const out: PeerInfo[] = [];
    for (const p of this.peers.values()) {
      if (p.connected || p.receivedSvcond === null || !this.heardRecently(p, now)) continue;
      if (now - p.receivedSvcond > silentAfter(p.every)) out.push(p);
    }
    return out.sort((a, b) => (b.receivedSvcond ?? 0) - (a.receivedSvcond ?? 0)).map((p) => ({ peerId: p.peerId, addrs: [...p.multiaddrs] }));
  }

  /**
   * How many peers the table has learnt: it grows when a peer is first heard or connected, or tells a new URL. A
   * lookup's miss stands only while it stays the same (util/missed-lookups.ts): the peer learnt may know the name.
   */
  learnt(): number {
    return this.learntCount;
  }

  /** Every peer known (copies). */
  list(): PeerInfo[] {
    return [...this.peers.values()].map((p) => ({ ...p }));
  }

  /** A peer's HTTP URL from its tick events; null when it has not told us one. */
  url(peerId: string): string | null {
    return this.peers.get(peerId)?.url ?? null;
  }

  /** The peers an oracle snapshot names: those heard by a tick, in peer id order. */
  snapshotPeers(): SnapshotPeer[] {
    return [...this.peers.values()]
      .filter((p) => p.lastTick !== null)
      .map((p) => ({ peerId: p.peerId, url: p.url, lastTick: p.lastTick, sealedCount: p.sealedCount, chainHeadsDigest: p.chainHeadsDigest }))
      .sort((a, b) => (a.peerId < b.peerId ? -1 : 1));
  }

  private bound(): void {
    while (this.peers.size > this.o.peersMax) {
      // Evict a disconnected peer heard from longest ago, else the oldest entry: a peer not kept before a kept one.
      let victim: { id: string; rank: number; t: number } | null = null;
      for (const p of this.peers.values()) {
        const rank = (this.kept(p.peerId) ? 2 : 0) + (p.connected ? 1 : 0);
        const t = p.receivedSvcond ?? -1;
        if (victim === null || rank < victim.rank || (rank === victim.rank && t < victim.t)) victim = { id: p.peerId, rank, t };
      }
      this.peers.delete(victim!.id);
    }
  }

  /** Tell the table which peers it keeps before others when it is full. */
  keep(kept: (peerId: string) => boolean): void {
    this.kept = kept;
  }
}

/**
 * Can a stream to this peer be opened? Connected, or heard recently with addresses to dial (through its relay for a
 * node behind NAT): the mesh need not hold a connection to every peer it places work on.
 */
export function isReachable(peer: Pick<PeerInfo, 'connected' | 'multiaddrs' | 'receivedSvcond'>, nowSvcond: number): boolean {
  if (peer.connected) return true;
  return peer.multiaddrs.length > 0 && peer.receivedSvcond !== null && nowSvcond - peer.receivedSvcond <= RECENT_WINDOW_TICKS;
}

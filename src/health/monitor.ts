// The health checks behind the warnings (warnings.ts): run on the node's tick loop, each reads what the parts expose
// (counters, the peer table, outbox sizes, worker start failures) and raises or clears one warning. Thresholds are
// config.health (docs/operating.md, "Warnings").
import { diskSpace, tcpRefusal, tcpTarget, type DiskSpace } from './probes.js';
import type { WarningBook } from './warnings.js';

export interface HealthSettings {
  /** Seconds without a refused handshake after which MESH_HANDSHAKE_REJECTED clears (gossipsub may mute a peer for a while). */
  handshakeWindowSeconds: number;
  /** Seconds with no connection, bootstrap peers configured, before MESH_NO_PEERS. */
  noPeersGraceSeconds: number;
  /** Ticks a peer's tick event may be stamped away from this node's clock on arrival. */
  clockSkewTicks: number;
  /** DISK_LOW below either: this share of the file system free, or this many bytes free. */
  diskFreeMinPercent: number;
  diskFreeMinBytes: number;
  /** BACKLOG_GROWING when a backlog reaches this size, or grew at this many checks without shrinking in between. */
  backlogMax: number;
  backlogGrowthChecks: number;
  /** Seconds between TCP probes of the announced addresses. */
  announceProbeSeconds: number;
}

/** What the checks read of the parts. */
export interface HealthSources {
  dataDir: string;
  /** Handshakes refused so far, by the peer that sent them (mesh/service.ts refusals()); and events refused as stale. */
  refusals(): { handshake: Readonly<Record<string, number>>; stale: number };
  /** Open mesh connections; null when the node runs without a mesh. */
  connections(): number | null;
  bootstrap: readonly string[];
  announce: readonly string[];
  /** Each peer's latest tick event: its stamp, and this node's tick when it arrived. */
  peerTicks(): readonly { peerId: string; lastTick: number | null; receivedSvcond: number | null }[];
  nowSvcond(): number;
  nowMs(): number;
  /** Items waiting in each outbox, by name. */
  backlogs(): Promise<Record<string, number>>;
  /** Why the worker threads of each kind that cannot start now die as they start, by kind (none: they start). */
  workerStartFailures(): Record<string, string>;
  /** Key records held of keys minted elsewhere, and the bound gossip may fill (identity/service.ts); null without a mesh. */
  remoteKeys(): { held: number; max: number } | null;
  /** Tests: the disk reading (default: statfs of dataDir). */
  disk?: (dir: string) => Promise<DiskSpace>;
}

/** Peers named in a message at most. */
const NAMED_MAX = 3;
/** How long a TCP probe of an announced address waits. */
const PROBE_TIMEOUT_MS = 3_000;
/** Peers' ticks older than this (in ticks, the mesh's staleness bound) say nothing about their clock now. */
const SKEW_RECENT_TICKS = 120;

function named(ids: readonly string[]): string {
  const shown = ids.slice(0, NAMED_MAX).join(', ');
  return ids.length > NAMED_MAX ? `${shown} and ${ids.length - NAMED_MAX} more` : shown;
}

const mib = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MiB`;

export class HealthMonitor {
  private handshakeSeen: Record<string, number> = {};
  /** Peer → when its handshake was last refused (ms). */
  private readonly refusedAt = new Map<string, number>();
  private staleSeen = 0;
  private staleAt: number | null = null;
  private noPeersSince: number | null = null;
  private readonly backlog = new Map<string, { last: number; streak: number }>();
  private announceProbedAt: number | null = null;
  private announceRefused: string[] = [];
  private running: Promise<void> | null = null;

  constructor(
    private readonly book: WarningBook,
    private readonly s: HealthSources,
    private readonly h: HealthSettings,
  ) {}

  /** One round of every check (a round still running is joined, not doubled). */
  check(): Promise<void> {
    this.running ??= this.round().finally(() => (this.running = null));
    return this.running;
  }

  private async round(): Promise<void> {
    const now = this.s.nowMs();
    this.handshakes(now);
    this.peers(now);
    this.clocks(now);
    this.workers();
    this.remoteKeys();
    await Promise.all([this.disk(), this.backlogs(), this.announced(now)]);
  }

  private handshakes(now: number): void {
    const counts = this.s.refusals().handshake;
    let fresh = 0;
    for (const [peer, n] of Object.entries(counts)) {
      const d = n - (this.handshakeSeen[peer] ?? 0);
      if (d > 0) {
        fresh += d;
        this.refusedAt.set(peer, now);
      }
    }
    this.handshakeSeen = { ...counts };
    const windowMs = this.h.handshakeWindowSeconds * 1000;
    for (const [peer, at] of this.refusedAt) if (now - at > windowMs) this.refusedAt.delete(peer);
    if (fresh > 0) {
      const peers = [...this.refusedAt.keys()];
      this.book.raise(
        'MESH_HANDSHAKE_REJECTED',
        `mesh events from ${named(peers)} fail the handshake: that peer likely runs with another mesh secret (or none); check mesh.secret on both nodes`,
        fresh,
      );
    } else if (this.refusedAt.size === 0) this.book.clear('MESH_HANDSHAKE_REJECTED');
  }

  private peers(now: number): void {
    const open = this.s.connections();
    if (open === null || this.s.bootstrap.length === 0 || open > 0) {
      this.noPeersSince = null;
      this.book.clear('MESH_NO_PEERS');
      return;
    }
    this.noPeersSince ??= now;
    const seconds = Math.round((now - this.noPeersSince) / 1000);
    if (seconds < this.h.noPeersGraceSeconds) return;
    this.book.raise(
      'MESH_NO_PEERS',
      `no mesh connection for ${seconds} s although ${this.s.bootstrap.length} bootstrap peer(s) are configured (first: ${this.s.bootstrap[0]}); check that they run and that this node can reach them`,
    );
  }

  private clocks(now: number): void {
    const tick = this.s.nowSvcond();
    const skewed: string[] = [];
    for (const p of this.s.peerTicks()) {
      if (p.lastTick === null || p.receivedSvcond === null || tick - p.receivedSvcond > SKEW_RECENT_TICKS) continue;
      const skew = p.lastTick - p.receivedSvcond;
      if (Math.abs(skew) > this.h.clockSkewTicks) skewed.push(`${p.peerId} (${skew > 0 ? '+' : ''}${skew} ticks)`);
    }
    const stale = this.s.refusals().stale;
    if (stale > this.staleSeen) this.staleAt = now;
    this.staleSeen = stale;
    if (this.staleAt !== null && now - this.staleAt > this.h.handshakeWindowSeconds * 1000) this.staleAt = null;
    if (skewed.length === 0 && this.staleAt === null) return this.book.clear('CLOCK_SKEW');
    const parts = [
      ...(skewed.length > 0 ? [`tick events of ${named(skewed)} are stamped beyond ±${this.h.clockSkewTicks} ticks of this node's clock`] : []),
      ...(this.staleAt !== null ? ['mesh events were refused as stale (over 120 ticks away)'] : []),
    ];
    this.book.raise('CLOCK_SKEW', `${parts.join('; ')}: check NTP on this node and its peers`);
  }

  private workers(): void {
    const failing = Object.entries(this.s.workerStartFailures());
    if (failing.length === 0) return this.book.clear('WORKERS_NOT_STARTING');
    this.book.raise(
      'WORKERS_NOT_STARTING',
      `${failing.map(([kind, why]) => `${kind} die as they start (${why})`).join('; ')}: they are tried again later and later, and work that needs them is refused meanwhile; a deleted working directory (uv_cwd) needs the node started again from one that exists`,
    );
  }

  private remoteKeys(): void {
    const keys = this.s.remoteKeys();
    if (keys === null || keys.held < keys.max) return this.book.clear('MESH_KEYS_FULL');
    this.book.raise(
      'MESH_KEYS_FULL',
      `this node holds ${keys.held} keys minted elsewhere, its maximum from gossip (limits.remoteKeysMax ${keys.max}): assertions of new ones are ignored and those keys are asked of their homes when first presented; a member may be asserting keys of invented identities (the identity.assert events of /api/mesh/events name their sender)`,
    );
  }

  private async disk(): Promise<void> {
    let d: DiskSpace;
    try {
      d = await (this.s.disk ?? diskSpace)(this.s.dataDir);
    } catch {
      return;
    }
    const percent = d.totalBytes > 0 ? (100 * d.freeBytes) / d.totalBytes : 100;
    if (d.freeBytes >= this.h.diskFreeMinBytes && percent >= this.h.diskFreeMinPercent) return this.book.clear('DISK_LOW');
    this.book.raise(
      'DISK_LOW',
      `the data dir's file system has ${mib(d.freeBytes)} free of ${mib(d.totalBytes)} (${percent.toFixed(1)} %); the node warns below ${this.h.diskFreeMinPercent} % or ${mib(this.h.diskFreeMinBytes)}`,
    );
  }

  private async backlogs(): Promise<void> {
    let sizes: Record<string, number>;
    try {
      sizes = await this.s.backlogs();
    } catch {
      return;
    }
    const growing: string[] = [];
    for (const [name, size] of Object.entries(sizes)) {
      const b = this.backlog.get(name) ?? { last: 0, streak: 0 };
      if (size > b.last) b.streak += 1;
      else if (size < b.last || size === 0) b.streak = 0;
      b.last = size;
      this.backlog.set(name, b);
      if (size >= this.h.backlogMax || (size > 0 && b.streak >= this.h.backlogGrowthChecks)) growing.push(`${name} ${size}`);
    }
    if (growing.length === 0) return this.book.clear('BACKLOG_GROWING');
    this.book.raise('BACKLOG_GROWING', `backlog growing: ${growing.join(', ')} items waiting; are their receivers reachable?`);
  }

  private async announced(now: number): Promise<void> {
    if (this.s.announce.length === 0) return;
    if (this.announceProbedAt === null || now - this.announceProbedAt >= this.h.announceProbeSeconds * 1000) {
      this.announceProbedAt = now;
      const refused: string[] = [];
      for (const address of this.s.announce) {
        const target = tcpTarget(address);
        if (target === null) continue;
        const why = await tcpRefusal(target, PROBE_TIMEOUT_MS);
        if (why !== null) refused.push(`${address} (${why})`);
      }
      this.announceRefused = refused;
    }
    if (this.announceRefused.length === 0) return this.book.clear('MESH_ANNOUNCE_UNREACHABLE');
    this.book.raise(
      'MESH_ANNOUNCE_UNREACHABLE',
      `announced address ${named(this.announceRefused)} accepts no TCP connection from this node: check mesh.announce and the port forward`,
    );
  }
}

// The peers a node has met, kept in the store (sublevel mesh-peers) so a restarted node reconnects to them without a
// bootstrap list. Each record holds where the peer can be dialled, when it was last connected and when a dial to it
// last failed. The store is bounded: past `max` records the least recently seen go first, and a peer not seen for
// `forgetAfterMs` that keeps failing is forgotten. Changes are written in one batch per flush (the peer set flushes
// on a timer and at stop): a crash loses at most the changes since the last flush, never a record half-written.
import type { Op, Store, Sublevel } from '../store/db.js';

export interface KnownPeer {
  peerId: string;
  /** Multiaddrs without the /p2p/<peer id> suffix, newest first, at most ADDRS_MAX. */
  addrs: string[];
  /** Last time (ms since the epoch) a connection to the peer was open; 0 when never. */
  lastSeen: number;
  /** Last time a dial to the peer failed; null when none failed since it was last seen. */
  lastFailure: number | null;
  /** Dials failed in a row. */
  failures: number;
}

export interface PeerStoreOptions {
  store: Store;
  /** Records kept (default 512). */
  max?: number;
  /** A peer unseen this long with failing dials is forgotten (default 7 days). */
  forgetAfterMs?: number;
}

const ADDRS_MAX = 8;
/** Failed dials in a row after which an unseen peer may be forgotten. */
const FORGET_FAILURES = 3;

export class PeerStore {
  private readonly sub: Sublevel;
  private readonly peers = new Map<string, KnownPeer>();
  private readonly dirty = new Set<string>();
  private readonly removed = new Set<string>();
  private readonly max: number;
  private readonly forgetAfterMs: number;

  constructor(private readonly opts: PeerStoreOptions) {
    this.sub = opts.store.sub('mesh-peers');
    this.max = opts.max ?? 512;
    this.forgetAfterMs = opts.forgetAfterMs ?? 7 * 24 * 3600_000;
  }

  async load(): Promise<void> {
    for (const { key, value } of await this.opts.store.range<KnownPeer>(this.sub)) {
      if (typeof value === 'object' && value !== null && Array.isArray(value.addrs)) this.peers.set(key, { ...value, peerId: key });
    }
  }

  get size(): number {
    return this.peers.size;
  }

  get(peerId: string): KnownPeer | undefined {
    return this.peers.get(peerId);
  }

  list(): KnownPeer[] {
    return [...this.peers.values()];
  }

  /** Addresses learnt for a peer (tick events, identify, discovery): merged in, the newest first. */
  learn(peerId: string, addrs: readonly string[]): void {
    if (addrs.length === 0) return;
    const known = this.peers.get(peerId);
    const merged = [...new Set([...addrs, ...(known?.addrs ?? [])])].slice(0, ADDRS_MAX);
    if (known && merged.length === known.addrs.length && merged.every((a, i) => a === known.addrs[i])) return;
    this.put(known ? { ...known, addrs: merged } : { peerId, addrs: merged, lastSeen: 0, lastFailure: null, failures: 0 });
  }

  /** A connection to the peer is open. */
  seen(peerId: string, nowMs: number): void {
    const known = this.peers.get(peerId);
    if (!known) return;
    // Written at most once a minute per peer while it stays connected.
    if (known.failures === 0 && nowMs - known.lastSeen < 60_000) return;
    this.put({ ...known, lastSeen: nowMs, lastFailure: null, failures: 0 });
  }

  /** A dial to the peer failed. */
  failed(peerId: string, nowMs: number): void {
    const known = this.peers.get(peerId);
    if (!known) return;
    const next = { ...known, lastFailure: nowMs, failures: known.failures + 1 };
    if (next.failures >= FORGET_FAILURES && nowMs - next.lastSeen > this.forgetAfterMs) {
      this.remove(peerId);
      return;
    }
    this.put(next);
  }

  /** Write the changes since the last flush in one batch. */
  async flush(): Promise<void> {
    if (this.dirty.size === 0 && this.removed.size === 0) return;
    const ops: Op[] = [];
    for (const id of this.removed) ops.push({ type: 'del', sub: this.sub, key: id });
    for (const id of this.dirty) {
      const p = this.peers.get(id);
      if (p) ops.push({ type: 'put', sub: this.sub, key: id, value: p });
    }
    this.dirty.clear();
    this.removed.clear();
    await this.opts.store.commit(ops);
  }

  private put(p: KnownPeer): void {
    this.peers.set(p.peerId, p);
    this.removed.delete(p.peerId);
    this.dirty.add(p.peerId);
    if (this.peers.size > this.max) this.evict(p.peerId);
  }

  private remove(peerId: string): void {
    this.peers.delete(peerId);
    this.dirty.delete(peerId);
    this.removed.add(peerId);
  }

  /** Drop the least recently seen peers (never-seen ones with the most failures first) down to max, but not `keep` (the peer just learnt). */
  private evict(keep: string): void {
    const order = [...this.peers.values()].filter((p) => p.peerId !== keep).sort((a, b) => a.lastSeen - b.lastSeen || b.failures - a.failures);
    for (const p of order.slice(0, this.peers.size - this.max)) this.remove(p.peerId);
  }
}

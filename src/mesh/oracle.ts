// Transparency oracle: once per 4-tick slot the node writes a signed network snapshot
// {svcond, node, sealedCount, chainHeadsDigest, kernelVersion, peers, signature}, keyed by its svcond. A snapshot
// is written once and never rewritten (an existing key is left alone). The signature is base64 Ed25519 by the
// node key over the canonical JSON of the snapshot without its signature; verifySnapshot checks it.
// Snapshots sit on the 4-tick grid: a node that starts mid-slot writes nothing for that slot (it would be keyed off
// the grid, e.g. at 4k + 1) and writes its first snapshot at the next slot's first tick; after that, the first pulse
// in each slot (pulses come several times a tick) writes it.
// Retention: the store keeps the newest `retention` snapshots (keys sort by svcond); each write deletes the
// oldest beyond that in the same atomic batch, and load() trims a store that holds more (e.g. written before
// retention existed, or under a larger setting).
import { peerIdFromString } from '@libp2p/peer-id';
import { canonicalJson } from '../kernel/canonical.js';
import type { Store, Sublevel } from '../store/db.js';
import { padNum } from '../store/db.js';

export const SNAPSHOT_EVERY_TICKS = 4;
export const HISTORY_MAX = 100;
/** Snapshots kept by default: 10 000 × 4 ticks × 0.777 s ≈ 8.6 hours. */
export const SNAPSHOT_RETENTION_DEFAULT = 10_000;
/** Deletes per batch when load() trims an oversized store. */
const TRIM_BATCH = 1_000;

export interface HeadState {
  sealedCount: number;
  chainHeadsDigest: string;
  kernelVersion: string;
}

export interface SnapshotPeer {
  peerId: string;
  url: string | null;
  lastTick: number | null;
  sealedCount: number | null;
  chainHeadsDigest: string | null;
}

export interface NetworkSnapshot {
  svcond: number;
  node: string;
  sealedCount: number;
  chainHeadsDigest: string;
  kernelVersion: string;
  peers: SnapshotPeer[];
  signature: string;
}

export interface RevenueFigures {
  burned: number;
  foundation: number;
  /** Of `foundation`, the whole credits the identities' carried fractions add up to (the exact split; decisions.md). */
  pooledCarry?: number;
}

export interface OracleOptions {
  store: Store;
  nodeId: () => string;
  sign: (text: string) => Promise<string>;
  headState: () => HeadState | Promise<HeadState>;
  peers: () => SnapshotPeer[];
  revenue?: () => RevenueFigures | Promise<RevenueFigures>;
  /** Snapshots kept in the store, newest first (default SNAPSHOT_RETENTION_DEFAULT). */
  retention?: number;
}

export function snapshotSigningText(s: Omit<NetworkSnapshot, 'signature'> | NetworkSnapshot): string {
  const { signature: _sig, ...rest } = s as NetworkSnapshot;
  return canonicalJson(rest);
}

export async function verifySnapshot(s: NetworkSnapshot): Promise<boolean> {
  try {
    const pid = peerIdFromString(s.node);
    if (pid.type !== 'Ed25519' || !pid.publicKey) return false;
    const sig = Buffer.from(s.signature, 'base64');
    return await pid.publicKey.verify(new TextEncoder().encode(snapshotSigningText(s)), sig);
  } catch {
    return false;
  }
}

export class TransparencyOracle {
  private readonly sub: Sublevel;
  private latest: NetworkSnapshot | null = null;
  private lastSlot = -1;
  /** False until the first maybeSnapshot after this start: a start mid-slot skips that slot. */
  private pulsed = false;
  private revenueProvider: (() => RevenueFigures | Promise<RevenueFigures>) | undefined;
  private readonly retention: number;
  /** svconds of the stored snapshots, oldest first (at most `retention`): what the next write prunes. */
  private kept: number[] = [];

  constructor(private readonly opts: OracleOptions) {
    const r = opts.retention ?? SNAPSHOT_RETENTION_DEFAULT;
    if (!Number.isSafeInteger(r) || r < 1) throw new RangeError(`snapshot retention must be a positive integer, got ${r}`);
    this.retention = r;
    this.sub = opts.store.sub('mesh-snapshots');
    this.revenueProvider = opts.revenue;
  }

  static key(svcond: number): string {
    return padNum(svcond, 16);
  }

  /** Load the latest snapshot and the keys kept; delete snapshots beyond the retention (oldest first). */
  async load(): Promise<void> {
    const [last] = await this.opts.store.range<NetworkSnapshot>(this.sub, { reverse: true, limit: 1 });
    this.latest = last ? last.value : null;
    this.lastSlot = this.latest ? Math.floor(this.latest.svcond / SNAPSHOT_EVERY_TICKS) : -1;
    const newest = await this.keys({ reverse: true, limit: this.retention });
    this.kept = newest.map(Number).reverse();
    if (newest.length === this.retention) {
      const cutoff = newest[newest.length - 1]!;
      for (;;) {
        const older = await this.keys({ lt: cutoff, limit: TRIM_BATCH });
        if (older.length === 0) break;
        await this.opts.store.commit(older.map((key) => ({ type: 'del' as const, sub: this.sub, key })));
      }
    }
  }

  private async keys(opts: { lt?: string; limit: number; reverse?: boolean }): Promise<string[]> {
    const out: string[] = [];
    const it = this.sub.keys(opts);
    try {
      for await (const key of it) out.push(key as string);
    } finally {
      await it.close();
    }
    return out;
  }

  /** Snapshots in the store (at most the retention). */
  get stored(): number {
    return this.kept.length;
  }

  setRevenueProvider(fn: () => RevenueFigures | Promise<RevenueFigures>): void {
    this.revenueProvider = fn;
  }

  /** Write the snapshot of the current 4-tick slot if this slot has none yet. */
  async maybeSnapshot(svcond: number): Promise<NetworkSnapshot | null> {
    const slot = Math.floor(svcond / SNAPSHOT_EVERY_TICKS);
    if (slot <= this.lastSlot) return null;
    this.lastSlot = slot;
    const startedMidSlot = !this.pulsed && svcond % SNAPSHOT_EVERY_TICKS !== 0;
    this.pulsed = true;
    if (startedMidSlot) return null;
    const key = TransparencyOracle.key(svcond);
    if ((await this.opts.store.get(this.sub, key)) !== undefined) return null;
    const head = await this.opts.headState();
    const unsigned = {
      svcond,
      node: this.opts.nodeId(),
      sealedCount: head.sealedCount,
      chainHeadsDigest: head.chainHeadsDigest,
      kernelVersion: head.kernelVersion,
      peers: this.opts.peers(),
    };
    const snapshot: NetworkSnapshot = { ...unsigned, signature: await this.opts.sign(snapshotSigningText(unsigned)) };
    // From here to the commit nothing awaits: the kept list and the batch agree. The slot guard makes svcond
    // newer than every stored key, so it goes at the end and the oldest beyond the retention go in the same batch.
    this.kept.push(svcond);
    const dropped = this.kept.length > this.retention ? this.kept.splice(0, this.kept.length - this.retention) : [];
    try {
      await this.opts.store.commit([
        { type: 'put', sub: this.sub, key, value: snapshot },
        ...dropped.map((t) => ({ type: 'del' as const, sub: this.sub, key: TransparencyOracle.key(t) })),
      ]);
    } catch (err) {
      const at = this.kept.indexOf(svcond);
      if (at >= 0) this.kept.splice(at, 1);
      this.kept.unshift(...dropped);
      throw err;
    }
    this.latest = snapshot;
    return snapshot;
  }

  /** The latest snapshot, or null before the first one. */
  now(): NetworkSnapshot | null {
    return this.latest;
  }

  /** The last n snapshots, newest first (1 ≤ n ≤ HISTORY_MAX). */
  async history(n = 10): Promise<NetworkSnapshot[]> {
    const limit = Math.max(1, Math.min(HISTORY_MAX, Number.isFinite(n) ? Math.floor(n) : 10));
    return (await this.opts.store.range<NetworkSnapshot>(this.sub, { reverse: true, limit })).map((e) => e.value);
  }

  /** How the latest snapshot splits across this node and its peers. */
  breakdown(): {
    svcond: number | null;
    nodes: { nodeId: string; self: boolean; url: string | null; lastTick: number | null; sealedCount: number | null; chainHeadsDigest: string | null }[];
    totalSealed: number;
    reportingNodes: number;
  } {
    const s = this.latest;
    if (!s) return { svcond: null, nodes: [], totalSealed: 0, reportingNodes: 0 };
    const nodes = [
      { nodeId: s.node, self: true, url: null, lastTick: s.svcond, sealedCount: s.sealedCount, chainHeadsDigest: s.chainHeadsDigest },
      ...s.peers.map((p) => ({
        nodeId: p.peerId,
        self: false,
        url: p.url,
        lastTick: p.lastTick,
        sealedCount: p.sealedCount,
        chainHeadsDigest: p.chainHeadsDigest,
      })),
    ];
    let total = 0;
    let reporting = 0;
    for (const n of nodes) {
      if (n.sealedCount !== null) {
        total += n.sealedCount;
        reporting++;
      }
    }
    return { svcond: s.svcond, nodes, totalSealed: total, reportingNodes: reporting };
  }

  /** Revenue totals from the provider (credits): burned and foundation shares, and their sum. */
  async revenue(): Promise<{
    svcond: number | null;
    burned: number;
    foundation: number;
    total: number;
    burnedShare: number;
    foundationShare: number;
    pooledCarry?: number;
  }> {
    const r = this.revenueProvider ? await this.revenueProvider() : { burned: 0, foundation: 0 };
    const total = r.burned + r.foundation;
    return {
      svcond: this.latest ? this.latest.svcond : null,
      burned: r.burned,
      foundation: r.foundation,
      total,
      burnedShare: total > 0 ? r.burned / total : 0,
      foundationShare: total > 0 ? r.foundation / total : 0,
      ...(r.pooledCarry === undefined ? {} : { pooledCarry: r.pooledCarry }),
    };
  }
}

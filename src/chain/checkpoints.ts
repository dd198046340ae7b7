// Signed checkpoints of each machine's Merkle tree (RFC 9162's signed tree head, in this project's JSON): the home
// node signs {slug, home, tree_size, root_hash, svcond} with its Ed25519 node key (the key its peer id embeds, so
// anyone verifies offline) every CHECKPOINT_ROWS rows or CHECKPOINT_TICKS ticks of growth (at most
// CHECKPOINTS_PER_SWEEP a tick), on demand when read,
// and gossips it (`chain.checkpoint` on svc/events/1, a row of the gossip handler table). A node that sees two
// checkpoints signed by one home for the same machine and size with different roots keeps both as evidence of a
// fork and reports them on mesh status.
import { z } from 'zod';
import { canonicalJson } from '../kernel/canonical.js';
import { padNum, type Store, type Sublevel } from '../store/db.js';
import { GossipError } from '../mesh/gossip-error.js';
import type { GossipHandler } from '../mesh/gossip-handlers.js';
import type { MerkleLog } from './merkle-log.js';
import { LruMap } from '../util/bounded-map.js';

export const CHECKPOINT_EVENT = 'chain.checkpoint';
export const CHECKPOINT_FORMAT = 'svc-chain-checkpoint/1';
/** A new checkpoint after this many rows … */
export const CHECKPOINT_ROWS = 256;
/** … or this many ticks (about 13 minutes) after the last one, when the tree has grown. */
export const CHECKPOINT_TICKS = 1024;
/** At most this many checkpoints signed per sweep (one a tick): background work stays bounded under any load. */
export const CHECKPOINTS_PER_SWEEP = 8;
const LATEST_CACHE_MAX = 4096;
const RECENT_FORKS = 20;

/**
 * What a node keeps of the checkpoints it sees: a home signs as many as it likes (of ever larger sizes, of machines it
 * invents), so the store keeps the newest `perMachine` sizes of each machine and home (a fork shows as two roots of
 * one size; one whose second root comes later is found by whoever holds both, verify-log) and `seenMax` in all; a checkpoint of a machine and home not held, past
 * `seenMax`, is not kept (it still travels on).
 */
export interface SeenBounds {
  perMachine: number;
  seenMax: number;
}
export const SEEN_BOUNDS: SeenBounds = { perMachine: 16, seenMax: 100_000 };

export interface Checkpoint {
  slug: string;
  home: string;
  tree_size: number;
  root_hash: string;
  svcond: number;
  /** base64 Ed25519 by `home` over checkpointText(). */
  signature: string;
}

export interface ForkEvidence {
  slug: string;
  home: string;
  tree_size: number;
  checkpoints: [Checkpoint, Checkpoint];
}

export const CheckpointSchema = z
  .object({
    slug: z.string().regex(/^[a-z0-9][a-z0-9-]{2,47}$/),
    home: z.string().min(1).max(128),
    tree_size: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
    root_hash: z.string().regex(/^[0-9a-f]{64}$/),
    svcond: z.number().int().min(0),
    signature: z.string().min(1).max(200),
  })
  .strict();

/** The exact text a checkpoint's signature covers. */
export function checkpointText(c: Omit<Checkpoint, 'signature'>): string {
  return canonicalJson({ format: CHECKPOINT_FORMAT, slug: c.slug, home: c.home, tree_size: c.tree_size, root_hash: c.root_hash, svcond: c.svcond });
}

export function verifyCheckpoint(c: Checkpoint, verify: (signer: string, text: string, signature: string) => boolean): boolean {
  return verify(c.home, checkpointText(c), c.signature);
}

export interface CheckpointDeps {
  nodeId: () => string;
  sign: (text: string) => string;
  verify: (signer: string, text: string, signature: string) => boolean;
  nowSvcond: () => number;
  /** Gossip a new checkpoint (the mesh, when there is one). */
  publish?: (c: Checkpoint) => Promise<void>;
}

export class Checkpoints {
  private readonly own: Sublevel;
  private readonly seen: Sublevel;
  private readonly forks: Sublevel;
  private forkCount = 0;
  /** Checkpoints in `seen` (counted at load), and those not kept past its bounds. */
  private seenCount = 0;
  private unrecorded = 0;
  private readonly recent: { slug: string; home: string; tree_size: number }[] = [];
  /** Machines with rows since their last checkpoint, and the tick of the first of those rows seen. */
  private readonly dirty = new Map<string, number>();
  private deps: CheckpointDeps | null = null;
  /** The latest own checkpoint's size and tick per machine (null: none yet), so a sweep reads no store for them. */
  private readonly latestCache = new LruMap<string, { tree_size: number; svcond: number } | null>(LATEST_CACHE_MAX);

  constructor(
    private readonly store: Store,
    private readonly merkle: MerkleLog,
    /** The chain's row count now (its head seq), without touching the tree. */
    private readonly rowsOf: (slug: string) => Promise<number>,
    private readonly bounds: SeenBounds = SEEN_BOUNDS,
  ) {
    this.own = store.sub('chain_checkpoints');
    this.seen = store.sub('chain_checkpoints_seen');
    this.forks = store.sub('chain_forks');
  }

  /** Signing and gossip are wired by the composition root (node/chain.ts). */
  use(deps: CheckpointDeps): void {
    this.deps = deps;
  }

  async load(): Promise<void> {
    const all = await this.store.range<ForkEvidence>(this.forks, {});
    this.forkCount = all.length;
    for (const f of all.slice(-RECENT_FORKS)) this.recent.push({ slug: f.value.slug, home: f.value.home, tree_size: f.value.tree_size });
    let seen = 0;
    for await (const _ of this.seen.keys()) seen++;
    this.seenCount = seen;
  }

  touched(slug: string): void {
    if (!this.dirty.has(slug)) this.dirty.set(slug, this.deps?.nowSvcond() ?? 0);
  }

  async latest(slug: string): Promise<Checkpoint | undefined> {
    const last = await this.store.range<Checkpoint>(this.own, { gte: `${slug}!`, lt: `${slug}!~`, reverse: true, limit: 1 });
    return last[0]?.value;
  }

  async at(slug: string, size: number): Promise<Checkpoint | undefined> {
    return this.store.get<Checkpoint>(this.own, `${slug}!${padNum(size)}`);
  }

  /** All own checkpoints of a machine, oldest first (bounded). */
  async list(slug: string, limit = 1000): Promise<Checkpoint[]> {
    return (await this.store.range<Checkpoint>(this.own, { gte: `${slug}!`, lt: `${slug}!~`, limit })).map((e) => e.value);
  }

  /** The checkpoint of the tree as it is now: the stored one if it covers every row, else a new one, signed. */
  async current(slug: string): Promise<Checkpoint> {
    const deps = this.need();
    const { size, root } = await this.merkle.catchUp(slug);
    const last = await this.latest(slug);
    if (last && last.tree_size === size) return last;
    const body = { slug, home: deps.nodeId(), tree_size: size, root_hash: root.toString('hex'), svcond: deps.nowSvcond() };
    const cp: Checkpoint = { ...body, signature: deps.sign(checkpointText(body)) };
    await this.store.commit([{ type: 'put', sub: this.own, key: `${slug}!${padNum(size)}`, value: cp }]);
    this.latestCache.set(slug, { tree_size: cp.tree_size, svcond: cp.svcond });
    await this.record(cp);
    if (deps.publish) await deps.publish(cp).catch(() => undefined);
    return cp;
  }

  /** Every tick: machines grown by CHECKPOINT_ROWS rows, or grown and CHECKPOINT_TICKS ticks since the last, are signed. */
  async tick(): Promise<number> {
    const deps = this.need();
    let signed = 0;
    for (const [slug, since] of [...this.dirty]) {
      if (signed >= CHECKPOINTS_PER_SWEEP) break;
      let last = this.latestCache.get(slug);
      if (last === undefined) {
        const stored = await this.latest(slug);
        last = stored ? { tree_size: stored.tree_size, svcond: stored.svcond } : null;
        this.latestCache.set(slug, last);
      }
      // The tree catches up only when a checkpoint is due: no work on the write path, none between checkpoints.
      const grown = (await this.rowsOf(slug)) - (last?.tree_size ?? 0);
      if (grown <= 0) {
        this.dirty.delete(slug);
        continue;
      }
      // Time counts from the last checkpoint, or from the first unsigned row of a machine that has none.
      if (grown >= CHECKPOINT_ROWS || deps.nowSvcond() - Math.max(last?.svcond ?? 0, since) >= CHECKPOINT_TICKS) {
        await this.current(slug);
        this.dirty.delete(slug);
        signed++;
      }
    }
    return signed;
  }

  /**
   * A checkpoint seen (gossip, or signed here): kept by (slug, home, size) within the bounds (SeenBounds); a second one
   * with another root is a fork, and both are kept as evidence. Returns whether it was a fork.
   */
  async record(cp: Checkpoint): Promise<boolean> {
    const key = `${cp.slug}!${cp.home}!${padNum(cp.tree_size)}`;
    const before = await this.store.get<Checkpoint>(this.seen, key);
    if (!before) {
      await this.keep(key, cp);
      return false;
    }
    if (before.root_hash === cp.root_hash) return false;
    const [a, b] = [before, cp].sort((x, y) => (x.root_hash < y.root_hash ? -1 : 1)) as [Checkpoint, Checkpoint];
    const forkKey = `${key}!${a.root_hash}!${b.root_hash}`;
    if ((await this.store.get(this.forks, forkKey)) !== undefined) return true;
    const evidence: ForkEvidence = { slug: cp.slug, home: cp.home, tree_size: cp.tree_size, checkpoints: [a, b] };
    await this.store.commit([{ type: 'put', sub: this.forks, key: forkKey, value: evidence }]);
    this.forkCount++;
    this.recent.push({ slug: cp.slug, home: cp.home, tree_size: cp.tree_size });
    if (this.recent.length > RECENT_FORKS) this.recent.shift();
    return true;
  }

  /**
   * Keep a checkpoint of a size not held. A machine holding perMachine sizes, or any once seenMax are held, gives its
   * oldest size for a newer one (an older one is not kept); one of a machine and home not held is not kept past seenMax.
   */
  private async keep(key: string, cp: Checkpoint): Promise<void> {
    const prefix = `${cp.slug}!${cp.home}!`;
    const held = await this.store.range<Checkpoint>(this.seen, { gte: prefix, lt: `${prefix}~`, limit: this.bounds.perMachine });
    const atBound = this.seenCount >= this.bounds.seenMax;
    const rotate = held.length >= this.bounds.perMachine || (held.length > 0 && atBound);
    if ((held.length === 0 && atBound) || (rotate && key < held[0]!.key)) {
      this.unrecorded++;
      return;
    }
    await this.store.commit([
      { type: 'put', sub: this.seen, key, value: cp },
      ...(rotate ? [{ type: 'del' as const, sub: this.seen, key: held[0]!.key }] : []),
    ]);
    if (!rotate) this.seenCount++;
  }

  /** What mesh status reports: forks seen, the checkpoints kept to find them, and those seen but not kept (SeenBounds). */
  forkReport(): { count: number; recent: { slug: string; home: string; tree_size: number }[]; held: number; unrecorded: number } {
    return { count: this.forkCount, recent: [...this.recent], held: this.seenCount, unrecorded: this.unrecorded };
  }

  async evidence(limit = 100): Promise<ForkEvidence[]> {
    return (await this.store.range<ForkEvidence>(this.forks, { limit })).map((e) => e.value);
  }

  /** The gossip row: a checkpoint is accepted from its home only, with a good signature. */
  handler(): GossipHandler<Checkpoint> {
    return {
      type: CHECKPOINT_EVENT,
      body: CheckpointSchema,
      handle: async (cp, event) => {
        const deps = this.need();
        if (cp.home !== event.sender) throw new GossipError('reject', 403, 'SVC_FORBIDDEN', 'a checkpoint travels from its home only');
        if (!verifyCheckpoint(cp, deps.verify)) throw new GossipError('reject', 401, 'INVALID_SIGNATURE', 'checkpoint signature does not verify');
        await this.record(cp);
      },
    };
  }

  private need(): CheckpointDeps {
    if (!this.deps) throw new Error('checkpoints are not wired (Checkpoints.use)');
    return this.deps;
  }
}

// Where state machines live. A machine's home is the node that created it (architecture.md §5); machines are not
// replicated, so a node asked about a machine it does not hold needs the home's peer id (an identity's default machine
// follows its owner identity instead: http/machine-place.ts). Slugs are claimed mesh-wide: a home gossips a
// `chain.slug` claim {slug, home, svcond} when it creates a machine (a row of the gossip handler table), this
// directory keeps the claims in a bounded sublevel, and a node refuses to create a slug another node has claimed. Two
// homes claiming one slug (created within the same gossip delay): the earlier tick wins, ties to the smaller peer id —
// like DNS, every node picks the same home whatever order it learnt them in, the losing home included (its own claim
// is stored here too, and it forwards the slug to the winner). A claim is heard only within the skew window of its
// tick: a race is between creations inside the gossip delay. A slug no claim named is asked of the peers: an answer
// counts only when it is a `machine.home` event signed by the peer asked, naming itself as the home, at a tick near
// now, and stands only against the other peers' views (lookup); such answers (no tick) rank after any claim with a
// tick, then by creation time.
import type { Op, Store, Sublevel } from '../store/db.js';
import { MissedLookups } from '../util/missed-lookups.js';
import { askPeers, type PeerAddress } from './ask-peers.js';
import { claimStands } from './home-corroboration.js';
import type { OverMesh } from './peer-http.js';
import { MAX_SKEW_TICKS } from './validator.js';
import { verifyEventSignature, type MeshEvent } from './wire.js';
import { z } from 'zod';
import { GossipError } from './gossip-error.js';
import type { GossipHandler } from './gossip-handlers.js';

export const SLUG_CLAIM = 'chain.slug';

export const MACHINE_HOME = 'machine.home';
/** What a state-machine slug can look like (creation enforces it; default slugs are m- and 16 hex). */
export const SLUG_PATTERN = /^[a-z0-9][a-z0-9-]{2,47}$/;
const LOOKUP_TIMEOUT_MS = 2_000;
const NEGATIVE_MS = 30_000;
const NEGATIVE_MAX = 10_000;

export interface MachineHome {
  slug: string;
  /** Peer id of the node that holds the machine. */
  home: string;
  /** Creation time the home states. */
  created_unix_ms: number;
  /** The machine's genesis tick, from a `chain.slug` claim: decides between two homes claiming one slug. */
  svcond?: number;
}

export interface MachineDirectoryOptions {
  store: Store;
  nodeId: () => string;
  nowSvcond: () => number;
  nowMs: () => number;
  /** Peers and their HTTP URLs (from tick events). */
  peers: () => { peerId: string; url: string | null }[];
  /** Grows each time a peer is learnt (mesh/peer-table.ts): a slug no peer claimed is asked again then. */
  peersLearnt?: () => number;
  /** The libp2p way to a peer whose URL is unknown or does not connect (absent or null: URLs only). */
  overMesh?: () => OverMesh | null;
  /** Entries kept in the store; beyond it homes are still looked up, not remembered. */
  maxEntries?: number;
}

/**
 * The slug-loss markers (chain/slug-loss.ts), written in the batch of the directory entry that decides them: a loss
 * is owed when another home wins a slug of a machine held here, and a creation's marker clears when this node's own
 * claim holds. The settlement pass at start reads the markers only.
 */
export interface SlugLossMarks {
  /** Ops marking a loss owed: empty unless a machine of the slug is held here and not marked lost yet. */
  owedOps(slug: string): Promise<Op[]>;
  /** Ops clearing the slug's marker (nothing is owed). */
  clearOps(slug: string): Op[];
}

export function isMachineHome(v: unknown): v is MachineHome {
  if (!v || typeof v !== 'object') return false;
  const o = v as Record<string, unknown>;
  return (
    typeof o.slug === 'string' &&
    SLUG_PATTERN.test(o.slug) &&
    typeof o.home === 'string' &&
    o.home.length > 0 &&
    o.home.length <= 128 &&
    typeof o.created_unix_ms === 'number' &&
    Number.isSafeInteger(o.created_unix_ms) &&
    o.created_unix_ms >= 0 &&
    (o.svcond === undefined || (typeof o.svcond === 'number' && Number.isSafeInteger(o.svcond) && o.svcond >= 0))
  );
}

/** The claim that wins a slug: the earlier tick, then the smaller peer id (one home's claims merge: its tick is kept). */
export function better(a: MachineHome, b: MachineHome): MachineHome {
  if (a.home === b.home) return a.svcond !== undefined || b.svcond === undefined ? a : b;
  const ta = a.svcond ?? Number.MAX_SAFE_INTEGER;
  const tb = b.svcond ?? Number.MAX_SAFE_INTEGER;
  if (ta !== tb) return ta < tb ? a : b;
  if (a.svcond === undefined && a.created_unix_ms !== b.created_unix_ms) return a.created_unix_ms < b.created_unix_ms ? a : b;
  return a.home <= b.home ? a : b;
}

const SlugClaimSchema = z
  .object({
    slug: z.string().regex(SLUG_PATTERN),
    home: z.string().min(1).max(128),
    svcond: z.number().int().min(0),
    created_unix_ms: z.number().int().min(0),
  })
  .strict();

export class MachineDirectory {
  private readonly sub: Sublevel;
  private readonly maxEntries: number;
  private count = 0;
  /** Slugs no peer claimed: a stream of unknown slugs does not fan out to the mesh. */
  private readonly unknown: MissedLookups;
  private readonly inflight = new Map<string, Promise<string | null>>();
  private writes: Promise<unknown> = Promise.resolve();
  /** Told when a slug's stored winner is another home (chain/slug-loss.ts settles a machine of it held here). */
  private wonElsewhere: ((slug: string, home: string) => void) | null = null;
  private marks: SlugLossMarks | null = null;

  constructor(private readonly opts: MachineDirectoryOptions) {
    this.sub = opts.store.sub('mesh-machines');
    this.maxEntries = opts.maxEntries ?? 100_000;
    this.unknown = new MissedLookups({ max: NEGATIVE_MAX, nowMs: opts.nowMs, peersLearnt: opts.peersLearnt });
  }

  async load(): Promise<void> {
    let n = 0;
    for await (const _ of this.sub.keys()) n++;
    this.count = n;
  }

  /** Call `fn` each time a slug's stored winner becomes (or, for this node's own claim, stays) another home. */
  onWonElsewhere(fn: (slug: string, home: string) => void): void {
    this.wonElsewhere = fn;
  }

  /** Write the slug-loss markers with the entries that decide them (chain/slug-loss.ts). */
  useMarks(marks: SlugLossMarks): void {
    this.marks = marks;
  }

  /**
   * After this node made a machine of the slug (its batch carries a marker): in the queue of the directory's writes,
   * a slug another home already holds is a loss (told, the marker stays until settled); else the marker clears.
   */
  confirmOwn(slug: string): Promise<void> {
    const run = this.writes.then(async () => {
      const home = await this.known(slug);
      if (home !== null && home !== this.opts.nodeId()) this.wonElsewhere?.(slug, home);
      else if (this.marks) await this.opts.store.commit(this.marks.clearOps(slug));
    });
    this.writes = run.catch(() => undefined);
    return run;
  }

  /** Entries in the store. */
  get size(): number {
    return this.count;
  }

  /** Remember that a peer holds a machine (this node's own machines are in the chain store, not here). */
  learn(rec: MachineHome): Promise<boolean> {
    return this.queued(rec, false);
  }

  /** One at a time: each learn reads the entry the previous one wrote. */
  private queued(rec: MachineHome, own: boolean): Promise<boolean> {
    const run = this.writes.then(() => this.learnNow(rec, own));
    this.writes = run.catch(() => undefined);
    return run;
  }

  private async learnNow(rec: MachineHome, own: boolean): Promise<boolean> {
    if (!isMachineHome(rec) || (rec.home === this.opts.nodeId() && !own)) return false;
    const existing = await this.opts.store.get<MachineHome>(this.sub, rec.slug);
    const next = existing ? better(existing, rec) : rec;
    if (existing && next.home === existing.home && next.created_unix_ms === existing.created_unix_ms && next.svcond === existing.svcond) {
      // This node's own claim, made after another home's better one was stored: it lost on arrival.
      // (Its creation's marker stays until the loss is settled.) This node's claim holding: nothing is owed.
      if (own && next.home !== this.opts.nodeId()) this.wonElsewhere?.(rec.slug, next.home);
      else if (own && this.marks) await this.opts.store.commit(this.marks.clearOps(rec.slug));
      return false;
    }
    if (!existing && this.count >= this.maxEntries) {
      if (own && this.marks) await this.opts.store.commit(this.marks.clearOps(rec.slug));
      return false;
    }
    const value: MachineHome = { slug: next.slug, home: next.home, created_unix_ms: next.created_unix_ms };
    if (next.svcond !== undefined) value.svcond = next.svcond;
    // A loss is owed in the entry's own batch (a stop before the settlement leaves the marker for the next start).
    let marks: Op[] = [];
    if (this.marks) marks = next.home !== this.opts.nodeId() ? await this.marks.owedOps(rec.slug) : own ? this.marks.clearOps(rec.slug) : [];
    await this.opts.store.commit([{ type: 'put', sub: this.sub, key: rec.slug, value }, ...marks]);
    if (!existing) this.count++;
    this.unknown.forget(rec.slug);
    if (next.home !== this.opts.nodeId()) this.wonElsewhere?.(rec.slug, next.home);
    return true;
  }

  /** This node's own claim (it created the machine): stored like the others, so the winner is chosen the same way. */
  claimOwn(rec: MachineHome): Promise<boolean> {
    return this.queued(rec, true);
  }

  /** The gossip row of slug claims: a claim travels from its home only. */
  claimHandler(): GossipHandler<z.infer<typeof SlugClaimSchema>> {
    return {
      type: SLUG_CLAIM,
      body: SlugClaimSchema,
      handle: async (claim, event) => {
        if (claim.home !== event.sender) throw new GossipError('reject', 403, 'SVC_FORBIDDEN', 'a slug is claimed by its home only');
        // A claim is news, gossiped as its machine is made: one dated outside the skew window would let a member take a
        // slug held long since (the earlier tick wins) and make its home mark the machine lost.
        if (Math.abs(claim.svcond - this.opts.nowSvcond()) > MAX_SKEW_TICKS) {
          throw new GossipError('ignore', 400, 'INVALID_EVENT', `a slug claim is heard only within ${MAX_SKEW_TICKS} ticks of its genesis tick`);
        }
        await this.learn(claim);
      },
    };
  }

  /** The home recorded here, without asking anyone. */
  async known(slug: string): Promise<string | null> {
    if (!SLUG_PATTERN.test(slug)) return null;
    return (await this.opts.store.get<MachineHome>(this.sub, slug))?.home ?? null;
  }

  /** The peer id of the machine's home: recorded here, else asked of the peers; null when nobody holds it. */
  async homeOf(slug: string): Promise<string | null> {
    if (!SLUG_PATTERN.test(slug)) return null;
    const known = await this.known(slug);
    if (known) return known;
    if (this.unknown.stands(slug)) return null;
    let pending = this.inflight.get(slug);
    if (!pending) {
      pending = this.lookup(slug).finally(() => this.inflight.delete(slug));
      this.inflight.set(slug, pending);
    }
    return pending;
  }

  private async lookup(slug: string): Promise<string | null> {
    const self = this.opts.nodeId();
    const now = this.opts.nowSvcond();
    const peers = this.opts.peers().filter((p) => p.peerId !== self);
    const overMesh = this.opts.overMesh?.() ?? null;
    const answers = await askPeers(peers, `/api/mesh/machines/${slug}`, LOOKUP_TIMEOUT_MS, overMesh, async (body, p): Promise<MachineHome | null> => {
      const event = body as MeshEvent | null;
      if (!event || event.type !== MACHINE_HOME || event.sender !== p.peerId) return null;
      if (typeof event.svcond !== 'number' || Math.abs(event.svcond - now) > MAX_SKEW_TICKS) return null;
      const claim = event.body;
      if (!isMachineHome(claim) || claim.slug !== slug || claim.home !== p.peerId) return null;
      if (!(await verifyEventSignature(event))) return null;
      return { slug, home: claim.home, created_unix_ms: claim.created_unix_ms };
    });
    const claims = answers.flatMap((a) => (a.answer === null ? [] : [a.answer]));
    // A holder's answer is its own word: it stands only where the other peers do not place the machine at another home
    // more often (a lying member answering for a machine it does not hold would be sent its keys).
    const views = claims.length === 0 ? [] : await this.viewsOf(slug, peers, overMesh);
    const standing = claims.filter((c) =>
      claimStands(
        c.home,
        views.filter((v) => v.peer !== c.home).map((v) => v.home),
      ),
    );
    let winner: MachineHome | null = null;
    for (const c of standing) {
      await this.learn(c);
      winner = winner ? better(winner, c) : c;
    }
    if (winner) {
      // A stored claim (learnt meanwhile from gossip) may be better than the answers.
      return (await this.known(slug)) ?? winner.home;
    }
    this.unknown.missed(slug, NEGATIVE_MS);
    return null;
  }

  /** Where each peer that knows the slug places its machine (`GET /api/mesh/machines/:slug/home`). */
  private async viewsOf(slug: string, peers: readonly PeerAddress[], overMesh: OverMesh | null): Promise<{ peer: string; home: string }[]> {
    const answers = await askPeers(peers, `/api/mesh/machines/${slug}/home`, LOOKUP_TIMEOUT_MS, overMesh, (body, p) => {
      const b = body as { nodeId?: unknown; slug?: unknown; home?: unknown } | null;
      return b && b.nodeId === p.peerId && b.slug === slug && typeof b.home === 'string' ? b.home : null;
    });
    return answers.flatMap((a) => (a.answer === null ? [] : [{ peer: a.peer.peerId, home: a.answer }]));
  }
}

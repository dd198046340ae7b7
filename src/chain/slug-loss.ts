// The losing home of a mesh-wide slug race. Two homes creating one slug within the gossip delay both succeed
// locally; every node then picks the same winner (mesh/machines.ts: the earlier tick, then the smaller peer id). The
// loser's machine stays on its node — its rows are a record of what happened — but its slug now names the winner's
// machine, so the loser marks it lost, refunds its owner the creation charge, and revokes its zsm_ admin key (which
// opened only this machine), all in ONE batch under the machine's lock. The mark is the "done" flag: a machine
// already marked is never refunded again. A loss is owed from the batch of the directory entry that decides it: that
// batch writes an "owed" marker (mesh/machines.ts, SlugLossMarks), and so does the batch creating a machine, until
// the node's own claim is confirmed; the settlement batch deletes it. A loss the node learnt but did not settle
// before a stop is settled by the pass at the next start, which reads the markers only (never every machine). The
// owner sees the machine with `status: "lost"` in GET /api/chain/aggregate/list (its home answers).
import type { Op, Store, Sublevel } from '../store/db.js';
import { backfillOnce } from '../store/backfill.js';
import type { ChainService, MachineLoss, MachineRecord } from './service.js';

/** Slugs with a loss possibly owed: slug → {since_unix_ms}. */
export const SLUG_OWED_SUB = 'chain_slug_owed';
/** Machines held before the markers existed: scanned once (store/backfill.ts), marked where a loss is owed. */
const OWED_BACKFILL_KEY = 'slug-owed-v1';

export interface SlugLossDeps {
  store: Store;
  chain: ChainService;
  /** The owner's wallet: loaded, then credited synchronously in the batch (tally/ledger.ts). */
  ledger: {
    wallet(zid: string): Promise<unknown>;
    creditOps(zid: string, free: number, paid: number): { ops: Op[]; rollback: () => void };
  };
  /** Revokes the machine's admin key in the same batch (identity/service.ts). */
  identity: { revokeDigestOps(digest: string): Promise<{ ops: Op[]; applied: () => void } | null> };
  nodeId: () => string;
  nowMs: () => number;
  /** The home the mesh's directory holds for a slug (null: none known). */
  winnerOf: (slug: string) => Promise<string | null>;
  /** The directory's check of a marked slug whose winner is not another home (MachineDirectory.confirmOwn). */
  confirm?: (slug: string) => Promise<void>;
  /**
   * Claim a machine's slug mesh-wide again (MachineDirectory.claimOwn and the gossip): at start, for a marked machine
   * whose slug the directory does not hold at all — its creation was written, and the node stopped before its claim.
   * False when the machine is not claimed that way (an identity's default machine: the mesh learns it from the key's
   * identity assertion); the directory's check clears its marker then.
   */
  reclaim?: (machine: MachineRecord) => Promise<boolean>;
  log?: (msg: string, fields: Record<string, unknown>) => void;
}

/** What the pass at start did: markers read, losses settled (tests count the machines read, none without a marker). */
export interface ReconcileStats {
  markers: number;
  settled: number;
}

export class SlugLosses {
  private readonly owed: Sublevel;

  constructor(private readonly deps: SlugLossDeps) {
    this.owed = deps.store.sub(SLUG_OWED_SUB);
  }

  /** The marker's put, in a creation's batch (cleared when the node's claim holds) or a directory entry's. */
  markOp(slug: string): Op {
    return { type: 'put', sub: this.owed, key: slug, value: { since_unix_ms: this.deps.nowMs() } };
  }

  clearOps(slug: string): Op[] {
    return [{ type: 'del', sub: this.owed, key: slug }];
  }

  /** A loss is owed when a machine of the slug is held here and not yet marked lost. */
  async owedOps(slug: string): Promise<Op[]> {
    const machine = await this.deps.chain.getMachine(slug);
    return machine && machine.home === this.deps.nodeId() && !machine.lost ? [this.markOp(slug)] : [];
  }

  /**
   * Settle the slug's race for this node: when another home holds the slug and this node has a machine of it that
   * is not marked yet, mark it lost, refund and revoke, in one batch. Returns the loss written, or null.
   */
  async settle(slug: string): Promise<MachineLoss | null> {
    const self = this.deps.nodeId();
    const winner = await this.deps.winnerOf(slug);
    if (winner === null || winner === self) return null;
    const { chain } = this.deps;
    return chain.locks.run(`machine:${slug}`, async () => {
      const machine = await chain.getMachine(slug);
      if (!machine || machine.home !== self || machine.lost) return null;
      const charge = await chain.creationCharge(slug);
      const credits = charge?.charged ?? 0;
      // Each part back where it came from; a charge recorded without its split (an older record): to funded_by's.
      const split = charge?.split ?? (charge?.funded_by === 'paid' ? { free: 0, paid: credits } : { free: credits, paid: 0 });
      const revoke = await this.deps.identity.revokeDigestOps(machine.key_digest);
      await this.deps.ledger.wallet(machine.owner);
      // From here to the commit nothing waits: the credit is applied in memory and written with the mark.
      const to = split.free > 0 && split.paid > 0 ? 'both' : split.paid > 0 ? 'paid' : 'free';
      const refund: MachineLoss['refund'] = to === 'both' ? { credits, to, free: split.free, paid: split.paid } : { credits, to };
      const loss: MachineLoss = { lost_to: winner, lost_unix_ms: this.deps.nowMs(), refund };
      const next: MachineRecord = { ...machine, lost: loss };
      const credit = credits > 0 ? this.deps.ledger.creditOps(machine.owner, split.free, split.paid) : null;
      try {
        await chain.commit([...chain.machineUpdateOps(machine, next), ...(credit?.ops ?? []), ...(revoke?.ops ?? []), ...this.clearOps(slug)]);
      } catch (err) {
        credit?.rollback();
        throw err;
      }
      revoke?.applied();
      this.deps.log?.('state machine lost its slug to another home; creation charge refunded', { slug, winner, owner: machine.owner, refund: credits });
      return loss;
    });
  }

  /**
   * At start: settle the losses owed (the markers; the first start of this version marks, once, the machines held
   * before markers existed). A marker whose machine is gone or already marked lost is deleted; one whose slug no
   * other home holds goes to the directory's check (a claim confirmed clears it).
   */
  async reconcile(): Promise<ReconcileStats> {
    const self = this.deps.nodeId();
    await backfillOnce<MachineRecord>(this.deps.store, {
      key: OWED_BACKFILL_KEY,
      source: this.deps.chain.machineRecords,
      opsFor: async (_slug, m) => {
        if (m.home !== self || m.lost) return [];
        const winner = await this.deps.winnerOf(m.slug);
        return winner !== null && winner !== self ? [this.markOp(m.slug)] : [];
      },
    });
    const stats: ReconcileStats = { markers: 0, settled: 0 };
    const slugs: string[] = [];
    for await (const slug of this.owed.keys()) slugs.push(slug as string);
    for (const slug of slugs) {
      stats.markers++;
      const machine = await this.deps.chain.getMachine(slug);
      if (!machine || machine.home !== self || machine.lost) {
        await this.deps.store.commit(this.clearOps(slug));
        continue;
      }
      const winner = await this.deps.winnerOf(slug);
      if (winner !== null && winner !== self) {
        if (await this.settle(slug)) stats.settled++;
      } else if (winner === null && this.deps.reclaim && (await this.deps.reclaim(machine))) {
        // Claimed again: the claim's own batch clears the marker (or, beaten meanwhile, the loss is settled).
      } else if (this.deps.confirm) await this.deps.confirm(slug);
      else await this.deps.store.commit(this.clearOps(slug));
    }
    return stats;
  }
}

/** A slug claim as the mesh's directory holds it and the gossip carries it (mesh/machines.ts). */
export interface SlugClaim {
  slug: string;
  home: string;
  svcond: number;
  created_unix_ms: number;
}

export interface SlugReclaimDeps {
  /** The prefix of an identity's default machine: the mesh learns that slug from the key's identity assertion. */
  defaultSlugPrefix: string;
  nodeId: () => string;
  /** Hold the claim in this node's directory (MachineDirectory.claimOwn). */
  claimOwn: (claim: SlugClaim) => Promise<unknown>;
  /** Gossip the claim; a failure is the gossip's (the directory's check settles the slug later). */
  announce: (claim: SlugClaim) => Promise<unknown>;
}

/**
 * The reclaim of SlugLossDeps: claim the machine's slug again with its genesis tick and creation time, held here and
 * announced; false for a default machine, never claimed that way.
 */
export function slugReclaim(deps: SlugReclaimDeps): (machine: MachineRecord) => Promise<boolean> {
  return async (m) => {
    if (m.slug.startsWith(deps.defaultSlugPrefix)) return false;
    const claim: SlugClaim = { slug: m.slug, home: deps.nodeId(), svcond: m.genesis_svcond, created_unix_ms: m.created_unix_ms };
    await deps.claimOwn(claim);
    void deps.announce(claim).catch(() => undefined);
    return true;
  };
}

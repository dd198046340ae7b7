// The losing home of a mesh-wide slug race. Two homes creating one slug within the gossip delay both succeed
// locally; every node then picks the same winner (mesh/machines.ts: the earlier tick, then the smaller peer id). The
// loser's machine stays on its node — its rows are a record of what happened — but its slug now names the winner's
// machine, so the loser marks it lost, refunds its owner the creation charge, and revokes its zsm_ admin key (which
// opened only this machine), all in ONE batch under the machine's lock. The mark is the "done" flag: a machine
// already marked is never refunded again, and a loss the node learnt but did not settle before a stop (the
// directory's entry is written before) is settled by the pass at the next start. The owner sees the machine with
// `status: "lost"` in GET /api/chain/aggregate/list (its home answers).
import type { Op } from '../store/db.js';
import type { ChainService, MachineLoss, MachineRecord } from './service.js';

export interface SlugLossDeps {
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
  log?: (msg: string, fields: Record<string, unknown>) => void;
}

export class SlugLosses {
  constructor(private readonly deps: SlugLossDeps) {}

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
      const to = charge?.funded_by === 'paid' ? 'paid' : 'free';
      const revoke = await this.deps.identity.revokeDigestOps(machine.key_digest);
      await this.deps.ledger.wallet(machine.owner);
      // From here to the commit nothing waits: the credit is applied in memory and written with the mark.
      const loss: MachineLoss = { lost_to: winner, lost_unix_ms: this.deps.nowMs(), refund: { credits, to } };
      const next: MachineRecord = { ...machine, lost: loss };
      const credit = credits > 0 ? this.deps.ledger.creditOps(machine.owner, to === 'free' ? credits : 0, to === 'paid' ? credits : 0) : null;
      try {
        await chain.commit([...chain.machineUpdateOps(machine, next), ...(credit?.ops ?? []), ...(revoke?.ops ?? [])]);
      } catch (err) {
        credit?.rollback();
        throw err;
      }
      revoke?.applied();
      this.deps.log?.('state machine lost its slug to another home; creation charge refunded', { slug, winner, owner: machine.owner, refund: credits });
      return loss;
    });
  }

  /** At start: settle every machine held here whose slug the directory gives to another home (a loss left unsettled). */
  async reconcile(): Promise<number> {
    const self = this.deps.nodeId();
    const candidates: string[] = [];
    for await (const m of this.deps.chain.allMachines()) {
      if (m.home !== self || m.lost) continue;
      const winner = await this.deps.winnerOf(m.slug);
      if (winner !== null && winner !== self) candidates.push(m.slug);
    }
    let n = 0;
    for (const slug of candidates) if (await this.settle(slug)) n++;
    return n;
  }
}

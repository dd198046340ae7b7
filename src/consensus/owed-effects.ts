// Effects of a verdict owed by this node (slashing.ts, challenges.ts): one marker row per effect, put in the batch
// that records the verdict and deleted when the effect is done, so the passes that attempt them again (at start and
// every few ticks while a marker is left: ChallengeService.retryOwedEffects) read the markers and the challenges they
// name only, never every stored challenge:
//   challenges_owed   `challenge_id!kind` → 1
//     stake    the challenger's stake, at its home: deleted in the batch that burns or returns it
//     mark     the bond marked slashed in this node's registry (upheld, every node): deleted in the mark's batch
//     slash    the bond's envelopes, at the bond's home (upheld): deleted in the batch that moves them
//     deliver  the verdict sent by the opener to the bond's home: deleted in the batch that marks it acknowledged
// Each effect is still idempotent on its own record (slashing's `stake!` / `slash!` rows): a marker left by a stop
// between an effect's batch and its deletion only makes the next pass look at it again.
// And one duty with a window: the opener and the committee announce a verdict again for deadlineTicks after it
// (ChallengeService.reannounceVerdicts), from their own marker, so a stop in between does not end it:
//   challenges_announce   `challenge_id` → decided_svcond   (deleted once the window has passed)
import type { Op, Store, Sublevel } from '../store/db.js';
import { backfillOnce } from '../store/backfill.js';
import type { ChallengeEntry } from './challenges.js';

export const OWED_KINDS = ['stake', 'mark', 'slash', 'deliver'] as const;
export type OwedKind = (typeof OWED_KINDS)[number];

/** The one-time pass marking the effects owed by verdicts stored before the owed-effect markers existed. */
const BACKFILL_KEY = 'challenges-owed-v1';

/** The key of an effect's own record in the slashing sublevel (its presence: the effect is done). */
export function effectRecordKey(kind: 'stake' | 'slash', challengeId: string): string {
  return `${kind}!${challengeId}`;
}

/** What a decided entry owes at node `me` (delivers: the node sends verdicts directly, outbox.ts). */
export function owedBy(e: ChallengeEntry, me: string, delivers: boolean): OwedKind[] {
  if (!e.verdict) return [];
  const c = e.challenge.challenge;
  const kinds: OwedKind[] = [];
  if (e.stake && c.challenger_home === me) kinds.push('stake');
  if (e.verdict.outcome === 'upheld') kinds.push('mark');
  if (e.verdict.outcome === 'upheld' && c.executed_by.node === me) kinds.push('slash');
  if (delivers && c.challenger_home === me && c.executed_by.node !== me && !e.verdict_delivered) kinds.push('deliver');
  return kinds;
}

/** Whether node `me` announces a decided entry's verdict again (the opener and the committee). */
export function announces(e: ChallengeEntry, me: string): boolean {
  const c = e.challenge.challenge;
  return e.verdict !== null && (c.challenger_home === me || c.committee.includes(me));
}

export class OwedEffects {
  private readonly sub: Sublevel;
  private readonly slashing: Sublevel;
  private readonly announceSub: Sublevel;

  constructor(private readonly store: Store) {
    this.sub = store.sub('challenges_owed');
    this.slashing = store.sub('slashing');
    this.announceSub = store.sub('challenges_announce');
  }

  /** The announcing duty of a verdict decided at `decided` (in the verdict's batch). */
  announcePut(id: string, decided: number): Op {
    return { type: 'put', sub: this.announceSub, key: id, value: decided };
  }

  announceDone(id: string): Op {
    return { type: 'del', sub: this.announceSub, key: id };
  }

  /** The verdicts this node announces again, with the tick each was decided at. */
  async announcing(): Promise<{ id: string; decided: number }[]> {
    return (await this.store.range<number>(this.announceSub)).map((e) => ({ id: e.key, decided: e.value }));
  }

  /** The marker of an owed effect (in the verdict's batch). */
  put(id: string, kind: OwedKind): Op {
    return { type: 'put', sub: this.sub, key: `${id}!${kind}`, value: 1 };
  }

  /** Its deletion (in the effect's batch; blind). */
  done(id: string, kind: OwedKind): Op {
    return { type: 'del', sub: this.sub, key: `${id}!${kind}` };
  }

  /** The challenges with an effect owed, each with the kinds owed. */
  async owed(): Promise<Map<string, OwedKind[]>> {
    const byId = new Map<string, OwedKind[]>();
    for (const { key } of await this.store.range<number>(this.sub)) {
      const cut = key.lastIndexOf('!');
      const id = key.slice(0, cut);
      byId.set(id, [...(byId.get(id) ?? []), key.slice(cut + 1) as OwedKind]);
    }
    return byId;
  }

  /** Every marker of a challenge deleted (it is gone, or has no verdict). */
  clearOps(id: string): Op[] {
    return OWED_KINDS.map((k) => this.done(id, k));
  }

  /**
   * At start, once: mark the effects still owed by verdicts stored before the markers (an effect whose record is
   * written is done; a verdict acknowledged is delivered), and the announcing duties still within their window
   * (`announceWithin`: decided at or after that tick). A slashing written whose bond is still active (`bondActive`:
   * its release not done) stays owed, as every start tried the release again before. A stop mid-pass resumes.
   */
  backfill(entries: Sublevel, me: string, delivers: boolean, announceWithin: number, bondActive: (bondId: string) => boolean): Promise<number> {
    return backfillOnce<ChallengeEntry>(this.store, {
      key: BACKFILL_KEY,
      source: entries,
      opsFor: async (id, e) => {
        const ops: Op[] = [];
        if (announces(e, me) && e.verdict!.decided_svcond >= announceWithin) ops.push(this.announcePut(id, e.verdict!.decided_svcond));
        for (const kind of owedBy(e, me, delivers)) {
          const written = (kind === 'stake' || kind === 'slash') && (await this.store.get<unknown>(this.slashing, effectRecordKey(kind, id))) !== undefined;
          if (written && !(kind === 'slash' && bondActive(e.challenge.challenge.executed_by.bond_id))) continue;
          ops.push(this.put(id, kind));
        }
        return ops;
      },
    });
  }
}

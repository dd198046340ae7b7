// A node back from a stop serves an identity it is the home of only once it has checked it still is (docs/decisions.md
// "Custody", "An old home back from a crash"): while it was down a failover may have made another custodian the home
// of a later epoch, and its directory still names itself. Until the check, its requests for the identity answer 503
// and its custody view says `held`, never `certified`. The check asks the other custodians of the identity's set (the
// set of the epoch it knows) for the home changes they keep above that epoch and the highest epoch they accepted or
// promised (protocol.ts changes request, `fenced`). Outcomes, as a table (the first row that holds decides):
//   moved      a later change checked and applied here: the identity's requests go to its new home
//   fenced     a custodian accepted or promised a later epoch, and no change of it holds here: this node is fenced
//              (its writes are refused; a retake or the change heard ends it), so it claims nothing
//   short      fewer than majority − 1 custodians answered with nothing later: the check cannot say (asked again later)
//   confirmed  majority − 1 custodians answered with nothing later: any later epoch needs a majority of the set without
//              this node to have promised it, and one of them is among these (each keeps its promise before answering)
// A node checks once per identity per start (of the last CONFIRMED_MAX confirmed: one pushed out of that bound is
// checked again, the check being as right later as at start); an identity it took over in this run, or whose set is
// itself alone, or of which it certified nothing, needs no check.
import type { Logger } from 'pino';
import { BoundedMap, BoundedSet } from '../util/bounded-map.js';
import type { FetchChanges } from './client.js';
import type { CustodySet } from './custody-set.js';
import { FIRST_EPOCH } from './entry.js';
import { MAX_EARLIER_CHANGES, type HomeChange } from './home-change.js';

export type HomeCheckOutcome = 'moved' | 'fenced' | 'short' | 'confirmed';

/** What the answers to a check say. */
export interface HomeCheckFacts {
  /** A later change was applied here (this node is no longer the home in its directory). */
  moved: boolean;
  /** The highest epoch an answering custodian, or this node's own custodian side, accepted or promised. */
  fenced: number;
  /** The epoch this node knows itself the home of. */
  epoch: number;
  /** Custodians that answered with no later change and no later epoch. */
  confirmations: number;
  /** The set's majority less this node (majority − 1). */
  needed: number;
}

export const HOME_CHECK_ROWS: readonly { outcome: HomeCheckOutcome; test: (f: HomeCheckFacts) => boolean }[] = [
  { outcome: 'moved', test: (f) => f.moved },
  { outcome: 'fenced', test: (f) => f.fenced > f.epoch },
  { outcome: 'short', test: (f) => f.confirmations < f.needed },
  { outcome: 'confirmed', test: () => true },
];

export function homeCheckOutcome(f: HomeCheckFacts): HomeCheckOutcome {
  return HOME_CHECK_ROWS.find((r) => r.test(f))!.outcome;
}

/** How long an outcome other than `confirmed` answers the identity's requests before it is checked again. */
export const RECHECK_MS = 2_000;

/** Identities held as confirmed (and, apart, the latest other outcomes): the oldest go first, to be checked again. */
export const CONFIRMED_MAX = 100_000;

export interface HomeCheckDeps {
  nodeId: () => string;
  homeOf: (zid: string) => Promise<string | null>;
  /** The epoch of the latest home change known here (FIRST_EPOCH: none). */
  knownEpoch: (zid: string) => Promise<number>;
  /** The identity's custody set of now as this node knows it (null: not known). */
  setOf: (zid: string) => Promise<CustodySet | null>;
  /** Does this node hold certified entries of the identity as its home (else there is nothing another home could have taken)? */
  certifies: (zid: string) => Promise<boolean>;
  /** The highest epoch this node's own custodian side promised of the identity (0: none). */
  ownPromise: (zid: string) => Promise<number>;
  /** Null: no mesh, nothing to ask (and no other custodian). */
  fetch: FetchChanges | null;
  /** Check and apply a home change (home-moves.ts apply); true when it holds. */
  apply: (change: HomeChange) => Promise<boolean>;
  /** This home is fenced by an epoch no change here made (failover.ts retake counts it, as a fenced write). */
  onFenced?: (zid: string) => void;
  nowMs: () => number;
  timeoutMs: number;
  logger?: Logger;
}

export class HomeCheck {
  private readonly confirmed: BoundedSet<string>;
  private readonly running = new Map<string, Promise<HomeCheckOutcome>>();
  /** The last outcome other than `confirmed`, and when. */
  private readonly last: BoundedMap<string, { outcome: HomeCheckOutcome; at: number }>;
  readonly stats = { checks: 0, confirmed: 0, moved: 0, fenced: 0, short: 0 };

  constructor(
    private readonly d: HomeCheckDeps,
    max = CONFIRMED_MAX,
  ) {
    this.confirmed = new BoundedSet(max);
    this.last = new BoundedMap(max);
  }

  /** Was the identity confirmed as homed here in this run (or taken over here)? */
  isConfirmed(zid: string): boolean {
    return this.confirmed.has(zid);
  }

  /** This node became the identity's home in this run (a takeover): nothing to check. */
  confirm(zid: string): void {
    this.confirmed.add(zid);
    this.last.delete(zid);
  }

  /**
   * Is this node, by its directory, the identity's home, checked? True once confirmed; false when the directory names
   * another node (after the check too: the check may have moved it); else the check's outcome decides.
   */
  async servesAsHome(zid: string): Promise<boolean> {
    if ((await this.d.homeOf(zid)) !== this.d.nodeId()) return false;
    if (this.confirmed.has(zid)) return true;
    const outcome = await this.check(zid);
    return outcome === 'confirmed' && (await this.d.homeOf(zid)) === this.d.nodeId();
  }

  /** The check of an identity homed here (one at a time; an outcome other than confirmed stands RECHECK_MS). */
  check(zid: string): Promise<HomeCheckOutcome> {
    if (this.confirmed.has(zid)) return Promise.resolve('confirmed');
    const last = this.last.get(zid);
    if (last !== undefined && this.d.nowMs() - last.at < RECHECK_MS) return Promise.resolve(last.outcome);
    let run = this.running.get(zid);
    if (run === undefined) {
      run = this.run(zid).finally(() => this.running.delete(zid));
      this.running.set(zid, run);
    }
    return run;
  }

  private async run(zid: string): Promise<HomeCheckOutcome> {
    const d = this.d;
    const self = d.nodeId();
    const set = await d.setOf(zid);
    const others = set === null ? [] : set.custodians.filter((n) => n !== self);
    if (others.length === 0 || d.fetch === null || !(await d.certifies(zid))) {
      this.confirm(zid);
      return 'confirmed';
    }
    this.stats.checks++;
    const epoch = await d.knownEpoch(zid);
    const answers = await Promise.all(
      others.map((node) =>
        d.fetch!(node, zid, epoch, AbortSignal.timeout(d.timeoutMs)).catch((err: unknown) => {
          d.logger?.debug({ err: String(err), zid, node }, 'custody: a custodian did not answer the home check');
          return null;
        }),
      ),
    );
    const changes = answers.flatMap((a) => a?.changes ?? []).sort((a, b) => a.epoch - b.epoch);
    let moved = false;
    if (changes.length > 0) {
      // The latest with the ones before it (each answer's run, by epoch): applied in order where they check.
      const last = changes.at(-1)!;
      const earlier = [...new Map(changes.filter((c) => c.epoch < last.epoch).map((c) => [c.epoch, c])).values()].slice(-MAX_EARLIER_CHANGES);
      const change: HomeChange = earlier.length > 0 ? { ...last, earlier } : last;
      moved = (await d.apply(change).catch(() => false)) && (await d.homeOf(zid)) !== self;
    }
    const fenced = Math.max(await d.ownPromise(zid), ...answers.map((a) => a?.fenced ?? 0));
    const confirmations = answers.filter((a) => a !== null && a.changes.length === 0 && (a.fenced ?? 0) <= epoch).length;
    const outcome = homeCheckOutcome({ moved, fenced, epoch: Math.max(epoch, FIRST_EPOCH), confirmations, needed: set!.majority - 1 });
    this.stats[outcome]++;
    if (outcome === 'confirmed') this.confirm(zid);
    else this.last.set(zid, { outcome, at: d.nowMs() });
    if (outcome !== 'confirmed')
      d.logger?.warn({ zid, outcome, epoch, fenced, confirmations, needed: set!.majority - 1 }, 'custody: this node is not confirmed as the identity’s home');
    if (outcome === 'fenced') d.onFenced?.(zid);
    return outcome;
  }
}

// A custody set follows the members this node knows (custody-set.ts): a member heard later, or one whose bond ended,
// changes the sets of the identities it ranks into. Their entries were certified by the set of then: a custodian new to
// a set holds none of them until the home writes again, and a home that dies first leaves a set whose majority may
// hold nothing, so a failover by it takes a chain without the acknowledged writes. So when the members change (and
// once after a start), the home hands each identity's certified head to the custodians of its set of now that did not
// sign it (Replicator.handOver): one behind catches up from the home's log before it signs. A custodian that does not
// sign (down, refusing) is not asked again in the same pass; the pass is made again later, less often each time.
// A takeover leaves the same gap without any change of members: the epoch entry is certified by a majority of the new
// set, and a custodian of it that did not sign (down then, or behind) holds nothing of the epoch until the identity's
// next write. So the new home owes each identity it adopts a hand-over of its own (owe), made at the next run and
// again later, less often each time, until every custodian of the set has signed.
// A pass skips an identity whose set is the same under every list of the members heard since the last pass that
// reached every custodian began: each of its writes since was certified by that one set, which then held its head, so
// no custodian is new to it. A pass reads three records an identity; the check ranks only the members that joined.

import { keyAfter } from '../util/range-cursor.js';

/** Identities read at a time from the home's heads. */
const PAGE = 256;
/** Runs (ticks) before a pass that left custodians without the head is made again; doubled after each such pass, up to MAX_RETRY_RUNS. */
const RETRY_RUNS = 16;
const MAX_RETRY_RUNS = 512;
/** Lists of the members heard since a complete pass began, at most: past it, the next pass reads every identity. */
const MAX_LISTS = 32;
const NONE_SKIPPED: ReadonlySet<string> = new Set();

export interface SetChangesDeps {
  /** The nodes that may hold identities (custody-set.ts), read once a tick. */
  members: () => readonly string[];
  /** Identities this node keeps a certified head of, in key order from `from` (Replicator.homed). */
  homed: (limit: number, from?: string) => Promise<string[]>;
  /** Is this node the identity's home now (its directory says so)? */
  isHome: (zid: string) => Promise<boolean>;
  handOver: (zid: string, skip: ReadonlySet<string>) => Promise<{ reached: string[]; missed: string[] }>;
  /** Is the identity's set of now its set under each of these lists of the members (Replicator.sameSetUnder)? */
  sameSetUnder: (zid: string, lists: readonly (readonly string[])[]) => Promise<boolean>;
  logger?: { info(obj: object, msg: string): void };
}

export class SetChanges {
  /** The members of the last pass that reached every custodian (null: none yet, so the first run makes one). */
  private passedFor: string | null = null;
  /**
   * The lists of the members heard since the last pass that reached every custodian began (null: unknown, so the next
   * pass reads every identity), and since the pass under way began.
   */
  private sinceComplete: (readonly string[])[] | null = null;
  private sincePass: (readonly string[])[] | null = null;
  private running = false;
  private stopped = false;
  private runs = 0;
  /** The run from which a pass that missed custodians is made again, and the runs to wait after the next such pass. */
  private retryAt = 0;
  private retryRuns = RETRY_RUNS;
  /** Identities adopted here whose set has custodians without their head yet, and when they are asked again. */
  private readonly owed = new Set<string>();
  private owedAt = 0;
  private owedRetryRuns = RETRY_RUNS;
  readonly stats = { passes: 0, handedOver: 0, missed: 0, owedHandedOver: 0, skipped: 0 };

  constructor(private readonly deps: SetChangesDeps) {}

  /** An identity this node just took over: its head goes to every custodian of its set that did not sign it. */
  owe(zid: string): void {
    this.owed.add(zid);
    this.owedAt = 0;
  }

  /**
   * One run (every tick): the hand-overs owed for identities taken over here, then a pass over the identities homed
   * here when the members changed since the last full pass.
   */
  async run(): Promise<void> {
    this.runs++;
    const list = this.deps.members();
    this.heard(list);
    if (this.running || this.stopped) return;
    this.running = true;
    try {
      if (this.owed.size > 0 && this.runs >= this.owedAt) await this.handOwed();
      if (this.runs < this.retryAt) return;
      const members = membersKey(list);
      // Another list heard since (and the members back as they were) is a change too: sets computed from it may have
      // certified writes.
      const settled = this.sinceComplete !== null && this.sinceComplete.length <= 1;
      if (members === this.passedFor && settled) return;
      this.sincePass = [list];
      const missed = await this.pass();
      const lists = this.sincePass;
      this.sincePass = null;
      if (missed === null) return;
      if (missed === 0) {
        this.passedFor = members;
        this.sinceComplete = lists;
        this.retryRuns = RETRY_RUNS;
      } else {
        this.retryAt = this.runs + this.retryRuns;
        this.retryRuns = Math.min(MAX_RETRY_RUNS, 2 * this.retryRuns);
      }
    } finally {
      this.running = false;
    }
  }

  /**
   * A list of the members a custody set may have been computed from (the wiring tells each new one as it reads it; a
   * run tells the one it reads). A list equal to the last heard is not kept again.
   */
  heard(list: readonly string[]): void {
    this.sinceComplete = withList(this.sinceComplete, list);
    this.sincePass = withList(this.sincePass, list);
  }

  /** No pass starts after this, and one running ends at its next identity. */
  stop(): void {
    this.stopped = true;
  }

  /** The owed identities' heads to the custodians of their sets that have not signed them; kept owed while one is missed. */
  private async handOwed(): Promise<void> {
    const missedAny: string[] = [];
    for (const zid of [...this.owed]) {
      if (this.stopped) return;
      // Homed elsewhere by now: the identity's new home owes it, not this node.
      if (!(await this.deps.isHome(zid))) {
        this.owed.delete(zid);
        continue;
      }
      const { reached, missed } = await this.deps.handOver(zid, NONE_SKIPPED);
      this.stats.owedHandedOver += reached.length;
      if (missed.length === 0) this.owed.delete(zid);
      else missedAny.push(...missed);
    }
    if (this.owed.size === 0) this.owedRetryRuns = RETRY_RUNS;
    else {
      this.owedAt = this.runs + this.owedRetryRuns;
      this.owedRetryRuns = Math.min(MAX_RETRY_RUNS, 2 * this.owedRetryRuns);
      this.deps.logger?.info(
        { owed: this.owed.size, missed: [...new Set(missedAny)] },
        'custody: taken-over identities’ heads not yet with every custodian of their sets',
      );
    }
  }

  /** Hand every identity homed here to the custodians new to its set; the count of custodians missed (null: stopped). */
  private async pass(): Promise<number | null> {
    this.stats.passes++;
    const unreachable = new Set<string>();
    let handed = 0;
    let from: string | undefined;
    for (;;) {
      const page = await this.deps.homed(PAGE, from);
      for (const zid of page) {
        if (this.stopped) return null;
        const since = this.sinceComplete;
        if (since !== null && (await this.deps.sameSetUnder(zid, since))) {
          this.stats.skipped++;
          continue;
        }
        if (!(await this.deps.isHome(zid))) continue;
        const { reached, missed } = await this.deps.handOver(zid, unreachable);
        handed += reached.length;
        this.stats.handedOver += reached.length;
        for (const node of missed) unreachable.add(node);
      }
      if (page.length < PAGE) break;
      from = keyAfter(page.at(-1)!);
    }
    this.stats.missed += unreachable.size;
    if (handed > 0 || unreachable.size > 0)
      this.deps.logger?.info({ handedOver: handed, missed: [...unreachable] }, 'custody: identities’ heads handed to the custodians new to their sets');
    return unreachable.size;
  }
}

function membersKey(members: Iterable<string>): string {
  return [...new Set(members)].sort().join(',');
}

/** `lists` with `list` added unless it is the last one's equal; null (unknown) once there are more than MAX_LISTS. */
function withList(lists: (readonly string[])[] | null, list: readonly string[]): (readonly string[])[] | null {
  if (lists === null) return null;
  const last = lists.at(-1);
  if (last === list || (last !== undefined && membersKey(last) === membersKey(list))) return lists;
  if (lists.length >= MAX_LISTS) return null;
  lists.push(list);
  return lists;
}

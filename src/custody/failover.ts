// Failover (docs/protocol.md §19 "Failover", docs/decisions.md "Custody"): a custodian of an identity whose home has
// not been heard for long enough takes the identity over, by the table of failover-rules.ts, once a tick:
//   1. it asks the custody set of the home it knows for promises of the next epoch (its own custodian promises too);
//   2. with promises of a majority of that set, it takes the chain of the highest head they show (failover-rules.ts
//      HEAD_ORDER; quorum intersection: every certified entry is in it), fetched from the promiser holding it and
//      checked against the promised head;
//   3. it proposes the epoch's first entry (kind `epoch`, chained on that head) to its own custody set; once a
//      majority holds it, every entry before it is certified in the new epoch;
//   4. it writes the chain's ledger, the entries and the home change in one batch, and tells the mesh (custody.home).
// A node that loses (promises short, another candidate won, a step failed) waits (rank + 1) × failoverTicks before it
// may try the next epoch.
import type { Logger } from 'pino';
import type { Store } from '../store/db.js';
import { fetchChain, type FetchChain } from './client.js';
import { custodySetOf, excludedFor, excludedMember, sameExcluded, sameMembers, setOfConfig, type CustodySet, type SetConfig } from './custody-set.js';
import type { ChainPage, Custodian } from './custodian.js';
import { entryHash, FIRST_EPOCH, GENESIS_ENTRY_HASH, signingTextOf, verifyEntrySignature, type CustodyEntry, type EntrySignature } from './entry.js';
import {
  goneLong,
  headAfter,
  heardLately,
  homeUnheard,
  homeUnreachable,
  nextState,
  tickOverdue,
  type FailoverEvent,
  type FailoverState,
  type Heard,
} from './failover-rules.js';
import { HomeProbes, type Probe } from './home-probes.js';
import { recertifyDebits, type PendingDebit } from './pending-debits.js';
import type { HomeChange, HomeChanges } from './home-change.js';
import { highestHead, homesToAsk, promisesFault, type EpochHome, type PromisedHead, type SignedPromise, type Verify } from './promise.js';
import { MAX_CHAIN_LINKS, recordsDigest, type ChainLink, type EntryRecords, type PromiseAnswer } from './protocol.js';
import { chainEndingOn, checkChain, GENESIS_HEAD, linkOf, pageOf } from './replica.js';
import type { SendBatch } from './client.js';
import type { CertifiedEntry } from './replicator.js';
import { RangeCursor } from '../util/range-cursor.js';

/** An epoch entry's records: none. */
export const NO_RECORDS: EntryRecords = { v: 1, ops: [] };
/** The records digest of an epoch entry: the SHA-256 of no records. */
export const EPOCH_RECORDS = recordsDigest(NO_RECORDS);

/** Identities one run looks at, at most: the next ones at the next run, round and round (range-cursor.ts). */
const WATCH_PER_RUN = 4096;
/** Reconfigurations one run starts, at most: each is an epoch, announced to the mesh. */
const RECONFIGURE_PER_RUN = 16;
/** A new home announces its change again every failoverTicks ticks, this many times (a node back later learns it). */
export const ANNOUNCE_ROUNDS = 32;

/** What taking a chain over yields (the state transfer): its entries, whose records replayed are the identity's ledger at the head. */
export interface TakenChain {
  /** The chain's entries, each with the signatures known of it and its records, for the new home's log and ledger (replica.ts replayOps). */
  entries: CertifiedEntry[];
  /** The wallet at the head (null: the chain never stated one). */
  balance: { free: number; paid: number } | null;
}

export interface FailoverDeps {
  nodeId: () => string;
  replicas: number;
  failoverTicks: number;
  /** Tick intervals of its own a custodian may go unheard before its identities' homes replace it (config custody.replaceTicks). */
  replaceTicks: number;
  members: () => Iterable<string>;
  nowSvcond: () => number;
  /** The last tick heard from a node here and its tick interval (null: never heard). */
  lastHeard: (node: string) => Heard | null;
  /** The tick interval a home never heard is given (heard ones declare theirs). */
  tickEvery: () => number;
  store: Store;
  custodian: Pick<Custodian, 'heldZids' | 'head' | 'promised' | 'promiseTo' | 'entries' | 'configInEpoch'>;
  homeOf: (zid: string) => Promise<string | null>;
  homeChanges: Pick<HomeChanges, 'latest'> & { configAt: (zid: string, epoch: number) => Promise<SetConfig | null> };
  /**
   * Identities homed here, at most `limit`: `passing` those whose set passes over members (a member back may take its
   * place again), else all.
   */
  homed?: (limit: number, passing: boolean, from?: string) => Promise<string[]>;
  /** Identities one run looks at (WATCH_PER_RUN; tests take fewer). */
  watchPerRun?: number;
  /** Ask a node for a promise, showing the latest home change of the identity this node knows (client.ts AskPromise). */
  askPromise: (node: string, zid: string, epoch: number, signal: AbortSignal, excluded?: string[], change?: HomeChange | null) => Promise<PromiseAnswer>;
  /** Check and apply a home change a promiser showed with its refusal (home-moves.ts apply); absent: not read. */
  learnChange?: (change: HomeChange) => Promise<void>;
  send: SendBatch;
  fetch: FetchChain;
  verify: Verify;
  /**
   * Write the identity as homed here in one batch: the chain taken, the certified epoch entry, the home change, the
   * certificates of its pending debits (then resume their delivery).
   */
  adopt: (change: HomeChange, chain: TakenChain, epochEntry: CertifiedEntry, debits: PendingDebit[]) => Promise<void>;
  /**
   * This node's certified log of an identity (the replicator's, of the epochs this node was its home): its head and its
   * entries (null: none). A home taking its identity again counts with its head; any candidate takes entries from it.
   */
  homeLog: (zid: string) => Promise<{ head: PromisedHead; links: ChainLink[] } | null>;
  /** A home taking its identity again in `epoch` certifies none of its own entries of an earlier epoch from now (replicator.ts fence). */
  fenceOwn?: (zid: string, epoch: number) => void;
  /** This node's Ed25519 signature (base64) of a text: its signature in a pending debit's certificate. */
  sign: (text: string) => string;
  publish: (change: HomeChange) => Promise<void>;
  /** A direct probe of a node (a libp2p ping): a home whose tick event is overdue is taken over sooner when it fails. */
  probe?: Probe;
  timeoutMs: number;
  logger?: Logger;
}

interface Watch {
  state: FailoverState;
  /** The tick a waiting custodian may try again. */
  until: number;
}

export class Failover {
  private readonly watches = new Map<string, Watch>();
  /** Home changes this node made, announced again until `until` (each at `next`). */
  private readonly announcing = new Map<string, { change: HomeChange; next: number; until: number }>();
  private readonly since: number;
  /** The highest epoch a promiser refused at, by zid (the next attempt asks above it). */
  private readonly epochsSeen = new Map<string, number>();
  /** When this home's entries were first refused as fenced, by zid (retake). */
  private readonly fencedSince = new Map<string, number>();
  /** Identities a retake runs for (from its first read to its end). */
  private readonly retaking = new Set<string>();
  /**
   * Identities a takeover runs for, one at a time (run's and retake's): a second one of the same epoch would adopt its
   * chain again over the writes the first let the node make since.
   */
  private readonly attempting = new Set<string>();
  /** Identities this node is taking over: a majority promised it, and the chain is not written yet (isTaking). */
  private readonly taking = new Set<string>();
  /**
   * By zid, the epoch this node opens: the custodians of its set (they may fetch the chain to catch up) and the chain
   * it took, which it answers their fetches from until it is written (openingSet, openingPage).
   */
  private readonly opening = new Map<string, { custodians: string[]; chain: readonly CertifiedEntry[] }>();
  private running = false;
  /** Where the next run goes on reading the identities held here, and those homed here (all, and those passing over members). */
  private readonly heldCursor = new RangeCursor();
  private readonly homedCursors = { all: new RangeCursor(), passing: new RangeCursor() };
  readonly stats = { attempts: 0, taken: 0, lost: 0, reconfigured: 0 };
  /** Homes whose tick events are overdue, probed directly (null: no probe given). */
  readonly probes: HomeProbes | null;

  private readonly watchPerRun: number;

  constructor(private readonly deps: FailoverDeps) {
    this.since = deps.nowSvcond();
    this.watchPerRun = deps.watchPerRun ?? WATCH_PER_RUN;
    this.probes = deps.probe === undefined ? null : new HomeProbes(deps.probe, deps.timeoutMs);
  }

  /** The state of an identity here (watching when none was recorded). */
  stateOf(zid: string): FailoverState {
    return this.watches.get(zid)?.state ?? 'watching';
  }

  private move(zid: string, event: FailoverEvent, until = 0): void {
    const w = this.watches.get(zid) ?? { state: 'watching', until: 0 };
    const to = nextState(w.state, event);
    if (to === null) return;
    if (to === 'watching') this.watches.delete(zid);
    else this.watches.set(zid, { state: to, until });
  }

  /** Another node became the identity's home (a home change applied here). */
  homeMoved(zid: string): void {
    this.move(zid, 'home-moved');
  }

  /** One run (every tick): the identities held here whose home is unheard are taken over, one at a time. */
  async run(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      const now = this.deps.nowSvcond();
      // The interval a home never heard is given: read once a run (the wiring takes the longest of every peer's).
      const every = this.deps.tickEvery();
      this.announceAgain(now);
      const held = await this.heldCursor.next((limit, from) => this.deps.custodian.heldZids(limit, from), this.watchPerRun);
      for (const zid of held) {
        const w = this.watches.get(zid);
        if (w?.state === 'waiting' && now >= w.until) this.move(zid, 'wait-over');
        if (this.stateOf(zid) !== 'watching') continue;
        const view = await this.watched(zid);
        const self = this.deps.nodeId();
        if (view === null || view.home === self) continue;
        const set = setOfConfig(zid, view, this.deps.members(), this.deps.replicas);
        const rank = this.rankOf(set, now);
        const heard = this.deps.lastHeard(view.home);
        if (!homeUnheard(now, heard, this.since, rank, this.deps.failoverTicks, every) && !this.unreachable(view.home, heard, now, rank, every)) continue;
        await this.attempt(zid, view, set, rank);
      }
      await this.reconfigure(now);
    } finally {
      this.running = false;
    }
  }

  /** Is the home's tick event overdue, and has every direct probe of it failed long enough (homeUnreachable)? */
  private unreachable(home: string, heard: Heard | null, now: number, rank: number, every: number): boolean {
    if (this.probes === null) return false;
    const overdue = tickOverdue(now, heard, this.since, every);
    const since = this.probes.unreachableSince(home, now, Math.max(heard?.tick ?? this.since, this.since), overdue);
    return homeUnreachable(now, since, rank, this.deps.failoverTicks);
  }

  /**
   * Are `node`'s tick events heard here, none overdue (a node never heard since this one started counts from its
   * start)? A custodian refuses a remote candidate's promise while the identity's home is (custodian.ts).
   */
  hears(node: string): boolean {
    return !tickOverdue(this.deps.nowSvcond(), this.deps.lastHeard(node), this.since, this.deps.tickEvery());
  }

  /** Has `node` gone unheard longer than replaceTicks of its tick intervals (a node just started counts from its start)? */
  private gone(node: string, now: number): boolean {
    return node !== this.deps.nodeId() && goneLong(now, this.deps.lastHeard(node), this.since, this.deps.replaceTicks, this.deps.tickEvery());
  }

  /** The members the set of a new epoch of `zid` homed here passes over: those gone too long, by weight (custody-set.ts). */
  private excludedNow(zid: string, now: number): string[] {
    return excludedFor(zid, this.deps.nodeId(), this.deps.members(), this.deps.replicas, (node) => this.gone(node, now));
  }

  /**
   * Reconfiguration (docs/protocol.md §19): an identity homed here whose set holds a custodian gone too long, or whose
   * set a member back would make larger, gets a new epoch of this home with the set of now (its promises from a
   * majority of the set of before, its epoch entry certified by the new one, which catches up first). A few per run.
   */
  private async reconfigure(now: number): Promise<void> {
    const d = this.deps;
    if (d.homed === undefined || d.replicas < 2) return;
    const self = d.nodeId();
    const members = [...d.members()];
    // Only identities whose set passes over members can grow again when no member is gone.
    const passing = !members.some((n) => this.gone(n, now));
    let started = 0;
    const cursor = passing ? this.homedCursors.passing : this.homedCursors.all;
    const homed = d.homed;
    for (const zid of await cursor.next((limit, from) => homed(limit, passing, from), this.watchPerRun)) {
      if (started >= RECONFIGURE_PER_RUN) break;
      if (this.attempting.has(zid)) continue;
      // Its directory's home and epoch set (watched reads both): a former home's identities are passed over.
      const view = await this.watched(zid);
      if (view === null || view.home !== self) continue;
      const set = setOfConfig(zid, view, members, d.replicas);
      const excluded = this.excludedNow(zid, now);
      if (sameExcluded(excluded, view.excluded)) continue;
      const next = custodySetOf(zid, self, members, d.replicas, excluded);
      const replaces = set.custodians.some((n) => this.gone(n, now));
      const grows = next.custodians.length > set.custodians.length;
      if (sameMembers(next.custodians, set.custodians) || !(replaces || grows)) continue;
      started++;
      d.logger?.info({ zid, from: set.custodians, to: next.custodians }, 'custody: reconfiguring an identity’s custody set');
      await this.attempt(zid, view, set, 0, 'reconfigure');
    }
  }

  private announceAgain(now: number): void {
    for (const [zid, a] of this.announcing) {
      if (now > a.until) this.announcing.delete(zid);
      else if (now >= a.next) {
        a.next = now + this.deps.failoverTicks;
        void this.deps.publish(a.change).catch(() => undefined);
      }
    }
  }

  /**
   * The home this node follows, its epoch and its set: its directory's, with the latest change's set, or the sender of
   * the entries its custodian holds when those are of a later epoch than the directory knows (it signed a new home's
   * entries before hearing its home change), with the set their epoch entry names.
   */
  private async watched(zid: string): Promise<EpochHome | null> {
    const head = await this.deps.custodian.head(zid);
    const latest = await this.deps.homeChanges.latest(zid);
    const known = latest?.epoch ?? FIRST_EPOCH;
    if (head !== null && head.epoch > known) return { epoch: head.epoch, home: head.home, ...excludedMember(head.excluded) };
    const home = await this.deps.homeOf(zid);
    return home === null ? null : { epoch: known, home, ...excludedMember(latest?.excluded) };
  }

  /**
   * This node's place among the set's live custodians after the home; a holder outside the set, after all of them: its
   * home certified the entries it holds with a set this node's view of the members no longer computes (a home whose
   * view was behind the others'), whose members may hold none of them and so never start a failover.
   */
  private rankOf(set: CustodySet, now: number): number {
    const self = this.deps.nodeId();
    const live = set.custodians.slice(1).filter((n) => n === self || heardLately(now, this.deps.lastHeard(n), this.deps.failoverTicks));
    const rank = live.indexOf(self);
    return rank >= 0 ? rank : live.length;
  }

  /**
   * Take `zid` over from the home of `view` (the states of failover-rules.ts), unless a takeover of it runs already:
   * a failover, or this node's own identity again (a retake, a reconfiguration).
   */
  private async attempt(zid: string, view: EpochHome, set: CustodySet, rank: number, why: 'take' | 'reconfigure' = 'take'): Promise<void> {
    if (this.attempting.has(zid)) return;
    this.attempting.add(zid);
    try {
      await this.attemptOnce(zid, view, set, rank, why);
    } finally {
      this.attempting.delete(zid);
      this.taking.delete(zid);
      this.opening.delete(zid);
    }
  }

  private async attemptOnce(zid: string, view: EpochHome, set: CustodySet, rank: number, why: 'take' | 'reconfigure'): Promise<void> {
    const d = this.deps;
    const self = d.nodeId();
    const home = view.home;
    this.stats.attempts++;
    this.move(zid, 'home-unheard');
    const lose = (reason: string) => {
      this.stats.lost++;
      // A home taking its identity again serves it to nobody meanwhile: an operator hears of it.
      if (why === 'reconfigure') d.logger?.warn({ zid, why: reason }, 'custody: the identity’s custody set could not be reconfigured');
      else if (home === self) d.logger?.warn({ zid, why: reason }, 'custody failover: the fenced home could not take its identity again');
      else d.logger?.info({ zid, home, why: reason }, 'custody failover: not taken');
      this.move(zid, this.stateOf(zid) === 'asking' ? 'short' : 'failed', d.nowSvcond() + (rank + 1) * d.failoverTicks);
    };
    try {
      const head = await d.custodian.head(zid);
      const promised = await d.custodian.promised(zid);
      const latest = await d.homeChanges.latest(zid);
      const known = latest?.epoch ?? FIRST_EPOCH;
      const epoch = Math.max(known, head?.fenced_below ?? 0, promised?.epoch ?? 0, this.epochsSeen.get(zid) ?? 0) + 1;
      // The epoch of the home this node knows: of the entries it holds when later than the last change it applied.
      const homeEpoch = view.epoch;
      // The set of the new epoch: this node's, passing over the members gone too long.
      const excluded = this.excludedNow(zid, d.nowSvcond());
      const setOf = (at: EpochHome) => (at.home === home && sameExcluded(at.excluded, view.excluded) ? set : setOfConfig(zid, at, d.members(), d.replicas));
      // A home taking its identity again stops certifying its entries before it promises: its own promise shows the
      // head it certified last, and no entry it certifies after that can be left off the chain it takes.
      if (home === self) d.fenceOwn?.(zid, epoch);
      const { promises, refusedAt } = await this.gather(zid, epoch, view, setOf, excluded);
      // A promiser at a higher epoch (promised to a candidate that never completed): the next attempt asks above it.
      if (refusedAt >= epoch) this.epochsSeen.set(zid, refusedAt);
      const fault = promisesFault(promises, zid, epoch, { home: self, ...excludedMember(excluded) }, view, setOf, d.verify);
      if (fault !== null) return lose(fault);
      this.move(zid, 'majority');
      // From here this node is as good as the home: it promises no later epoch to another candidate (custodian.ts).
      this.taking.add(zid);
      // The home may have spoken meanwhile (a slow home, not a dead one): it is fenced now, and this node goes on.
      // A home taking its identity again (retake) counts among the promisers with its certified log, not with what
      // its custodian side holds (nothing of its own identities): a custodian that signed the home's last entries
      // may be the one that did not promise, and the others' heads may be far behind.
      // On a head equal to a promiser's (one hash: HEAD_ORDER), the home's own log is taken: it holds the whole chain,
      // where a custodian may hold the head without every entry below it (custodian-rules.ts opensEpoch).
      const log = await d.homeLog(zid);
      const own = home === self ? log : null;
      const shown = highestHead(promises);
      const highest = own !== null && (shown === null || !headAfter(shown.head, own.head)) ? { head: own.head, node: self } : shown;
      const chain =
        highest === null ? { entries: [], balance: null } : await this.takeChain(zid, highest.head, sourcesOf(highest.node, self, promises), log?.links);
      // The members of the new set that promised nothing (new to the identity, or in no set asked) promise the epoch
      // too, so they take its entries from this node: their promises count in no majority, and a custodian takes an
      // epoch's entries from the candidate it promised (custodian.ts `fromHome`), its directory naming the old home.
      const newSet = custodySetOf(zid, self, d.members(), d.replicas, excluded);
      const promisers = new Set(promises.map((p) => p.node));
      const unasked = newSet.custodians.filter((n) => n !== self && !promisers.has(n));
      await Promise.all(unasked.map((n) => d.askPromise(n, zid, epoch, AbortSignal.timeout(d.timeoutMs), excluded, latest).catch(() => null)));
      this.opening.set(zid, { custodians: newSet.custodians.filter((n) => n !== self), chain: chain.entries });
      const entry: CustodyEntry = {
        v: 1,
        zid,
        epoch,
        seq: (highest?.head.seq ?? 0) + 1,
        prev_hash: highest?.head.hash ?? GENESIS_ENTRY_HASH,
        kind: 'epoch',
        records: EPOCH_RECORDS,
        balance: chain.balance,
        transfer: null,
        ...excludedMember(excluded),
      };
      const certified = await this.certify(entry);
      if (typeof certified === 'string') return lose(certified);
      const change: HomeChange = { zid, epoch, home: self, promises, ...(epoch > homeEpoch + 1 ? { after: homeEpoch } : {}), ...excludedMember(excluded) };
      // A debit of an earlier epoch is certified under that epoch's set (its home as the changes kept here name it).
      // The homes of the later epochs the promises named (their promisers saw them: heads, changes, promises).
      const named = new Map(homesToAsk(promises, view).map((h) => [h.epoch, h]));
      // An epoch whose home none of these name (its change never reached this node): the home that proposed the
      // entries of that epoch this node's custodian signed.
      const configAt = async (e: number): Promise<SetConfig | null> => {
        if (e === homeEpoch) return view;
        if (e === known) {
          const h = await d.homeOf(zid);
          if (h !== null) return { home: h, ...excludedMember(latest?.excluded) };
        } else if (e < known) {
          const c = await d.homeChanges.configAt(zid, e);
          if (c !== null) return c;
        } else if (named.has(e)) return named.get(e)!;
        return d.custodian.configInEpoch(zid, e);
      };
      const setAt = async (e: number): Promise<CustodySet | null> => {
        const then = await configAt(e);
        return then === null ? null : setOf({ epoch: e, ...then });
      };
      const debits = await recertifyDebits(
        { self, sign: d.sign, verify: d.verify, fetch: d.fetch, timeoutMs: d.timeoutMs },
        zid,
        setAt,
        chain.entries,
        promises,
      );
      // A change of this epoch or a later one applied meanwhile (heard, or shown by a fenced refusal): nothing to adopt.
      if (((await d.homeChanges.latest(zid))?.epoch ?? FIRST_EPOCH) >= epoch) return lose(`epoch ${epoch} was taken meanwhile`);
      // A later epoch this node's custodian promised another candidate while this one gathered: that candidate may
      // take a chain without what this node would certify as the home (its own signature counts in its majority).
      const promisedSince = await d.custodian.promised(zid);
      if (promisedSince !== null && promisedSince.epoch > epoch)
        return lose(`epoch ${promisedSince.epoch} was promised to ${promisedSince.candidate} meanwhile`);
      await d.adopt(change, chain, certified, debits);
      this.move(zid, 'taken');
      this.stats.taken++;
      if (why === 'reconfigure') {
        this.stats.reconfigured++;
        d.logger?.warn({ zid, epoch, seq: entry.seq, excluded }, 'custody: the identity’s custody set is reconfigured');
      } else d.logger?.warn({ zid, from: home, epoch, seq: entry.seq }, 'custody failover: this node is the identity’s home');
      const now = d.nowSvcond();
      // Announced with the earlier changes this node applied: a node that missed some catches up.
      const announced = (await d.homeChanges.latest(zid)) ?? change;
      this.announcing.set(zid, { change: announced, next: now + d.failoverTicks, until: now + ANNOUNCE_ROUNDS * d.failoverTicks });
      await d.publish(announced).catch((err: unknown) => d.logger?.warn({ err: String(err), zid }, 'the home change could not be published'));
    } catch (err) {
      lose(err instanceof Error ? err.message : String(err));
    }
  }

  /** Is this node taking `zid` over (a majority promised it, its chain not written yet)? */
  isTaking(zid: string): boolean {
    return this.taking.has(zid);
  }

  /** The custodians of the epoch this node is opening for `zid` (its entry being certified; empty: none). */
  openingSet(zid: string): readonly string[] {
    return this.opening.get(zid)?.custodians ?? [];
  }

  /**
   * A page of the chain this node took for the epoch it opens for `zid`, from seq `from`, each entry with this node's
   * signature first (a custodian catching up checks the proposer's); null when it opens none. Its custodians catch up
   * from it before they sign the epoch entry: the chain is written here only once they have.
   */
  openingPage(zid: string, from: number): ChainPage | null {
    const opening = this.opening.get(zid);
    if (opening === undefined || opening.chain.length === 0) return null;
    const self = this.deps.nodeId();
    const last = opening.chain.at(-1)!.entry;
    // At most one page is answered: only its entries are signed.
    const links = opening.chain
      .filter((c) => c.entry.seq >= from)
      .slice(0, MAX_CHAIN_LINKS)
      .map((c) => linkOf(c, [{ node: self, signature: this.deps.sign(signingTextOf(c.hash)) }, ...c.signatures.filter((s) => s.node !== self)]));
    const page = pageOf(links);
    return { head: { epoch: last.epoch, seq: last.seq, hash: entryHash(last), ...(last.attempt === undefined ? {} : { attempt: last.attempt }) }, ...page };
  }

  /**
   * Promises of `epoch`, this node's own first, from the members of the set of the home it knows (`view`) but that home
   * (unheard), then from the members of the set of each later epoch's home a promise names (promise.ts homesToAsk);
   * and the highest epoch a refusal named (0: none).
   */
  private async gather(
    zid: string,
    epoch: number,
    view: EpochHome,
    setOf: (at: EpochHome) => CustodySet,
    excluded: string[],
  ): Promise<{ promises: SignedPromise[]; refusedAt: number }> {
    const d = this.deps;
    const self = d.nodeId();
    const all: (PromiseAnswer | null)[] = [await d.custodian.promiseTo(zid, epoch, self, excluded)];
    // Shown with each request: a promiser that missed it (an old home back from a crash) learns it before it decides.
    const change = await d.homeChanges.latest(zid);
    const promisesOf = () => all.flatMap((a) => (a !== null && 'promise' in a ? [a.promise] : []));
    const asked = new Set([self, view.home]);
    const setsAsked = new Set<string>();
    for (;;) {
      const homes = homesToAsk(promisesOf(), view).filter((h) => !setsAsked.has(`${h.epoch}|${h.home}|${(h.excluded ?? []).join(',')}`));
      if (homes.length === 0) break;
      for (const h of homes) setsAsked.add(`${h.epoch}|${h.home}|${(h.excluded ?? []).join(',')}`);
      const ask = [...new Set(homes.flatMap((h) => setOf(h).custodians))].filter((n) => !asked.has(n));
      for (const n of ask) asked.add(n);
      const answers = ask.map((n) => d.askPromise(n, zid, epoch, AbortSignal.timeout(d.timeoutMs), excluded, change).catch((): PromiseAnswer | null => null));
      all.push(...(await Promise.all(answers)));
    }
    // A refusal showing a later change than this node's: it is checked and applied here (the next attempt, if any,
    // counts from it).
    const shown = all.flatMap((a) => (a !== null && 'refused' in a && a.refused.home !== undefined ? [a.refused.home] : []));
    const later = shown.filter((c) => c.zid === zid && c.epoch > (change?.epoch ?? FIRST_EPOCH)).sort((a, b) => b.epoch - a.epoch)[0];
    if (later !== undefined && d.learnChange !== undefined)
      await d
        .learnChange(later)
        .catch((err: unknown) =>
          d.logger?.info({ err: String(err), zid, epoch: later.epoch }, 'custody: a home change shown with a promise refusal was not applied'),
        );
    return {
      promises: promisesOf(),
      refusedAt: Math.max(0, ...all.map((a) => (a !== null && 'refused' in a && a.refused !== undefined ? (a.refused.epoch ?? 0) : 0))),
    };
  }

  /**
   * This node is the identity's home and its custodians refuse its entries as fenced, by an epoch no home change
   * made (a candidate gathered promises and gave up while the home was live): once that has lasted 2 × failoverTicks
   * of its ticks, it takes the identity over itself, in an epoch above the fence, as any custodian would.
   */
  async retake(zid: string): Promise<void> {
    const d = this.deps;
    const self = d.nodeId();
    // One retake of an identity at a time, claimed before the first read: two refusals that ask together would
    // otherwise both pass the checks, and the one whose reads came back after the other's takeover ended take it again.
    if (this.attempting.has(zid) || this.retaking.has(zid)) return;
    this.retaking.add(zid);
    try {
      if ((await d.homeOf(zid)) !== self) return;
      const now = d.nowSvcond();
      const since = this.fencedSince.get(zid);
      if (since === undefined || now - since > 8 * d.failoverTicks * d.tickEvery()) {
        this.fencedSince.set(zid, now);
        return;
      }
      if (now - since < 2 * d.failoverTicks * d.tickEvery()) return;
      try {
        const view = await this.watched(zid);
        if (view !== null && view.home === self) await this.attempt(zid, view, setOfConfig(zid, view, d.members(), d.replicas), 0);
      } finally {
        this.fencedSince.delete(zid);
      }
    } finally {
      this.retaking.delete(zid);
    }
  }

  /** The epoch entry held by a majority of this node's own set (this node counts once it writes it), or why not. */
  private async certify(entry: CustodyEntry): Promise<CertifiedEntry | string> {
    const d = this.deps;
    const self = d.nodeId();
    const set = custodySetOf(entry.zid, self, d.members(), d.replicas, entry.excluded);
    const hash = entryHash(entry);
    const others = set.custodians.filter((n) => n !== self);
    const signatures: EntrySignature[] = [];
    const refusals: string[] = [];
    await Promise.all(
      others.map(async (node) => {
        try {
          const signal = AbortSignal.timeout(d.timeoutMs);
          let answer = await d.send(node, [entry], [NO_RECORDS], signal);
          // A custodian behind the chain catches up from this node first: asked again after a pause, within the bound.
          for (let pause = 100; answer.results[0]?.ok === false && answer.results[0].code === 'behind' && !signal.aborted; pause *= 2) {
            await new Promise((r) => setTimeout(r, pause));
            answer = await d.send(node, [entry], [NO_RECORDS], signal);
          }
          const r = answer.results[0];
          if (r?.ok === true && verifyEntrySignature(d.verify, hash, { node, signature: r.signature })) signatures.push({ node, signature: r.signature });
          else refusals.push(`${node}: ${answer.refused?.reason ?? (r && !r.ok ? `${r.code}: ${r.reason}` : 'no signature')}`);
        } catch (err) {
          refusals.push(`${node}: ${err instanceof Error ? err.message : String(err)}`);
        }
      }),
    );
    if (signatures.length < set.majority - 1) return `the epoch entry is held by ${signatures.length + 1} of ${set.majority} needed (${refusals.join('; ')})`;
    return { entry, hash, signatures, records: NO_RECORDS, certificate: null };
  }

  /**
   * The chain of `zid` ending on `head`, checked (seq, prev_hash, records) from the identity's first entry to that head,
   * whose hash the promiser signed; and its replay. The entries come from `sources` in order (this node: its log and
   * what its custodian holds), each entry found by the hash its successor names: a custodian that signed an epoch entry
   * on a chain it did not hold (custodian-rules.ts opensEpoch, after a slot it signed was given up) holds the head
   * without every entry below it, and the next source gives those.
   */
  async takeChain(zid: string, head: PromisedHead, sources: readonly string[], ownLinks: readonly ChainLink[] = []): Promise<TakenChain> {
    const d = this.deps;
    const self = d.nodeId();
    const byHash = new Map<string, ChainLink>();
    let chain: ChainLink[] = [];
    const unreached: string[] = [];
    for (const node of sources) {
      let links: readonly ChainLink[];
      try {
        links =
          node !== self
            ? await fetchChain(d.fetch, node, zid, 1, AbortSignal.timeout(d.timeoutMs * 4))
            : [...ownLinks, ...(await d.custodian.entries(zid, 1, Number.MAX_SAFE_INTEGER)).map((h) => linkOf(h, [{ node: self, signature: h.signature }]))];
      } catch (err) {
        unreached.push(`${node}: ${err instanceof Error ? err.message : String(err)}`);
        continue;
      }
      for (const l of links) {
        const hash = entryHash(l.entry);
        if (!byHash.has(hash)) byHash.set(hash, l);
      }
      chain = chainEndingOn([...byHash.values()], head.hash);
      if (chain[0]?.entry.seq === 1) break;
    }
    const from = `${sources.join(', ')}${unreached.length > 0 ? ` (not reached: ${unreached.join('; ')})` : ''}`;
    const check = checkChain(zid, chain, GENESIS_HEAD, null, d.verify);
    if (!check.ok) throw new Error(`the chain from ${from} fails at seq ${check.seq}: ${check.reason}`);
    if (check.head.hash !== head.hash || check.head.seq !== head.seq || (chain.at(-1)?.entry.attempt ?? 0) !== (head.attempt ?? 0))
      throw new Error(`the chain from ${from} does not end on its promised head (seq ${head.seq})`);
    const balance = [...chain].reverse().find((l) => l.entry.balance !== null)?.entry.balance ?? null;
    return {
      entries: chain.map((l) => ({ entry: l.entry, hash: entryHash(l.entry), signatures: l.signatures, records: l.records, certificate: l.certificate })),
      balance,
    };
  }
}

/**
 * Where a candidate takes the chain of the highest head from: its holder first, then this node (its log, what its
 * custodian holds), then the other promisers by their heads, highest first (HEAD_ORDER).
 */
export function sourcesOf(holder: string, self: string, promises: readonly SignedPromise[]): string[] {
  const others = promises
    .filter((p) => p.promise.head !== null)
    .sort((a, b) => (headAfter(a.promise.head!, b.promise.head!) ? -1 : headAfter(b.promise.head!, a.promise.head!) ? 1 : 0))
    .map((p) => p.node);
  return [...new Set([holder, self, ...others])];
}

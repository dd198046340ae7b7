// The home's side of custody (docs/protocol.md §19, docs/decisions.md "Custody"): the store's gate. A write that
// changes an identity's ledger (ledger-ops.ts) becomes one entry per identity, chained on the last one proposed; the
// write is held until a majority of the identity's custody set holds the entry (the home counts once its batch is on
// disk, so it needs majority − 1 signatures of the others), then joins the store's queue with the certified entry
// and its signatures, in the same batch. No majority within the bound: the write fails with 503
// SVC_CUSTODY_UNAVAILABLE, its callers roll back, nothing of it is written here, and the identity's later entries
// proposed on it fail with it. A set of one (a node alone) holds nothing: the write goes on as it is, except a
// transfer debit, which is an entry certified by the home's own signature. A certified debit's certificate (the entry
// and the signatures of a majority, the home's included) is kept by transfer id in the debit's batch; a credit's entry
// goes to the custodians with the sender's debit certificate its write carries (debit-certificate.ts).
//
// Group commit: each custodian has one batch in flight; what is proposed meanwhile waits in its queue and goes in the
// next batch, entries of every identity together.
import { ServiceError } from '../kernel/errors.js';
import { BoundedMap } from '../util/bounded-map.js';
import type { Op, Store, Sublevel } from '../store/db.js';
import { custodySetOf, membersChange, rankedSetOf, shiftedSet, type CustodySet, type MembersChange, type RankedSet } from './custody-set.js';
import { entryHash, FIRST_EPOCH, GENESIS_ENTRY_HASH, signingTextOf, verifyEntrySignature, type CustodyEntry, type EntrySignature } from './entry.js';
import { headChainPage, slotKey, slotsFrom } from './custodian.js';
import type { DebitCertificate, DebitCertificates } from './debit-certificate.js';
import type { LedgerChange, LedgerOpsReader } from './ledger-ops.js';
import {
  MAX_BATCH_CERTIFICATES,
  MAX_BATCH_ENTRIES,
  MAX_ENTRY_RECORDS_BYTES,
  MAX_REQUEST_BYTES,
  recordsSize,
  type CustodyResult,
  type EntryRecords,
} from './protocol.js';
import type { SendBatch } from './client.js';
import type { HomeChange } from './home-change.js';
import type { ChainPage } from './custodian.js';
import { linkOf, pageOf } from './replica.js';

/** Custody sets kept (setOf), the oldest computed going first. */
const SETS_KEPT = 4096;

/** A proposal refused `behind` is sent again after BEHIND_PAUSE_MS, then twice that…, at most BEHIND_RETRIES times. */
const BEHIND_PAUSE_MS = 50;
const BEHIND_RETRIES = 6;

/** What a batch's request carries besides its entries' records: the entries, certificates, the frame (bytes, estimated). */
const ENTRY_WIRE_BYTES = 2048;

/** The head of an identity's chain of entries at its home. */
export interface OwnHead {
  epoch: number;
  seq: number;
  hash: string;
  /** The head entry's attempt (entry.ts; absent: 0). */
  attempt?: number;
}

/** The attempt a home keeps on disk for an identity before it sends any entry of it (entry.ts `attempt`). */
interface KeptAttempt {
  epoch: number;
  attempt: number;
}

/** A proposal waiting for its identity's head to be read or its attempt to be kept: proposed in its turn, or failed. */
interface Waiting {
  go: () => void;
  fail: (err: unknown) => void;
}

/** Log entries read per page when looking for one entry (loggedDebit). */
const LOG_PAGE = 64;

/** A certified entry as its home keeps it: with the custodians' signatures, its records and a credit's debit certificate. */
export interface CertifiedEntry {
  entry: CustodyEntry;
  hash: string;
  signatures: EntrySignature[];
  records: EntryRecords;
  certificate: DebitCertificate | null;
}

export interface ReplicatorDeps {
  store: Store;
  reader: LedgerOpsReader;
  nodeId: () => string;
  /** R: custodians per identity, the home included (config custody.replicas). */
  replicas: number;
  /** The nodes that may hold identities (custody-set.ts): those the bond registry knows with an active bond. */
  members: () => Iterable<string>;
  send: SendBatch | null;
  verify: (signer: string, text: string, signature: string) => boolean;
  /** This node's Ed25519 signature (base64) of a text: the home's own signature in a debit certificate. */
  sign: (text: string) => string;
  /** Where a certified debit's certificate is kept (with the debit, so with its outbox entry). */
  certificates: DebitCertificates;
  /** How long a write waits for its majority before it fails (config custody.certifyTimeoutMs). */
  timeoutMs: number;
  /** A custodian refused an entry as fenced and showed the home change that fenced it (home-change.ts). */
  onHomeChange?: (change: HomeChange) => void;
  /** A custodian refused an entry of the identity as fenced (with the change it showed, applied first, if any). */
  onFenced?: (zid: string) => void;
  /** The epoch this node promised itself for an identity (a home taking it again, failover.ts retake; 0: none). */
  ownPromise?: (zid: string) => Promise<number>;
  /**
   * An entry of the identity was certified: a majority of its set took this node's write as the home's, so no later
   * epoch had been promised by a majority then (home-check.ts needs ask nothing more in this run).
   */
  onCertified?: (zid: string) => void;
}

interface Proposal {
  entry: CustodyEntry;
  hash: string;
  set: CustodySet;
  /** A credit's debit certificate, sent with it to the custodians. */
  certificate: DebitCertificate | null;
  records: EntryRecords;
  /** Its share of a request (records and the entry around them). */
  bytes: number;
  signatures: EntrySignature[];
  /** Custodians that refused it or did not answer. */
  missed: string[];
  reasons: string[];
  /** Times each custodian answered `behind` (it is catching up): sent again after a pause, a few times. */
  behind: Map<string, number> | null;
  settled: boolean;
  /** Settled as given up (with as many signatures as it may hold, waiting on an earlier proposal that failed). */
  failed: boolean;
  /** The write's ops, as the store's gate was given them. */
  write: readonly Op[];
  resolve: (p: Proposal) => void;
  reject: (err: unknown) => void;
}

interface Link {
  queue: Proposal[];
  busy: boolean;
}

export class Replicator {
  private readonly own: Sublevel;
  private readonly log: Sublevel;
  /** The attempt kept by zid (KeptAttempt). */
  private readonly kept: Sublevel;
  /** By zid: the members its set passes over in the epoch this node opened as its home (absent: none, as in epoch 1). */
  private readonly passed: Sublevel;
  /** `passed` as read (load, excludedOf), by zid. */
  private readonly excluded = new Map<string, string[]>();
  /** Proposed heads by zid (the last entry proposed, certified or still held). */
  private readonly proposed = new Map<string, OwnHead>();
  /** By identity: its writes refused (given up, or refused for one) whose callers have not rolled back yet. */
  private readonly unsettled = new Map<string, Set<readonly Op[]>>();
  /** Certified heads by zid (where the chain goes back to when a proposal fails). */
  private readonly certified = new Map<string, OwnHead>();
  /** The attempt of the proposals by zid, kept on disk (or in `unkept`, being kept). */
  private readonly attempts = new Map<string, number>();
  /** Attempts started after a proposal was given up and not yet on disk, by zid: no entry of one is sent before. */
  private readonly unkept = new Map<string, KeptAttempt>();
  /** Identities whose head is being read or attempt kept; proposals made meanwhile wait, in the order they were made. */
  private readonly stepping = new Set<string>();
  private readonly waiting = new Map<string, Waiting[]>();
  /**
   * By zid: the epoch this home promised itself (fence): no entry of an earlier epoch is certified after it. Its own
   * signature counts in its majority, so its custodians' promises alone would not stop it.
   */
  private readonly fences = new Map<string, number>();
  /** Proposals not settled yet, by zid, oldest first. */
  private readonly open = new Map<string, Proposal[]>();
  private readonly links = new Map<string, Link>();
  /** Sets as setOf last computed them, by zid, with what they were computed from. */
  private readonly sets = new BoundedMap<string, { members: Iterable<string>; excluded: string[] | undefined; ranked: RankedSet }>(SETS_KEPT);
  /** By a list of the members and a later one, the change from it (the sets kept shift by it). */
  private readonly changes = new WeakMap<Iterable<string>, WeakMap<Iterable<string>, MembersChange>>();
  readonly stats = { proposed: 0, certified: 0, failed: 0, batches: 0 };

  constructor(private readonly deps: ReplicatorDeps) {
    this.own = deps.store.sub('custody_own', 'json', { rewritten: true });
    this.log = deps.store.sub('custody_log');
    this.kept = deps.store.sub('custody_attempts', 'json', { rewritten: true });
    this.passed = deps.store.sub('custody_own_set', 'json', { rewritten: true });
  }

  /**
   * The custody set of an identity homed here (with the members its epoch passes over, once they are read). A set
   * costs a SHA-256 per member and every ledger write asks for one: it is kept while the view of the members and the
   * identity's passed-over members are the objects it was computed from (the wiring keeps the members' list while it
   * does not change).
   */
  setOf(zid: string): CustodySet {
    const members = this.deps.members();
    const excluded = this.excluded.get(zid);
    const known = this.sets.get(zid);
    if (known !== undefined && known.members === members && known.excluded === excluded) return known.ranked.set;
    const home = this.deps.nodeId();
    // A set kept from another list of the members shifts by the change (a hash per member that joined), where ranking
    // every member again costs one per member.
    const ranked =
      (known !== undefined && known.excluded === excluded && known.ranked.set.home === home
        ? shiftedSet(zid, known.ranked, this.changeOf(known.members, members), this.deps.replicas, excluded)
        : null) ?? rankedSetOf(zid, home, members, this.deps.replicas, excluded);
    this.sets.set(zid, { members, excluded, ranked });
    return ranked.set;
  }

  private changeOf(from: Iterable<string>, to: Iterable<string>): MembersChange {
    let byTo = this.changes.get(from);
    if (byTo === undefined) this.changes.set(from, (byTo = new WeakMap()));
    let change = byTo.get(to);
    if (change === undefined) byTo.set(to, (change = membersChange(from, to)));
    return change;
  }

  /**
   * Is the set of an identity homed here, as setOf gives it now, its set under each of these lists of the members
   * (set-changes.ts)? A hash per member of a list that is not a member now.
   */
  async sameSetUnder(zid: string, lists: readonly (readonly string[])[]): Promise<boolean> {
    await this.excludedOf(zid);
    this.setOf(zid);
    const now = this.sets.get(zid)!;
    return lists.every(
      (list) => list === now.members || shiftedSet(zid, now.ranked, this.changeOf(now.members, list), this.deps.replicas, now.excluded) === now.ranked,
    );
  }

  /**
   * Identities this node keeps a certified head of (homed here, or once), at most `limit`; `passing`: only those whose
   * set passes over members.
   */
  async homed(limit: number, passing: boolean, from?: string): Promise<string[]> {
    return (await this.deps.store.range(passing ? this.passed : this.own, { gte: from, limit })).map((r) => r.key);
  }

  /**
   * The identity's certified head to the custodians of its set of now that did not sign it, but those in `skip`
   * (set-changes.ts): one behind catches up from this home's log before it signs. Their signatures join the head's in
   * the log, so they are not asked again. Returns the custodians that hold the head now and those that did not sign it.
   */
  async handOver(zid: string, skip: ReadonlySet<string>): Promise<{ reached: string[]; missed: string[] }> {
    const send = this.deps.send;
    const head = await this.certifiedHead(zid);
    if (send === null || head === null || head.seq === 0) return { reached: [], missed: [] };
    await this.excludedOf(zid);
    const set = this.setOf(zid);
    const key = slotKey({ zid, epoch: head.epoch, seq: head.seq });
    const logged = await this.deps.store.get<CertifiedEntry>(this.log, key);
    if (logged === undefined || logged.hash !== head.hash) return { reached: [], missed: [] };
    const targets = set.custodians.filter((n) => n !== set.home && !skip.has(n) && !logged.signatures.some((s) => s.node === n));
    const answers = await Promise.all(targets.map((node) => this.signatureOf(send, node, logged)));
    const signed = answers.filter((s): s is EntrySignature => s !== null);
    if (signed.length > 0) {
      // Read again: another hand-over of this head may have added signatures meanwhile.
      const now = await this.deps.store.get<CertifiedEntry>(this.log, key);
      const added = signed.filter((s) => now !== undefined && !now.signatures.some((x) => x.node === s.node));
      if (now !== undefined && now.hash === logged.hash && added.length > 0)
        await this.deps.store.commitAside([{ type: 'put', sub: this.log, key, value: { ...now, signatures: [...now.signatures, ...added] } }]);
    }
    return { reached: signed.map((s) => s.node), missed: targets.filter((_, i) => answers[i] === null) };
  }

  /** The members the set of an identity homed here passes over in its epoch (none: empty). */
  async excludedOf(zid: string): Promise<string[]> {
    const known = this.excluded.get(zid);
    if (known !== undefined) return known;
    const stored = (await this.deps.store.get<string[]>(this.passed, zid)) ?? [];
    if (!this.excluded.has(zid)) this.excluded.set(zid, stored);
    return this.excluded.get(zid)!;
  }

  /** The store's gate: hold a write that changes the ledger of identities with more than one custodian. */
  hold(ops: readonly Op[]): Promise<Op[]> | null {
    // Alone (R = 1, or no other member): every set is the home alone, and only a write that moves a transfer is read
    // (its debit still gets a certificate, the home's own signature).
    const alone = this.deps.replicas < 2 || !this.othersExist();
    if (alone && !this.deps.reader.putsTransfer(ops)) return null;
    const changes = this.deps.reader.changes(ops);
    if (changes.length === 0) return null;
    // A write of an identity whose given-up writes' callers have not yet rolled their memory back may be built on it
    // (a chain row on a row never written, a wallet on a charge never made): refused with them.
    const unsettled = changes.find((c) => (this.unsettled.get(c.zid)?.size ?? 0) > 0);
    if (unsettled !== undefined) {
      for (const c of changes) this.markUnsettled(c.zid, ops);
      const reason = 'an earlier write of the identity was not certified';
      return Promise.reject(
        unavailable(`the write was not acknowledged: ${reason}; nothing of it is written`, reason, unsettled.zid, this.setOf(unsettled.zid)),
      );
    }
    let held: Promise<Op[]>[] | null = null;
    for (const change of changes) {
      const set = alone ? custodySetOf(change.zid, this.deps.nodeId(), [], 1) : this.setOf(change.zid);
      if (set.custodians.length < 2 && change.transfer?.side !== 'debit') continue;
      (held ??= []).push(this.propose(change, set, ops));
    }
    if (held === null) return null;
    if (held.length === 1) return held[0]!;
    return Promise.all(held).then((parts) => parts.flat());
  }

  private othersExist(): boolean {
    const self = this.deps.nodeId();
    for (const node of this.deps.members()) if (node !== self) return true;
    return false;
  }

  /** The certified head of an identity homed here (null: no entry certified). */
  async certifiedHead(zid: string): Promise<OwnHead | null> {
    return this.certified.get(zid) ?? (await this.deps.store.get<OwnHead>(this.own, zid)) ?? null;
  }

  /** Certified entries of an identity homed here, from `fromSeq`, at most `limit`. */
  async entries(zid: string, fromSeq: number, limit: number): Promise<CertifiedEntry[]> {
    return slotsFrom<CertifiedEntry>(this.deps.store, this.log, zid, fromSeq, limit);
  }

  /** The hash of the certified entry this node's log holds at each entry's slot (undefined: none). */
  async loggedHashes(entries: readonly Pick<CustodyEntry, 'zid' | 'epoch' | 'seq'>[]): Promise<(string | undefined)[]> {
    const held = await this.deps.store.getMany<CertifiedEntry>(this.log, entries.map(slotKey));
    return held.map((h) => h?.hash);
  }

  /**
   * The certified debit entry of transfer `transferId` in the log of an identity homed here (undefined: none), read
   * newest first a page at a time: a debit still pending is near the head, and the log may be long.
   */
  async loggedDebit(zid: string, transferId: string): Promise<CertifiedEntry | undefined> {
    for (let below = `${zid}!~`; ;) {
      const page = await this.deps.store.range<CertifiedEntry>(this.log, { gte: `${zid}!`, lt: below, limit: LOG_PAGE, reverse: true });
      const found = page.find((r) => r.value.entry.transfer?.side === 'debit' && r.value.entry.transfer.id === transferId);
      if (found !== undefined) return found.value;
      if (page.length < LOG_PAGE) return undefined;
      below = page.at(-1)!.key;
    }
  }

  /**
   * The ops making this node the home of `zid` from a failover's epoch entry (failover.ts): the chain it took and the
   * certified epoch entry in its log, the epoch entry as its head. `forget` once they are written.
   */
  adoptOps(chain: readonly CertifiedEntry[], epochEntry: CertifiedEntry): Op[] {
    const { entry, hash } = epochEntry;
    const head = headOf(entry, hash);
    return [
      ...[...chain, epochEntry].map((c): Op => ({ type: 'put', sub: this.log, key: slotKey(c.entry), value: c })),
      { type: 'put', sub: this.own, key: entry.zid, value: head },
      entry.excluded === undefined
        ? { type: 'del', sub: this.passed, key: entry.zid }
        : { type: 'put', sub: this.passed, key: entry.zid, value: entry.excluded },
    ];
  }

  /** The ops of adoptOps are written (and the identity forgotten): its set of the new epoch is known from now. */
  adopted(epochEntry: CustodyEntry): void {
    this.excluded.set(epochEntry.zid, epochEntry.excluded ?? []);
  }

  /**
   * This home takes `zid` again in `epoch` (failover.ts retake): its open proposals of earlier epochs fail, and so does
   * every later one until its head is of that epoch (read again after a restart from the promise it kept).
   */
  fence(zid: string, epoch: number): void {
    if ((this.fences.get(zid) ?? 0) >= epoch) return;
    this.fences.set(zid, epoch);
    const first = this.open.get(zid)?.find((p) => !p.settled && p.entry.epoch < epoch);
    if (first !== undefined) this.fail(first, TAKING_AGAIN);
  }

  /**
   * Resolves once no write of `zid` is open here and every refused one has settled with its caller (rolled back in
   * memory), or after `boundMs`. A node that writes the identity's ledger from a chain (a takeover) reloads its memory
   * of it after that, and a rollback that came later (a refusal waiting behind other identities' held writes) took
   * the refused write's change off the reloaded values: the identity's charged total one short for good.
   */
  async quiet(zid: string, boundMs = 4 * this.deps.timeoutMs): Promise<void> {
    const until = Date.now() + boundMs;
    while ((this.open.has(zid) || (this.unsettled.get(zid)?.size ?? 0) > 0) && Date.now() < until) await new Promise((r) => setTimeout(r, QUIET_POLL_MS));
    // The callers' rollbacks run as their refusals reach them, in the turn that settled them.
    await new Promise((r) => setImmediate(r));
  }

  /** Drop what is kept in memory of `zid` (its home changed): its next proposal reads its head from the store. */
  forget(zid: string): void {
    this.proposed.delete(zid);
    this.certified.delete(zid);
    this.attempts.delete(zid);
    this.unkept.delete(zid);
    this.excluded.delete(zid);
  }

  /** What the home answers a fetch with: its certified entries from `from`, a page, each with its own signature and the custodians'. */
  async page(zid: string, from: number): Promise<ChainPage> {
    const head = await this.certifiedHead(zid);
    const written = await this.deps.store.get<OwnHead>(this.own, zid);
    const certified = await headChainPage((fromSeq, limit) => this.entries(zid, fromSeq, limit), written ?? null, from);
    const self = this.deps.nodeId();
    const { links, more } = pageOf(
      certified.map((c) => linkOf(c, [{ node: self, signature: this.deps.sign(signingTextOf(c.hash)) }, ...c.signatures.filter((s) => s.node !== self)])),
    );
    return { head, links, more };
  }

  /**
   * A write the gate refused has settled: its caller was told (and rolls back what it changed in memory as the refusal
   * reaches it, before any other request is read), so the identity's next writes are built on memory without it.
   */
  refusalSettled(ops: readonly Op[]): void {
    for (const [zid, writes] of this.unsettled) if (writes.delete(ops) && writes.size === 0) this.unsettled.delete(zid);
  }

  /** `write`, refused, is not yet settled with its caller (a bound: a refusal the store never settles, as it closes). */
  private markUnsettled(zid: string, write: readonly Op[]): void {
    let writes = this.unsettled.get(zid);
    if (writes === undefined) this.unsettled.set(zid, (writes = new Set()));
    if (writes.has(write)) return;
    writes.add(write);
    setTimeout(() => this.refusalSettled(write), 4 * this.deps.timeoutMs).unref?.();
  }

  private propose(change: LedgerChange, set: CustodySet, write: readonly Op[]): Promise<Op[]> {
    // A write whose records no request can carry is refused before it is proposed (docs/decisions.md "Custody").
    const size = recordsSize(change.recordOps);
    if (size > MAX_ENTRY_RECORDS_BYTES) {
      this.markUnsettled(change.zid, write);
      return Promise.reject(
        unavailable(
          `the write's records (${size} bytes) are over the ${MAX_ENTRY_RECORDS_BYTES} bytes an entry carries; nothing of it is written`,
          'records too large',
          change.zid,
          set,
        ),
      );
    }
    const zid = change.zid;
    const head = this.proposed.get(zid);
    if (head !== undefined && !this.stepping.has(zid) && !this.unkept.has(zid)) return this.proposeOn(head, change, set, write);
    return new Promise<Op[]>((resolve, reject) => {
      let queue = this.waiting.get(zid);
      if (queue === undefined) this.waiting.set(zid, (queue = []));
      queue.push({
        go: () => void this.proposeOn(this.proposed.get(zid)!, change, set, write).then(resolve, reject),
        fail: (err) => {
          this.markUnsettled(zid, write);
          reject(
            unavailable(
              `the home could not read its head or keep its attempt: ${errorText(err)}; nothing of the write is written`,
              'attempt not kept',
              zid,
              set,
            ),
          );
        },
      });
      if (!this.stepping.has(zid)) void this.step(zid);
    });
  }

  /**
   * Read the identity's head and keep its attempt on disk until nothing is left to do, then propose the writes that
   * waited, in order, in this turn (no failure comes between them). A step that fails fails them; the next write
   * takes the step again.
   */
  private async step(zid: string): Promise<void> {
    this.stepping.add(zid);
    let failure: unknown = null;
    try {
      for (;;) {
        if (!this.proposed.has(zid)) await this.load(zid);
        else if (this.unkept.has(zid)) await this.keepAttempt(zid);
        else break;
      }
    } catch (err) {
      failure = err ?? new Error('the step failed');
    }
    this.stepping.delete(zid);
    const queue = this.waiting.get(zid) ?? [];
    this.waiting.delete(zid);
    for (const w of queue) {
      if (failure === null) w.go();
      else w.fail(failure);
    }
  }

  /**
   * Read the identity's head and start its attempt: the next after the one kept last in the head's epoch (its
   * proposals may have been sent and never settled: this home restarted), kept on disk before any is sent.
   */
  private async load(zid: string): Promise<void> {
    const [stored, kept] = await Promise.all([
      this.deps.store.get<OwnHead>(this.own, zid),
      this.deps.store.get<KeptAttempt>(this.kept, zid),
      this.excludedOf(zid),
    ]);
    const head = stored ?? { epoch: FIRST_EPOCH, seq: 0, hash: GENESIS_ENTRY_HASH };
    const promised = (await this.deps.ownPromise?.(zid)) ?? 0;
    if (promised > (this.fences.get(zid) ?? 0)) this.fences.set(zid, promised);
    const attempt = kept !== undefined && kept.epoch === head.epoch ? kept.attempt + 1 : (head.attempt ?? 0);
    await this.deps.store.commitAside([{ type: 'put', sub: this.kept, key: zid, value: { epoch: head.epoch, attempt } satisfies KeptAttempt }]);
    this.proposed.set(zid, head);
    this.certified.set(zid, head);
    this.attempts.set(zid, attempt);
  }

  private async keepAttempt(zid: string): Promise<void> {
    const next = this.unkept.get(zid)!;
    await this.deps.store.commitAside([{ type: 'put', sub: this.kept, key: zid, value: next }]);
    if (this.unkept.get(zid) === next) this.unkept.delete(zid);
  }

  private proposeOn(head: OwnHead, change: LedgerChange, given: CustodySet, write: readonly Op[]): Promise<Op[]> {
    // The set of the head's epoch, with the members it passes over read with the head (`given` was counted before
    // they were read when none is passed over; a set of one stays: a home alone).
    const set = given.custodians.length > 1 && (this.excluded.get(change.zid)?.length ?? 0) > 0 ? this.setOf(change.zid) : given;
    if (head.epoch < (this.fences.get(change.zid) ?? 0)) {
      this.markUnsettled(change.zid, write);
      // The retake is tried again as a refusal as fenced would try it.
      this.deps.onFenced?.(change.zid);
      return Promise.reject(unavailable(`the write was not acknowledged: ${TAKING_AGAIN}; nothing of it is written`, TAKING_AGAIN, change.zid, set));
    }
    const entry: CustodyEntry = {
      v: 1,
      zid: change.zid,
      epoch: head.epoch,
      seq: head.seq + 1,
      prev_hash: head.hash,
      kind: change.kind,
      records: change.records,
      balance: change.balance,
      transfer: change.transfer,
    };
    const attempt = this.attempts.get(change.zid) ?? 0;
    if (attempt > 0) entry.attempt = attempt;
    const hash = entryHash(entry);
    this.proposed.set(change.zid, headOf(entry, hash));
    this.stats.proposed++;
    return new Promise<Proposal>((resolve, reject) => {
      const p: Proposal = {
        entry,
        hash,
        set,
        certificate: change.certificate,
        records: change.recordOps,
        bytes: recordsSize(change.recordOps) + ENTRY_WIRE_BYTES,
        signatures: [],
        missed: [],
        reasons: [],
        behind: null,
        settled: false,
        failed: false,
        write,
        resolve,
        reject,
      };
      let open = this.open.get(change.zid);
      if (open === undefined) this.open.set(change.zid, (open = []));
      open.push(p);
      const timer = setTimeout(() => this.fail(p, `no majority within ${this.deps.timeoutMs} ms`), this.deps.timeoutMs);
      timer.unref?.();
      const done = () => clearTimeout(timer);
      p.resolve = (x) => {
        done();
        resolve(x);
      };
      p.reject = (err) => {
        done();
        reject(err);
      };
      // A set of one (a debit of a home alone) needs no other signature: certified as it is made.
      if (this.needed(p) <= 0) this.certifyInOrder(change.zid);
      else for (const node of set.custodians) if (node !== set.home) this.enqueue(node, p);
    }).then((p) => this.certifiedOps(p));
  }

  private certifiedOps(p: Proposal): Op[] {
    const head = headOf(p.entry, p.hash);
    const record: CertifiedEntry = { entry: p.entry, hash: p.hash, signatures: p.signatures, records: p.records, certificate: p.certificate };
    const ops: Op[] = [
      { type: 'put', sub: this.log, key: slotKey(p.entry), value: record },
      { type: 'put', sub: this.own, key: p.entry.zid, value: head },
    ];
    // A debit's certificate: the home's own signature with the others', a majority of the set.
    if (p.entry.transfer?.side === 'debit') {
      const own: EntrySignature = { node: p.set.home, signature: this.deps.sign(signingTextOf(p.hash)) };
      ops.push(this.deps.certificates.putOp(p.entry, [own, ...p.signatures]));
    }
    return ops;
  }

  private enqueue(node: string, p: Proposal): void {
    let link = this.links.get(node);
    if (link === undefined) this.links.set(node, (link = { queue: [], busy: false }));
    link.queue.push(p);
    if (!link.busy) {
      link.busy = true;
      // After this round of callbacks: the batch takes every entry proposed in it.
      setImmediate(() => void this.pump(node, link));
    }
  }

  /** Send the link's queue in batches, one in flight at a time. */
  private async pump(node: string, link: Link): Promise<void> {
    try {
      while (link.queue.length > 0) {
        // An entry that failed is never sent again: a custodian that signed it would hold a slot the home gave up.
        const batch = this.nextBatch(link).filter((p) => !p.failed);
        if (batch.length === 0) continue;
        const certificates = batch.some((p) => p.certificate !== null) ? batch.map((p) => p.certificate) : undefined;
        this.stats.batches++;
        const send = this.deps.send;
        let results: CustodyResult[] | null = null;
        let why = 'the mesh is not running';
        if (send !== null) {
          try {
            const answer = await send(
              node,
              batch.map((p) => p.entry),
              batch.map((p) => p.records),
              AbortSignal.timeout(this.deps.timeoutMs),
              certificates,
            );
            if (answer.refused !== undefined) why = `${answer.refused.code}: ${answer.refused.reason}`;
            else results = answer.results;
          } catch (err) {
            why = err instanceof Error ? err.message : String(err);
          }
        }
        batch.forEach((p, i) => {
          const r = results?.[i];
          if (r?.ok === true && verifyEntrySignature(this.deps.verify, p.hash, { node, signature: r.signature }))
            this.signed(p, { node, signature: r.signature });
          else if (r?.ok === false && r.code === 'behind' && this.resendLater(node, p)) return;
          else {
            if (r?.ok === false && r.home !== undefined) this.deps.onHomeChange?.(r.home);
            if (r?.ok === false && r.code === 'fenced') this.deps.onFenced?.(p.entry.zid);
            this.missed(p, node, r === undefined ? why : r.ok ? 'a signature that does not verify' : `${r.code}: ${r.reason}`);
          }
        });
      }
    } finally {
      link.busy = false;
    }
  }

  /**
   * The next batch of a link's queue: at most MAX_BATCH_ENTRIES entries, of them at most MAX_BATCH_CERTIFICATES
   * credits, within MAX_REQUEST_BYTES (one entry at least: its records are bounded to fit alone).
   */
  private nextBatch(link: Link): Proposal[] {
    let end = 0;
    let credits = 0;
    let bytes = 0;
    while (end < link.queue.length && end < MAX_BATCH_ENTRIES) {
      const p = link.queue[end]!;
      if (p.certificate !== null && ++credits > MAX_BATCH_CERTIFICATES) break;
      bytes += p.bytes;
      if (end > 0 && bytes > MAX_REQUEST_BYTES - ENTRY_WIRE_BYTES) break;
      end++;
    }
    return link.queue.splice(0, end);
  }

  private needed(p: Proposal): number {
    return p.set.majority - 1;
  }

  private signed(p: Proposal, s: EntrySignature): void {
    p.signatures.push(s);
    if (!p.settled) this.certifyInOrder(p.entry.zid);
  }

  /**
   * Certify the identity's open proposals that hold their majority, oldest first, up to the first that does not: a
   * proposal is certified only once every one before it is (its signers hold those, but their answers may be lost),
   * so no write is acknowledged on an entry the home may still give up.
   */
  private certifyInOrder(zid: string): void {
    const open = this.open.get(zid);
    while (open !== undefined && open.length > 0 && open[0]!.signatures.length >= this.needed(open[0]!)) this.certify(open[0]!);
  }

  private certify(p: Proposal): void {
    p.settled = true;
    this.stats.certified++;
    if ((this.certified.get(p.entry.zid)?.seq ?? 0) < p.entry.seq) this.certified.set(p.entry.zid, headOf(p.entry, p.hash));
    this.close(p);
    this.deps.onCertified?.(p.entry.zid);
    p.resolve(p);
  }

  /**
   * A certified debit's certificate under the identity's custody set of now (docs/decisions.md "Custody"): the debit
   * entry is proposed again, with its records, to the set's custodians; one that holds it signs it again, one behind
   * catches up first. With a majority (this home's signature among it) the certificate is replaced in one write;
   * otherwise `cert` is returned as it is (the delivery is refused and tried again later).
   */
  async recertify(cert: DebitCertificate): Promise<DebitCertificate> {
    const entry = cert.entry;
    const logged = await this.deps.store.get<CertifiedEntry>(this.log, slotKey(entry));
    const send = this.deps.send;
    if (send === null || logged === undefined || logged.hash !== entryHash(entry) || entry.transfer?.side !== 'debit') return cert;
    const set = this.setOf(entry.zid);
    const others = await Promise.all(set.custodians.filter((n) => n !== set.home).map((node) => this.signatureOf(send, node, logged)));
    const signatures = others.filter((s): s is EntrySignature => s !== null);
    if (signatures.length < set.majority - 1) return cert;
    const all: EntrySignature[] = [{ node: set.home, signature: this.deps.sign(signingTextOf(logged.hash)) }, ...signatures];
    await this.deps.store.commit([this.deps.certificates.putOp(entry, all)]);
    return { entry, signatures: all };
  }

  /** `node`'s signature of a certified entry it holds (or holds once it has caught up), else null. */
  private async signatureOf(send: SendBatch, node: string, logged: CertifiedEntry): Promise<EntrySignature | null> {
    for (let tries = 0; ; tries++) {
      let r: CustodyResult | undefined;
      try {
        r = (await send(node, [logged.entry], [logged.records], AbortSignal.timeout(this.deps.timeoutMs))).results[0];
      } catch {
        return null;
      }
      if (r?.ok === true)
        return verifyEntrySignature(this.deps.verify, logged.hash, { node, signature: r.signature }) ? { node, signature: r.signature } : null;
      if (r?.code !== 'behind' || tries >= BEHIND_RETRIES) return null;
      await new Promise((resolve) => setTimeout(resolve, BEHIND_PAUSE_MS * 2 ** tries));
    }
  }

  /**
   * A custodian behind on the identity catches up from this home's certified log: the proposal goes to it again after
   * a pause (doubling), while no majority certified it yet and within BEHIND_RETRIES. False: it counts as missed.
   */
  private resendLater(node: string, p: Proposal): boolean {
    if (p.settled) return false;
    const tries = p.behind?.get(node) ?? 0;
    if (tries >= BEHIND_RETRIES) return false;
    (p.behind ??= new Map()).set(node, tries + 1);
    const timer = setTimeout(
      () => {
        if (!p.settled) this.enqueue(node, p);
      },
      BEHIND_PAUSE_MS * 2 ** tries,
    );
    timer.unref?.();
    return true;
  }

  private missed(p: Proposal, node: string, reason: string): void {
    p.missed.push(node);
    p.reasons.push(`${node}: ${reason}`);
    const others = p.set.custodians.length - 1;
    if (!p.settled && others - p.missed.length < this.needed(p)) this.fail(p, 'too few custodians hold it');
  }

  /**
   * `p` is not certified: it and every later proposal of its identity fail (they were built on it), and the next
   * proposal chains on the entry before it (an earlier one still open, else the certified head), in the next attempt:
   * kept on disk before any entry of it is sent (a custodian may hold `p`, signed, its answer lost).
   */
  private fail(p: Proposal, why: string): void {
    if (p.settled) return;
    const zid = p.entry.zid;
    const open = this.open.get(zid) ?? [];
    const later = open.filter((q) => q.entry.seq >= p.entry.seq && !q.settled);
    const before = open.filter((q) => q.entry.seq < p.entry.seq && !q.settled).pop();
    const reset =
      before !== undefined ? headOf(before.entry, before.hash) : (this.certified.get(zid) ?? { epoch: FIRST_EPOCH, seq: 0, hash: GENESIS_ENTRY_HASH });
    this.proposed.set(zid, reset);
    const next: KeptAttempt = { epoch: reset.epoch, attempt: (this.attempts.get(zid) ?? 0) + 1 };
    this.attempts.set(zid, next.attempt);
    this.unkept.set(zid, next);
    if (!this.stepping.has(zid)) void this.step(zid);
    for (const q of later) {
      this.markUnsettled(zid, q.write);
      q.settled = true;
      q.failed = true;
      this.stats.failed++;
      this.close(q);
      const reason = q === p ? why : 'an earlier write of the identity was not certified';
      q.reject(unavailable(`the write was not acknowledged: ${reason}; nothing of it is written`, reason, zid, q.set, q.signatures.length, q.reasons));
    }
  }

  private close(p: Proposal): void {
    const open = this.open.get(p.entry.zid);
    if (open === undefined) return;
    const i = open.indexOf(p);
    if (i >= 0) open.splice(i, 1);
    if (open.length === 0) this.open.delete(p.entry.zid);
  }
}

/** How often quiet() looks again. */
const QUIET_POLL_MS = 10;
const TAKING_AGAIN = 'this home is taking the identity again in a later epoch';

/** The head an entry makes (its attempt when it has one). */
function headOf(entry: CustodyEntry, hash: string): OwnHead {
  return { epoch: entry.epoch, seq: entry.seq, hash, ...(entry.attempt === undefined ? {} : { attempt: entry.attempt }) };
}

/** 503 SVC_CUSTODY_UNAVAILABLE for a write of `zid` that is not certified: why, and what its custody set did. */
function unavailable(message: string, reason: string, zid: string, set: CustodySet, signed = 0, refusals: string[] = []): ServiceError {
  return new ServiceError(503, 'SVC_CUSTODY_UNAVAILABLE', message, { reason, zid, custodians: set.custodians, signed, needed: set.majority, refusals });
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

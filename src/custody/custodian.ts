// The custodian's side of /svc/custody/1 (docs/protocol.md §19): check each proposed entry (custodian-rules.ts), keep
// the ones it signs in ONE batch (commitAside: never behind this node's own held writes), then answer the signatures.
// A signature leaves only after its entry and its slot are on disk, so a restarted custodian refuses a second,
// different entry for a slot it signed. Batches are taken one at a time: the heads they read are the ones the last
// batch wrote. Behind on an identity, it catches up from the home before it signs; it answers fetches of the chains
// it holds.
import { timingSafeEqual } from 'node:crypto';
import type { Stream } from '@libp2p/interface';
import type { Logger } from 'pino';
import { padNum, type Op, type Store, type Sublevel } from '../store/db.js';
import { answerFrame, readRequestFrame } from '../mesh/frame.js';
import { bodyDigest, handshakeFor } from '../mesh/wire.js';
import { decide, type HeldHead } from './custodian-rules.js';
import { excludedMember, type SetConfig } from './custody-set.js';
import type { CreditClaim, DebitCertificate } from './debit-certificate.js';
import { entryHash, FIRST_EPOCH, GENESIS_ENTRY_HASH, signingTextOf, type CustodyEntry } from './entry.js';
import { fetchChain, type FetchChain } from './client.js';
import type { HomeChange } from './home-change.js';
import { headAfter } from './failover-rules.js';
import { decidePromise, epochsToName, latestOf, promiseSigningText, type PromiseBody, type Promised, type PromisedHead } from './promise.js';
import {
  changesRequestSchema,
  custodyRequestSchema,
  MAX_CHANGES_PER_ANSWER,
  MAX_CHAIN_LINKS,
  MAX_REQUEST_BYTES,
  MAX_SKEW_TICKS,
  promiseRequestSchema,
  recordsDigest,
  type ChainAnswer,
  type ChainLink,
  type ChangesAnswer,
  type CustodyAnswer,
  type CustodyResult,
  type EntryRecords,
  type PromiseAnswer,
} from './protocol.js';
import { chainEndingOn, checkChain, GENESIS_HEAD, linkOf, pageOf, recordsFault, type ChainHead } from './replica.js';
import { keyAfter } from '../util/range-cursor.js';

/** Held entries read at a time when looking for the home that proposed an epoch's entries. */
const HOME_SCAN_PAGE = 8;
/** How long a custodian waits for a request on a stream it accepted. */
const REQUEST_READ_MS = 10_000;
/** How long one catch-up may take, and the most entries it keeps (a longer history: the next `behind` continues it). */
const CATCH_UP_MS = 30_000;
const MAX_CATCH_UP_ENTRIES = 10_000;
/** How far back a custodian on a branch a later epoch left first looks for where the home's chain meets its own (times this, each further look). */
const BRANCH_STEP = 16;

/** An entry as a custodian keeps it: the entry, its hash, this custodian's signature, its records, a credit's debit certificate. */
export interface HeldEntry {
  entry: CustodyEntry;
  hash: string;
  signature: string;
  records: EntryRecords;
  /** The debit certificate this custodian checked with a credit entry, else null. */
  certificate: DebitCertificate | null;
  /**
   * The node that proposed the entry as the identity's home of its epoch (it passed the `not-home` row); absent for an
   * entry kept by catching up, whose sender may be a later home.
   */
  home?: string;
}

/** A page of an identity's chain as this node holds it (the answer to a `fetch`). */
export interface ChainPage {
  head: ChainHead | null;
  links: ChainLink[];
  more: boolean;
}

export interface CustodianDeps {
  store: Store;
  nodeId: () => string;
  /** This node's Ed25519 signature (base64) of a text. */
  sign: (text: string) => string;
  /** The identity's home as this node's identity directory knows it, or null. */
  homeOf: (zid: string) => Promise<string | null>;
  /** Why a debit certificate does not certify a credit, else null (debit-certificate.ts debitCertificateFault). */
  debitFault: (cert: DebitCertificate | null, credit: CreditClaim) => Promise<string | null>;
  /** The latest home change this node knows of the identity (home-change.ts), shown to a fenced proposer. */
  homeChange: (zid: string) => Promise<HomeChange | null>;
  /**
   * Check a home change a candidate showed with its promise request and apply it when it holds (home-moves.ts apply):
   * this node's directory then names its home. Absent: a change shown is not read.
   */
  learnChange?: (change: HomeChange) => Promise<void>;
  /** Fetch a page of an identity's chain from a node (client.ts chainFetcher); null: no mesh, no catch-up. */
  fetch: FetchChain | null;
  verify: (signer: string, text: string, signature: string) => boolean;
  /** The identity's custody set as this node computes it (null: the identity is not known here): who may fetch its chain. */
  custodiansOf: (zid: string) => Promise<string[] | null>;
  /**
   * Was the node a home of the identity before its latest change (home-change.ts wasHome)? It may fetch the chain too,
   * to take it in place of its copy and count the charges it made and never wrote; absent: no other node may.
   */
  formerHome?: (zid: string, node: string) => Promise<boolean>;
  /** The identity's entries held here from a seq, a page: the home's certified log, or this custodian's held entries. */
  chainAt: (zid: string, from: number) => Promise<ChainPage>;
  /**
   * This node's certified head of the identity as a home of it (the replicator's; null: none): a node that was the home
   * of an epoch holds that epoch's certified entries in its log, not here, and its promise must show them.
   */
  ownHead?: (zid: string) => Promise<PromisedHead | null>;
  /** The members the set of this node's own epoch of the identity (its ownHead's) passes over (absent: none). */
  ownExcluded?: (zid: string) => Promise<string[]>;
  /**
   * This node is taking the identity over (failover.ts: a majority promised it, and it has not written the chain
   * yet): it promises no later epoch to another candidate, as the home does not. Absent: never.
   */
  takingOver?: (zid: string) => boolean;
  /** The home changes of an identity kept here above an epoch, oldest first, at most `limit` (home-change.ts). */
  changesAfter?: (zid: string, after: number, limit: number) => Promise<HomeChange[]>;
  /**
   * Are a node's tick events heard here, none of them overdue (failover.ts heard)? A remote candidate is refused a
   * promise while the identity's home is (promise.ts). Absent: never.
   */
  hears?: (node: string) => boolean;
  meshSecret: string | null;
  nowSvcond: () => number;
  logger?: Logger;
}

export class Custodian {
  private readonly heads: Sublevel;
  private readonly held: Sublevel;
  private readonly transfers: Sublevel;
  /** The highest epoch promised per identity, and to whom (promise.ts). */
  private readonly promises: Sublevel;
  private readonly cache = new Map<string, HeldHead | null>();
  private readonly promisedCache = new Map<string, Promised | null>();
  /** The batch being taken (the next one waits for it). */
  private turn: Promise<unknown> = Promise.resolve();
  /** Identities being caught up. */
  private readonly catching = new Set<string>();
  /** caughtUp: entries kept by catching up. */
  readonly stats = { signed: 0, refused: 0, catchUps: 0, caughtUp: 0 };

  constructor(private readonly deps: CustodianDeps) {
    this.heads = deps.store.sub('custody_heads');
    this.held = deps.store.sub('custody_held');
    this.transfers = deps.store.sub('custody_transfers');
    this.promises = deps.store.sub('custody_promises', 'json', { rewritten: true });
  }

  /** Serve one /svc/custody/1 stream: one request, one answer. */
  async serve(stream: Stream, remotePeer: string): Promise<void> {
    let answer: CustodyAnswer | ChainAnswer | PromiseAnswer | ChangesAnswer;
    try {
      const request = await readRequestFrame(stream, MAX_REQUEST_BYTES, REQUEST_READ_MS);
      answer =
        'refused' in request
          ? { v: 1, refused: { code: 'bad-request', reason: request.refused.message }, results: [] }
          : kindOf(request.value) === 'promise'
            ? await this.answerPromise(request.value, remotePeer)
            : kindOf(request.value) === 'changes'
              ? await this.answerChanges(request.value, remotePeer)
              : await this.answer(request.value, remotePeer);
    } catch (err) {
      // The stream failed (aborted, reset, the deadline) or this node could not decide: the peer sees the stream end.
      this.deps.logger?.debug({ err: String(err), peer: remotePeer }, 'custody stream failed');
      stream.abort(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    await answerFrame(stream, answer);
  }

  /** The answer to one raw request from `sender`: a proposal's (checked here, entry by entry) or a fetch's. */
  async answer(raw: unknown, sender: string): Promise<CustodyAnswer | ChainAnswer> {
    const parsed = custodyRequestSchema.safeParse(raw);
    const fetching = (raw as { kind?: unknown } | null)?.kind === 'fetch';
    const refuse = (reason: string): CustodyAnswer | ChainAnswer =>
      fetching
        ? { v: 1, refused: { code: 'bad-request', reason }, head: null, links: [], more: false }
        : { v: 1, refused: { code: 'bad-request', reason }, results: [] };
    if (!parsed.success) return refuse(`malformed request: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    const request = parsed.data;
    // [REJECT] only a mesh member proposes or fetches, within the handshake window.
    if (!this.handshakeHolds(request, sender)) return refuse('the handshake does not match this request from this peer');
    if (Math.abs(request.svcond - this.deps.nowSvcond()) > MAX_SKEW_TICKS) return refuse('the request tick is too far from now');
    if (request.kind === 'fetch') return this.chain(request.zid, request.from, sender);
    const run = this.turn.then(() => this.take(request.entries, request.records, request.certificates, sender));
    this.turn = run.catch(() => undefined);
    return { v: 1, results: await run };
  }

  /** A fetch: the identity's chain from `from`, to a node of its custody set or a former home of the identity. */
  private async chain(zid: string, from: number, sender: string): Promise<ChainAnswer> {
    const custodians = await this.deps.custodiansOf(zid);
    const may = custodians !== null && (custodians.includes(sender) || ((await this.deps.formerHome?.(zid, sender)) ?? false));
    if (!may)
      return { v: 1, refused: { code: 'not-custodian', reason: `the requester is not a custodian of ${zid} here` }, head: null, links: [], more: false };
    return { v: 1, ...(await this.deps.chainAt(zid, from)) };
  }

  /** The answer to a candidate's request for a promise (promise.ts decidePromise): kept on disk before it is signed. */
  async answerPromise(raw: unknown, sender: string): Promise<PromiseAnswer> {
    const parsed = promiseRequestSchema.safeParse(raw);
    if (!parsed.success) return { v: 1, refused: { code: 'bad-request', reason: `malformed request: ${parsed.error.issues[0]?.message ?? 'invalid'}` } };
    const request = parsed.data;
    if (!this.handshakeHolds(request, sender) || Math.abs(request.svcond - this.deps.nowSvcond()) > MAX_SKEW_TICKS)
      return { v: 1, refused: { code: 'bad-request', reason: 'the handshake or the tick does not hold' } };
    const { zid, change } = request;
    // A later home change than this node knows (it was down through a failover, and may still name itself the home):
    // checked and applied first, so it decides as a node that heard it; a change that does not hold changes nothing.
    const known = (await this.deps.homeChange(zid))?.epoch ?? FIRST_EPOCH;
    if (change !== undefined && change.zid === zid && change.epoch > known && this.deps.learnChange !== undefined)
      await this.deps
        .learnChange(change)
        .catch((err: unknown) =>
          this.deps.logger?.info(
            { err: String(err), zid, epoch: change.epoch, peer: sender },
            'custody: a home change shown with a promise request was not applied',
          ),
        );
    const answer = await this.promiseInTurn(zid, request.epoch, sender, request.excluded, true);
    if (!('refused' in answer) || answer.refused.code === 'bad-request') return answer;
    // A candidate behind this node learns the later change with the refusal.
    const latest = await this.deps.homeChange(zid);
    return latest !== null && latest.epoch > (change?.zid === zid ? change.epoch : FIRST_EPOCH)
      ? { v: 1, refused: { ...answer.refused, home: latest } }
      : answer;
  }

  /** The answer to a request for the home changes kept here of an identity (home-history.ts): out of the batches' turn. */
  async answerChanges(raw: unknown, sender: string): Promise<ChangesAnswer> {
    const parsed = changesRequestSchema.safeParse(raw);
    const refuse = (reason: string): ChangesAnswer => ({ v: 1, refused: { code: 'bad-request', reason }, changes: [], more: false });
    if (!parsed.success) return refuse(`malformed request: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    const request = parsed.data;
    if (!this.handshakeHolds(request, sender) || Math.abs(request.svcond - this.deps.nowSvcond()) > MAX_SKEW_TICKS)
      return refuse('the handshake or the tick does not hold');
    const changes = (await this.deps.changesAfter?.(request.zid, request.after, MAX_CHANGES_PER_ANSWER + 1)) ?? [];
    const fenced = Math.max((await this.head(request.zid))?.fenced_below ?? 0, (await this.promised(request.zid))?.epoch ?? 0);
    return { v: 1, changes: changes.slice(0, MAX_CHANGES_PER_ANSWER), more: changes.length > MAX_CHANGES_PER_ANSWER, ...(fenced > 0 ? { fenced } : {}) };
  }

  /**
   * This custodian's promise of `epoch` to `candidate` (this node's own, when it is the candidate), its set passing
   * over `excluded`, in its turn. A remote candidate's request is answerPromise's, which also asks whether the home is
   * heard here.
   */
  promiseTo(zid: string, epoch: number, candidate: string, excluded?: string[]): Promise<PromiseAnswer> {
    return this.promiseInTurn(zid, epoch, candidate, excluded, false);
  }

  private promiseInTurn(zid: string, epoch: number, candidate: string, excluded: string[] | undefined, remote: boolean): Promise<PromiseAnswer> {
    const run = this.turn.then(() => this.promise(zid, epoch, candidate, excluded, remote));
    this.turn = run.catch(() => undefined);
    return run;
  }

  /** The identities this custodian holds entries of, at most `limit`. */
  async heldZids(limit: number, from?: string): Promise<string[]> {
    return (await this.deps.store.range(this.heads, { gte: from, limit })).map((r) => r.key);
  }

  private async promise(zid: string, epoch: number, candidate: string, excluded: string[] | undefined, remote: boolean): Promise<PromiseAnswer> {
    const head = await this.head(zid);
    const self = this.deps.nodeId();
    const knownHome = await this.deps.homeOf(zid);
    const home = knownHome ?? head?.home ?? null;
    const heardHome = remote && home !== null && home !== candidate && home !== self && this.deps.hears?.(home) === true ? home : null;
    // The higher of what this custodian holds and what this node certified as the identity's home (HEAD_ORDER): a
    // former home's certified entries past the custodians' heads are on no other promiser's head.
    const own = (await this.deps.ownHead?.(zid)) ?? null;
    const held: PromisedHead | null =
      head === null ? null : { epoch: head.epoch, seq: head.seq, hash: head.hash, ...(head.attempt === undefined ? {} : { attempt: head.attempt }) };
    const shown = own !== null && (held === null || headAfter(own, held)) ? own : held;
    const selfHome = candidate !== self && (this.deps.takingOver?.(zid) === true || knownHome === self);
    const before = await this.promised(zid);
    const d = decidePromise(epoch, candidate, { accepted: head?.fenced_below ?? 0, promised: before, selfHome, heardHome, ...excludedMember(excluded) });
    if ('refuse' in d) return { v: 1, refused: { code: d.refuse, reason: d.reason, epoch: d.epoch } };
    let named =
      before === null
        ? {}
        : { ...(before.latest === undefined ? {} : { latest: before.latest }), ...(before.named === undefined ? {} : { named: before.named }) };
    if (d.promise === 'new') {
      // What this custodian knew before this promise: the latest epoch it saw completed (of its head, of the change
      // it applied, of its certified log as a former home) and every epoch it promised since, whose candidate may have
      // certified entries of that epoch with its own set.
      const change = await this.deps.homeChange(zid);
      const completed = latestOf(
        head === null ? null : { epoch: head.epoch, home: head.home, excluded: head.excluded },
        own === null ? null : { epoch: own.epoch, home: self, excluded: await this.deps.ownExcluded?.(zid) },
        change === null ? null : change,
      );
      named = epochsToName(completed, before);
      const promised: Promised = { epoch, candidate, ...named, ...excludedMember(excluded) };
      await this.deps.store.commitAside([{ type: 'put', sub: this.promises, key: zid, value: promised }]);
      this.promisedCache.set(zid, promised);
    }
    const body: PromiseBody = { zid, epoch, candidate, head: shown, ...named, ...excludedMember(excluded) };
    return { v: 1, promise: { promise: body, node: this.deps.nodeId(), signature: this.deps.sign(promiseSigningText(body)) } };
  }

  /** The highest epoch this custodian promised for the identity, and to whom (null: none). */
  async promised(zid: string): Promise<Promised | null> {
    const cached = this.promisedCache.get(zid);
    if (cached !== undefined) return cached;
    const stored = (await this.deps.store.get<Promised>(this.promises, zid)) ?? null;
    if (!this.promisedCache.has(zid)) this.promisedCache.set(zid, stored);
    return this.promisedCache.get(zid) ?? null;
  }

  private handshakeHolds(request: { svcond: number; handshake: string }, sender: string): boolean {
    const secret = this.deps.meshSecret;
    if (secret === null) return false;
    const { handshake, ...rest } = request;
    const expected = Buffer.from(handshakeFor(secret, sender, request.svcond, bodyDigest(rest)), 'utf8');
    const given = Buffer.from(handshake, 'utf8');
    return expected.length === given.length && timingSafeEqual(expected, given);
  }

  /** Decide every entry of a batch in order, write the signed ones in one batch, then sign. */
  private async take(
    entries: CustodyEntry[],
    records: EntryRecords[],
    certificates: (DebitCertificate | null)[] | undefined,
    sender: string,
  ): Promise<CustodyResult[]> {
    /** A result, or the signature to answer once the batch is on disk. */
    const results: (CustodyResult | { signature: string })[] = [];
    const ops: Op[] = [];
    const touched = new Set<string>();
    /** Slots and transfer ids taken by earlier entries of this batch. */
    const slots = new Map<string, string>();
    const seen = new Set<string>();
    const homes = new Map<string, string | null>();
    for (const [i, entry] of entries.entries()) {
      const hash = entryHash(entry);
      const head = await this.head(entry.zid);
      let home = homes.get(entry.zid);
      if (home === undefined) homes.set(entry.zid, (home = await this.deps.homeOf(entry.zid)));
      const slot = slotKey(entry);
      const slotHash = slots.get(slot) ?? (await this.deps.store.get<HeldEntry>(this.held, slot))?.hash ?? null;
      const transferKey = entry.transfer === null ? null : `${entry.zid}!${entry.transfer.id}`;
      const transferSeen = transferKey !== null && (seen.has(transferKey) || (await this.deps.store.get(this.transfers, transferKey)) !== undefined);
      // An identity whose assertion has not reached this node yet: the node that proposes its first entry here is
      // held to it (docs/decisions.md "Custody"). The candidate promised an epoch is its home for that epoch.
      const promised = await this.promised(entry.zid);
      const fencedBelow = Math.max(head?.fenced_below ?? 0, promised?.epoch ?? 0);
      const fromHome =
        (promised !== null && promised.epoch === entry.epoch && promised.candidate === sender) ||
        (home !== null ? home === sender : head === null || head.home === sender);
      // A credit of a transfer between two identities of one home is one write with its debit: nothing crossed nodes,
      // and no certificate can exist before the write (docs/decisions.md "Custody").
      let debitFault: string | null = null;
      if (entry.transfer?.side === 'credit') {
        const party = entry.transfer.party;
        let senderHome = homes.get(party);
        if (senderHome === undefined) homes.set(party, (senderHome = await this.deps.homeOf(party)));
        if (senderHome !== sender) debitFault = await this.deps.debitFault(certificates?.[i] ?? null, { zid: entry.zid, transfer: entry.transfer });
      }
      const sent = records[i]!;
      const recordsFaultOf = recordsDigest(sent) !== entry.records ? 'the records sent do not hash to the entry’s digest' : recordsFault(entry.zid, sent);
      const d = decide(entry, hash, head, { fencedBelow, fromHome, slotHash, transferSeen, debitFault, recordsFault: recordsFaultOf });
      if ('refuse' in d) {
        this.stats.refused++;
        const r: CustodyResult = { ok: false, code: d.refuse, reason: d.reason };
        if (d.refuse === 'behind') {
          r.head = { seq: head?.seq ?? 0, hash: head?.hash ?? GENESIS_ENTRY_HASH };
          this.catchUp(entry.zid, sender);
        } else if ((d.refuse === 'seq' || d.refuse === 'prev-hash') && head !== null) {
          r.head = { seq: head.seq, hash: head.hash };
          // An entry of a later epoch that does not continue the head: the head is on a branch that epoch's home left.
          if (entry.epoch > head.epoch) this.catchUp(entry.zid, sender, true);
        }
        // A fenced proposer learns who took the identity over, with the proof (home-change.ts).
        const moved = d.refuse === 'fenced' ? await this.deps.homeChange(entry.zid) : null;
        if (moved !== null) r.home = moved;
        results.push(r);
        continue;
      }
      if (d.sign === 'again') {
        results.push({ signature: this.deps.sign(signingTextOf(hash)) });
        continue;
      }
      const certificate = entry.transfer?.side === 'credit' ? (certificates?.[i] ?? null) : null;
      const kept = this.holdOps(ops, { entry, hash, records: sent, certificate, home: sender }, head, sender);
      results.push({ signature: kept.signature });
      this.cache.set(entry.zid, kept.head);
      touched.add(entry.zid);
      slots.set(slot, hash);
      if (transferKey !== null) seen.add(transferKey);
    }
    try {
      await this.deps.store.commitAside(ops);
    } catch (err) {
      // Nothing of the batch is on disk: its heads are read again, and no signature leaves.
      for (const zid of touched) this.cache.delete(zid);
      this.deps.logger?.warn({ err: String(err) }, 'custody batch not written');
      return results.map((r) => ('ok' in r ? r : { ok: false, code: 'unavailable', reason: 'the custodian could not write the entry' }));
    }
    return results.map((r) => {
      if ('ok' in r) return r;
      this.stats.signed++;
      return { ok: true, signature: r.signature };
    });
  }

  /** The ops that keep an entry this custodian signs (its held record, its slot, the head, its transfer id); the new head and the signature. */
  private holdOps(
    ops: Op[],
    e: { entry: CustodyEntry; hash: string; records: EntryRecords; certificate: DebitCertificate | null; home?: string },
    head: HeldHead | null,
    sender: string,
  ): { head: HeldHead; signature: string } {
    const { entry, hash } = e;
    const next: HeldHead = {
      epoch: entry.epoch,
      seq: entry.seq,
      hash,
      ...(entry.attempt === undefined ? {} : { attempt: entry.attempt }),
      fenced_below: Math.max(head?.fenced_below ?? entry.epoch, entry.epoch),
      balance: entry.balance ?? head?.balance ?? null,
      home: sender,
      // The epoch's set: named by its epoch entry, the same for the entries after it.
      ...excludedMember(entry.kind === 'epoch' ? entry.excluded : head?.epoch === entry.epoch ? head.excluded : undefined),
    };
    const held: HeldEntry = {
      entry,
      hash,
      signature: this.deps.sign(signingTextOf(hash)),
      records: e.records,
      certificate: e.certificate,
      ...(e.home === undefined ? {} : { home: e.home }),
    };
    ops.push({ type: 'put', sub: this.held, key: slotKey(entry), value: held });
    ops.push({ type: 'put', sub: this.heads, key: entry.zid, value: next });
    if (entry.transfer !== null) ops.push({ type: 'put', sub: this.transfers, key: `${entry.zid}!${entry.transfer.id}`, value: entry.seq });
    return { head: next, signature: held.signature };
  }

  /**
   * Catch up an identity this custodian is behind on: fetch the entries it misses from the home that proposed past
   * them, check them (chain, records, the home's signature on each: docs/decisions.md "Custody"), keep them. One
   * fetch at a time per identity; meanwhile its entries are refused `behind` and certified by the others. `left`: an
   * entry of a later epoch did not continue the head (the home's chain may not reach past it yet).
   */
  private catchUp(zid: string, home: string, left = false): void {
    if (this.deps.fetch === null || this.catching.has(zid)) return;
    this.catching.add(zid);
    this.stats.catchUps++;
    void this.fetchMissing(zid, home, left)
      .catch((err: unknown) => this.deps.logger?.info({ err: String(err), zid, home }, 'custody catch-up failed'))
      .finally(() => this.catching.delete(zid));
  }

  private async fetchMissing(zid: string, home: string, left: boolean): Promise<void> {
    const start = await this.head(zid);
    const after: ChainHead = start === null ? GENESIS_HEAD : { epoch: start.epoch, seq: start.seq, hash: start.hash };
    const signal = AbortSignal.timeout(CATCH_UP_MS);
    let run: { base: ChainHead; links: readonly ChainLink[]; dropped: readonly HeldEntry[] } = {
      base: after,
      links: await fetchChain(this.deps.fetch!, home, zid, after.seq + 1, signal, MAX_CATCH_UP_ENTRIES),
      dropped: [],
    };
    const first = run.links[0];
    if (start !== null && (first !== undefined ? first.entry.prev_hash !== start.hash : left)) run = await this.branchOff(zid, home, start, signal);
    const checked = checkChain(zid, run.links, run.base, { accepts: (node) => node === home, needed: 1 }, this.deps.verify);
    if (!checked.ok) throw new Error(`the chain from ${home} does not check at seq ${checked.seq}: ${checked.reason}`);
    if (run.links.length === 0) return;
    const { base, links, dropped } = run;
    const kept = this.turn.then(() => this.keepRun(zid, links, base, home, after, dropped));
    this.turn = kept.catch(() => undefined);
    await kept;
  }

  /**
   * Where the home's chain leaves this custodian's (`start`, its head): the entries of the home's chain after the last
   * entry both hold, and the entries of this custodian's chain after it (`dropped`). A head on a branch the chain left
   * is one of an epoch the chain's later epoch did not take (a slot signed here and given up, an epoch whose entries
   * this custodian alone signed): the chain is followed only when it reaches, past the meeting point, an epoch later
   * than that head, as a custodian signs an epoch entry above its head (custodian-rules.ts opensEpoch).
   */
  private async branchOff(
    zid: string,
    home: string,
    start: HeldHead,
    signal: AbortSignal,
  ): Promise<{ base: ChainHead; links: readonly ChainLink[]; dropped: readonly HeldEntry[] }> {
    for (let back = BRANCH_STEP; ; back *= BRANCH_STEP) {
      const from = Math.max(1, start.seq - back);
      const theirs = await fetchChain(this.deps.fetch!, home, zid, from, signal, MAX_CATCH_UP_ENTRIES);
      const mine = await this.headChain(zid, start, from - 1);
      const below = from === 1 ? GENESIS_HEAD : mine.get(from - 1);
      const meets = below !== undefined && theirs[0]?.entry.prev_hash === below.hash;
      if (!meets) {
        if (from === 1) throw new Error(`the chain from ${home} does not meet this custodian's`);
        continue;
      }
      let base: ChainHead = 'entry' in below ? { epoch: below.entry.epoch, seq: below.entry.seq, hash: below.hash } : below;
      let i = 0;
      for (; i < theirs.length; i++) {
        const link = theirs[i]!;
        const hash = entryHash(link.entry);
        if (mine.get(link.entry.seq)?.hash !== hash) break;
        base = { epoch: link.entry.epoch, seq: link.entry.seq, hash };
      }
      const links = theirs.slice(i);
      const dropped = [...mine.values()].filter((h) => h.entry.seq > base.seq);
      if (dropped.length > 0 && !links.some((l) => l.entry.epoch > start.epoch))
        throw new Error(`the chain from ${home} leaves this custodian's head at seq ${base.seq + 1} without a later epoch`);
      return { base, links, dropped };
    }
  }

  /** The entries of the chain ending on `head` held here, by seq, from `from` (at least 1) to the head. */
  private async headChain(zid: string, head: HeldHead, from: number): Promise<Map<number, HeldEntry>> {
    const out = new Map<number, HeldEntry>();
    for (let seq = Math.max(1, from); seq <= head.seq;) {
      const page = await headChainPage((fromSeq, limit) => this.entries(zid, fromSeq, limit), head, seq);
      if (page.length === 0) break;
      for (const h of page) out.set(h.entry.seq, h);
      seq = page.at(-1)!.entry.seq + 1;
    }
    return out;
  }

  /**
   * Keep a checked run that continues `base`, unless the head moved from `expected` meanwhile or a slot holds another
   * entry. The entries of a branch left (`dropped`) stay held (their slots stay signed: the run's entry of such a slot
   * is not kept, and the chain held here has a gap there, as after signing an epoch entry above its head); their
   * transfer ids are free again, as the chain taken never applied them.
   */
  private async keepRun(
    zid: string,
    links: readonly ChainLink[],
    base: ChainHead,
    home: string,
    expected: ChainHead,
    dropped: readonly HeldEntry[],
  ): Promise<void> {
    let head = await this.head(zid);
    if ((head?.seq ?? 0) !== expected.seq || (head?.hash ?? GENESIS_ENTRY_HASH) !== expected.hash) return;
    const ops: Op[] = [];
    for (const h of dropped) if (h.entry.transfer !== null) ops.push({ type: 'del', sub: this.transfers, key: `${zid}!${h.entry.transfer.id}` });
    if (head !== null && dropped.length > 0) {
      // The balance where the chains meet: of the last entry below the branch that carries one.
      const kept = await this.headChain(zid, head, 1);
      const balance = [...kept.values()].filter((h) => h.entry.seq <= base.seq && h.entry.balance !== null).at(-1)?.entry.balance ?? null;
      head = { ...head, balance };
    }
    let kept = 0;
    for (const link of links) {
      const hash = entryHash(link.entry);
      const slotHash = (await this.deps.store.get<HeldEntry>(this.held, slotKey(link.entry)))?.hash;
      if (slotHash !== undefined && slotHash !== hash) {
        if (dropped.some((h) => h.hash === slotHash)) continue;
        throw new Error(`seq ${link.entry.seq} of ${zid}: this custodian signed another entry for the slot`);
      }
      head = this.holdOps(ops, { entry: link.entry, hash, records: link.records, certificate: link.certificate }, head, home).head;
      kept++;
    }
    await this.deps.store.commitAside(ops);
    this.cache.set(zid, head);
    this.stats.caughtUp += kept;
  }

  /** The identity's head here (null: this custodian holds nothing of it). */
  async head(zid: string): Promise<HeldHead | null> {
    const cached = this.cache.get(zid);
    if (cached !== undefined) return cached;
    const stored = (await this.deps.store.get<HeldHead>(this.heads, zid)) ?? null;
    if (!this.cache.has(zid)) this.cache.set(zid, stored);
    return this.cache.get(zid) ?? null;
  }

  /** Entries of an identity held here, by seq from `fromSeq`, at most `limit` (of the head's epoch and earlier ones). */
  async entries(zid: string, fromSeq: number, limit: number): Promise<HeldEntry[]> {
    return slotsFrom<HeldEntry>(this.deps.store, this.held, zid, fromSeq, limit);
  }

  /**
   * The home of `zid` in `epoch` as this custodian saw it, with the members its set passed over: the node that proposed
   * an entry of that epoch it signed, and the epoch's entry it holds (null: it signed none of that epoch as proposed).
   * A failover's new home reads it for a pending debit of an epoch whose home change it never applied.
   */
  async configInEpoch(zid: string, epoch: number): Promise<SetConfig | null> {
    const head = await this.head(zid);
    // A few held entries at a time (each carries its records): an entry of the epoch this custodian signed as proposed
    // is nearly always the first; one kept by catching up names no home. The epoch's entry, held, is its first.
    const end = slotKey({ zid, epoch: epoch + 1, seq: 0 });
    let excluded: string[] | undefined = head?.epoch === epoch ? head.excluded : undefined;
    for (let from = slotKey({ zid, epoch, seq: 0 }); ;) {
      const rows = await this.deps.store.range<HeldEntry>(this.held, { gte: from, lt: end, limit: HOME_SCAN_PAGE });
      const opening = rows.find((r) => r.value.entry.kind === 'epoch');
      if (opening !== undefined) excluded = opening.value.entry.excluded;
      const found = rows.find((r) => r.value.home !== undefined);
      if (found !== undefined) return { home: found.value.home!, ...excludedMember(excluded) };
      if (rows.length < HOME_SCAN_PAGE) return null;
      from = keyAfter(rows.at(-1)!.key);
    }
  }

  /**
   * What this custodian answers a fetch with: the entries of its head's chain from `from`, a page, each with its own
   * signature (an entry it signed for a slot that chain did not take stays out: a page holds one entry per seq).
   */
  async page(zid: string, from: number): Promise<ChainPage> {
    const head = await this.head(zid);
    const held = await headChainPage((fromSeq, limit) => this.entries(zid, fromSeq, limit), head, from);
    const self = this.deps.nodeId();
    const { links, more } = pageOf(held.map((h) => linkOf(h, [{ node: self, signature: h.signature }])));
    return { head: head === null ? null : { epoch: head.epoch, seq: head.seq, hash: head.hash }, links, more };
  }
}

/** A request's `kind` (a batch of entries has none). */
function kindOf(raw: unknown): unknown {
  return typeof raw === 'object' && raw !== null ? (raw as { kind?: unknown }).kind : undefined;
}

/** The record key of a slot: zid, epoch, seq. */
export function slotKey(e: Pick<CustodyEntry, 'zid' | 'epoch' | 'seq'>): string {
  return `${e.zid}!${padNum(e.epoch, 8)}!${padNum(e.seq)}`;
}

/** A range's limit as LevelDB takes it (-1: none). */
const MAX_RANGE_LIMIT = 0x7fffffff;

/**
 * The records of `zid` keyed by slot (slotKey) from seq `fromSeq`, by seq then epoch, at most `limit`: per epoch held,
 * one seek to the epoch's first slot and one range from its slot at `fromSeq`, so a page costs the epochs and the
 * page, not the identity's whole history.
 */
export async function slotsFrom<T extends { entry: CustodyEntry }>(store: Store, sub: Sublevel, zid: string, fromSeq: number, limit: number): Promise<T[]> {
  const out: T[] = [];
  const end = `${zid}!~`;
  const most = limit >= MAX_RANGE_LIMIT ? -1 : limit;
  for (let from = `${zid}!`; ;) {
    const first = (await store.range<T>(sub, { gte: from, lt: end, limit: 1 }))[0];
    if (first === undefined) break;
    const epoch = first.value.entry.epoch;
    const next = slotKey({ zid, epoch: epoch + 1, seq: 0 });
    const rows = await store.range<T>(sub, { gte: slotKey({ zid, epoch, seq: Math.max(fromSeq, 0) }), lt: next, limit: most });
    for (const r of rows) out.push(r.value);
    from = next;
  }
  return out.sort((a, b) => a.entry.seq - b.entry.seq || a.entry.epoch - b.entry.epoch).slice(0, limit);
}

/** Whether each entry of `run` is chained on the one before it. */
function isChain(run: readonly { entry: CustodyEntry }[]): boolean {
  let prev: string | null = null;
  for (const h of run) {
    if (prev !== null && h.entry.prev_hash !== prev) return false;
    prev = entryHash(h.entry);
  }
  return true;
}

/**
 * The entries of `held` (those from seq `from` at least) on the chain ending on `head` (back by prev_hash), from seq
 * `from`, at most `limit`: none when the head is below `from`; all of them from `from` when the head's entry is not
 * held (or there is no head).
 */
export function onHeadChain<T extends { entry: CustodyEntry }>(
  held: readonly T[],
  head: { hash: string; seq: number } | null,
  from: number,
  limit: number,
): T[] {
  if (head !== null && head.seq < from) return [];
  const chain = head === null ? [] : chainEndingOn(held, head.hash);
  return (chain.length > 0 ? chain : held).filter((h) => h.entry.seq >= from).slice(0, limit);
}

/**
 * The entries of the page of a fetch from `from`. A holder's entries on its head's chain run from seq 1 to the head
 * without a gap (a custodian signs only the entry after its last, a catch-up keeps a whole run), so a seq of the page
 * where one entry is held holds the chain's: the page is read alone, and a full catch-up costs its length, not its
 * square. Where a seq of the page holds two (a slot a home gave up, an epoch a failover began below it), the chain is
 * found back from the head over every entry from `from`.
 */
export async function headChainPage<T extends { entry: CustodyEntry }>(
  read: (fromSeq: number, limit: number) => Promise<T[]>,
  head: { hash: string; seq: number } | null,
  from: number,
): Promise<T[]> {
  const limit = MAX_CHAIN_LINKS + 1;
  if (head !== null && head.seq >= from) {
    const last = Math.min(head.seq, from + limit - 1);
    const want = last - from + 1;
    // One entry more than the page: by seq, so it is above the page exactly when no seq of the page holds two.
    const near = await read(from, want + 1);
    const page = near.slice(0, want);
    const oneEach = page.length === want && page.every((h, i) => h.entry.seq === from + i) && (near.length === want || near[want]!.entry.seq > last);
    if (oneEach && isChain(page) && (last < head.seq || entryHash(page[want - 1]!.entry) === head.hash)) return page;
  }
  return onHeadChain(await read(from, Number.MAX_SAFE_INTEGER), head, from, limit);
}

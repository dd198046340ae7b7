// Where an identity's home moves (docs/decisions.md "Custody"): a home change heard (the custody.home event, or shown
// by a custodian that refused this node's entry as fenced) is checked against this node's view and written with the
// identity record naming the new home, in one batch; the node that took the identity over (failover.ts) writes the
// chain it took, its epoch entry and the change in one batch. An old home that learns it was replaced takes the new
// home's chain, checked (hash chain from the first entry, its last entry signed by a majority of the new home's set),
// in place of its copy of the identity's ledger.
import type { Logger } from 'pino';
import type { IdentityRecord } from '../identity/service.js';
import type { Op, Store } from '../store/db.js';
import type { EnvelopeLocks } from '../tally/folders.js';
import { KeyedLock } from '../util/keyed-lock.js';
import { fetchChain, type FetchChain } from './client.js';
import { excludedMember, setOfConfig } from './custody-set.js';
import { entryHash, FIRST_EPOCH, verifyEntrySignature } from './entry.js';
import { configOf, standingOf, type ChangeStanding, type HomeChange, type HomeChanges } from './home-change.js';
import type { Verify } from './promise.js';
import { checkChain, envelopeTokens, GENESIS_HEAD, replayOps } from './replica.js';
import { LEDGER_SUBLEVELS } from './ledger-ops.js';
import type { ChainLink } from './protocol.js';

/**
 * An old home tries to take the new home's chain again REPLACE_PAUSE_MS after the first failure, then doubling up to
 * REPLACE_PAUSE_MAX_MS, for as long as its copy waits for that change's chain; the first REPLACE_ATTEMPTS failures are
 * logged at warn, the later ones at debug.
 */
const REPLACE_ATTEMPTS = 6;
const REPLACE_PAUSE_MS = 2_000;
const REPLACE_PAUSE_MAX_MS = 512_000;
/** How long after reading an identity's missed changes the node reads them again for another change shown. */
const CATCH_UP_PAUSE_MS = 30_000;

export interface HomeMovesDeps {
  store: Store;
  nodeId: () => string;
  replicas: number;
  members: () => Iterable<string>;
  verify: Verify;
  homeChanges: HomeChanges;
  /**
   * The ledger's envelope locks: a replayed chain holds the lock of every envelope it writes or deletes from the read
   * of their records to its batch, as a credit does (transfers.ts receive), so a credit that lands meanwhile is read.
   */
  envelopeLocks: Pick<EnvelopeLocks, 'tokens'>;
  /** The identity's record, and the ops moving it (and its default machine) to another home. */
  identity: { getIdentity(zid: string): Promise<IdentityRecord | undefined>; homeMoveOps(ident: IdentityRecord, home: string): Promise<Op[]> };
  /** Drop what this node keeps in memory of the identity's ledger (the replicator's heads, the wallet). */
  forget: (zid: string) => void;
  /**
   * What this node keeps in memory of the records a replayed chain wrote and no load reads again (the identity's day
   * counters, its tier): told the batch's ops right after it is written, before any request of the identity resumes.
   */
  replayed?: (ops: readonly Op[]) => void;
  /**
   * Write a batch (`write`) whose `ops` write audit rows or machine records past the chain service (a chain taken
   * over or taken back, a machine moved here): the chains' heads follow (chain/service.ts rewrite); absent: `write`.
   */
  rewriteChains?: (ops: readonly Op[], write: () => Promise<void>) => Promise<void>;
  /**
   * The node's totals of the charges a chain carries that this node made as the identity's home and never wrote
   * (unwritten-charges.ts), as ops for the batch that writes the chain; absent: none are counted.
   */
  unwrittenCharges?: (zid: string, links: readonly Pick<ChainLink, 'entry' | 'records'>[]) => Promise<{ ops: Op[]; rollback: () => void }>;
  /**
   * The changes of an identity above `after` up to `epoch` that other nodes keep (home-history.ts changesUpTo), for a
   * change shown here that follows an epoch not known here; absent: none are asked for.
   */
  missedChanges?: (zid: string, after: number, epoch: number) => Promise<HomeChange[]>;
  /** Null: the mesh does not run. */
  fetch: FetchChain | null;
  timeoutMs: number;
  logger?: Logger;
}

export class HomeMoves {
  readonly stats = { applied: 0, refused: 0, replaced: 0 };
  /**
   * One move of an identity at a time: concurrent copies of one change (gossip, a refusal that shows it) apply it
   * once, and a chain is written (its unwritten charges counted) by one of them.
   */
  private readonly locks = new KeyedLock();
  private readonly retries = new Set<NodeJS.Timeout>();
  /** Identities whose missed changes are being read, or were a moment ago (catchUpSoon). */
  private readonly catchingUp = new Set<string>();
  private stopped = false;

  constructor(private readonly deps: HomeMovesDeps) {}

  /** Check `change` against this node's view and apply it. */
  apply(change: HomeChange): Promise<ChangeStanding> {
    return this.locks.run(change.zid, () => this.applyHeld(change));
  }

  /** apply(), the identity's lock held; a gap reads the missed changes soon (`catchUp`). */
  private async applyHeld(change: HomeChange, catchUp = true): Promise<ChangeStanding> {
    const d = this.deps;
    const { earlier, ...bare } = change;
    // Changes missed here: the ones it carries are checked and applied in order, each from the epoch reached, then it
    // (the homes of their epochs are kept: a debit of one is checked under its home's set).
    if (earlier !== undefined && earlier.length > 0) {
      const at = (await d.homeChanges.latest(change.zid))?.epoch ?? FIRST_EPOCH;
      if (earlier.some((c) => c.epoch > at) && (await this.applyInOrder(change.zid, [...earlier, bare], change.epoch))) return { apply: true };
    }
    const ident = await d.identity.getIdentity(change.zid);
    if (ident === undefined) return { apply: false, why: 'gap', reason: 'the identity is not known here' };
    const latest = await d.homeChanges.latest(change.zid);
    const epoch = latest?.epoch ?? FIRST_EPOCH;
    const base = change.after !== undefined && change.after < epoch ? await d.homeChanges.knownConfig(change.zid, change.after) : null;
    const known = { home: ident.home, epoch, ...excludedMember(latest?.excluded), base };
    const standing = standingOf(bare, known, d.members(), d.replicas, d.verify);
    if (!standing.apply) {
      if (standing.why === 'invalid') this.stats.refused++;
      if (standing.why === 'gap' && catchUp) this.catchUpSoon(change);
      return standing;
    }
    // This node's copy of the ledger waits for the new home's chain: it was the home, or still waits from a change before.
    const waiting = change.home !== d.nodeId() && (ident.home === d.nodeId() || (await d.homeChanges.waitingFor(change.zid)) !== null);
    const ops = [...d.homeChanges.putOps(bare, ident.home, waiting), ...(await d.identity.homeMoveOps(ident, change.home))];
    await this.rewrite(ops, () => d.store.commit(ops));
    d.homeChanges.applied(bare, ident.home);
    d.forget(change.zid);
    this.stats.applied++;
    d.logger?.info({ zid: change.zid, epoch: change.epoch, home: change.home, was: ident.home }, 'custody: the identity’s home changed');
    if (waiting) this.replaceCopySoon(bare, 0);
    return standing;
  }

  /**
   * A change that follows an epoch not known here, its earlier changes short of it (a node down or cut off through
   * more changes than a change carries): the changes between are read from other nodes and applied in order, each
   * checked as a change heard, then it. Until then the node keeps the home it knew; an old home that still believes
   * itself the home would take the identity again (failover.ts retake) over and over, fencing the real one.
   */
  private catchUpSoon(change: HomeChange): void {
    const d = this.deps;
    if (d.missedChanges === undefined || this.stopped || this.catchingUp.has(change.zid)) return;
    this.catchingUp.add(change.zid);
    void this.catchUp(change)
      .catch((err: unknown) => d.logger?.warn({ err: String(err), zid: change.zid, epoch: change.epoch }, 'custody: the missed home changes could not be read'))
      .finally(() => {
        const t = setTimeout(() => {
          this.retries.delete(t);
          this.catchingUp.delete(change.zid);
        }, CATCH_UP_PAUSE_MS);
        t.unref();
        this.retries.add(t);
      });
  }

  private async catchUp(change: HomeChange): Promise<void> {
    const d = this.deps;
    const known = (await d.homeChanges.latest(change.zid))?.epoch ?? FIRST_EPOCH;
    const fetched = await d.missedChanges!(change.zid, known, change.epoch);
    const { earlier, ...bare } = change;
    const all = [...fetched, ...(earlier ?? []), bare];
    await this.locks.run(change.zid, () => this.applyInOrder(change.zid, all, change.epoch));
  }

  /**
   * From the epoch known, the first change of `changes` by epoch that applies, again until epoch `target` is reached
   * (true) or none applies (false): each applied is a checked epoch, and its home is kept. The identity's lock is held.
   */
  private async applyInOrder(zid: string, changes: readonly HomeChange[], target: number): Promise<boolean> {
    for (;;) {
      const at = (await this.deps.homeChanges.latest(zid))?.epoch ?? FIRST_EPOCH;
      if (at >= target) return true;
      const next = changes.filter((c) => c.epoch > at).sort((a, b) => a.epoch - b.epoch);
      let moved = false;
      for (const c of next) if ((moved = (await this.applyHeld(c, false)).apply)) break;
      if (!moved) return false;
    }
  }

  /**
   * Take the chains this node's copies still wait for (a node stopped before it took them, or that gave up): each
   * identity's latest home's, in the background.
   */
  async resume(limit = 10_000): Promise<void> {
    for (const zid of await this.deps.homeChanges.waitingZids(limit)) {
      const latest = await this.deps.homeChanges.latest(zid);
      if (latest !== null) {
        const { earlier: _carried, ...bare } = latest;
        this.replaceCopySoon(bare, 0);
      }
    }
  }

  /** Stop taking chains: the retries waiting are dropped (the node stops). */
  stop(): void {
    this.stopped = true;
    for (const t of this.retries) clearTimeout(t);
    this.retries.clear();
  }

  /**
   * replaceCopy, again after a pause while it fails (the new home down or cut off, as when the change was made) and the
   * copy still waits for this change's chain: the old home's copy and the charges it never wrote (unwritten-charges.ts)
   * wait for it, and a later change (its own retries) or the chain taken ends the wait.
   */
  private replaceCopySoon(change: HomeChange, attempt: number): void {
    const d = this.deps;
    void this.replaceCopy(change).catch((err: unknown) => {
      const log = { err: String(err), zid: change.zid, attempt };
      if (attempt < REPLACE_ATTEMPTS) d.logger?.warn(log, 'custody: the old home could not take the new home’s chain');
      else d.logger?.debug(log, 'custody: the old home could not take the new home’s chain');
      if (this.stopped) return;
      const t = setTimeout(
        () => {
          this.retries.delete(t);
          void d.homeChanges.waitingFor(change.zid).then(
            (epoch) => epoch === change.epoch && !this.stopped && this.replaceCopySoon(change, attempt + 1),
            (err: unknown) => d.logger?.warn({ err: String(err), zid: change.zid }, 'custody: the old home could not read its waiting copy'),
          );
        },
        Math.min(REPLACE_PAUSE_MS * 2 ** attempt, REPLACE_PAUSE_MAX_MS),
      );
      t.unref();
      this.retries.add(t);
    });
  }

  /**
   * This node took the identity over: the ledger of the chain taken (`chain`, replayed over this node's own), its
   * entries and whatever else the taking writes (`ops`), and the change, in one batch.
   */
  adopt(change: HomeChange, chain: readonly Pick<ChainLink, 'entry' | 'records'>[], ops: Op[]): Promise<void> {
    return this.locks.run(change.zid, async () => {
      const d = this.deps;
      const ident = await d.identity.getIdentity(change.zid);
      if (ident === undefined) throw new Error('the identity is not known here');
      const moved = await d.identity.homeMoveOps(ident, change.home);
      await this.replay(change.zid, chain, [...ops, ...d.homeChanges.putOps(change, ident.home), ...moved]);
      d.homeChanges.applied(change, ident.home);
      d.forget(change.zid);
    });
  }

  /** The old home's copy of the ledger, replaced by the new home's chain, checked. */
  private async replaceCopy(change: HomeChange): Promise<void> {
    const d = this.deps;
    if (d.fetch === null) return;
    const links = await fetchChain(d.fetch, change.home, change.zid, 1, AbortSignal.timeout(d.timeoutMs * 4));
    const check = checkChain(change.zid, links, GENESIS_HEAD, null, d.verify);
    if (!check.ok) throw new Error(`the chain fails at seq ${check.seq}: ${check.reason}`);
    const last = links.at(-1);
    if (last === undefined || last.entry.epoch < change.epoch) throw new Error(`the chain holds no entry of epoch ${change.epoch}`);
    const set = setOfConfig(change.zid, configOf(change), d.members(), d.replicas);
    const hash = entryHash(last.entry);
    const signers = new Set(last.signatures.filter((s) => set.custodians.includes(s.node) && verifyEntrySignature(d.verify, hash, s)).map((s) => s.node));
    if (signers.size < set.majority) throw new Error(`its last entry is signed by ${signers.size} of the ${set.majority} its set needs`);
    const replaced = await this.locks.run(change.zid, async () => {
      // A later change read meanwhile (this node may be the home again, its ledger ahead of this chain) keeps its own.
      const latest = (await d.homeChanges.latest(change.zid))?.epoch ?? FIRST_EPOCH;
      if (latest > change.epoch || (await d.identity.getIdentity(change.zid))?.home !== change.home) return null;
      await this.replay(change.zid, links, await d.homeChanges.takenOps(change.zid, change.epoch));
      d.forget(change.zid);
      return true;
    });
    if (!replaced) return;
    this.stats.replaced++;
    d.logger?.info({ zid: change.zid, seq: last.entry.seq }, 'custody: the old home took the new home’s chain');
  }

  /** Write `ops` by `write`, the heads of the chains they write following (rewriteChains). */
  private rewrite(ops: readonly Op[], write: () => Promise<void>): Promise<void> {
    return this.deps.rewriteChains === undefined ? write() : this.deps.rewriteChains(ops, write);
  }

  /**
   * A chain's records written over this node's own ledger, with `ops`, its unwritten charges counted, in one batch
   * aside from the gate (its records are the certified chain, not new writes). Envelope records of other owners
   * homed here stay theirs: they are read, and the batch written, under the envelopes' locks.
   */
  private async replay(zid: string, links: readonly Pick<ChainLink, 'entry' | 'records'>[], ops: Op[]): Promise<void> {
    const d = this.deps;
    const tokens = envelopeTokens(links);
    return d.envelopeLocks.tokens(tokens, async () => {
      const held = await d.store.getMany<{ owner?: string }>(d.store.sub(LEDGER_SUBLEVELS.envelopes), tokens);
      const owners = new Map(tokens.map((t, i) => [t, held[i]?.owner]));
      const others = [...new Set(held.flatMap((h) => (h?.owner !== undefined && h.owner !== zid ? [h.owner] : [])))];
      const homes = await Promise.all(others.map(async (o) => (await d.identity.getIdentity(o))?.home));
      const homedHere = new Set(others.filter((_, i) => homes[i] === d.nodeId()));
      const replay = replayOps(d.store, links, { zid, owners, homedHere });
      const counted = (await d.unwrittenCharges?.(zid, links)) ?? { ops: [], rollback: () => undefined };
      try {
        const all = [...replay, ...ops, ...counted.ops];
        await this.rewrite(all, () => d.store.commitAside(all));
        d.replayed?.(replay);
      } catch (err) {
        counted.rollback();
        throw err;
      }
    });
  }
}

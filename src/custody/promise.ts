// A custodian's promise of an epoch to a candidate (docs/protocol.md §19, "Failover"): the candidate that gathers the
// promises of a majority of an identity's custody set is the identity's home for that epoch. A promise names the
// identity, the epoch, the candidate, the promiser's head (the last entry it signed, or null) and the latest epoch the
// promiser knows of with its home (`latest`), and is signed by the promiser's node key over `svc/custody/1|promise|` +
// the SHA-256 of its JCS. The set asked is the set of the home the candidate knows; a promiser that knows a later epoch
// names it, and the candidate must then have a majority of that epoch's home's set too, and so on up (an epoch's
// entries are certified by its home's set, which a candidate behind cannot know otherwise: docs/decisions.md
// "Custody"). Pure: signing and verifying are given.
import { z } from 'zod';
import { canonicalJson } from '../kernel/canonical.js';
import { sha256Hex } from '../kernel/bytes.js';
import { excludedMember, excludedSchema, sameExcluded, type CustodySet, type SetConfig } from './custody-set.js';
import { FIRST_EPOCH, ZID_PATTERN } from './entry.js';
import { headAfter } from './failover-rules.js';

const HEX64 = /^[0-9a-f]{64}$/;
export const PROMISE_PREFIX = 'svc/custody/1|promise|';

/** A promiser's head: the slot, attempt (absent: 0, entry.ts) and hash of the last entry it signed. */
export const promisedHeadSchema = z
  .object({
    epoch: z.number().int().min(FIRST_EPOCH),
    seq: z.number().int().min(1),
    hash: z.string().regex(HEX64),
    attempt: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
  })
  .strict();
export type PromisedHead = z.infer<typeof promisedHeadSchema>;

/** Most epochs a promise names below its `latest` (a custodian that promised more without seeing one complete names the latest ones). */
export const MAX_NAMED_EPOCHS = 32;
const epochHomeSchema = z
  .object({
    epoch: z
      .number()
      .int()
      .min(FIRST_EPOCH + 1),
    home: z.string().min(1).max(128),
    /** The members that epoch's set passes over (custody-set.ts; absent: none). */
    excluded: excludedSchema.optional(),
  })
  .strict();

/** What a promise states (its signature is over this). */
export const promiseBodySchema = z
  .object({
    zid: z.string().regex(ZID_PATTERN),
    /** The epoch promised: the candidate's, above every epoch the promiser accepted. */
    epoch: z
      .number()
      .int()
      .min(FIRST_EPOCH + 1),
    candidate: z.string().min(1).max(128),
    /** The promiser's head when it promised: the last entry it signed (null: it holds nothing of the identity). */
    head: promisedHeadSchema.nullable(),
    /**
     * The latest epoch the promiser knows of before this promise and the node that is or would be its home then: of
     * its head, of a home change it applied, of an earlier promise it gave. Absent: none above the first epoch.
     */
    latest: epochHomeSchema.optional(),
    /**
     * The other epochs the promiser knows of below `latest`, from the latest one it saw completed (of its head, of a
     * change it applied, of its certified log) up, oldest first, each with its home: epochs it promised before and
     * never saw completed, any of which may have certified entries with its own set. Absent: none.
     */
    named: z.array(epochHomeSchema).min(1).max(MAX_NAMED_EPOCHS).optional(),
    /** The members the candidate's set passes over in the epoch promised, as the candidate asked (absent: none). */
    excluded: excludedSchema.optional(),
  })
  .strict();
export type PromiseBody = z.infer<typeof promiseBodySchema>;
/** An epoch with the node that is (or would be) the identity's home in it, and the members its set passes over. */
export interface EpochHome extends SetConfig {
  epoch: number;
}

/** An epoch's home as a promise names it (excluded absent when none). */
export function epochHomeOf(epoch: number, config: SetConfig): EpochHome {
  return { epoch, home: config.home, ...excludedMember(config.excluded) };
}

/** The latest of epochs known (ties: the first given), null when none is above the first epoch. */
export function latestOf(...known: (EpochHome | null | undefined)[]): EpochHome | null {
  let best: EpochHome | null = null;
  for (const k of known) if (k != null && k.epoch > FIRST_EPOCH && (best === null || k.epoch > best.epoch)) best = epochHomeOf(k.epoch, k);
  return best;
}

/** A key naming an epoch's configuration (two homes, or two sets, of one epoch are two keys). */
const configKey = (h: EpochHome) => `${h.epoch}|${h.home}|${(h.excluded ?? []).join(',')}`;

export const signedPromiseSchema = z.object({ promise: promiseBodySchema, node: z.string().min(1).max(128), signature: z.string().min(1).max(128) }).strict();
export type SignedPromise = z.infer<typeof signedPromiseSchema>;

/** The text a promiser signs. */
export function promiseSigningText(p: PromiseBody): string {
  return `${PROMISE_PREFIX}${sha256Hex(canonicalJson(p))}`;
}

export type Verify = (signer: string, text: string, signature: string) => boolean;

/** The epochs a promise names: the ones below its latest, then its latest. */
export function namedEpochs(p: Pick<PromiseBody, 'latest' | 'named'>): EpochHome[] {
  return [...(p.named ?? []), ...(p.latest === undefined ? [] : [p.latest])];
}

/**
 * The homes whose sets must each give a majority of the promises, in order: the home the checker knows (`view`), then
 * every home a promise names (namedEpochs) at an epoch above the view's, by epoch, but those below the highest head a
 * promise shows. A promise names the epochs its promiser promised or saw since the last it saw completed, each of
 * which may have certified entries with its home's set; the entries of epochs below a head's are on that head's chain
 * (its epoch's home took them, asking as this asks).
 */
export function homesToAsk(promises: readonly SignedPromise[], view: EpochHome): EpochHome[] {
  const covered = Math.max(view.epoch + 1, ...promises.map((s) => s.promise.head?.epoch ?? FIRST_EPOCH));
  const named = new Map<string, EpochHome>();
  for (const s of promises) for (const n of namedEpochs(s.promise)) if (n.epoch >= covered) named.set(configKey(n), epochHomeOf(n.epoch, n));
  return [view, ...[...named.values()].sort((a, b) => a.epoch - b.epoch)];
}

/**
 * Why `promises` do not make `candidate` the home of `zid` for `epoch` with its set passing over `candidate.excluded`,
 * else null: every promise names that identity, epoch, candidate and excluded members and is signed by its node, and
 * for each home of `homesToAsk` (from the checker's `view`) its set (`setOf`) has a majority of distinct promisers; no
 * promiser but the candidate is outside all of those sets.
 */
export function promisesFault(
  promises: readonly SignedPromise[],
  zid: string,
  epoch: number,
  candidate: SetConfig,
  view: EpochHome,
  setOf: (at: EpochHome) => CustodySet,
  verify: Verify,
): string | null {
  for (const s of promises) {
    const p = s.promise;
    if (p.zid !== zid || p.epoch !== epoch || p.candidate !== candidate.home) return `a promise of ${s.node} is for another identity, epoch or candidate`;
    if (!sameExcluded(p.excluded, candidate.excluded)) return `the promise of ${s.node} is for another custody set of the candidate`;
    if (!verify(s.node, promiseSigningText(p), s.signature)) return `the promise of ${s.node} does not verify`;
  }
  const sets = homesToAsk(promises, view).map((at) => ({ at, set: setOf(at) }));
  // The candidate's own promise may come from outside the sets (a holder whose home's set the members no longer
  // compute, failover.ts rankOf): it counts in no majority, and its head is one more chain to take the highest from.
  const outsider = promises.find((s) => s.node !== candidate.home && !sets.some(({ set }) => set.custodians.includes(s.node)));
  if (outsider !== undefined) return `${outsider.node} is not in the identity's custody set`;
  for (const { at, set } of sets) {
    const signers = new Set(promises.filter((s) => set.custodians.includes(s.node)).map((s) => s.node));
    if (signers.size < set.majority)
      return `promises of ${signers.size} distinct custodians of the set of epoch ${at.epoch}'s home ${at.home}, ${set.majority} needed`;
  }
  return null;
}

/**
 * The head the promises show whose chain holds every certified entry (failover-rules.ts HEAD_ORDER: highest epoch,
 * then attempt, then seq), with the promiser holding it; null when none holds any.
 */
export function highestHead(promises: readonly SignedPromise[]): { head: PromisedHead; node: string } | null {
  let best: { head: PromisedHead; node: string } | null = null;
  for (const s of promises) {
    const h = s.promise.head;
    if (h === null) continue;
    if (best === null || headAfter(h, best.head)) best = { head: h, node: s.node };
  }
  return best;
}

/** A custodian's promise record of an identity: the highest epoch it promised, to whom, and what it knew before. */
export interface Promised {
  epoch: number;
  candidate: string;
  /** The promise's `latest` (absent: none above the first epoch). */
  latest?: EpochHome;
  /** The promise's `named` (absent: none). */
  named?: EpochHome[];
  /** The promise's `excluded`: the members the candidate's set passes over (absent: none). */
  excluded?: string[];
}

/**
 * What a custodian names in a new promise (`latest`, `named`): from the latest epoch it saw completed (`completed`:
 * of its head, a change it applied, its certified log) up, that one and every epoch it promised since (`before`: its
 * previous promise, with what that one named), oldest first; the newest MAX_NAMED_EPOCHS + 1 at most.
 */
export function epochsToName(completed: EpochHome | null, before: Promised | null): Pick<PromiseBody, 'latest' | 'named'> {
  const floor = completed?.epoch ?? FIRST_EPOCH;
  const known = new Map<number, EpochHome>();
  if (completed !== null) known.set(completed.epoch, completed);
  if (before !== null)
    for (const k of [...namedEpochs(before), epochHomeOf(before.epoch, { home: before.candidate, excluded: before.excluded })])
      if (k.epoch > floor) known.set(k.epoch, epochHomeOf(k.epoch, k));
  const all = [...known.values()].sort((a, b) => a.epoch - b.epoch).slice(-(MAX_NAMED_EPOCHS + 1));
  const latest = all.pop();
  return { ...(latest === undefined ? {} : { latest }), ...(all.length > 0 ? { named: all } : {}) };
}

export type PromiseRefusal = 'home' | 'promised' | 'stale';
export type PromiseDecision = { promise: 'new' | 'again' } | { refuse: PromiseRefusal; reason: string; epoch: number };

/** What a custodian knows of the identity when a candidate asks. */
export interface PromiseFacts {
  /** The highest epoch of an entry it signed for the identity (0: none). */
  accepted: number;
  promised: Promised | null;
  /** This node is the identity's home (and the candidate another node): it is alive, there is nothing to take over. */
  selfHome: boolean;
  /**
   * The identity's home as this node knows it, when it is another node than the candidate and this node hears its
   * tick events (not overdue: failover-rules.ts tickOverdue); null otherwise, and for a candidate's own promise.
   */
  heardHome?: string | null;
  /** The members the candidate's set passes over, as it asks (absent: none): one promise of an epoch names one set. */
  excluded?: string[];
}

interface PromiseRow {
  refuse: PromiseRefusal | 'again';
  test: (epoch: number, candidate: string, f: PromiseFacts) => boolean;
  reason: (epoch: number, f: PromiseFacts) => string;
}

/** A custodian's promise table, rows in order; a request passing every row is promised (kept on disk before the answer). */
export const PROMISE_ROWS: readonly PromiseRow[] = [
  { refuse: 'home', test: (_e, _c, f) => f.selfHome, reason: () => 'this node is the identity’s home' },
  { refuse: 'stale', test: (epoch, _c, f) => epoch <= f.accepted, reason: (epoch, f) => `epoch ${epoch} is not above ${f.accepted}, accepted here` },
  {
    refuse: 'again',
    test: (epoch, c, f) => f.promised !== null && f.promised.epoch === epoch && f.promised.candidate === c && sameExcluded(f.promised.excluded, f.excluded),
    reason: () => 'promised already',
  },
  // Pre-vote: a live home is not taken over because one custodian stopped hearing it (a loaded or cut-off candidate,
  // or one that lies). Its promise would fence the home's writes here for nothing.
  {
    refuse: 'home',
    test: (_e, _c, f) => (f.heardHome ?? null) !== null,
    reason: (_e, f) => `the identity’s home ${f.heardHome!} is heard from here`,
  },
  {
    refuse: 'promised',
    test: (epoch, _c, f) => f.promised !== null && f.promised.epoch >= epoch,
    reason: (epoch, f) => `epoch ${f.promised!.epoch} is promised to ${f.promised!.candidate}${f.promised!.epoch === epoch ? ' (with its custody set)' : ''}`,
  },
];

export function decidePromise(epoch: number, candidate: string, f: PromiseFacts): PromiseDecision {
  for (const row of PROMISE_ROWS) {
    if (!row.test(epoch, candidate, f)) continue;
    if (row.refuse === 'again') return { promise: 'again' };
    return { refuse: row.refuse, reason: row.reason(epoch, f), epoch: Math.max(f.accepted, f.promised?.epoch ?? 0) };
  }
  return { promise: 'new' };
}

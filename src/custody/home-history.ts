// The home of an identity in an epoch whose change never reached this node (docs/protocol.md §19, "Home history"): a
// debit certified in that epoch is checked under that home's set, by the receiver's home and its custodians, and a new
// home certifies it again under it. The node asks other nodes for the changes they keep up to that epoch, and checks
// each from the epoch its promises came from, whose home it knows or learned from another change of
// the answer, as a change heard is checked (home-change.ts standingOf); the homes it learns are kept. A node that
// answers with changes that do not check is passed over for the next. Checks never wait for it (learnSoon).
import type { Logger } from 'pino';
import type { FetchChanges } from './client.js';
import { configOf, standingOf, type HomeChange, type HomeChanges } from './home-change.js';
import { excludedMember, type SetConfig } from './custody-set.js';
import { FIRST_EPOCH } from './entry.js';
import { namedEpochs, type Verify } from './promise.js';

/** Nodes asked per epoch looked for, and how long an epoch not found is not looked for again. */
const MAX_SOURCES = 4;
const RETRY_AFTER_MS = 30_000;
/** Pages of changes read from one node for one epoch. */
const MAX_PAGES = 8;

export interface HomeHistoryDeps {
  homeChanges: Pick<HomeChanges, 'latest' | 'knownConfig' | 'learn'>;
  members: () => Iterable<string>;
  replicas: number;
  verify: Verify;
  /** Null: no mesh, nothing to ask. */
  fetch: FetchChanges | null;
  /** The nodes to ask about `zid`, in order (this node left out). */
  sources: (zid: string) => Promise<string[]>;
  nowMs: () => number;
  timeoutMs: number;
  logger?: Logger;
}

export class HomeHistory {
  /** `zid!epoch` → when it was last looked for and not found. */
  private readonly missed = new Map<string, number>();
  /** One lookup per identity and epoch at a time. */
  private readonly running = new Map<string, Promise<SetConfig | null>>();

  constructor(private readonly d: HomeHistoryDeps) {}

  /**
   * Look the home of `zid` in `epoch` up in the background: the check that needs it fails now (its sender tries again
   * later, as after any refusal), and no write, batch or takeover waits on other nodes.
   */
  learnSoon(zid: string, epoch: number): void {
    void this.learnHomeAt(zid, epoch).catch((err: unknown) => this.d.logger?.warn({ err: String(err), zid, epoch }, 'custody: a home lookup failed'));
  }

  /**
   * The home of `zid` in `epoch` (below the latest change known here) and its set's passed-over members, learned from
   * other nodes; null: not found.
   */
  learnHomeAt(zid: string, epoch: number): Promise<SetConfig | null> {
    const key = `${zid}!${epoch}`;
    const missedAt = this.missed.get(key);
    if (missedAt !== undefined && this.d.nowMs() - missedAt < RETRY_AFTER_MS) return Promise.resolve(null);
    let run = this.running.get(key);
    if (run === undefined) {
      run = this.lookUp(zid, epoch).finally(() => this.running.delete(key));
      this.running.set(key, run);
    }
    return run;
  }

  private async lookUp(zid: string, epoch: number): Promise<SetConfig | null> {
    const d = this.d;
    const latest = (await d.homeChanges.latest(zid))?.epoch;
    if (d.fetch === null || latest === undefined || epoch >= latest) return null;
    const known = await d.homeChanges.knownConfig(zid, epoch);
    if (known !== null) return known;
    for (const node of (await d.sources(zid)).slice(0, MAX_SOURCES)) {
      try {
        const learned = await this.checkedChanges(node, zid, epoch);
        if (learned.length > 0) await d.homeChanges.learn(zid, learned);
        const found = learned.find((c) => c.epoch === epoch);
        if (found !== undefined) return configOf(found);
      } catch (err) {
        d.logger?.info({ err: String(err), zid, epoch, node }, 'custody: the home changes of an identity could not be read from a node');
      }
    }
    this.missed.set(`${zid}!${epoch}`, d.nowMs());
    return null;
  }

  /**
   * The changes of `zid` above `after` up to `epoch` that a node keeps, from the first source that has the one of
   * `epoch` (empty: none has it), unchecked: a node that missed more changes than a change carries (home-moves.ts)
   * checks each as it applies it.
   */
  async changesUpTo(zid: string, after: number, epoch: number): Promise<HomeChange[]> {
    if (this.d.fetch === null) return [];
    for (const node of (await this.d.sources(zid)).slice(0, MAX_SOURCES)) {
      try {
        const fetched = await this.fetchedUpTo(node, zid, after, epoch);
        if (fetched.some((c) => c.epoch === epoch)) return fetched;
      } catch (err) {
        this.d.logger?.info({ err: String(err), zid, epoch, node }, 'custody: the home changes of an identity could not be read from a node');
      }
    }
    return [];
  }

  /** The changes `node` keeps above `after`, up to `epoch`, a few pages at most. */
  private async fetchedUpTo(node: string, zid: string, after: number, epoch: number): Promise<HomeChange[]> {
    const fetched: HomeChange[] = [];
    for (let page = 0; page < MAX_PAGES; page++) {
      const answer = await this.d.fetch!(node, zid, fetched.at(-1)?.epoch ?? after, AbortSignal.timeout(this.d.timeoutMs));
      fetched.push(...answer.changes.filter((c) => c.epoch <= epoch));
      if (!answer.more || answer.changes.some((c) => c.epoch >= epoch)) break;
    }
    return fetched;
  }

  /**
   * The changes `node` keeps up to `epoch` that check here: each against the epoch it names as the one its promises
   * came from (`after`, else the epoch before), whose home is known here or was learned from an earlier change of the
   * answer. Nodes keep different runs of one history (a change names the epoch its candidate knew), so each change is
   * checked from its own base, not from the one before it in the answer.
   */
  private async checkedChanges(node: string, zid: string, epoch: number): Promise<HomeChange[]> {
    const d = this.d;
    const fetched = await this.fetchedUpTo(node, zid, FIRST_EPOCH, epoch);
    const learned = new Map<number, HomeChange>();
    const configAt = async (e: number): Promise<SetConfig | null> => {
      const change = learned.get(e);
      return change !== undefined ? configOf(change) : d.homeChanges.knownConfig(zid, e);
    };
    for (let progress = true; progress && !learned.has(epoch);) {
      progress = false;
      for (const change of fetched) {
        if (learned.has(change.epoch)) continue;
        const base = change.after ?? change.epoch - 1;
        const config = (await configAt(base)) ?? namedConfig(change, base);
        if (config === null) continue;
        const standing = standingOf(change, { epoch: base, ...config }, d.members(), d.replicas, d.verify);
        if (standing.apply) {
          learned.set(change.epoch, change);
          progress = true;
        } else if (standing.why === 'invalid') {
          d.logger?.warn({ zid, epoch: change.epoch, node, reason: standing.reason }, 'custody: a home change read from a node does not hold');
          return [...learned.values()];
        }
      }
    }
    return [...learned.values()].sort((a, b) => a.epoch - b.epoch);
  }
}

/**
 * The home of `epoch` and its set as the change's own promises name them (each promiser signed the epochs it knew,
 * with their homes and sets), when they name one alone: the base of a change whose epoch before never completed (its
 * candidate certified its epoch entry and stopped before any node applied its change), which no node keeps a change of.
 */
function namedConfig(change: HomeChange, epoch: number): SetConfig | null {
  const named = new Map<string, SetConfig>();
  for (const p of change.promises)
    for (const n of namedEpochs(p.promise))
      if (n.epoch === epoch) named.set(`${n.home}|${(n.excluded ?? []).join(',')}`, { home: n.home, ...excludedMember(n.excluded) });
  return named.size === 1 ? [...named.values()][0]! : null;
}

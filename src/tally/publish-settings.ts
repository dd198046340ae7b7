// An identity's publish setting (architecture.md §6): whether the results it seals are listed in /api/tally/record,
// where anyone with a key can see and challenge them. Kept at the identity's home, the one node that seals its
// results; a result is published or not by the setting at its sealing (a later change does not move old results).
// The spec names the route but not the default: results stay private until their owner opts in (a caller does not
// expect its inputs listed for every key holder), so PUBLISH_DEFAULT is false.
// LevelDB is the truth; memory keeps the settings of the identities seen lately, bounded (least recently used out
// first, a setting being written stays until its write settles), the default included, so a miss reads one key.
import type { Json, Store, Sublevel } from '../store/db.js';
import { LruMap } from '../util/bounded-map.js';

export const PUBLISH_DEFAULT = false;
/** Identities whose setting is kept in memory, unless configured (limits.identityCacheMax). */
export const PUBLISH_CACHE_DEFAULT = 4096;

export interface PublishSetting {
  publish_default: boolean;
  /** Tick it was set at; null while the node's default applies. */
  svcond: number | null;
}

const NODE_DEFAULT: PublishSetting = Object.freeze({ publish_default: PUBLISH_DEFAULT, svcond: null });

export class PublishSettings {
  private readonly sub: Sublevel;
  /** Writes not settled, per identity: their entries stay in memory (the cache is then the newest word). */
  private readonly writing = new Map<string, number>();
  private readonly cache: LruMap<string, PublishSetting>;

  constructor(
    private readonly store: Store,
    cacheMax = PUBLISH_CACHE_DEFAULT,
  ) {
    this.sub = store.sub('publish_settings');
    this.cache = new LruMap(cacheMax, (zid) => this.writing.has(zid));
  }

  /** Nothing to load: settings are read when an identity is first seen (kept for the callers that still call it). */
  async load(): Promise<void> {}

  /** Entries in memory (for tests and docs/performance.md's cache list). */
  get cached(): number {
    return this.cache.size;
  }

  /** Is `zid`'s setting in memory? (Does not count as a use.) */
  inMemory(zid: string): boolean {
    return this.cache.has(zid);
  }

  /** An identity's setting: from memory when seen lately (synchronously), else read from the store. */
  of(zid: string): PublishSetting | Promise<PublishSetting> {
    return this.cache.get(zid) ?? this.read(zid);
  }

  private async read(zid: string): Promise<PublishSetting> {
    const stored = await this.store.get<PublishSetting>(this.sub, zid);
    // A write that settled while this read was under way is the newer word.
    const now = this.cache.get(zid);
    if (now !== undefined) return now;
    const value = stored ?? NODE_DEFAULT;
    this.cache.set(zid, value);
    return value;
  }

  /**
   * Does a result `zid` seals get published? Decided before the sealing batch is built (ResultRecords.forOwner), so
   * the batch itself does not wait on the store. (Demo and anonymous callers have no setting: never.)
   */
  publishes(zid: string | null): boolean | Promise<boolean> {
    if (zid === null) return false;
    const s = this.of(zid);
    return s instanceof Promise ? s.then((v) => v.publish_default) : s.publish_default;
  }

  async set(zid: string, publish: boolean, svcond: number): Promise<PublishSetting> {
    const known = this.cache.get(zid);
    const previous = known ?? (await this.store.get<PublishSetting>(this.sub, zid)) ?? NODE_DEFAULT;
    const next: PublishSetting = { publish_default: publish, svcond };
    // Applied at once (a seal that starts after this call sees it), undone if the write fails.
    this.writing.set(zid, (this.writing.get(zid) ?? 0) + 1);
    this.cache.set(zid, next);
    try {
      await this.store.commit([{ type: 'put', sub: this.sub, key: zid, value: next as unknown as Json }]);
    } catch (err) {
      if (this.cache.get(zid) === next) this.cache.set(zid, previous);
      throw err;
    } finally {
      const left = (this.writing.get(zid) ?? 1) - 1;
      if (left > 0) this.writing.set(zid, left);
      else this.writing.delete(zid);
    }
    return next;
  }
}

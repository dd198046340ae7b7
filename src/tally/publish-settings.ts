// An identity's publish setting (architecture.md §6): whether the results it seals are listed in /api/tally/record,
// where anyone with a key can see and challenge them. Kept at the identity's home, the one node that seals its
// results; a result is published or not by the setting at its sealing (a later change does not move old results).
// The spec names the route but not the default: results stay private until their owner opts in (a caller does not
// expect its inputs listed for every key holder), so PUBLISH_DEFAULT is false.
import type { Json, Store, Sublevel } from '../store/db.js';

export const PUBLISH_DEFAULT = false;

export interface PublishSetting {
  publish_default: boolean;
  /** Tick it was set at; null while the node's default applies. */
  svcond: number | null;
}

export class PublishSettings {
  private readonly sub: Sublevel;
  /** Identities that chose a setting (few: the rest take PUBLISH_DEFAULT). */
  private readonly chosen = new Map<string, PublishSetting>();

  constructor(private readonly store: Store) {
    this.sub = store.sub('publish_settings');
  }

  async load(): Promise<void> {
    for (const { key, value } of await this.store.range<PublishSetting>(this.sub)) this.chosen.set(key, value);
  }

  of(zid: string): PublishSetting {
    return this.chosen.get(zid) ?? { publish_default: PUBLISH_DEFAULT, svcond: null };
  }

  /** Does a result `zid` seals now get published? (Demo and anonymous callers have no setting: never.) */
  publishes(zid: string | null): boolean {
    return zid !== null && this.of(zid).publish_default;
  }

  async set(zid: string, publish: boolean, svcond: number): Promise<PublishSetting> {
    const previous = this.chosen.get(zid);
    const next: PublishSetting = { publish_default: publish, svcond };
    // Applied at once (a seal that starts after this call sees it), undone if the write fails.
    this.chosen.set(zid, next);
    try {
      await this.store.commit([{ type: 'put', sub: this.sub, key: zid, value: next as unknown as Json }]);
    } catch (err) {
      if (this.chosen.get(zid) === next) {
        if (previous) this.chosen.set(zid, previous);
        else this.chosen.delete(zid);
      }
      throw err;
    }
    return next;
  }
}

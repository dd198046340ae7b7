// Demo keys: one shared per node and caller-minted ones, both plan 'demo' with a 10/day quota (tally/quota.ts).
// The shared key is public by design (handed to anyone who asks), so its text is kept to hand out again;
// like every key, it authenticates by its SHA-256 digest.
import type { Store, Sublevel } from '../store/db.js';
import type { IdentityService } from './service.js';

export class DemoKeys {
  private readonly meta: Sublevel;
  /** One creation at a time: concurrent first callers share the same promise, so only one key is made. */
  private shared: Promise<string> | null = null;

  constructor(private readonly store: Store, private readonly identity: IdentityService) {
    this.meta = store.sub('meta');
  }

  /** The shared demo key (public by design, so its text is kept to hand out again). */
  sharedKey(): Promise<string> {
    this.shared ??= this.loadOrCreate().catch((err: unknown) => {
      this.shared = null;
      throw err;
    });
    return this.shared;
  }

  private async loadOrCreate(): Promise<string> {
    const existing = await this.store.get<string>(this.meta, 'shared_demo_key');
    if (existing) return existing;
    const { key } = await this.identity.demoKey(true);
    await this.store.commit([{ type: 'put', sub: this.meta, key: 'shared_demo_key', value: key }]);
    return key;
  }

  /** A caller's own demo key, shown once. */
  async mint(): Promise<string> {
    return (await this.identity.demoKey(false)).key;
  }
}

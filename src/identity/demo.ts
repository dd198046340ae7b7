// Demo keys: one shared per node (created once, kept by digest; its text kept encrypted-at-rest is not
// needed because it is public by design — it is handed to anyone who asks) and caller-minted ones.
// Both carry plan 'demo' with a 10/day quota counted by tally/quota.ts.
import type { Store, Sublevel } from '../store/db.js';
import type { IdentityService } from './service.js';

export class DemoKeys {
  private readonly meta: Sublevel;
  private shared: string | null = null;

  constructor(private readonly store: Store, private readonly identity: IdentityService) {
    this.meta = store.sub('meta');
  }

  /** The shared demo key (public by design, so its text is kept to hand out again). */
  async sharedKey(): Promise<string> {
    if (this.shared) return this.shared;
    const existing = await this.store.get<string>(this.meta, 'shared_demo_key');
    if (existing) return (this.shared = existing);
    const { key } = await this.identity.demoKey(true);
    await this.store.commit([{ type: 'put', sub: this.meta, key: 'shared_demo_key', value: key }]);
    return (this.shared = key);
  }

  /** A caller's own demo key, shown once. */
  async mint(): Promise<string> {
    return (await this.identity.demoKey(false)).key;
  }
}

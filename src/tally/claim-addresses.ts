// The daily claim's per-address count across the mesh (spec part 8, architecture.md §7). A claim is served at the
// identity's home, so one home sees only the claims of its own identities: an address claiming for identities homed
// on N nodes would get N × 64 claims an hour. Each home therefore gossips, after a claim, its own count for the address
// and hour (`tally.claim.address {hour, address, count}`), the address as an HMAC with the mesh secret (addresses are
// not broadcast in clear). Every node keeps the latest count per (hour, address, sender) — a count only grows, so a
// replayed or reordered event changes nothing — and their sum per (hour, address); the claim's difficulty and cap
// take the local count plus that sum. Both are counters (pruned by day with the claim counters), written in one batch
// per event, so they survive a restart. Gossip is not a lock: claims at two homes within one gossip round can
// overshoot the cap by what those homes served meanwhile; the next claim anywhere sees them.
import { createHmac } from 'node:crypto';
import { z } from 'zod';
import type { Store } from '../store/db.js';
import type { Counters } from '../store/counters.js';
import { GossipError } from '../mesh/gossip-error.js';
import type { GossipHandler } from '../mesh/gossip-handlers.js';
import { claimAddressElsewhereCounter, claimAddressPeerCounter } from '../store/counter-keys.js';

export const CLAIM_ADDRESS_EVENT = 'tally.claim.address';
/** An hour further than this from the receiver's clock is ignored (past hours are no longer counted anyway). */
const HOUR_MS = 3_600_000;

const body = z
  .object({
    hour: z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}$/, 'a UTC hour, YYYY-MM-DDTHH'),
    address: z.string().regex(/^[0-9a-f]{32}$/, '32 lower-case hex digits'),
    count: z.number().int().min(1).max(1_000_000),
  })
  .strict();
export type ClaimAddressBody = z.infer<typeof body>;

export class ClaimAddresses {
  private publish: ((b: ClaimAddressBody) => Promise<void>) | null = null;

  /** `secret`: the mesh secret (null: the node runs alone, and nothing is gossiped or counted from elsewhere). */
  constructor(
    private readonly store: Store,
    private readonly counters: Counters,
    private readonly secret: string | null,
  ) {}

  /** How this node gossips (wired once the mesh exists). */
  use(publish: (b: ClaimAddressBody) => Promise<void>): void {
    this.publish = publish;
  }

  /** The address as it travels: an HMAC with the mesh secret. */
  digest(ip: string): string {
    return createHmac('sha256', this.secret ?? '')
      .update(`claim-address|${ip}`)
      .digest('hex')
      .slice(0, 32);
  }

  /** Claims other homes served to this address in this hour, as far as their gossip has arrived. */
  elsewhere(hour: string, ip: string): number {
    if (this.secret === null) return 0;
    return this.counters.get(claimAddressElsewhereCounter(hour, this.digest(ip)));
  }

  /** Tell the mesh this home's count for the address and hour (after the claim's batch; a lost event is not retried). */
  announce(hour: string, ip: string, count: number): void {
    if (this.secret === null || this.publish === null) return;
    void this.publish({ hour, address: this.digest(ip), count }).catch(() => undefined);
  }

  /** Apply a home's count: the increase over the latest known from that home, in one batch. */
  async learn(b: ClaimAddressBody, sender: string): Promise<void> {
    const peerName = claimAddressPeerCounter(b.hour, b.address, sender);
    const delta = b.count - this.counters.get(peerName);
    if (delta <= 0) return;
    const sumName = claimAddressElsewhereCounter(b.hour, b.address);
    this.counters.bump(peerName, delta);
    this.counters.bump(sumName, delta);
    try {
      await this.store.commit(this.counters.persistOps([peerName, sumName]));
    } catch (err) {
      this.counters.revert(peerName, delta);
      this.counters.revert(sumName, delta);
      throw err;
    }
  }

  handler(nowMs: () => number, selfId: () => string): GossipHandler<ClaimAddressBody> {
    return {
      type: CLAIM_ADDRESS_EVENT,
      body,
      handle: async (b, event) => {
        if (event.sender === selfId()) return;
        const hourMs = Date.parse(`${b.hour}:00:00Z`);
        if (!Number.isFinite(hourMs) || Math.abs(hourMs - nowMs()) > 2 * HOUR_MS)
          throw new GossipError('ignore', 400, 'INVALID_EVENT', `${CLAIM_ADDRESS_EVENT}: hour ${b.hour} is not near this node's clock`);
        await this.learn(b, event.sender);
      },
    };
  }
}

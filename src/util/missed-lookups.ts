// Names a question to the peers did not find (a key's digest, a zid, a machine's slug), not asked again for a while so
// that a stream of unknown names does not fan out to the mesh. A miss is the word of the peers asked: once the node
// learns a peer it did not know then (a late joiner hearing the name's home for the first time), the name is asked
// again at once. The one place that rule is kept, for every lookup of the node that remembers its misses.
import { BoundedMap } from './bounded-map.js';

export interface MissedLookupsOptions {
  /** Names remembered at most (the oldest miss goes first). */
  max: number;
  nowMs: () => number;
  /** A count that grows each time the node learns a peer it can ask (mesh/peer-table.ts `learnt`); absent: never. */
  peersLearnt?: () => number;
}

export class MissedLookups {
  private readonly misses: BoundedMap<string, { until: number; learnt: number }>;

  constructor(private readonly o: MissedLookupsOptions) {
    this.misses = new BoundedMap(o.max);
  }

  /** The peers asked did not find `name`: not asked again for `forMs`, unless a peer is learnt meanwhile. */
  missed(name: string, forMs: number): void {
    this.misses.set(name, { until: this.o.nowMs() + forMs, learnt: this.learnt() });
  }

  /** Does a miss of `name` still stand (recent, and no peer learnt since)? */
  stands(name: string): boolean {
    const miss = this.misses.get(name);
    if (miss === undefined) return false;
    if (miss.until > this.o.nowMs() && miss.learnt === this.learnt()) return true;
    this.misses.delete(name);
    return false;
  }

  /** `name` was found (from gossip, say): a miss of it no longer stands. */
  forget(name: string): void {
    this.misses.delete(name);
  }

  private learnt(): number {
    return this.o.peersLearnt?.() ?? 0;
  }
}

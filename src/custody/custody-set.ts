// Who holds an identity's ledger (architecture.md §5, custody): R custodians, its home first, then the members of
// highest rendezvous weight SHA-256(zid | peer id) (the committee's hashing, consensus/committee.ts). Members are the
// nodes the registry knows with an active bond (a membership, not an instant's liveness: the set does not change when
// a node misses a tick). Fewer members than R: a smaller set; a node alone holds its identities alone, majority 1.
// Pure: no clock, no store.
import { rankWeight } from '../consensus/committee.js';

export interface CustodySet {
  home: string;
  /** The home first, then the others by weight, highest first. */
  custodians: string[];
  /** Holders an entry needs to be certified: ⌊n/2⌋ + 1 of the set's n (the home counts once it has written it). */
  majority: number;
}

export function custodySetOf(zid: string, home: string, members: Iterable<string>, replicas: number): CustodySet {
  const others = [...new Set(members)]
    .filter((node) => node !== home)
    .map((node) => ({ node, w: rankWeight(zid, node) }))
    .sort((a, b) => (a.w < b.w ? 1 : a.w > b.w ? -1 : 0))
    .slice(0, Math.max(0, replicas - 1))
    .map((x) => x.node);
  const custodians = [home, ...others];
  return { home, custodians, majority: Math.floor(custodians.length / 2) + 1 };
}

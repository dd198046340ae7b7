// Who holds an identity's ledger (architecture.md §5, custody): R custodians, its home first, then the members of
// highest rendezvous weight SHA-256(zid | peer id) (the committee's hashing, consensus/committee.ts). Members are the
// nodes the registry knows with an active bond (a membership, not an instant's liveness: the set does not change when
// a node misses a tick). An epoch may pass over members (`excluded`: a reconfiguration replaced them, gone longer than
// custody.replaceTicks): the next ones by weight take their places. Fewer members than R: a smaller set; a node alone
// holds its identities alone, majority 1. Pure: no clock, no store.
import { z } from 'zod';
import { rankWeight } from '../consensus/committee.js';

export interface CustodySet {
  home: string;
  /** The home first, then the others by weight, highest first. */
  custodians: string[];
  /** Holders an entry needs to be certified: ⌊n/2⌋ + 1 of the set's n (the home counts once it has written it). */
  majority: number;
}

/** Most members one epoch passes over. */
export const MAX_EXCLUDED = 16;

/** The members an epoch's set passes over, as an entry, a promise and a home change carry them: sorted, distinct. */
export const excludedSchema = z
  .array(z.string().min(1).max(128))
  .min(1)
  .max(MAX_EXCLUDED)
  .refine((xs) => xs.every((x, i) => i === 0 || xs[i - 1]! < x), 'excluded nodes are sorted and distinct');

/** An epoch's configuration: its home and the members its set passes over (absent: none). */
export interface SetConfig {
  home: string;
  excluded?: string[];
}

export function custodySetOf(zid: string, home: string, members: Iterable<string>, replicas: number, excluded: readonly string[] = []): CustodySet {
  return rankedSetOf(zid, home, members, replicas, excluded).set;
}

/** A set with the weights of its custodians but the home (`weights[i]` is `custodians[i + 1]`'s), so it can shift. */
export interface RankedSet {
  set: CustodySet;
  weights: readonly string[];
}

/** custodySetOf, with the custodians' weights. */
export function rankedSetOf(zid: string, home: string, members: Iterable<string>, replicas: number, excluded: readonly string[] = []): RankedSet {
  const passed = new Set(excluded);
  const others = rankedWeights(zid, home, members)
    .filter((x) => !passed.has(x.node))
    .slice(0, Math.max(0, replicas - 1));
  return rankedSet(
    home,
    others.map((x) => x.node),
    others.map((x) => x.w),
  );
}

function rankedSet(home: string, others: string[], weights: readonly string[]): RankedSet {
  const custodians = [home, ...others];
  return { set: { home, custodians, majority: Math.floor(custodians.length / 2) + 1 }, weights };
}

/** The members that joined and left between two lists of them. */
export interface MembersChange {
  joined: readonly string[];
  left: ReadonlySet<string>;
}

export function membersChange(from: Iterable<string>, to: Iterable<string>): MembersChange {
  const before = new Set(from);
  const after = new Set(to);
  return { joined: [...after].filter((node) => !before.has(node)), left: new Set([...before].filter((node) => !after.has(node))) };
}

/**
 * The set `ranked` (of `zid`, passing over `excluded`) after the members changed by `change`, without ranking every
 * member again: a member that joined takes its place by weight among the custodians, and one that left changes nothing
 * unless it was a custodian. Null when one was: who comes next is known only by ranking the members again
 * (rankedSetOf). `ranked` itself when nothing changed. Equal to rankedSetOf over the members after the change.
 */
export function shiftedSet(zid: string, ranked: RankedSet, change: MembersChange, replicas: number, excluded: readonly string[] = []): RankedSet | null {
  const { home } = ranked.set;
  const others = ranked.set.custodians.slice(1);
  if (others.some((node) => change.left.has(node))) return null;
  const room = Math.max(0, replicas - 1);
  const weights = [...ranked.weights];
  let shifted = false;
  for (const node of change.joined) {
    if (node === home || excluded.includes(node) || others.includes(node)) continue;
    const w = rankWeight(zid, node);
    if (others.length >= room && !(others.length > 0 && w > weights.at(-1)!)) continue;
    let at = 0;
    while (at < weights.length && weights[at]! > w) at++;
    others.splice(at, 0, node);
    weights.splice(at, 0, w);
    if (others.length > room) {
      others.pop();
      weights.pop();
    }
    shifted = true;
  }
  return shifted ? rankedSet(home, others, weights) : ranked;
}

/** The set of an epoch's configuration. */
export function setOfConfig(zid: string, config: SetConfig, members: Iterable<string>, replicas: number): CustodySet {
  return custodySetOf(zid, config.home, members, replicas, config.excluded);
}

/** The members but `home`, by weight for `zid`, highest first. */
function ranked(zid: string, home: string, members: Iterable<string>): string[] {
  return rankedWeights(zid, home, members).map((x) => x.node);
}

function rankedWeights(zid: string, home: string, members: Iterable<string>): { node: string; w: string }[] {
  return [...new Set(members)]
    .filter((node) => node !== home)
    .map((node) => ({ node, w: rankWeight(zid, node) }))
    .sort((a, b) => (a.w < b.w ? 1 : a.w > b.w ? -1 : 0));
}

/**
 * The members a new epoch of `home` passes over: by weight, each member `gone` (unheard longer than the grace period)
 * until R - 1 others are found, at most MAX_EXCLUDED, sorted. A node back in time is no longer passed over.
 */
export function excludedFor(zid: string, home: string, members: Iterable<string>, replicas: number, gone: (node: string) => boolean): string[] {
  const excluded: string[] = [];
  let kept = 0;
  for (const node of ranked(zid, home, members)) {
    if (kept >= replicas - 1) break;
    if (excluded.length < MAX_EXCLUDED && gone(node)) excluded.push(node);
    else kept++;
  }
  return excluded.sort();
}

/** `excluded` as it travels: absent when empty. */
export function excludedMember(excluded: readonly string[] | undefined): { excluded?: string[] } {
  return excluded !== undefined && excluded.length > 0 ? { excluded: [...excluded] } : {};
}

/** Do two lists of passed-over members (absent: none) name the same nodes? */
export function sameExcluded(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  const x = a ?? [];
  const y = b ?? [];
  return x.length === y.length && x.every((n, i) => n === y[i]);
}

/** Do two sets hold the same custodians (in any order)? */
export function sameMembers(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((n) => b.includes(n));
}

// Who re-executes a challenged result (architecture.md §6): a pure function of the challenge id and the eligible set.
//   eligible  = nodes with an active bond at least settleTicks old at the challenge's tick (counted from the tick this
//               node first heard the bond record, less a slack, when that is later than the record's own: bonds.ts
//               settledFrom), heard (a tick event of theirs, liveness.ts) saying they contribute with that bond within
//               the live window before the challenge's tick (reaching further back for a node that ticks seldom:
//               liveness.ts liveReach), other than the executor and the challenger's home; one seat per operator
//               identity
//   ranking   = SHA-256(seed | peer id), highest first (rendezvous hashing: a node's place depends on the seed alone,
//               so no one picks a committee by ordering a list); seed = SHA-256(result_id | the signature of the draw
//               event), the first tick event a node of the eligible set signed after the challenge's tick
//               (challenge-wire.ts drawSeedOf): material that did not exist when the challenge was committed to
//   committee = the top committeeSize, never fewer (SVC_NO_COMMITTEE); quorum = ⌊k/2⌋ + 1 of the policy's size k
// Every node computes the eligible set from its own bond registry and liveness log, at the opener's intake and again
// when it checks a challenge (challenges.ts), so an opener cannot list nodes of its own making or leave live ones out.
// Pure: no clock, no store, no randomness.
import { sha256Hex } from '../kernel/bytes.js';
import { liveReach, type Heard } from './liveness.js';

export { quorumOf } from './policy.js';

/** A node that might sit on a committee: its active bond and the tick events heard from it around the challenge. */
export interface Candidate {
  node: string;
  /** The bond's identity (the node's operator) and id. */
  zid: string;
  bondId: string;
  /** Tick of its active bond's attestation. */
  bondSvcond: number;
  /**
   * The tick from which the bond counts as made at this node, when later than bondSvcond: it first heard the record
   * well after the record's own tick (bonds.ts settledFrom). Settling counts from it.
   */
  settledFrom?: number;
  heard: readonly Heard[];
}

/** A window of ticks, both ends included. */
export interface TickWindow {
  from: number;
  to: number;
}

/**
 * The live window of a challenge: [from, to] for a tick event whose sender ticks at the base interval; with
 * `liveTicks`, `from` reaches back liveReach(liveTicks, every, baseEvery) further for a tick event declaring a
 * longer interval `every` (liveTicks read in the sender's intervals).
 */
export interface LiveWindow extends TickWindow {
  liveTicks?: number;
  /** The mesh's base tick interval (mesh.tickEvery; default 4). */
  baseEvery?: number;
}

export interface EligibilityRule {
  /** The challenge's tick. */
  svcond: number;
  settleTicks: number;
  /**
   * The ticks in which a tick event saying "contributing with this bond" makes a node live; null when liveness is not
   * judged (the reader has no record of those ticks).
   */
  live: LiveWindow | null;
  /** The node that executed the challenged result. */
  executor: string;
  /** The node where the challenge was accepted (the challenger's home). */
  challengerHome: string;
  /** The executor's operator identity: none of its nodes sits on the committee (null when unknown). */
  executorZid?: string | null;
}

/** Is a candidate live in the window (read in the interval each of its tick events declares): heard contributing with its own bond? */
export function heardContributing(c: Pick<Candidate, 'bondId' | 'heard'>, live: LiveWindow): boolean {
  const reach = (h: Heard) => (live.liveTicks === undefined ? 0 : liveReach(live.liveTicks, h.every, live.baseEvery ?? 4));
  return c.heard.some((h) => h.svcond >= live.from - reach(h) && h.svcond <= live.to && h.mode === 'contributing' && h.bondId === c.bondId);
}

/** Eligible node ids, sorted (each once; one node per operator identity, the lowest node id). */
export function eligibleNodes(candidates: readonly Candidate[], rule: EligibilityRule): string[] {
  const byZid = new Map<string, string>();
  for (const c of candidates) {
    if (c.node === rule.executor || c.node === rule.challengerHome) continue;
    if (rule.executorZid && c.zid === rule.executorZid) continue;
    if (rule.svcond - Math.max(c.bondSvcond, c.settledFrom ?? c.bondSvcond) < rule.settleTicks) continue;
    if (rule.live && !heardContributing(c, rule.live)) continue;
    const seat = byZid.get(c.zid);
    if (seat === undefined || c.node < seat) byZid.set(c.zid, c.node);
  }
  return [...byZid.values()].sort();
}

/** The rendezvous weight of a peer for a draw seed: hex SHA-256 of `seed|peerId`. */
export function rankWeight(seed: string, peerId: string): string {
  return sha256Hex(`${seed}|${peerId}`);
}

/** The committee: the `size` eligible nodes of highest weight under `seed`, highest first. */
export function committeeOf(seed: string, eligible: readonly string[], size: number): string[] {
  return [...new Set(eligible)]
    .map((node) => ({ node, w: rankWeight(seed, node) }))
    .sort((a, b) => (a.w < b.w ? 1 : a.w > b.w ? -1 : 0))
    .slice(0, Math.max(0, size))
    .map((x) => x.node);
}

/** What a candidate's bond says: its node, identity, id and tick. */
export interface CandidateBond {
  node: string;
  zid: string;
  bond_id: string;
  svcond: number;
}

/**
 * Every active bond as a candidate, with the tick events heard from its node (`heard`, from the liveness log) and the
 * tick its bond counts from here (`settledFrom`, bonds.ts; absent: its own tick).
 */
export function committeeCandidates(
  active: readonly { bond: CandidateBond }[],
  heard: (node: string) => readonly Heard[],
  settledFrom: (bondId: string) => number | null = () => null,
): Candidate[] {
  return active.map(({ bond }) => {
    const from = settledFrom(bond.bond_id);
    return {
      node: bond.node,
      zid: bond.zid,
      bondId: bond.bond_id,
      bondSvcond: bond.svcond,
      ...(from !== null && from > bond.svcond ? { settledFrom: from } : {}),
      heard: heard(bond.node),
    };
  });
}

// Who re-executes a challenged result (architecture.md §6): a pure function of the challenge id and the eligible set.
//   eligible  = nodes whose bond attestation is at least settleTicks old at the challenge's tick, whose operator is
//               contributing, other than the executor and the challenger's home
//   ranking   = SHA-256(challenge_id | peer id), highest first (rendezvous hashing: a node's place depends on the
//               challenge alone, so no one picks a committee by ordering a list)
//   committee = the top committeeSize; quorum = ⌊k/2⌋ + 1 of the committee size k of the policy
// Pure: no clock, no store, no randomness.
import { sha256Hex } from '../kernel/bytes.js';

export { quorumOf } from './policy.js';

/** A node that might sit on a committee: its bond's tick and whether its operator contributes. */
export interface Candidate {
  node: string;
  /** Tick of its active bond's attestation. */
  bondSvcond: number;
  contributing: boolean;
}

export interface EligibilityRule {
  /** The challenge's tick. */
  svcond: number;
  settleTicks: number;
  /** The node that executed the challenged result. */
  executor: string;
  /** The node where the challenge was accepted (the challenger's home). */
  challengerHome: string;
}

/** Eligible node ids, sorted (each once). */
export function eligibleNodes(candidates: readonly Candidate[], rule: EligibilityRule): string[] {
  const out = new Set<string>();
  for (const c of candidates) {
    if (!c.contributing) continue;
    if (c.node === rule.executor || c.node === rule.challengerHome) continue;
    if (rule.svcond - c.bondSvcond < rule.settleTicks) continue;
    out.add(c.node);
  }
  return [...out].sort();
}

/** The rendezvous weight of a peer for a challenge: hex SHA-256 of `challengeId|peerId`. */
export function rankWeight(challengeId: string, peerId: string): string {
  return sha256Hex(`${challengeId}|${peerId}`);
}

/** The committee: the `size` eligible nodes of highest weight, highest first. */
export function committeeOf(challengeId: string, eligible: readonly string[], size: number): string[] {
  return [...new Set(eligible)]
    .map((node) => ({ node, w: rankWeight(challengeId, node) }))
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

/** What a peer's latest tick event says of its operator: its mode and bond id (null until a tick carries them). */
export interface CandidatePeer {
  peerId: string;
  mode: string | null;
  bondId: string | null;
}

/**
 * Nodes that may sit on a committee: every active bond, contributing when its node says so — this node (`self`) from
 * its operator's mode, a peer from its latest tick event (mode contributing and the same bond id).
 */
export function committeeCandidates(
  active: readonly { bond: CandidateBond }[],
  peers: readonly CandidatePeer[],
  self: string,
  modeOf: (zid: string) => string,
): Candidate[] {
  const byId = new Map(peers.map((p) => [p.peerId, p]));
  return active.map(({ bond }) => {
    const peer = byId.get(bond.node);
    const contributing = bond.node === self ? modeOf(bond.zid) === 'contributing' : peer?.mode === 'contributing' && peer.bondId === bond.bond_id;
    return { node: bond.node, bondSvcond: bond.svcond, contributing };
  });
}

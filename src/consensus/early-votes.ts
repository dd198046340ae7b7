// Votes heard before their challenge (gossip keeps no order): held, their signatures already checked, until the
// challenge arrives. Bounded in challenges (the oldest goes first) and in votes per challenge, and expiring, so votes
// for challenges that never come cost a fixed amount of memory.
import type { SignedVote } from './challenge-wire.js';

export interface EarlyVoteLimits {
  /** Challenges held at most (default 256). */
  maxChallenges?: number;
  /** Votes held per challenge at most (default 16). */
  maxPerChallenge?: number;
  /** Ticks a challenge's votes are kept (default: the caller's, deadline + grace). */
  ttlTicks?: number;
}

/** A held vote and the tick this node heard it at (its own clock: a vote's tick is only its signer's word). */
export interface HeldVote {
  vote: SignedVote;
  heardAt: number;
}

export class EarlyVotes {
  /** Held votes by challenge id, oldest challenge first. */
  private readonly slots = new Map<string, { votes: HeldVote[]; until: number }>();

  constructor(
    private readonly limits: EarlyVoteLimits,
    private readonly defaultTtlTicks: () => number,
    /** Told how many votes were dropped (a challenge pushed out, expired, or over its per-challenge bound). */
    private readonly onDropped: (votes: number) => void,
  ) {}

  /** Hold a vote whose challenge has not arrived (each voter and digest once). */
  hold(sv: SignedVote, now: number): void {
    this.expire(now);
    const lim = this.limits;
    const id = sv.vote.challenge_id;
    let slot = this.slots.get(id);
    if (!slot) {
      if (this.slots.size >= (lim.maxChallenges ?? 256)) {
        const [oldest, s] = this.slots.entries().next().value!;
        this.onDropped(s.votes.length);
        this.slots.delete(oldest);
      }
      slot = { votes: [], until: now + (lim.ttlTicks ?? this.defaultTtlTicks()) };
      this.slots.set(id, slot);
    }
    if (slot.votes.some(({ vote: v }) => v.vote.voter === sv.vote.voter && v.vote.digest === sv.vote.digest)) return;
    if (slot.votes.length >= (lim.maxPerChallenge ?? 16)) {
      this.onDropped(1);
      return;
    }
    slot.votes.push({ vote: sv, heardAt: now });
  }

  /** Drop the votes of challenges held past their time. */
  expire(now: number): void {
    for (const [id, s] of this.slots) {
      if (now <= s.until) continue;
      this.onDropped(s.votes.length);
      this.slots.delete(id);
    }
  }

  /** The held votes of a challenge that has just arrived (none when nothing is held); they are held no more. */
  take(id: string): HeldVote[] {
    const slot = this.slots.get(id);
    if (!slot) return [];
    this.slots.delete(id);
    return slot.votes;
  }

  /** Votes held now. */
  size(): number {
    let n = 0;
    for (const s of this.slots.values()) n += s.votes.length;
    return n;
  }
}

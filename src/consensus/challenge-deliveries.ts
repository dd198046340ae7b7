// Who is sent which of a challenge's events directly, beside gossip, and until when (the routing rules of
// outbox.ts's point-to-point deliveries): the opener sends its challenge to each committee member and the bond's
// home (again to the larger committee when it escalates), a member sends its commit (until the commit window + grace) and its vote to the opener (who declares
// no_quorum from what it holds), both until the deadline + grace; the opener sends the verdict to the bond's home, which applies the slashing, until it acknowledges.
import type { ChallengeEntry } from './challenges.js';
import {
  CHALLENGE_OPENED_EVENT,
  COMMIT_EVENT,
  VERDICT_EVENT,
  VOTE_EVENT,
  commitDeadlineOf,
  forMesh,
  roundDeadlineOf,
  roundOf,
  roundView,
  type RoundView,
  type SignedCommit,
  type SignedVote,
  type VerdictDocument,
} from './challenge-wire.js';
import { Outbox, type SendFn } from './outbox.js';

export interface ChallengeDeliveriesOptions {
  send: SendFn;
  nowSvcond: () => number;
  nodeId: () => string;
  /** Ticks after the deadline during which challenges and votes are still worth sending (votes in flight). */
  graceTicks: number;
  /** The bond's home acknowledged the verdict of `challengeId`: recorded, so it is not sent again after a restart. */
  verdictDelivered: (challengeId: string) => Promise<void>;
}

export class ChallengeDeliveries {
  private readonly outbox: Outbox;

  constructor(private readonly o: ChallengeDeliveriesOptions) {
    this.outbox = new Outbox({ send: o.send, nowSvcond: o.nowSvcond });
  }

  /** At the opener: the challenge to each member of the round's committee and the bond's home, until the round's deadline. */
  challenge(e: ChallengeEntry, round: RoundView): void {
    const c = e.challenge.challenge;
    const me = this.o.nodeId();
    if (c.challenger_home !== me) return;
    for (const node of new Set([...round.committee, c.executed_by.node])) {
      if (node === me) continue;
      this.outbox.add({
        key: `challenge!${c.challenge_id}!${node}`,
        node,
        type: CHALLENGE_OPENED_EVENT,
        body: () => forMesh(e.challenge),
        until: round.deadline_svcond + this.o.graceTicks,
      });
    }
  }

  /** At a member other than the opener: its commit to the opener, until the commit window (+ grace) closes. */
  commit(e: ChallengeEntry, commit: SignedCommit): void {
    const c = e.challenge.challenge;
    if (c.challenger_home === this.o.nodeId()) return;
    this.outbox.add({
      key: `commit!${c.challenge_id}!${commit.commit.voter}!${commit.commit.commitment}`,
      node: c.challenger_home,
      type: COMMIT_EVENT,
      body: () => commit,
      until: commitDeadlineOf(roundView(c, roundOf(commit.commit)) ?? c) + this.o.graceTicks,
    });
  }

  /** At a member other than the opener: its vote to the opener. */
  vote(e: ChallengeEntry, vote: SignedVote): void {
    const c = e.challenge.challenge;
    if (c.challenger_home === this.o.nodeId()) return;
    this.outbox.add({
      key: `vote!${c.challenge_id}!${vote.vote.voter}!${roundOf(vote.vote)}!${vote.vote.digest}`,
      node: c.challenger_home,
      type: VOTE_EVENT,
      body: () => vote,
      until: roundDeadlineOf(c, roundOf(vote.vote)) + this.o.graceTicks,
    });
  }

  /** At the opener, once per verdict not yet acknowledged: its document (`doc`, documentOf(e)) to the bond's home. */
  verdict(e: ChallengeEntry, doc: VerdictDocument | null): void {
    const c = e.challenge.challenge;
    const me = this.o.nodeId();
    if (!e.verdict || e.verdict_delivered || c.challenger_home !== me || c.executed_by.node === me) return;
    this.outbox.add({
      key: `verdict!${c.challenge_id}`,
      node: c.executed_by.node,
      type: VERDICT_EVENT,
      body: () => (doc ? forMesh(doc) : doc),
      until: null,
      onDone: () => this.o.verdictDelivered(c.challenge_id),
    });
  }

  /** Attempt the deliveries that are due. */
  async flush(): Promise<void> {
    await this.outbox.flush();
  }

  size(): number {
    return this.outbox.size();
  }

  stats(): Record<string, number> {
    return { ...this.outbox.stats, queued: this.outbox.size() };
  }
}

// The contribution policy (architecture.md §6): the numbers every node of a mesh must share — bond size,
// committee size and quorum, settle and deadline ticks, the challenge stake, the bond term — and what follows
// from them, in words and numbers, as GET /api/contribute/policy shows it. Pure: no clock, no store.
import { TICK_SECONDS_EXACT } from '../kernel/clock.js';
import type { NodeConfig } from '../config/schema.js';

/** The consensus rules (the bond slot's owner, `operator`, is bond-slot.ts's). */
export type ContributionPolicy = Omit<NodeConfig['contribution'], 'operator'>;

export const MODES = ['idle', 'contributing', 'experimenting'] as const;
export type Mode = (typeof MODES)[number];

/**
 * Modes the spec names without saying what they do, refused here with the reason (docs/decisions.md, "Experimenting"):
 * part 3 says only that experimenting excludes contributing and that a switch preempts running work.
 */
export const REFUSED_MODES: Readonly<Partial<Record<Mode, string>>> = {
  experimenting: 'not offered by this node: the spec names the mode but not what it does, so it would change nothing',
};

/** The modes a switch may ask for. */
export const ACCEPTED_MODES: readonly Mode[] = MODES.filter((m) => REFUSED_MODES[m] === undefined);

const SECONDS_PER_DAY = 86_400;

/** Votes that decide a verdict: a strict majority of the committee, ⌊k/2⌋ + 1. */
export function quorumOf(committeeSize: number): number {
  return Math.floor(committeeSize / 2) + 1;
}

/** Ticks in `days` days (a tick is 0.777000777 s). */
export function ticksPerDays(days: number): number {
  return Math.floor((days * SECONDS_PER_DAY) / TICK_SECONDS_EXACT);
}

/**
 * Whole days left of a bond's term at tick `now`, for a bond made at tick `since`: the term's end, rounded up to a
 * whole day, never below 0 (a bond past its term stays bonded until its owner releases it).
 */
export function daysRemaining(policy: Pick<ContributionPolicy, 'bondTermDays'>, since: number, now: number): number {
  const elapsedDays = (Math.max(0, now - since) * TICK_SECONDS_EXACT) / SECONDS_PER_DAY;
  return Math.max(0, Math.ceil(policy.bondTermDays - elapsedDays - 1e-9));
}

/** The policy as GET /api/contribute/policy shows it. */
export function policyDocument(p: ContributionPolicy): Record<string, unknown> {
  const quorum = quorumOf(p.committeeSize);
  const seconds = (ticks: number) => Math.round(ticks * TICK_SECONDS_EXACT * 1000) / 1000;
  return {
    bond: {
      envelopes: p.bondEnvelopes,
      term_days: p.bondTermDays,
      term_ticks: ticksPerDays(p.bondTermDays),
      words:
        `A contributing node's operator bonds ${p.bondEnvelopes} envelopes it already holds. They stay owned by it and ` +
        `in their folders, but are marked immovable (transfers refuse them) until the bond is released. A node holds at most one bond, its operator's; ` +
        `the term is ${p.bondTermDays} days, and release is refused while a challenge against the bond is open.`,
    },
    modes: {
      values: [...ACCEPTED_MODES],
      refused: { ...REFUSED_MODES },
      words: 'idle or contributing, one at a time; contributing needs an active bond; switching replaces the mode. Experimenting is refused (400).',
    },
    committee: {
      size: p.committeeSize,
      quorum,
      settle_ticks: p.settleTicks,
      settle_seconds: seconds(p.settleTicks),
      live_ticks: p.liveTicks,
      words:
        `A challenged result is re-executed by ${p.committeeSize} nodes chosen by rendezvous hash of the challenge id among contributing nodes ` +
        `whose bond is at least ${p.settleTicks} ticks old at the challenge's tick and that were heard contributing within ${p.liveTicks} ticks before it ` +
        `(read in the interval their tick events declare: liveTicks × every / mesh.tickEvery when that interval is longer), ` +
        `one per operator, excluding the executor and the challenger's home; no smaller committee is formed. ` +
        `Members commit to their digest, then reveal it. A digest with ${quorum} of ${p.committeeSize} votes decides.`,
    },
    challenge: {
      stake: p.challengeStake,
      deadline_ticks: p.deadlineTicks,
      deadline_seconds: seconds(p.deadlineTicks),
      words: `A challenger stakes ${p.challengeStake} credits. Without ${quorum} matching votes within ${p.deadlineTicks} ticks the verdict is no_quorum.`,
    },
    outcomes: [
      {
        verdict: 'upheld',
        when: `${quorum} votes agree on a digest other than the executor's, whatever the challenger claimed`,
        executor_loses_envelopes: p.bondEnvelopes,
        challenger_stake: 'returned',
        words: `the whole bond (${p.bondEnvelopes} envelopes) is slashed, once: a share goes to the challenger when its claim was the deciding digest, the rest to the foundation account`,
      },
      {
        verdict: 'rejected',
        when: `${quorum} votes equal the executor's digest`,
        executor_loses_envelopes: 0,
        challenger_stake: 'burned',
        words: `the challenger's ${p.challengeStake} credits are burned; an honest executor is never slashed`,
      },
      {
        verdict: 'no_quorum',
        when: `no digest has ${quorum} votes by ${p.deadlineTicks} ticks`,
        executor_loses_envelopes: 0,
        challenger_stake: 'returned',
        words: 'nobody is slashed',
      },
    ],
    offload: {
      setting: p.offload,
      words:
        "never: every run is local; when-busy: a run goes to the contributing peer with the most free slots when this node's workers are all busy; always: runs go to contributing peers first.",
    },
    tick_seconds: TICK_SECONDS_EXACT,
  };
}

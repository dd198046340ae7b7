// The challenge lifecycle (architecture.md §6) as an explicit transition table: states × events → next state. The
// service (challenges.ts) moves an entry only through advance(); a verdict is terminal, so nothing moves it again.
import { OUTCOMES, type Fold, type Outcome } from './verdict.js';

export const STATES = ['opened', 'voting', ...OUTCOMES] as const;
export type ChallengeState = (typeof STATES)[number];
/** What moves a challenge: a counted vote with no decision yet, a decision of the fold, or the deadline passing. */
export type LifecycleEvent = 'vote' | 'quorum_claim' | 'quorum_executor' | 'quorum_other' | 'deadline';

/** The lifecycle, one row per allowed move; anything else (every move out of a verdict) is refused. */
export const TRANSITIONS: readonly { from: ChallengeState; on: LifecycleEvent; to: ChallengeState }[] = [
  { from: 'opened', on: 'vote', to: 'voting' },
  { from: 'opened', on: 'deadline', to: 'no_quorum' },
  { from: 'voting', on: 'vote', to: 'voting' },
  { from: 'voting', on: 'quorum_claim', to: 'upheld' },
  { from: 'voting', on: 'quorum_executor', to: 'rejected' },
  { from: 'voting', on: 'quorum_other', to: 'not_reproducible' },
  { from: 'voting', on: 'deadline', to: 'no_quorum' },
];

/** The state after `on`, or null when the table has no such row. */
export function transition(from: ChallengeState, on: LifecycleEvent): ChallengeState | null {
  return TRANSITIONS.find((t) => t.from === from && t.on === on)?.to ?? null;
}

export function isTerminal(state: ChallengeState): boolean {
  return !TRANSITIONS.some((t) => t.from === state);
}

const EVENT_OF: Record<Outcome, LifecycleEvent> = {
  upheld: 'quorum_claim',
  rejected: 'quorum_executor',
  not_reproducible: 'quorum_other',
  no_quorum: 'deadline',
};

/**
 * The path from `state` through the table to what `fold` says: a first counted vote moves opened → voting, then
 * the decision (if any). Returns the states visited (empty when nothing moves).
 */
export function advance(state: ChallengeState, fold: Fold): ChallengeState[] {
  const path: ChallengeState[] = [];
  let s = state;
  const step = (on: LifecycleEvent) => {
    const next = transition(s, on);
    if (next !== null) {
      if (next !== s) path.push(next);
      s = next;
    }
  };
  if (fold.outcome === 'no_quorum') step('deadline');
  else {
    if (fold.counted.length > 0 && s === 'opened') step('vote');
    if (fold.outcome !== null) step(EVENT_OF[fold.outcome]);
  }
  return path;
}

// The challenge lifecycle (architecture.md §6) as an explicit transition table: states × events → next state and
// effect. The service (challenges.ts) moves an entry only through move(); a verdict is terminal, so nothing moves it
// again.
import { OUTCOMES, type Fold, type Outcome } from './verdict.js';

export const STATES = ['opened', 'voting', ...OUTCOMES] as const;
export type ChallengeState = (typeof STATES)[number];
/**
 * What moves a challenge: a counted vote with no decision yet, a decision of the fold (a quorum on the executor's
 * digest, or on any other), or the deadline passing.
 */
export type LifecycleEvent = 'vote' | 'quorum_executor' | 'quorum_other' | 'deadline';

/**
 * What a move does beside storing the entry. `verdict`: the verdict is recorded, the effects this node owes for it
 * are marked in the same batch (owed-effects.ts), it is gossiped (when decided here from votes, by the opener, the
 * committee and the executor), sent to the bond's home (challenge-deliveries.ts) and the verdict listeners are told.
 */
export type LifecycleEffect = 'none' | 'verdict';

export interface Transition {
  from: ChallengeState;
  on: LifecycleEvent;
  to: ChallengeState;
  effect: LifecycleEffect;
}

/** The lifecycle, one row per allowed move; anything else (every move out of a verdict) is refused. */
export const TRANSITIONS: readonly Transition[] = [
  { from: 'opened', on: 'vote', to: 'voting', effect: 'none' },
  { from: 'opened', on: 'deadline', to: 'no_quorum', effect: 'verdict' },
  { from: 'voting', on: 'vote', to: 'voting', effect: 'none' },
  { from: 'voting', on: 'quorum_other', to: 'upheld', effect: 'verdict' },
  { from: 'voting', on: 'quorum_executor', to: 'rejected', effect: 'verdict' },
  { from: 'voting', on: 'deadline', to: 'no_quorum', effect: 'verdict' },
];

/** The row for `on` in state `from`, or null when the table has none. */
export function rowOf(from: ChallengeState, on: LifecycleEvent): Transition | null {
  return TRANSITIONS.find((t) => t.from === from && t.on === on) ?? null;
}

/** The state after `on`, or null when the table has no such row. */
export function transition(from: ChallengeState, on: LifecycleEvent): ChallengeState | null {
  return rowOf(from, on)?.to ?? null;
}

export function isTerminal(state: ChallengeState): boolean {
  return !TRANSITIONS.some((t) => t.from === state);
}

const EVENT_OF: Record<Outcome, LifecycleEvent> = {
  upheld: 'quorum_other',
  rejected: 'quorum_executor',
  no_quorum: 'deadline',
};

/**
 * The rows from `state` through the table to what `fold` says: a first counted vote moves opened → voting, then
 * the decision (if any). Returns the states visited (empty when nothing moves) and the effects of the rows taken.
 */
export function move(state: ChallengeState, fold: Fold): { path: ChallengeState[]; effects: LifecycleEffect[] } {
  const path: ChallengeState[] = [];
  const effects: LifecycleEffect[] = [];
  let s = state;
  const step = (on: LifecycleEvent) => {
    const row = rowOf(s, on);
    if (row !== null) {
      if (row.to !== s) path.push(row.to);
      if (row.effect !== 'none') effects.push(row.effect);
      s = row.to;
    }
  };
  if (fold.outcome === 'no_quorum') step('deadline');
  else {
    if (fold.counted.length > 0 && s === 'opened') step('vote');
    if (fold.outcome !== null) step(EVENT_OF[fold.outcome]);
  }
  return { path, effects };
}

// The challenge lifecycle (architecture.md §6) as an explicit transition table: states × events → next state and
// effect. The service (challenges.ts) moves an entry only through move(); a verdict is terminal, so nothing moves it
// again. A round-0 deadline without a quorum escalates once (challenge-wire.ts escalationOf) when the eligible set
// holds a larger committee; the escalated round's fold is final.
import { OUTCOMES, type Fold, type Outcome } from './verdict.js';

export const STATES = ['opened', 'voting', 'escalated', ...OUTCOMES] as const;
export type ChallengeState = (typeof STATES)[number];
/**
 * What moves a challenge: a counted vote with no decision yet, a decision of the fold (a quorum on the executor's
 * digest, or on any other), round 0's deadline passing without a quorum where a larger committee can be drawn
 * (`escalate`), or a deadline passing without a quorum where none can (`deadline`: final).
 */
export type LifecycleEvent = 'vote' | 'quorum_executor' | 'quorum_other' | 'escalate' | 'deadline';

/**
 * What a move does beside storing the entry. `verdict`: the verdict is recorded, the effects this node owes for it
 * are marked in the same batch (owed-effects.ts), it is gossiped (when decided here from votes, by the opener, the
 * committee and the executor), sent to the bond's home (challenge-deliveries.ts) and the verdict listeners are told.
 * `escalate`: no verdict; round 1's committee (escalationOf) is drawn and the escalation listeners are told (the
 * re-executor commits when this node sits on it).
 */
export type LifecycleEffect = 'none' | 'verdict' | 'escalate';

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
  { from: 'opened', on: 'escalate', to: 'escalated', effect: 'escalate' },
  { from: 'voting', on: 'escalate', to: 'escalated', effect: 'escalate' },
  { from: 'escalated', on: 'vote', to: 'escalated', effect: 'none' },
  { from: 'escalated', on: 'quorum_other', to: 'upheld', effect: 'verdict' },
  { from: 'escalated', on: 'quorum_executor', to: 'rejected', effect: 'verdict' },
  { from: 'escalated', on: 'deadline', to: 'no_quorum', effect: 'verdict' },
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
 * the decision (if any). A fold that rests on the escalated round (`escalated`) first takes the escalate row, then
 * round 1's decision. Returns the states visited (empty when nothing moves) and the effects of the rows taken.
 */
export function move(state: ChallengeState, fold: Fold & { escalated?: boolean }): { path: ChallengeState[]; effects: LifecycleEffect[] } {
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
  if (fold.escalated === true) {
    if (s === 'opened' || s === 'voting') step('escalate');
    if (fold.outcome === 'no_quorum') step('deadline');
    else if (fold.outcome !== null) step(EVENT_OF[fold.outcome]);
  } else if (fold.outcome === 'no_quorum') step('deadline');
  else {
    if (fold.counted.length > 0 && s === 'opened') step('vote');
    if (fold.outcome !== null) step(EVENT_OF[fold.outcome]);
  }
  return { path, effects };
}

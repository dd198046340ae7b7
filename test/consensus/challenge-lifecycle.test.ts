// The challenge lifecycle's transition table (architecture.md §6): one test per row, through transition() and
// move() (the path and effects the service takes from a fold), and the refusals: nothing moves a verdict, no row
// skips voting.
import { describe, expect, it } from 'vitest';
import { STATES, TRANSITIONS, isTerminal, move, transition } from '../../src/consensus/challenge-lifecycle.js';

const CLAIM = 'c'.repeat(64);

describe('the transition table', () => {
  const base = { counted: [], decidingDigest: null, claimMatched: false, tally: {}, equivocators: [], nonMemberVotes: 0, lateVotes: 0 };
  const one = { ...base, counted: [{ voter: 'm', digest: CLAIM }] };
  // One test per row: the row's event moves its from-state to its to-state, through transition() and move(), with
  // the row's effect: a verdict exactly when the move ends the challenge.
  it.each(TRANSITIONS.map((t) => [`${t.from} --${t.on}--> ${t.to}`, t] as const))('%s', (_name, row) => {
    expect(transition(row.from, row.on)).toBe(row.to);
    const fold =
      row.on === 'vote'
        ? { ...one, outcome: null }
        : row.on === 'deadline'
          ? { ...base, outcome: 'no_quorum' as const }
          : { ...one, outcome: ({ quorum_executor: 'rejected', quorum_other: 'upheld' } as const)[row.on] };
    const { path, effects } = move(row.from, fold);
    expect(path[path.length - 1] ?? row.from).toBe(row.to);
    expect(row.effect).toBe(isTerminal(row.to) ? 'verdict' : 'none');
    expect(effects).toEqual(row.effect === 'none' ? [] : [row.effect]);
  });
  it('a quorum reached from opened passes through voting', () => {
    expect(move('opened', { ...one, outcome: 'upheld' })).toEqual({ path: ['voting', 'upheld'], effects: ['verdict'] });
  });
  it('nothing moves a verdict, and no row skips voting', () => {
    for (const s of STATES)
      if (isTerminal(s)) for (const on of ['vote', 'quorum_executor', 'quorum_other', 'deadline'] as const) expect(transition(s, on)).toBeNull();
    expect(STATES.filter(isTerminal)).toEqual(['upheld', 'rejected', 'no_quorum']);
    expect(transition('opened', 'quorum_other')).toBeNull();
    expect(move('upheld', { ...one, outcome: 'rejected' })).toEqual({ path: [], effects: [] });
  });
});

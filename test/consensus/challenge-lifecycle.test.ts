// The challenge lifecycle's transition table (architecture.md §6): one test per row, through transition() and
// move() (the path and effects the service takes from a fold), and the refusals: nothing moves a verdict, no row
// skips voting. A row out of `escalated`, or into it, is taken from a fold that rests on round 1 (escalated: true).
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
    const escalated = row.from === 'escalated' || row.to === 'escalated';
    const fold =
      row.on === 'vote'
        ? { ...one, outcome: null, escalated }
        : row.on === 'escalate'
          ? { ...base, outcome: null, escalated }
          : row.on === 'deadline'
            ? { ...base, outcome: 'no_quorum' as const, escalated }
            : { ...one, outcome: row.on === 'quorum_executor' ? ('rejected' as const) : ('upheld' as const), escalated };
    const { path, effects } = move(row.from, fold);
    expect(path[path.length - 1] ?? row.from).toBe(row.to);
    expect(row.effect).toBe(isTerminal(row.to) ? 'verdict' : row.on === 'escalate' ? 'escalate' : 'none');
    expect(effects).toEqual(row.effect === 'none' ? [] : [row.effect]);
  });
  it('a quorum reached from opened passes through voting', () => {
    expect(move('opened', { ...one, outcome: 'upheld' })).toEqual({ path: ['voting', 'upheld'], effects: ['verdict'] });
  });
  it('round 1 decided from voting passes through escalated: no verdict for round 0, one for round 1', () => {
    expect(move('voting', { ...one, outcome: 'rejected', escalated: true })).toEqual({ path: ['escalated', 'rejected'], effects: ['escalate', 'verdict'] });
    expect(move('opened', { ...base, outcome: 'no_quorum', escalated: true })).toEqual({ path: ['escalated', 'no_quorum'], effects: ['escalate', 'verdict'] });
  });
  it("round 0's quorum, heard after this node escalated (votes it had missed), still decides", () => {
    expect(move('escalated', { ...one, outcome: 'upheld' })).toEqual({ path: ['upheld'], effects: ['verdict'] });
  });
  it('escalation happens once: nothing escalates an escalated challenge', () => {
    expect(transition('escalated', 'escalate')).toBeNull();
    expect(move('escalated', { ...base, outcome: null, escalated: true })).toEqual({ path: [], effects: [] });
  });
  it('nothing moves a verdict, and no row skips voting', () => {
    for (const s of STATES)
      if (isTerminal(s)) for (const on of ['vote', 'quorum_executor', 'quorum_other', 'escalate', 'deadline'] as const) expect(transition(s, on)).toBeNull();
    expect(STATES.filter(isTerminal)).toEqual(['upheld', 'rejected', 'no_quorum']);
    expect(transition('opened', 'quorum_other')).toBeNull();
    expect(move('upheld', { ...one, outcome: 'rejected' })).toEqual({ path: [], effects: [] });
  });
});

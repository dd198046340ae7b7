// The failover table (custody/failover-rules.ts): which event moves a custodian on, and when a home counts as unheard.
import { describe, expect, it } from 'vitest';
import { FAILOVER_ROWS, HEAD_ORDER, headAfter, heardLately, homeUnheard, homeUnreachable, nextState, tickOverdue } from '../../src/custody/failover-rules.js';

describe('the order of the heads a candidate takes from', () => {
  it('goes by epoch, then attempt, then seq', () => {
    expect(HEAD_ORDER.map((r) => r.by)).toEqual(['epoch', 'attempt', 'seq']);
    // A later epoch, whatever its attempt and seq.
    expect(headAfter({ epoch: 2, seq: 1 }, { epoch: 1, attempt: 3, seq: 9 })).toBe(true);
    // A given-up entry (attempt 0) past the slot, against the write certified at that slot in the next attempt.
    expect(headAfter({ epoch: 1, attempt: 1, seq: 2 }, { epoch: 1, seq: 3 })).toBe(true);
    expect(headAfter({ epoch: 1, seq: 3 }, { epoch: 1, attempt: 1, seq: 2 })).toBe(false);
    // An absent attempt is 0; within one attempt the longer chain.
    expect(headAfter({ epoch: 1, seq: 3 }, { epoch: 1, seq: 2 })).toBe(true);
    expect(headAfter({ epoch: 1, attempt: 2, seq: 3 }, { epoch: 1, attempt: 2, seq: 4 })).toBe(false);
    expect(headAfter({ epoch: 1, seq: 3 }, { epoch: 1, seq: 3 })).toBe(false);
  });
});

describe('the failover table', () => {
  it('goes watching → asking → taking → watching (home here), losing to waiting, then watching again', () => {
    expect(nextState('watching', 'home-unheard')).toBe('asking');
    expect(nextState('asking', 'majority')).toBe('taking');
    expect(nextState('taking', 'taken')).toBe('watching');
    expect(nextState('asking', 'short')).toBe('waiting');
    expect(nextState('taking', 'failed')).toBe('waiting');
    expect(nextState('waiting', 'wait-over')).toBe('watching');
  });
  it('takes no event where it does not apply, and a home change from any state', () => {
    expect(nextState('waiting', 'home-unheard')).toBeNull();
    expect(nextState('watching', 'majority')).toBeNull();
    expect(nextState('asking', 'taken')).toBeNull();
    for (const s of ['watching', 'asking', 'taking', 'waiting'] as const) expect(nextState(s, 'home-moved')).toBe('watching');
    expect(FAILOVER_ROWS.length).toBe(7);
  });
  it('counts the home unheard for (rank + 1) × failoverTicks of its tick intervals since it was last heard or since this node watches', () => {
    const at = (tick: number, every = 1) => ({ tick, every });
    expect(homeUnheard(108, at(100), 0, 0, 8, 1)).toBe(true);
    expect(homeUnheard(107, at(100), 0, 0, 8, 1)).toBe(false);
    expect(homeUnheard(115, at(100), 0, 1, 8, 1)).toBe(false);
    expect(homeUnheard(116, at(100), 0, 1, 8, 1)).toBe(true);
    // A home that ticks every 5 ticks (a larger mesh) is waited for 8 of its intervals.
    expect(homeUnheard(139, at(100, 5), 0, 0, 8, 1)).toBe(false);
    expect(homeUnheard(140, at(100, 5), 0, 0, 8, 1)).toBe(true);
    // A node that just started has heard nobody: it waits from its start, in the interval it is given.
    expect(homeUnheard(105, null, 100, 0, 8, 1)).toBe(false);
    expect(homeUnheard(108, at(50), 100, 0, 8, 1)).toBe(true);
    expect(homeUnheard(123, null, 100, 0, 8, 3)).toBe(false);
    expect(homeUnheard(124, null, 100, 0, 8, 3)).toBe(true);
  });
  it('calls a tick event overdue past the node’s own interval and a slack of 2 ticks, never before', () => {
    expect(tickOverdue(103, { tick: 100, every: 1 }, 0, 1)).toBe(false);
    expect(tickOverdue(104, { tick: 100, every: 1 }, 0, 1)).toBe(true);
    // Every 17 ticks (a 100-node mesh at the default rate): silent for 19 ticks while alive.
    expect(tickOverdue(119, { tick: 100, every: 17 }, 0, 1)).toBe(false);
    expect(tickOverdue(120, { tick: 100, every: 17 }, 0, 1)).toBe(true);
    // Never heard: from this node's start, in the interval it is given.
    expect(tickOverdue(119, null, 100, 17)).toBe(false);
    expect(tickOverdue(120, null, 100, 17)).toBe(true);
  });
  it('takes an unreachable home over after (rank + 1) × failoverTicks ticks of failed probes, whatever its interval', () => {
    expect(homeUnreachable(200, null, 0, 8)).toBe(false);
    expect(homeUnreachable(127, 120, 0, 8)).toBe(false);
    expect(homeUnreachable(128, 120, 0, 8)).toBe(true);
    expect(homeUnreachable(135, 120, 1, 8)).toBe(false);
    expect(homeUnreachable(136, 120, 1, 8)).toBe(true);
    // A home of interval 17 last heard at tick 100, probed from tick 120: taken at 128, where the interval count waits to 236.
    expect(homeUnheard(235, { tick: 100, every: 17 }, 0, 0, 8, 1)).toBe(false);
  });
  it('counts a custodian live when heard within failoverTicks of its intervals', () => {
    expect(heardLately(107, { tick: 100, every: 1 }, 8)).toBe(true);
    expect(heardLately(108, { tick: 100, every: 1 }, 8)).toBe(false);
    expect(heardLately(130, { tick: 100, every: 4 }, 8)).toBe(true);
    expect(heardLately(130, null, 8)).toBe(false);
  });
});

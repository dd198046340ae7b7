// The failover table (custody/failover-rules.ts): which event moves a custodian on, and when a home counts as unheard.
import { describe, expect, it } from 'vitest';
import { FAILOVER_ROWS, homeUnheard, nextState } from '../../src/custody/failover-rules.js';

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
  it('counts the home unheard for (rank + 1) × failoverTicks since it was last heard or since this node watches', () => {
    expect(homeUnheard(108, 100, 0, 0, 8)).toBe(true);
    expect(homeUnheard(107, 100, 0, 0, 8)).toBe(false);
    expect(homeUnheard(115, 100, 0, 1, 8)).toBe(false);
    expect(homeUnheard(116, 100, 0, 1, 8)).toBe(true);
    // A node that just started has heard nobody: it waits from its start.
    expect(homeUnheard(105, null, 100, 0, 8)).toBe(false);
    expect(homeUnheard(108, 50, 100, 0, 8)).toBe(true);
  });
});

// The peer set's transition table (src/mesh/dial-decision.ts): each state from the counts of one pass, and the dials
// and prunes it calls for, row by row; the caps on dials to silent peers.
import { describe, expect, it } from 'vitest';
import {
  DIAL_TABLE,
  SILENT_DIALS_PER_PASS,
  SILENT_DIALS_PER_WINDOW,
  decideDials,
  dialState,
  type DialActions,
  type DialInput,
} from '../../src/mesh/dial-decision.js';

/** Target 1, maximum 2 (a sparse line), nothing due, no silent peer, the whole window's budget left. */
const base: DialInput = { connected: 1, target: 1, max: 2, knownDue: 0, silent: 0, silentDue: 0, silentBudget: SILENT_DIALS_PER_WINDOW };

describe('dial decision table', () => {
  const rows: [string, Partial<DialInput>, DialActions][] = [
    ['at its target, hearing every peer it heard recently: settled', {}, { state: 'settled', known: 0, bootstrap: false, silent: 0, prune: 0 }],
    [
      'at its target, deaf to peers heard recently: partitioned, one silent peer dialled',
      { silent: 3, silentDue: 3 },
      { state: 'partitioned', known: 0, bootstrap: false, silent: 1, prune: 0 },
    ],
    [
      'partitioned with every silent peer in its backoff: waits',
      { silent: 2, silentDue: 0 },
      { state: 'partitioned', known: 0, bootstrap: false, silent: 0, prune: 0 },
    ],
    [
      "partitioned with the window's budget spent: waits",
      { silent: 2, silentDue: 2, silentBudget: 0 },
      { state: 'partitioned', known: 0, bootstrap: false, silent: 0, prune: 0 },
    ],
    [
      'at its maximum and deaf to peers: settled (a dial would be pruned; peers with room dial)',
      { connected: 2, silent: 2, silentDue: 2 },
      { state: 'settled', known: 0, bootstrap: false, silent: 0, prune: 0 },
    ],
    [
      'no connection: alone, known peers to the target, bootstrap, and a silent peer',
      { connected: 0, knownDue: 4, silent: 2, silentDue: 2 },
      { state: 'alone', known: 1, bootstrap: true, silent: 1, prune: 0 },
    ],
    ['alone with nothing known: bootstrap only', { connected: 0 }, { state: 'alone', known: 1, bootstrap: true, silent: 0, prune: 0 }],
    [
      'under its target with known peers due: dials them, not the bootstrap',
      { connected: 2, target: 8, max: 24, knownDue: 10 },
      { state: 'under-target', known: 6, bootstrap: false, silent: 0, prune: 0 },
    ],
    [
      'under its target with no known peer due: the bootstrap as a last resort',
      { connected: 2, target: 8, max: 24, knownDue: 0, silent: 1, silentDue: 1 },
      { state: 'under-target', known: 6, bootstrap: true, silent: 1, prune: 0 },
    ],
    [
      'over its maximum: prunes down to it, dials no one, deaf or not',
      { connected: 27, target: 8, max: 24, knownDue: 5, silent: 3, silentDue: 3 },
      { state: 'over-max', known: 0, bootstrap: false, silent: 0, prune: 3 },
    ],
  ];

  it.each(rows)('%s', (_name, input, expected) => {
    expect(decideDials({ ...base, ...input })).toEqual(expected);
  });

  it('has one row per state, and every state is reached', () => {
    expect(Object.keys(DIAL_TABLE).sort()).toEqual(['alone', 'over-max', 'partitioned', 'settled', 'under-target']);
    expect(new Set(rows.map(([, input]) => dialState({ ...base, ...input })))).toEqual(new Set(Object.keys(DIAL_TABLE)));
  });

  it('dials at most SILENT_DIALS_PER_PASS silent peers a pass, and never past the budget', () => {
    expect(SILENT_DIALS_PER_PASS).toBe(1);
    for (const budget of [-2, 0, 1, 5])
      for (const state of [{ connected: 0 }, { connected: 1 }, { connected: 2, target: 3, max: 6 }]) {
        const a = decideDials({ ...base, ...state, silent: 9, silentDue: 9, silentBudget: budget });
        expect(a.silent).toBe(Math.max(0, Math.min(SILENT_DIALS_PER_PASS, budget)));
      }
  });
});

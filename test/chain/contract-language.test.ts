// The contract language reads own fields only: a name every JavaScript object inherits (constructor, toString,
// valueOf) is neither a declared variable nor a field of an event, and `add` takes numbers only. The caller operand
// reads the zid the step is given (the row's recorded caller), never an event field.
import { describe, expect, it } from 'vitest';
import { parseContract, parseEvent, step, transitionTable, type Contract } from '../../src/chain/contract-language.js';
import { InputError, ServiceError } from '../../src/kernel/errors.js';

const contract = (over: Partial<Record<string, unknown>>): Contract =>
  parseContract({ name: 'c', states: ['a', 'b'], initial: 'a', variables: { n: 0 }, transitions: [{ from: 'a', on: 'go', to: 'b' }], ...over });

function run(c: Contract, vars: Record<string, unknown>, event: Record<string, unknown>, caller: string | null = null) {
  return step('ct_1', c, transitionTable(c), { state: 'a', vars: vars as never }, parseEvent(event), caller);
}

describe('contract language: own fields only', () => {
  it('a variable named like an inherited property is not declared', () => {
    for (const name of ['constructor', 'toString', 'valueOf']) {
      expect(() => contract({ transitions: [{ from: 'a', on: 'go', to: 'b', guards: [{ left: { var: name }, op: '==', right: { value: 1 } }] }] })).toThrow(
        InputError,
      );
      expect(() => contract({ transitions: [{ from: 'a', on: 'go', to: 'b', effects: [{ set: name, to: { value: 1 } }] }] })).toThrow(InputError);
    }
  });

  it('an event field named like an inherited property is missing unless the event sends it, so its guard does not hold', () => {
    const c = contract({ transitions: [{ from: 'a', on: 'go', to: 'b', guards: [{ left: { event: 'toString' }, op: '!=', right: { value: null } }] }] });
    expect(() => run(c, { n: 0 }, { type: 'go' })).toThrow(ServiceError);
    expect(run(c, { n: 0 }, { type: 'go', toString: 'sent' }).state).toBe('b');
    // An effect reading one is refused too (it set the variable to a function before).
    const set = contract({ variables: { x: null }, transitions: [{ from: 'a', on: 'go', to: 'b', effects: [{ set: 'x', to: { event: 'valueOf' } }] }] });
    expect(() => run(set, { x: null }, { type: 'go' })).toThrow(ServiceError);
  });

  it('add takes numbers only: a variable holding true or null is not a number', () => {
    const c = contract({ variables: { n: 0 }, transitions: [{ from: 'a', on: 'go', to: 'b', effects: [{ add: 'n', by: { value: 1 } }] }] });
    expect(run(c, { n: 41 }, { type: 'go' }).vars.n).toBe(42);
    for (const held of [true, null, '1']) expect(() => run(c, { n: held }, { type: 'go' }), String(held)).toThrow(ServiceError);
  });
});

describe('contract language: the caller operand', () => {
  const ALICE = 'zid_' + 'a'.repeat(32);
  const MALLORY = 'zid_' + 'f'.repeat(32);
  const guarded = () =>
    contract({
      variables: { buyer: ALICE },
      transitions: [{ from: 'a', on: 'release', to: 'b', guards: [{ left: { caller: 'zid' }, op: '==', right: { var: 'buyer' } }] }],
    });

  it('a guard on the caller holds for the named zid and not for another, whatever the event claims', () => {
    const c = guarded();
    expect(run(c, { buyer: ALICE }, { type: 'release' }, ALICE).state).toBe('b');
    for (const event of [{ type: 'release' }, { type: 'release', by: ALICE }, { type: 'release', caller: ALICE }]) {
      expect(() => run(c, { buyer: ALICE }, event, MALLORY), JSON.stringify(event)).toThrow(expect.objectContaining({ code: 'SVC_ILLEGAL_TRANSITION' }));
    }
    // No recorded caller (a row written before callers were recorded): the operand is missing, the guard does not hold.
    expect(() => run(c, { buyer: ALICE }, { type: 'release' }, null)).toThrow(ServiceError);
  });

  it('an effect sets a variable to the caller; an unrecorded caller refuses it', () => {
    const c = contract({
      variables: { buyer: null },
      transitions: [{ from: 'a', on: 'deposit', to: 'b', effects: [{ set: 'buyer', to: { caller: 'zid' } }] }],
    });
    expect(run(c, { buyer: null }, { type: 'deposit' }, ALICE).vars.buyer).toBe(ALICE);
    expect(() => run(c, { buyer: null }, { type: 'deposit' }, null)).toThrow(/reads the caller/);
  });

  it('the operand has one shape: {"caller": "zid"}', () => {
    const bad = (left: unknown) => () => contract({ transitions: [{ from: 'a', on: 'go', to: 'b', guards: [{ left, op: '==', right: { value: 1 } }] }] });
    for (const left of [{ caller: 'key' }, { caller: 'zid', extra: 1 }, { caller: true }]) expect(bad(left), JSON.stringify(left)).toThrow(InputError);
    expect(bad({ caller: 'zid' })).not.toThrow();
  });

  it('replaying a log with its recorded callers gives the same states and variables as the live run', () => {
    const c = contract({
      states: ['open', 'funded', 'released'],
      initial: 'open',
      variables: { buyer: null, paid: 0 },
      transitions: [
        {
          from: 'open',
          on: 'deposit',
          to: 'funded',
          effects: [
            { set: 'buyer', to: { caller: 'zid' } },
            { set: 'paid', to: { event: 'amount' } },
          ],
        },
        { from: 'funded', on: 'release', to: 'released', guards: [{ left: { caller: 'zid' }, op: '==', right: { var: 'buyer' } }] },
      ],
    });
    const table = transitionTable(c);
    const sent: { event: Record<string, unknown>; caller: string }[] = [
      { event: { type: 'deposit', amount: 120 }, caller: ALICE },
      { event: { type: 'release', by: ALICE }, caller: MALLORY },
      { event: { type: 'release' }, caller: ALICE },
    ];
    // Live: each event applied or refused as it comes; the log keeps the applied ones with their callers.
    let live = { state: c.initial, vars: { ...c.variables } };
    const log: { event: Record<string, unknown>; caller: string; to: string }[] = [];
    for (const s of sent) {
      try {
        const next = step('ct_1', c, table, live, parseEvent(s.event), s.caller);
        live = { state: next.state, vars: next.vars };
        log.push({ ...s, to: next.state });
      } catch (err) {
        expect(err).toBeInstanceOf(ServiceError);
      }
    }
    expect(log.map((l) => l.caller)).toEqual([ALICE, ALICE]);
    expect(live).toEqual({ state: 'released', vars: { buyer: ALICE, paid: 120 } });
    // Replay: the recorded caller of each row, never another's.
    let replayed = { state: c.initial, vars: { ...c.variables } };
    for (const l of log) {
      const next = step('ct_1', c, table, replayed, parseEvent(l.event), l.caller);
      expect(next.state).toBe(l.to);
      replayed = { state: next.state, vars: next.vars };
    }
    expect(replayed).toEqual(live);
    // The same log replayed as if another identity had sent it does not reach the same state.
    const [first, second] = log;
    const asMallory = step('ct_1', c, table, { state: c.initial, vars: { ...c.variables } }, parseEvent(first!.event), MALLORY);
    expect(() => step('ct_1', c, table, asMallory, parseEvent(second!.event), ALICE)).toThrow(ServiceError);
  });
});

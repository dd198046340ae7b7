// The contract language reads own fields only: a name every JavaScript object inherits (constructor, toString,
// valueOf) is neither a declared variable nor a field of an event, and `add` takes numbers only.
import { describe, expect, it } from 'vitest';
import { parseContract, parseEvent, step, transitionTable, type Contract } from '../../src/chain/contract-language.js';
import { InputError, ServiceError } from '../../src/kernel/errors.js';

const contract = (over: Partial<Record<string, unknown>>): Contract =>
  parseContract({ name: 'c', states: ['a', 'b'], initial: 'a', variables: { n: 0 }, transitions: [{ from: 'a', on: 'go', to: 'b' }], ...over });

function run(c: Contract, vars: Record<string, unknown>, event: Record<string, unknown>) {
  return step('ct_1', c, transitionTable(c), { state: 'a', vars: vars as never }, parseEvent(event));
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

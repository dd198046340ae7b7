// A node back from a stop checks with the identity's custodians that it is still the home before it serves it
// (home-check.ts): a later change they keep moves the identity, a later epoch they accepted or promised fences it, too
// few answers leave it unconfirmed, and majority − 1 answers with nothing later confirm it (once per run, while it is
// among the latest confirmed: the bound keeps a node's memory flat however many identities it serves).
import { describe, expect, it } from 'vitest';
import type { FetchChanges } from '../../src/custody/client.js';
import { custodySetOf } from '../../src/custody/custody-set.js';
import type { HomeChange } from '../../src/custody/home-change.js';
import { HomeCheck, homeCheckOutcome } from '../../src/custody/home-check.js';
import type { ChangesAnswer } from '../../src/custody/protocol.js';

const ZID = 'zid_0123456789abcdef0123456789abcdef';
const SELF = 'node-h';
const MEMBERS = [SELF, 'node-a', 'node-b'];
const CHANGE: HomeChange = {
  zid: ZID,
  epoch: 2,
  home: 'node-a',
  promises: [{ promise: { zid: ZID, epoch: 2, candidate: 'node-a', head: null }, node: 'node-a', signature: 'x' }],
};

/** A check of ZID homed at SELF, whose custodians answer `answers` (an Error: no answer); the applied changes, the fenced calls. */
function composed(answers: Record<string, ChangesAnswer | Error>, max?: number) {
  let home = SELF;
  const applied: HomeChange[] = [];
  const fencedCalls: string[] = [];
  let fetches = 0;
  const fetch: FetchChanges = async (node) => {
    fetches++;
    const a = answers[node]!;
    if (a instanceof Error) throw a;
    return a;
  };
  const check = new HomeCheck(
    {
      nodeId: () => SELF,
      homeOf: () => Promise.resolve(home),
      knownEpoch: () => Promise.resolve(1),
      setOf: () => Promise.resolve(custodySetOf(ZID, home, MEMBERS, 3)),
      certifies: () => Promise.resolve(true),
      ownPromise: () => Promise.resolve(0),
      fetch,
      apply: async (change) => {
        applied.push(change);
        home = change.home;
        return true;
      },
      onFenced: (zid) => fencedCalls.push(zid),
      nowMs: () => 0,
      timeoutMs: 1000,
    },
    max,
  );
  return { check, applied, fencedCalls, fetches: () => fetches };
}

const nothing: ChangesAnswer = { v: 1, changes: [], more: false, fenced: 1 };

describe('the home check after a start', () => {
  it('is a table: moved, then fenced, then short, then confirmed', () => {
    expect(homeCheckOutcome({ moved: true, fenced: 3, epoch: 1, confirmations: 0, needed: 1 })).toBe('moved');
    expect(homeCheckOutcome({ moved: false, fenced: 2, epoch: 1, confirmations: 2, needed: 1 })).toBe('fenced');
    expect(homeCheckOutcome({ moved: false, fenced: 1, epoch: 1, confirmations: 0, needed: 1 })).toBe('short');
    expect(homeCheckOutcome({ moved: false, fenced: 1, epoch: 1, confirmations: 1, needed: 1 })).toBe('confirmed');
  });

  it('applies a later change a custodian keeps: this node no longer serves the identity', async () => {
    const c = composed({ 'node-a': new Error('down'), 'node-b': { v: 1, changes: [CHANGE], more: false, fenced: 2 } });
    expect(await c.check.servesAsHome(ZID)).toBe(false);
    expect(c.applied.map((x) => x.epoch)).toEqual([2]);
    expect(c.check.isConfirmed(ZID)).toBe(false);
  });

  it('is fenced by a later epoch a custodian promised with no change to show: it claims nothing, and a retake is asked', async () => {
    const c = composed({ 'node-a': nothing, 'node-b': { v: 1, changes: [], more: false, fenced: 2 } });
    expect(await c.check.check(ZID)).toBe('fenced');
    expect(await c.check.servesAsHome(ZID)).toBe(false);
    expect(c.fencedCalls).toEqual([ZID]);
  });

  it('is short with no custodian answering, and asks again only after a pause', async () => {
    const c = composed({ 'node-a': new Error('down'), 'node-b': new Error('down') });
    expect(await c.check.servesAsHome(ZID)).toBe(false);
    expect(await c.check.check(ZID)).toBe('short');
    expect(c.fetches()).toBe(2);
  });

  it('is confirmed by majority − 1 custodians with nothing later, once', async () => {
    const c = composed({ 'node-a': new Error('down'), 'node-b': nothing });
    expect(await c.check.servesAsHome(ZID)).toBe(true);
    expect(await c.check.servesAsHome(ZID)).toBe(true);
    expect(c.fetches()).toBe(2);
    expect(c.applied).toEqual([]);
  });

  it('holds a bounded number of confirmations: the oldest pushed out is checked again, and confirmed again', async () => {
    const c = composed({ 'node-a': new Error('down'), 'node-b': nothing }, 2);
    const zids = ['zid_' + '1'.repeat(32), 'zid_' + '2'.repeat(32), 'zid_' + '3'.repeat(32)];
    for (const zid of zids) expect(await c.check.servesAsHome(zid)).toBe(true);
    expect(c.fetches()).toBe(6);
    expect(zids.map((zid) => c.check.isConfirmed(zid))).toEqual([false, true, true]);
    expect(await c.check.servesAsHome(zids[0]!)).toBe(true);
    expect(c.fetches()).toBe(8);
    expect(await c.check.servesAsHome(zids[2]!)).toBe(true);
    expect(c.fetches()).toBe(8);
  });
});

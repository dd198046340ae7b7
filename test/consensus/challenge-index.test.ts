// Challenges by tick (consensus/challenge-index.ts) on a node: challenges stored before the index (entries only, as
// an older node wrote them) are indexed once at the next start and listed through GET /api/tally/consensus, newest
// tick first, by state, paged, with their totals.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestNode, type TestNode } from '../helpers/node.js';
import type { Op } from '../../src/store/db.js';

let t: TestNode;
beforeAll(async () => {
  t = await startTestNode();
});
afterAll(async () => t.destroy());

/** A settled challenge entry as the store holds it (no verdict effects: nothing to resume at start). */
function entry(i: number, svcond: number, state: 'no_quorum' | 'rejected') {
  const id = `chl_${i.toString(16).padStart(32, '0')}`;
  return {
    challenge: {
      challenge: {
        challenge_id: id,
        result_id: `res_1_${i}`,
        challenger: 'zid_old',
        challenger_home: 'node-old',
        claimed_digest: 'c'.repeat(64),
        executor_digest: 'e'.repeat(64),
        executed_by: { node: 'node-exec', bond_id: `bond_${'a'.repeat(24)}`, svcond: 1, request_digest: 'd'.repeat(64), signature: 's' },
        request: { kind: 'solver', solver: 'zeta', inputs: {} },
        stamp_svcond: svcond - 1,
        svcond,
        deadline_svcond: svcond + 10,
        committee_size: 3,
        quorum: 2,
        eligible: [],
        committee: [],
      },
      signature: 'x',
    },
    state,
    votes: [],
    non_member_votes: 0,
    refused_votes: 0,
    verdict: null,
    stake: null,
    received_svcond: svcond,
  };
}

describe('challenges by tick', () => {
  it('challenges stored before the index are listed after the next start, newest first, by state and paged', async () => {
    const ticks = [500, 700, 600, 700, 400];
    const entries = ticks.map((tick, i) => entry(i + 1, tick, i % 2 === 0 ? 'no_quorum' : 'rejected'));
    const store = t.node.store;
    await store.commit([
      ...entries.map((e): Op => ({ type: 'put', sub: store.sub('challenges'), key: e.challenge.challenge.challenge_id, value: e })),
      { type: 'del', sub: store.sub('chain_meta'), key: 'challenges-by-tick-v1' },
    ]);
    const list = async (q = '') => (await call(t.url, 'GET', `/api/tally/consensus${q}`)).body as { total: number; items: { challenge_id: string }[] };
    expect((await list()).total).toBe(0);
    t = await t.restart();
    const newest = [...entries]
      .sort(
        (a, b) =>
          b.challenge.challenge.svcond - a.challenge.challenge.svcond || (a.challenge.challenge.challenge_id < b.challenge.challenge.challenge_id ? -1 : 1),
      )
      .map((e) => e.challenge.challenge.challenge_id);
    const all = await list();
    expect(all.total).toBe(5);
    expect(all.items.map((i) => i.challenge_id)).toEqual(newest);
    expect((await list('?limit=2&offset=1')).items.map((i) => i.challenge_id)).toEqual(newest.slice(1, 3));
    const noQuorum = await list('?state=no_quorum');
    expect(noQuorum.total).toBe(3);
    expect(noQuorum.items.map((i) => i.challenge_id)).toEqual(
      newest.filter((id) => entries.find((e) => e.challenge.challenge.challenge_id === id)!.state === 'no_quorum'),
    );
    expect((await list('?state=voting')).total).toBe(0);
  });
});

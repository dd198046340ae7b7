// The challenged-result lookup (consensus/result-lookup.ts): this node's record first, the peers only when it does
// not home the result; what a challenge needs of each answer.
import { describe, expect, it } from 'vitest';
import { challengedResult, resultFinder } from '../../src/consensus/result-lookup.js';
import type { ResultLookup } from '../../src/tally/record.js';

const ID = 'res_1700000000000_0123456789abcdef';
const found: ResultLookup = {
  status: 'found',
  result_id: ID,
  home: '12D3KooWHome',
  owner: 'zid_owner',
  published: true,
  kind: 'solver',
  request: { kind: 'solver', solver: 'root', inputs: { a: 1 } } as never,
  svcond: 42,
  result_digest: 'd'.repeat(64),
  executed_by: null,
};

describe('challengedResult', () => {
  it('a found result: its request, stamp tick, digest, executor and owner, published', () => {
    expect(challengedResult(found)).toEqual({
      result_id: ID,
      request: found.status === 'found' ? found.request : null,
      stamp_svcond: 42,
      result_digest: 'd'.repeat(64),
      executed_by: null,
      owner: 'zid_owner',
      published: true,
    });
  });
  it('an unpublished result: named, nothing else, not published', () => {
    expect(challengedResult({ status: 'unpublished', result_id: ID, home: '12D3KooWHome' })).toEqual({
      result_id: ID,
      request: null,
      stamp_svcond: 0,
      result_digest: '',
      executed_by: null,
      owner: null,
      published: false,
    });
  });
  it('a result no node homes: null', () => {
    expect(challengedResult({ status: 'unknown', result_id: ID })).toBeNull();
  });
});

describe('resultFinder', () => {
  it('answers from this node’s record without asking any peer when it homes the result', async () => {
    let asked = 0;
    const find = resultFinder(
      { lookup: async () => found },
      {
        peers: () => {
          asked++;
          return [];
        },
        nowSvcond: () => 0,
      },
    );
    expect(await find(ID)).toBe(found);
    expect(asked).toBe(0);
  });
  it('asks the peers when this node does not home it; unknown when no peer answers', async () => {
    let asked = 0;
    const find = resultFinder(
      { lookup: async (id) => ({ status: 'unknown', result_id: id }) },
      {
        peers: () => {
          asked++;
          return [];
        },
        nowSvcond: () => 0,
      },
    );
    expect(await find(ID)).toEqual({ status: 'unknown', result_id: ID });
    expect(asked).toBe(1);
  });
});

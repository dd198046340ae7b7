// A fetch is answered with one entry per seq: the chain ending on the holder's head (custodian.ts onHeadChain), not
// every entry held. A custodian that signed an entry of epoch 1 for a slot a failover did not take holds two entries
// of that seq; a page with both would not be the run of entries the fetcher asked for, and a failover or an old home
// fetching from that custodian would fail.
import { describe, expect, it } from 'vitest';
import { onHeadChain } from '../../src/custody/custodian.js';
import { highestEnvelopeSeq } from '../../src/custody/replica.js';
import { entryHash, GENESIS_ENTRY_HASH, type CustodyEntry } from '../../src/custody/entry.js';

const ZID = `zid_${'cd'.repeat(16)}`;
const entry = (epoch: number, seq: number, prev: string, kind: CustodyEntry['kind'] = 'wallet'): CustodyEntry => ({
  v: 1,
  zid: ZID,
  epoch,
  seq,
  prev_hash: prev,
  kind,
  records: 'e'.repeat(64),
  balance: { free: 0, paid: seq },
  transfer: null,
});

describe('the entries of a page', () => {
  const first = entry(1, 1, GENESIS_ENTRY_HASH);
  const stale = entry(1, 2, entryHash(first));
  const opens = entry(2, 2, entryHash(first), 'epoch');
  const next = entry(2, 3, entryHash(opens));
  // As a custodian's store lists them: by seq, then epoch.
  const held = [first, stale, opens, next].map((e) => ({ entry: e }));

  it('are the head’s chain, one per seq, from the seq asked', () => {
    expect(onHeadChain(held, { hash: entryHash(next), seq: 3 }, 1, 10).map((h) => h.entry)).toEqual([first, opens, next]);
    expect(onHeadChain(held, { hash: entryHash(next), seq: 3 }, 2, 1).map((h) => h.entry)).toEqual([opens]);
  });

  it('are the chain from the seq asked when only the entries from there are read, and none above the head', () => {
    const fromTwo = held.filter((h) => h.entry.seq >= 2);
    expect(onHeadChain(fromTwo, { hash: entryHash(next), seq: 3 }, 2, 10).map((h) => h.entry)).toEqual([opens, next]);
    expect(onHeadChain(fromTwo, { hash: entryHash(opens), seq: 2 }, 3, 10)).toEqual([]);
  });

  it('are every entry held when the head is not there', () => {
    expect(onHeadChain(held, null, 2, 10).map((h) => h.entry)).toEqual([stale, opens, next]);
    expect(onHeadChain(held, { hash: 'f'.repeat(64), seq: 3 }, 1, 10)).toHaveLength(4);
  });
});

describe('the envelope numbers a taken chain brings', () => {
  const put = (seq: number): ['put', 'envelopes', string, string] => ['put', 'envelopes', `env_${String(seq).padStart(24, '0')}`, JSON.stringify({ seq })];
  it('are counted on from above by the home that takes it', () => {
    const links = [
      { records: { v: 1 as const, ops: [put(7), ['put', 'env_owner', 'zid_x!0000000007', '"env"'] as ['put', 'env_owner', string, string]] } },
      { records: { v: 1 as const, ops: [put(41), ['del', 'envelopes', 'env_1'] as ['del', 'envelopes', string], put(12)] } },
    ];
    expect(highestEnvelopeSeq(links)).toBe(41);
    expect(highestEnvelopeSeq([])).toBe(0);
  });
});

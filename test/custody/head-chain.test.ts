// A fetch is answered with one entry per seq: the chain ending on the holder's head (custodian.ts onHeadChain), not
// every entry held. A custodian that signed an entry of epoch 1 for a slot a failover did not take holds two entries
// of that seq; a page with both would not be the run of entries the fetcher asked for, and a failover or an old home
// fetching from that custodian would fail.
import { describe, expect, it } from 'vitest';
import { headChainPage, onHeadChain } from '../../src/custody/custodian.js';
import { MAX_CHAIN_LINKS } from '../../src/custody/protocol.js';
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

describe('the pages of a fetch, read from the holder’s store', () => {
  /** A holder's store as slotsFrom reads it (by seq, then epoch), counting the entries each read returns. */
  const holder = (entries: CustodyEntry[]) => {
    const sorted = entries.map((e) => ({ entry: e })).sort((a, b) => a.entry.seq - b.entry.seq || a.entry.epoch - b.entry.epoch);
    const stats = { read: 0 };
    const read = async (fromSeq: number, limit: number) => {
      const out = sorted.filter((h) => h.entry.seq >= fromSeq).slice(0, limit);
      stats.read += out.length;
      return out;
    };
    return { read, stats };
  };
  const chainOf = (n: number): CustodyEntry[] => {
    const out: CustodyEntry[] = [];
    for (let seq = 1; seq <= n; seq++) out.push(entry(1, seq, seq === 1 ? GENESIS_ENTRY_HASH : entryHash(out[seq - 2]!)));
    return out;
  };

  it('walk a long chain page by page reading about its length once, not its square', async () => {
    const n = 10 * (MAX_CHAIN_LINKS + 1) + 17;
    const chain = chainOf(n);
    const { read, stats } = holder(chain);
    const head = { hash: entryHash(chain.at(-1)!), seq: n };
    const got: CustodyEntry[] = [];
    for (let from = 1; from <= n;) {
      const page = await headChainPage(read, head, from);
      expect(page.length).toBeGreaterThan(0);
      got.push(...page.map((h) => h.entry));
      from = page.at(-1)!.entry.seq + 1;
    }
    expect(got).toEqual(chain);
    // One entry past each page at most: the whole rest of the chain per page would be about n² / 2 / page.
    expect(stats.read).toBeLessThanOrEqual(n + Math.ceil(n / (MAX_CHAIN_LINKS + 1)));
  });

  it('find the head’s chain where a seq holds two entries, and none above the head', async () => {
    const first = entry(1, 1, GENESIS_ENTRY_HASH);
    const stale = entry(1, 2, entryHash(first));
    const opens = entry(2, 2, entryHash(first), 'epoch');
    const next = entry(2, 3, entryHash(opens));
    const { read } = holder([first, stale, opens, next]);
    const head = { hash: entryHash(next), seq: 3 };
    expect((await headChainPage(read, head, 1)).map((h) => h.entry)).toEqual([first, opens, next]);
    expect((await headChainPage(read, head, 3)).map((h) => h.entry)).toEqual([next]);
    expect(await headChainPage(read, { hash: entryHash(opens), seq: 2 }, 3)).toEqual([]);
    // A head not held: every entry held from the seq asked, as onHeadChain answers.
    const other = entry(2, 3, entryHash(stale));
    const { read: readOther } = holder([first, stale, other]);
    expect((await headChainPage(readOther, { hash: entryHash(next), seq: 3 }, 1)).map((h) => h.entry)).toEqual([first, stale, other]);
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

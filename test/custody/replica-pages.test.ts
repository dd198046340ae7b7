// State transfer's paging and replay, pure (custody/replica.ts, client.ts fetchChain): a page ends at MAX_CHAIN_LINKS
// or CHAIN_PAGE_BYTES of records (one entry at least, whatever its size), fetchChain asks page after page from the
// seq after the last link, and replayOps writes each record as the home's store wrote it (JSON text as is, bytes).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fetchChain, type FetchChain } from '../../src/custody/client.js';
import { entryHash, GENESIS_ENTRY_HASH, type CustodyEntry } from '../../src/custody/entry.js';
import { CHAIN_PAGE_BYTES, MAX_CHAIN_LINKS, recordsDigest, type ChainLink, type EntryRecords } from '../../src/custody/protocol.js';
import { checkChain, GENESIS_HEAD, pageOf, replayOps } from '../../src/custody/replica.js';
import { Store } from '../../src/store/db.js';

const zid = 'zid_00112233445566778899aabbccddeeff';

/** A chain of `n` entries of `zid`, each record a wallet put padded to `pad` characters. */
function chain(n: number, pad = 0): ChainLink[] {
  const out: ChainLink[] = [];
  let prev = GENESIS_ENTRY_HASH;
  for (let seq = 1; seq <= n; seq++) {
    const records: EntryRecords = { v: 1, ops: [['put', 'wallets', zid, JSON.stringify({ free: seq, paid: 0, pad: 'p'.repeat(pad) })]] };
    const entry: CustodyEntry = {
      v: 1,
      zid,
      epoch: 1,
      seq,
      prev_hash: prev,
      kind: 'wallet',
      records: recordsDigest(records),
      balance: { free: seq, paid: 0 },
      transfer: null,
    };
    prev = entryHash(entry);
    out.push({ entry, records, signatures: [], certificate: null });
  }
  return out;
}

describe('state transfer, page by page', () => {
  it('ends a page at MAX_CHAIN_LINKS links or CHAIN_PAGE_BYTES of records, one link at least', () => {
    const many = chain(MAX_CHAIN_LINKS + 3);
    expect(pageOf(many)).toMatchObject({ more: true });
    expect(pageOf(many).links).toHaveLength(MAX_CHAIN_LINKS);
    const big = chain(5, CHAIN_PAGE_BYTES / 2);
    expect(pageOf(big).links.map((l) => l.entry.seq)).toEqual([1]);
    const huge = chain(1, CHAIN_PAGE_BYTES * 2);
    expect(pageOf(huge)).toEqual({ links: huge, more: false });
    expect(pageOf([])).toEqual({ links: [], more: false });
  });

  it('fetchChain asks from the seq after the last link until no more, and the run checks', async () => {
    const all = chain(600);
    const asked: number[] = [];
    const fetch: FetchChain = (_peer, _zid, from) => {
      asked.push(from);
      const page = pageOf(all.slice(from - 1));
      return Promise.resolve({ v: 1, head: { epoch: 1, seq: 600, hash: entryHash(all[599]!.entry) }, ...page });
    };
    const links = await fetchChain(fetch, 'peer', zid, 1, AbortSignal.timeout(1000));
    expect(asked).toEqual([1, 1 + MAX_CHAIN_LINKS, 1 + 2 * MAX_CHAIN_LINKS]);
    expect(links.map((l) => l.entry.seq)).toEqual(all.map((l) => l.entry.seq));
    expect(checkChain(zid, links, GENESIS_HEAD, null, () => false)).toMatchObject({ ok: true, head: { seq: 600 } });
    const refusing: FetchChain = () => Promise.resolve({ v: 1, refused: { code: 'not-custodian', reason: 'no' }, head: null, links: [], more: false });
    await expect(fetchChain(refusing, 'peer', zid, 1, AbortSignal.timeout(1000))).rejects.toThrow('peer refused the fetch: not-custodian: no');
  });

  it('replayOps writes JSON text as it is and deletes what the records delete', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-replay-'));
    const store = await Store.open(dir, { sync: false });
    try {
      const records: EntryRecords = {
        v: 1,
        ops: [
          ['put', 'env_owner', `${zid}!01`, '"env_a"'],
          ['put', 'env_owner', `${zid}!02`, '"env_b"'],
          ['put', 'wallets', zid, '{"free":3,"paid":1}'],
          ['del', 'env_owner', `${zid}!01`],
        ],
      };
      await store.commit(replayOps(store, [{ ...chain(1)[0]!, records }]));
      expect(await store.range(store.sub('env_owner'))).toEqual([{ key: `${zid}!02`, value: 'env_b' }]);
      expect(await store.get(store.sub('wallets'), zid)).toEqual({ free: 3, paid: 1 });
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

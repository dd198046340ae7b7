// State transfer's paging and replay, pure (custody/replica.ts, client.ts fetchChain): a page ends at MAX_CHAIN_LINKS
// or CHAIN_PAGE_BYTES of records (one entry at least, whatever its size), fetchChain asks page after page from the
// seq after the last link, and replayOps writes each record as the home's store wrote it (JSON text as is, bytes);
// the entries a page is made of are read by slot from its seq (custodian.ts slotsFrom).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fetchChain, type FetchChain } from '../../src/custody/client.js';
import { entryHash, GENESIS_ENTRY_HASH, type CustodyEntry } from '../../src/custody/entry.js';
import { CHAIN_PAGE_BYTES, MAX_CHAIN_LINKS, recordsDigest, type ChainLink, type EntryRecords } from '../../src/custody/protocol.js';
import { checkChain, GENESIS_HEAD, pageOf, replayOps } from '../../src/custody/replica.js';
import { slotKey, slotsFrom } from '../../src/custody/custodian.js';
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

  it('a page of the entries kept by slot is read from its seq: by seq then epoch, over epochs, without the history before it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-slots-'));
    const store = await Store.open(dir, { sync: false });
    try {
      const sub = store.sub('custody_held');
      const other = 'zid_ffeeddccbbaa99887766554433221100';
      // A custodian's slots need not be one chain: epoch 2 opened at seq 3 on a chain without its epoch-1 seqs 3..5.
      const slots = [
        ...[1, 2, 3, 4, 5].map((seq) => ({ zid, epoch: 1, seq })),
        ...[3, 4].map((seq) => ({ zid, epoch: 2, seq })),
        ...[5, 6].map((seq) => ({ zid, epoch: 4, seq })),
        ...[1, 2, 3].map((seq) => ({ zid: other, epoch: 1, seq })),
      ];
      const record = (e: { zid: string; epoch: number; seq: number }) => ({ entry: { ...chain(1)[0]!.entry, ...e } });
      await store.commit(slots.map((e) => ({ type: 'put', sub, key: slotKey(e), value: record(e) })));
      const ours = slots.filter((e) => e.zid === zid).sort((a, b) => a.seq - b.seq || a.epoch - b.epoch);
      const read = async (from: number, limit: number) =>
        (await slotsFrom<{ entry: CustodyEntry }>(store, sub, zid, from, limit)).map((r) => `${r.entry.epoch}/${r.entry.seq}`);
      for (let from = 1; from <= 7; from++) {
        for (const limit of [1, 2, 3, 100, Number.MAX_SAFE_INTEGER]) {
          const expected = ours.filter((e) => e.seq >= from).slice(0, limit);
          expect(await read(from, limit)).toEqual(expected.map((e) => `${e.epoch}/${e.seq}`));
        }
      }
      expect(await read(4, 3)).toEqual(['1/4', '2/4', '1/5']);

      // A long chain in one epoch: a page from its end reads the page (and one seek), not the chain before it.
      const long = 'zid_00000000000000000000000000000001';
      await store.commit(
        Array.from({ length: 2000 }, (_, i) => ({
          type: 'put',
          sub,
          key: slotKey({ zid: long, epoch: 1, seq: i + 1 }),
          value: record({ zid: long, epoch: 1, seq: i + 1 }),
        })),
      );
      let rows = 0;
      const counting = Object.create(store) as Store;
      counting.range = async <T>(s: Parameters<Store['range']>[0], o?: Parameters<Store['range']>[1]) => {
        const r = await store.range<T>(s, o);
        rows += r.length;
        return r;
      };
      const page = await slotsFrom<{ entry: CustodyEntry }>(counting, sub, long, 1995, 10);
      expect(page.map((r) => r.entry.seq)).toEqual([1995, 1996, 1997, 1998, 1999, 2000]);
      expect(rows).toBeLessThanOrEqual(7);
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

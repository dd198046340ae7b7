// Each machine's audit rows as the leaves of an RFC 6962 tree (leaf i = row seq i+1; leaf data = the row's
// canonical text, rowText, which its hash chain also hashes). Derived from the rows, never the other way round:
// the complete subtrees of 2^STORED_FROM_LEVEL rows and up are stored as the tree catches up with the chain (in
// batches, with the size in the same batch), so a proof reads O(log n) stored subtrees instead of rehashing the log;
// a smaller subtree is hashed from its rows when asked (at most 2^(STORED_FROM_LEVEL-1) rows, one range read), which
// keeps the tree's writes at ~1/8 of an op per row instead of ~2. Catching up checks each row (seq, prev_hash, hash)
// and stops before the first bad one: a tree covers a sound prefix only.
import { padNum, type Op, type Store, type Sublevel } from '../store/db.js';
import { LruMap } from '../util/bounded-map.js';
import type { KeyedLock } from '../util/keyed-lock.js';
import { consistencyPath, Frontier, inclusionPath, leafHash, nodeHash, RangeHasher } from './merkle.js';
import { GENESIS_HASH, rowText, type AuditRow } from './service.js';
import { sha256Hex } from '../kernel/bytes.js';

const BATCH_ROWS = 4096;
const FRONTIERS_MAX = 4096;
/** Subtrees of 2^4 = 16 rows and up are stored; smaller ones are hashed from their rows (docs/performance.md, "The store"). */
export const STORED_FROM_LEVEL = 4;

export function rowLeafHash(row: Omit<AuditRow, 'hash'>): Buffer {
  return leafHash(rowText(row));
}

export class MerkleLog {
  private readonly nodes: Sublevel;
  private readonly sizes: Sublevel;
  /** Frontiers (size, peaks, last row hash) of the trees used most recently. */
  private readonly frontiers = new LruMap<string, { f: Frontier; lastHash: string }>(FRONTIERS_MAX);

  constructor(
    private readonly store: Store,
    private readonly rows: Sublevel,
    private readonly locks: KeyedLock,
  ) {
    this.nodes = store.sub('chain_merkle', 'utf8');
    this.sizes = store.sub('chain_merkle_size');
  }

  private nodeKey(slug: string, level: number, index: number): string {
    return `${slug}!${String(level).padStart(2, '0')}!${padNum(index)}`;
  }

  /** The hash of the complete subtree (level, index): stored, or hashed from its rows below STORED_FROM_LEVEL. */
  async subtree(slug: string, level: number, index: number): Promise<Buffer> {
    if (level < STORED_FROM_LEVEL) return this.hashRows(slug, level, index);
    const hex = await this.store.get<string>(this.nodes, this.nodeKey(slug, level, index));
    if (hex === undefined) throw new Error(`merkle subtree (${level}, ${index}) of ${slug} is not stored`);
    return Buffer.from(hex, 'hex');
  }

  /** The subtree (level, index) hashed from its 2^level rows (leaves index·2^level …, rows seq = leaf + 1). */
  private async hashRows(slug: string, level: number, index: number): Promise<Buffer> {
    const width = 2 ** level;
    const first = index * width + 1;
    const rows = await this.store.range<AuditRow>(this.rows, { gte: `${slug}!${padNum(first)}`, lt: `${slug}!~`, limit: width });
    if (rows.length !== width || rows[width - 1]!.value.seq !== first + width - 1)
      throw new Error(`merkle subtree (${level}, ${index}) of ${slug}: its rows are not stored`);
    let hashes = rows.map((r) => leafHash(rowText(r.value)));
    while (hashes.length > 1) {
      const up: Buffer[] = [];
      for (let i = 0; i < hashes.length; i += 2) up.push(nodeHash(hashes[i]!, hashes[i + 1]!));
      hashes = up;
    }
    return hashes[0]!;
  }

  private async frontier(slug: string): Promise<{ f: Frontier; lastHash: string }> {
    const cached = this.frontiers.get(slug);
    if (cached) return cached;
    const stored = (await this.store.get<{ size: number; last_hash: string }>(this.sizes, slug)) ?? { size: 0, last_hash: GENESIS_HASH };
    const peaks = await Promise.all(
      Frontier.peakPositions(stored.size).map(async (p) => ({ level: p.level, hash: await this.subtree(slug, p.level, p.index) })),
    );
    const entry = { f: new Frontier(stored.size, peaks), lastHash: stored.last_hash };
    this.frontiers.set(slug, entry);
    return entry;
  }

  /** The tree's size now (after catching up with the stored rows). */
  async catchUp(slug: string): Promise<{ size: number; root: Buffer }> {
    return this.locks.run(`merkle:${slug}`, async () => {
      const entry = await this.frontier(slug);
      const { f } = entry;
      for (;;) {
        const batch = await this.store.range<AuditRow>(this.rows, { gte: `${slug}!${padNum(f.size + 1)}`, lt: `${slug}!~`, limit: BATCH_ROWS });
        if (batch.length === 0) break;
        const ops: Op[] = [];
        let sound = true;
        const before = { size: f.size, peaks: [...f.peaks], lastHash: entry.lastHash };
        for (const { value: row } of batch) {
          // The row's canonical text once: its hash (the chain) and its leaf hash (the tree) are both taken over it.
          const text = row.seq === f.size + 1 && row.prev_hash === entry.lastHash ? rowText(row) : null;
          if (text === null || sha256Hex(text) !== row.hash) {
            sound = false;
            break;
          }
          f.append(leafHash(text), (level, index, hash) => {
            if (level >= STORED_FROM_LEVEL) ops.push({ type: 'put', sub: this.nodes, key: this.nodeKey(slug, level, index), value: hash.toString('hex') });
          });
          entry.lastHash = row.hash;
        }
        if (f.size > before.size) {
          ops.push({ type: 'put', sub: this.sizes, key: slug, value: { size: f.size, last_hash: entry.lastHash } });
          try {
            await this.store.commit(ops);
          } catch (err) {
            this.frontiers.delete(slug);
            throw err;
          }
        }
        if (!sound || batch.length < BATCH_ROWS) break;
      }
      return { size: f.size, root: f.root() };
    });
  }

  private hasher(slug: string): RangeHasher {
    return new RangeHasher((level, index) => this.subtree(slug, level, index));
  }

  /** MTH of the first `size` leaves (size ≤ the caught-up size). */
  root(slug: string, size: number): Promise<Buffer> {
    return this.hasher(slug).mth(0, size);
  }

  inclusion(slug: string, index: number, size: number): Promise<Buffer[]> {
    return inclusionPath(this.hasher(slug), index, size);
  }

  consistency(slug: string, first: number, second: number): Promise<Buffer[]> {
    return consistencyPath(this.hasher(slug), first, second);
  }

  /** The stored leaf hash of row `seq` (1-based). */
  leaf(slug: string, seq: number): Promise<Buffer> {
    return this.subtree(slug, 0, seq - 1);
  }
}

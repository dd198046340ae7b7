// Folder moves (spec 4.6: POST /api/tally/envelopes/folder, soulbound envelopes included, no cap). A folder is a
// user-editable label on an envelope; moving one rewrites its record and its folder-index key and moves one count
// between the two folder counters, all in one batch, so GET …/folders stays exact (counters, never a scan) across
// restarts. Moves of one identity run one at a time (EnvelopeLocks): a move reads envelope records from the store,
// so two overlapping moves of the same envelope would otherwise both count it.
import { ServiceError } from '../kernel/errors.js';
import { padNum, type Op, type Store, type Sublevel } from '../store/db.js';
import type { Counters } from '../store/counters.js';
import { folderCounter } from '../store/counter-keys.js';
import { ENVELOPE_SUBS, type EnvelopeRecord, type Ledger } from './ledger.js';
import { KeyedLock } from '../util/keyed-lock.js';
import { keyAfter } from '../util/range-cursor.js';

/** A folder name: 1 … 64 of letters, digits, space, '_', '.', '-', starting with a letter or digit. */
export const FOLDER_PATTERN = /^[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}$/;
export const TOKEN_ID_PATTERN = /^env_[0-9a-f]{24}$/;
/** Envelopes read per step when choosing `count` of them. */
const PAGE = 1000;

/**
 * One identity's envelope changes at a time, in arrival order. Transfers must take the same lock. A write that can
 * give an envelope's record to another identity than the one whose lock it holds (a credit, a chain replayed over
 * this node's ledger) also holds the envelope's own lock (`tokens`) from the read of its record to the commit.
 */
export class EnvelopeLocks extends KeyedLock {
  tokens<T>(tokenIds: readonly string[], work: () => Promise<T>): Promise<T> {
    return this.runAll(
      tokenIds.map((t) => `token:${t}`),
      work,
    );
  }
}

export interface FolderMove {
  folder: string;
  token_ids?: string[];
  count?: number;
  from_folder?: string;
  q?: string;
}

function badInput(field: string, reason: string, message: string, extra: Record<string, unknown> = {}): ServiceError {
  return new ServiceError(400, 'SVC_INVALID_INPUT', message, { field, reason, allowed: null, ...extra });
}

/** What a move answers: how many envelopes it moved and the owner's folders after it. */
export interface FolderMoved {
  zid: string;
  folder: string;
  moved: number;
  folders: { folder: string; count: number }[];
}

export class Folders {
  private readonly envelopes: Sublevel;
  private readonly byOwner: Sublevel;
  private readonly byFolder: Sublevel;

  constructor(
    private readonly store: Store,
    private readonly counters: Counters,
    private readonly ledger: Ledger,
    private readonly locks: EnvelopeLocks,
  ) {
    this.envelopes = store.sub(ENVELOPE_SUBS.envelopes);
    this.byOwner = store.sub(ENVELOPE_SUBS.byOwner);
    this.byFolder = store.sub(ENVELOPE_SUBS.byFolder);
  }

  /**
   * Move the caller's envelopes to `folder`: the named ones, or `count` of them (oldest first). `answerOps`: records
   * the caller writes in the move's batch, told the answer (an idempotent request's).
   */
  async move(zid: string, m: FolderMove, answerOps?: (moved: FolderMoved) => Op[]): Promise<FolderMoved> {
    for (const [field, name] of [
      ['folder', m.folder],
      ['from_folder', m.from_folder],
    ] as const) {
      if (name !== undefined && !FOLDER_PATTERN.test(name))
        throw badInput(field, 'format', `${field} "${name}" is not a folder name: 1 … 64 of letters, digits, space, _ . - (starting with a letter or digit)`);
    }
    if ((m.token_ids === undefined) === (m.count === undefined)) throw badInput('token_ids', 'required', 'give token_ids or count (one of them)');
    for (const id of m.token_ids ?? []) {
      if (!TOKEN_ID_PATTERN.test(id)) throw badInput('token_ids', 'format', `token id "${id}" is not an envelope token id (env_ + 24 hex)`, { token_id: id });
    }
    return this.locks.run(zid, async () => {
      const chosen =
        m.token_ids !== undefined ? await this.named(zid, m.token_ids, m.from_folder) : await this.pick(zid, m.count!, m.folder, m.from_folder, m.q);
      const moving = chosen.filter((e) => e.folder !== m.folder);
      for (let p = this.ledger.loadCounts(zid); p !== undefined; p = this.ledger.loadCounts(zid)) await p;
      // From here to the commit: synchronous (counters in memory), as ledger.ts's rule asks.
      const ops: Op[] = [];
      const deltas = new Map<string, number>();
      for (const e of moving) {
        ops.push({ type: 'del', sub: this.byFolder, key: `${zid}!${e.folder}!${padNum(e.seq)}` });
        ops.push({ type: 'put', sub: this.byFolder, key: `${zid}!${m.folder}!${padNum(e.seq)}`, value: e.token_id });
        ops.push({ type: 'put', sub: this.envelopes, key: e.token_id, value: { ...e, folder: m.folder } satisfies EnvelopeRecord });
        const from = folderCounter(zid, e.folder);
        deltas.set(from, (deltas.get(from) ?? 0) - 1);
      }
      if (moving.length > 0) deltas.set(folderCounter(zid, m.folder), (deltas.get(folderCounter(zid, m.folder)) ?? 0) + moving.length);
      const mark = this.counters.mark();
      for (const [name, d] of deltas) this.counters.bump(name, d);
      this.counters.persistOps([...deltas.keys()], ops);
      const moved: FolderMoved = { zid, folder: m.folder, moved: moving.length, folders: this.ledger.folders(zid) };
      if (ops.length > 0 && answerOps) ops.push(...answerOps(moved));
      try {
        if (ops.length > 0) await this.store.commit(ops);
      } catch (err) {
        for (const [name, d] of deltas) this.counters.revert(name, d, mark);
        throw err;
      }
      return moved;
    });
  }

  /** The named envelopes; 400 naming the first id that is unknown, another identity's, or not in from_folder. */
  private async named(zid: string, ids: string[], fromFolder: string | undefined): Promise<EnvelopeRecord[]> {
    const unique = [...new Set(ids)];
    const out: EnvelopeRecord[] = [];
    for (let i = 0; i < unique.length; i += PAGE) {
      const page = unique.slice(i, i + PAGE);
      const records = await this.store.getMany<EnvelopeRecord>(this.envelopes, page);
      for (let k = 0; k < page.length; k++) {
        const e = records[k];
        // Another identity's envelope is answered as unknown: its existence is not the caller's business.
        if (!e || e.owner !== zid) throw badInput('token_ids', 'unknown', `no envelope ${page[k]} of yours`, { token_id: page[k] });
        if (fromFolder !== undefined && e.folder !== fromFolder)
          throw badInput('token_ids', 'folder', `envelope ${page[k]} is not in folder ${fromFolder}`, { token_id: page[k] });
        out.push(e);
      }
    }
    return out;
  }

  /** `count` envelopes not yet in `target`, oldest first, from `fromFolder` (or any folder); with q, the one whose token id is q. */
  private async pick(zid: string, count: number, target: string, fromFolder: string | undefined, q: string | undefined): Promise<EnvelopeRecord[]> {
    if (q !== undefined) {
      const e = await this.store.get<EnvelopeRecord>(this.envelopes, q);
      return e && e.owner === zid && e.folder !== target && (fromFolder === undefined || e.folder === fromFolder) ? [e] : [];
    }
    if (fromFolder === target) return [];
    const sub = fromFolder === undefined ? this.byOwner : this.byFolder;
    const prefix = fromFolder === undefined ? `${zid}!` : `${zid}!${fromFolder}!`;
    const out: EnvelopeRecord[] = [];
    let gte = prefix;
    while (out.length < count) {
      const page = await this.store.range<string>(sub, { gte, lt: `${prefix}~`, limit: PAGE });
      if (page.length === 0) break;
      const records = await this.store.getMany<EnvelopeRecord>(
        this.envelopes,
        page.map((p) => p.value),
      );
      for (const e of records) {
        if (e && e.owner === zid && e.folder !== target) out.push(e);
        if (out.length === count) break;
      }
      if (page.length < PAGE) break;
      gte = keyAfter(page[page.length - 1]!.key);
    }
    return out;
  }
}

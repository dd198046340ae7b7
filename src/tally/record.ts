// The record of sealed results (architecture.md §6, spec 4.6 `GET /api/tally/record`): every result sealed here gets
// a small index entry in its sealing batch (owner, published or not); a published one also gets a row in the
// published list (newest first) with what a challenger and a re-executing committee need: the canonical request,
// the stamping tick, the result digest and executed_by. Results are sealed at their caller's home, so this is the
// home's record; other nodes ask it (GET /api/mesh/results/:id, consensus/result-lookup.ts). A published row is also
// indexed by owner (owner!row key), so one identity's published results page without a scan of the home's record,
// and counted in the owner's counter record (`rec:<zid>`, store/counters.ts) in the same batch: a listing's total.
import type { Counters } from '../store/counters.js';
import { padNum, type Json, type Op, type Store, type Sublevel } from '../store/db.js';
import { NOTHING_TO_RECORD, type CanonicalRequest, type ResultRecorder, type SealRecorder, type SealedFacts, type ExecutedBy } from '../records/types.js';
import type { PublishSettings } from './publish-settings.js';
import { backfillDone, backfillOnce } from '../store/backfill.js';
import { recordCounter } from '../store/counter-keys.js';

export const PUBLISHED_COUNTER = 'published_total';
export const RECORD_PAGE_MAX = 100;
/** The one-time pass indexing by owner the rows published before the by-owner index existed, in chain_meta. */
const BY_OWNER_BACKFILL_KEY = 'record-by-owner-v1';
/** The one-time pass setting each owner's count from its by-owner rows, in chain_meta. */
const OWNER_COUNT_BACKFILL_KEY = 'record-owner-count-v1';
/** Owners' counter records written per batch by that pass. */
const OWNER_COUNT_CHUNK = 500;

/** Per result sealed here (key: result_id). */
interface IndexEntry {
  owner: string | null;
  published: boolean;
  /** Key of its row in the published list (published only). */
  row: string | null;
}

/** A row of the published list, as /api/tally/record shows it. */
export interface RecordRow {
  result_id: string;
  kind: 'compute' | 'solver';
  solver: string | null;
  operators: string[] | null;
  /** The node that executed the run (executed_by.node), or the home itself when no bond was at stake. */
  executor: string;
  bond_id: string | null;
  result_digest: string;
  /** The stamping tick. */
  svcond: number;
  owner: string | null;
  /** The node that sealed it (the owner's home). */
  home: string;
  executed_by: ExecutedBy | null;
}

/** A published row plus the request, kept for re-execution. */
interface StoredRow extends RecordRow {
  request: CanonicalRequest;
}

/** What lookup() says about a result id (the shape chall's challenge intake and committee read). */
export type ResultLookup =
  | {
      status: 'found';
      result_id: string;
      home: string;
      owner: string | null;
      published: true;
      kind: 'compute' | 'solver';
      request: CanonicalRequest;
      svcond: number;
      result_digest: string;
      executed_by: ExecutedBy | null;
      /** The sealed body as sent, whatever its size: a challenge carries it (consensus/challenge-wire.ts). */
      result?: Record<string, unknown>;
    }
  | { status: 'unpublished'; result_id: string; home: string }
  | { status: 'unknown'; result_id: string };

export class ResultRecords implements ResultRecorder {
  private readonly index: Sublevel;
  private readonly rows: Sublevel;
  private readonly byOwner: Sublevel;
  /** Orders rows of one tick (with the tick in front, the keys sort newest last across restarts too). */
  private seq = 0;

  constructor(
    private readonly store: Store,
    private readonly counters: Counters,
    private readonly publish: PublishSettings,
    private readonly nodeId: () => string,
    /** Whether a result was sealed here (the ledger keeps every sealed body by id): unpublished, not unknown. */
    private readonly sealedHere: (resultId: string) => Promise<boolean>,
    /** A published result's sealed body, which a challenge carries (undefined: none kept). */
    private readonly carriedBody: (resultId: string) => Promise<Record<string, unknown> | undefined> = async () => undefined,
  ) {
    this.index = store.sub('result_index');
    this.rows = store.sub('record');
    this.byOwner = store.sub('record_by_owner');
  }

  /** The owner's publish setting, read before the sealing batch is built (ComputeService.sealResult → Ledger.seal). */
  forOwner(owner: string | null): SealRecorder | Promise<SealRecorder> {
    // An unpublished result needs no entry: the ledger's own record of it says it was sealed here.
    const yes = this.publish.publishes(owner);
    return yes instanceof Promise ? yes.then((y) => (y ? this.publishing : NOTHING_TO_RECORD)) : yes ? this.publishing : NOTHING_TO_RECORD;
  }

  private readonly publishing: SealRecorder = { sealOps: (f) => this.rowOps(f) };

  /** A published result's rows for the sealing batch. */
  private rowOps(f: SealedFacts): { ops: Op[]; bump: string[] } | undefined {
    this.seq = (this.seq + 1) % 1e9;
    const key = `${padNum(f.svcond, 12)}!${padNum(this.seq, 9)}`;
    const row: StoredRow = {
      result_id: f.result_id,
      kind: f.kind,
      solver: f.solver,
      operators: f.operators,
      executor: f.executed_by?.node ?? this.nodeId(),
      bond_id: f.executed_by?.bond_id ?? null,
      result_digest: f.result_digest,
      svcond: f.svcond,
      owner: f.owner,
      home: this.nodeId(),
      executed_by: f.executed_by,
      request: f.request,
    };
    const entry: IndexEntry = { owner: f.owner, published: true, row: key };
    const ops: Op[] = [
      { type: 'put', sub: this.index, key: f.result_id, value: entry as unknown as Json },
      { type: 'put', sub: this.rows, key, value: row as unknown as Json },
    ];
    if (f.owner === null) return { ops, bump: [PUBLISHED_COUNTER] };
    // The owner is the caller, whose counter record the seal has in memory (Ledger.prepare).
    ops.push({ type: 'put', sub: this.byOwner, key: `${f.owner}!${key}`, value: key });
    return { ops, bump: [PUBLISHED_COUNTER, recordCounter(f.owner)] };
  }

  /**
   * Index by owner the published rows written before the by-owner index existed (once, at start; store/backfill.ts):
   * the same put the sealing batch writes, so a row indexed already is written again unchanged.
   */
  async indexByOwnerOnce(): Promise<number> {
    const n = await backfillOnce<StoredRow>(this.store, {
      key: BY_OWNER_BACKFILL_KEY,
      source: this.rows,
      opsFor: (key, row) => (typeof row.owner === 'string' ? [{ type: 'put', sub: this.byOwner, key: `${row.owner}!${key}`, value: key }] : []),
    });
    await this.countByOwnerOnce();
    return n;
  }

  /**
   * Once, at start (before any seal): each owner's count set to its by-owner rows, walking the index's keys in
   * order (an owner's keys are together). It sets values, so a pass redone after a stop writes the same.
   */
  private async countByOwnerOnce(): Promise<void> {
    const meta = this.store.sub('chain_meta');
    if (await backfillDone(this.store, OWNER_COUNT_BACKFILL_KEY, meta)) return;
    let ops: Op[] = [];
    let owner: string | null = null;
    let n = 0;
    const flush = async () => {
      if (owner === null) return;
      const name = recordCounter(owner);
      for (let p = this.counters.loadIdentity(owner); p !== undefined; p = this.counters.loadIdentity(owner)) await p;
      this.counters.bump(name, n - this.counters.get(name));
      ops.push(this.counters.persistOp(name));
      if (ops.length >= OWNER_COUNT_CHUNK) {
        await this.store.commit(ops);
        ops = [];
      }
    };
    const it = this.byOwner.keys();
    try {
      for await (const key of it) {
        const of = String(key).slice(0, String(key).indexOf('!'));
        if (of !== owner) {
          await flush();
          owner = of;
          n = 0;
        }
        n++;
      }
    } finally {
      await it.close();
    }
    await flush();
    await this.store.commit([...ops, { type: 'put', sub: meta, key: OWNER_COUNT_BACKFILL_KEY, value: 1 }]);
  }

  /** Published results sealed here, newest first. */
  async list(limit: number, offset: number): Promise<{ total: number; limit: number; offset: number; results: RecordRow[] }> {
    const n = Math.min(Math.max(1, limit), RECORD_PAGE_MAX);
    const page = await this.store.range<StoredRow>(this.rows, { reverse: true, limit: offset + n });
    const results = page.slice(offset).map(({ value }) => showRow(value));
    return { total: this.counters.get(PUBLISHED_COUNTER), limit: n, offset, results };
  }

  /** The published results of one identity sealed here (its home), newest first. */
  async listOf(owner: string, limit: number, offset: number): Promise<{ total: number; limit: number; offset: number; results: RecordRow[] }> {
    const n = Math.min(Math.max(1, limit), RECORD_PAGE_MAX);
    // One page of the owner's keys; the total from its count (kept in the sealing batch), not a count of the keys.
    const keys = await this.store.range<string>(this.byOwner, { gte: `${owner}!`, lt: `${owner}!\uffff`, reverse: true, limit: offset + n });
    const rows = await Promise.all(keys.slice(offset).map(({ value }) => this.store.get<StoredRow>(this.rows, value)));
    const name = recordCounter(owner);
    for (let p = this.counters.loadIdentity(owner); p !== undefined; p = this.counters.loadIdentity(owner)) await p;
    const total = this.counters.get(name);
    return { total, limit: n, offset, results: rows.filter((r): r is StoredRow => r !== undefined).map(showRow) };
  }

  /** What this node (a result's home) knows of a result: found (published), unpublished, or unknown here. */
  async lookup(resultId: string): Promise<ResultLookup> {
    const entry = await this.store.get<IndexEntry>(this.index, resultId);
    if (entry === undefined || !entry.published || entry.row === null) {
      return (await this.sealedHere(resultId))
        ? { status: 'unpublished', result_id: resultId, home: this.nodeId() }
        : { status: 'unknown', result_id: resultId };
    }
    const row = await this.store.get<StoredRow>(this.rows, entry.row);
    if (row === undefined) return { status: 'unknown', result_id: resultId };
    const result = await this.carriedBody(resultId);
    // The home that answers: the row names the one that sealed it, which a custody failover may have replaced.
    return {
      status: 'found',
      result_id: row.result_id,
      home: this.nodeId(),
      owner: row.owner,
      published: true,
      kind: row.kind,
      request: row.request,
      svcond: row.svcond,
      result_digest: row.result_digest,
      executed_by: row.executed_by,
      ...(result !== undefined ? { result } : {}),
    };
  }
}

function showRow(r: StoredRow): RecordRow {
  return {
    result_id: r.result_id,
    kind: r.kind,
    solver: r.solver,
    operators: r.operators,
    executor: r.executor,
    bond_id: r.bond_id,
    result_digest: r.result_digest,
    svcond: r.svcond,
    owner: r.owner,
    home: r.home,
    executed_by: r.executed_by,
  };
}

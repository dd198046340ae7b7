// Batch computations (spec 6.1's batch events): POST /api/svc/batch takes up to BATCH_MAX items (compute or
// solver requests), answers 202 at once, and runs the items in the background, BATCH_CONCURRENCY at a time (the
// worker pool bounds the solver work). Each item is sealed and charged on its own, like the same request sent alone;
// its outcome is written IN ITS SEAL'S BATCH (SealHooks), so a crash never leaves an item sealed and unrecorded, and
// a restart runs exactly the items that have no outcome yet. A failed item records its error and the rest go on.
import { ServiceError } from '../kernel/errors.js';
import { stampAt, type Clock } from '../kernel/clock.js';
import { padNum, type Op, type Store, type Sublevel } from '../store/db.js';
import { randomHex } from '../util/random-hex.js';
import type { ComputeService, Sealed } from './service.js';
import type { Caller, KeyRecord } from '../records/types.js';

export const BATCH_MAX = 100;
export const BATCH_CONCURRENCY = 4;
/** Batches one identity may have running at once (each holds its items in memory until done); beyond it 429. */
export const BATCHES_OPEN_PER_IDENTITY = 4;

export type BatchItem =
  { solver: string; inputs?: Record<string, unknown>; initialState?: unknown } | { domain: string; operators: string[]; inputs?: Record<string, unknown> };

export interface ItemOutcome {
  index: number;
  status: 'sealed' | 'failed';
  result_id: string | null;
  value: number | null;
  unit: string | null;
  svcProof: string | null;
  svcond: number | null;
  error: { status: number; code: string; message: string } | null;
}

export interface BatchRecord {
  id: string;
  owner: { zid: string; slug: string; home: string; key: KeyRecord };
  items: BatchItem[];
  /** A webhook of the owner that gets this batch's events (besides those subscribed to them). */
  webhook: string | null;
  created_svcond: number;
  created_ms: number;
}

export interface BatchEvents {
  /** batch.progress / batch.complete / batch.error for the owner (webhooks/outbox.ts). */
  emit(
    owner: string,
    event: 'batch.progress' | 'batch.complete' | 'batch.error',
    batchId: string,
    data: Record<string, unknown>,
    webhook: string | null,
  ): Promise<void>;
}

export interface BatchView {
  id: string;
  status: 'running' | 'complete';
  completed: number;
  failed: number;
  total: number;
  percentage: number;
  results: ItemOutcome[];
}

export class BatchService {
  private readonly batches: Sublevel;
  private readonly outcomes: Sublevel;
  /** Running batches by id. */
  private readonly running = new Map<string, Promise<void>>();
  /** Batches accepted and not finished, per owner (reserved before the accepting commit). */
  private readonly openBy = new Map<string, number>();
  private stopped = false;

  constructor(
    private readonly deps: {
      store: Store;
      clock: Clock;
      compute: ComputeService;
      /** A sealed result's body as stored with its seal (the ledger's). */
      resultBytes: (resultId: string) => Promise<Buffer | undefined>;
      events?: BatchEvents;
      onError?: (batchId: string, err: unknown) => void;
    },
  ) {
    this.batches = deps.store.sub('batches');
    this.outcomes = deps.store.sub('batch_items');
  }

  /**
   * Accept a batch; its items run in the background. `answerOps`: records the caller writes in the batch record's
   * batch, told the record (an idempotent request's answer).
   */
  async submit(caller: Caller, items: BatchItem[], webhook: string | null, answerOps?: (rec: BatchRecord) => Op[]): Promise<BatchRecord> {
    if (caller.kind !== 'identity') throw new ServiceError(403, 'SVC_FORBIDDEN', 'a batch belongs to an identity: use an identity key (sk_ or zsm_)');
    // Checked and reserved in one synchronous turn, so parallel submissions cannot all pass.
    const open = this.openBy.get(caller.zid) ?? 0;
    if (open >= BATCHES_OPEN_PER_IDENTITY)
      throw new ServiceError(429, 'SVC_RATE_LIMIT', `at most ${BATCHES_OPEN_PER_IDENTITY} batches per identity run at once; retry when one has completed`, {
        limit: BATCHES_OPEN_PER_IDENTITY,
        open_batches: open,
        window_seconds: null,
        retry_after_seconds: 5,
        reset_at: null,
      });
    this.openBy.set(caller.zid, open + 1);
    const ns = this.deps.clock.nowNs();
    const rec: BatchRecord = {
      id: `bat_${randomHex(24)}`,
      owner: { zid: caller.zid, slug: caller.slug, home: caller.home, key: caller.key },
      items,
      webhook,
      created_svcond: stampAt(ns).svcond,
      created_ms: Number(ns / 1_000_000n),
    };
    try {
      await this.deps.store.commit([
        { type: 'put', sub: this.batches, key: rec.id, value: rec },
        { type: 'put', sub: this.batches, key: `~open!${rec.id}`, value: 1 },
        ...(answerOps ? answerOps(rec) : []),
      ]);
    } catch (err) {
      this.release(caller.zid);
      throw err;
    }
    this.start(rec, new Map(), false);
    return rec;
  }

  /** Resume the batches a stop left unfinished (their items without an outcome run now). */
  async resume(): Promise<number> {
    const open = await this.deps.store.range(this.batches, { gte: '~open!', lt: '~open!~' });
    for (const { key } of open) {
      const rec = await this.deps.store.get<BatchRecord>(this.batches, key.slice('~open!'.length));
      if (!rec) continue;
      this.start(rec, await this.outcomesOf(rec.id));
    }
    return open.length;
  }

  /** Stop taking items (the node is stopping); resolves when the items in flight are done. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.idle();
  }

  /** Wait for the running batches (tests, stop). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running.values()]);
  }

  private async outcomesOf(id: string): Promise<Map<number, ItemOutcome>> {
    const rows = await this.deps.store.range<ItemOutcome>(this.outcomes, { gte: `${id}!`, lt: `${id}!~` });
    return new Map(rows.map((r) => [r.value.index, r.value]));
  }

  private release(zid: string): void {
    const left = (this.openBy.get(zid) ?? 1) - 1;
    if (left > 0) this.openBy.set(zid, left);
    else this.openBy.delete(zid);
  }

  /** Run a batch; `count`: not yet counted among its owner's open batches (a resumed one). */
  private start(rec: BatchRecord, done: Map<number, ItemOutcome>, count = true): void {
    if (count) this.openBy.set(rec.owner.zid, (this.openBy.get(rec.owner.zid) ?? 0) + 1);
    const run = this.run(rec, done)
      .catch((err: unknown) => this.deps.onError?.(rec.id, err))
      .finally(() => {
        this.running.delete(rec.id);
        this.release(rec.owner.zid);
      });
    this.running.set(rec.id, run);
  }

  private async run(rec: BatchRecord, done: Map<number, ItemOutcome>): Promise<void> {
    const caller: Caller = { kind: 'identity', zid: rec.owner.zid, slug: rec.owner.slug, home: rec.owner.home, key: rec.owner.key };
    const total = rec.items.length;
    let next = 0;
    let lastDecile = Math.floor((done.size * 10) / total);
    const worker = async () => {
      for (;;) {
        const index = next++;
        if (index >= total || this.stopped) return;
        if (done.has(index)) continue;
        const outcome = await this.runItem(rec.id, caller, index, rec.items[index]!);
        // Stopped while waiting for the solver queue: no outcome, the restart runs it.
        if (outcome === null) return;
        done.set(index, outcome);
        const decile = Math.floor((done.size * 10) / total);
        if (decile > lastDecile && done.size < total) {
          lastDecile = decile;
          await this.emit(rec, 'batch.progress', { completed: done.size, total, percentage: Math.round((done.size * 100) / total) });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(BATCH_CONCURRENCY, total) }, worker));
    // Stopped midway: the rest runs after the restart (resume).
    if (done.size < total) return;
    const results = [...done.values()].sort((a, b) => a.index - b.index);
    const errors = results.filter((r) => r.status === 'failed').map((r) => ({ index: r.index, ...r.error }));
    await this.emit(rec, 'batch.complete', {
      completed: total,
      total,
      percentage: 100,
      results: results.map((r) => ({ index: r.index, status: r.status, result_id: r.result_id, value: r.value, unit: r.unit })),
      proofs: results.map((r) => r.svcProof),
    });
    if (errors.length > 0) await this.emit(rec, 'batch.error', { errors, failed: errors.length, total });
    // Closed after its events are owed (durably): a crash in between sends them again after the restart, never none.
    await this.deps.store.commit([{ type: 'del', sub: this.batches, key: `~open!${rec.id}` }]);
  }

  private async emit(rec: BatchRecord, event: 'batch.progress' | 'batch.complete' | 'batch.error', data: Record<string, unknown>): Promise<void> {
    if (!this.deps.events) return;
    await this.deps.events.emit(rec.owner.zid, event, rec.id, data, rec.webhook).catch((err: unknown) => this.deps.onError?.(rec.id, err));
  }

  private async runItem(batchId: string, caller: Caller, index: number, item: BatchItem): Promise<ItemOutcome | null> {
    const key = `${batchId}!${padNum(index, 6)}`;
    let sealedOutcome: ItemOutcome | null = null;
    const hooks = {
      ops: (facts: { result_id: string; svcond: number }): Op[] => {
        sealedOutcome = { index, status: 'sealed', result_id: facts.result_id, value: null, unit: null, svcProof: null, svcond: facts.svcond, error: null };
        return [{ type: 'put', sub: this.outcomes, key, value: sealedOutcome }];
      },
    };
    const once = (): Promise<Sealed> =>
      'solver' in item
        ? this.deps.compute.solve(caller, item.solver, item.inputs ?? {}, item.initialState, {}, hooks)
        : this.deps.compute.compute(caller, { domain: item.domain, operators: item.operators, inputs: item.inputs ?? {} }, { seal: true }, hooks);
    try {
      let sealed: Sealed;
      for (;;) {
        try {
          sealed = await once();
          break;
        } catch (err) {
          // The solver queue is full (the owner's own cap, or the node's): the item waits its turn, as a caller told
          // Retry-After would, instead of failing. Several batches of one owner run more items at once than may wait.
          if (!(err instanceof ServiceError && err.code === 'SVC_RATE_LIMIT' && 'queued_runs' in err.extra)) throw err;
          if (this.stopped) return null;
          const retry = typeof err.extra.retry_after_seconds === 'number' ? err.extra.retry_after_seconds : 1;
          await new Promise((r) => setTimeout(r, Math.min(30_000, Math.max(100, retry * 1000))));
          if (this.stopped) return null;
        }
      }
      const body = JSON.parse(sealed.bytes.toString('utf8')) as { value: number; unit: string; svcProof: string; svcond: number; result_id: string };
      const outcome: ItemOutcome = { ...sealedOutcome!, value: body.value, unit: body.unit, svcProof: body.svcProof };
      // The seal's batch recorded the item; this adds what the body says (value, proof) for the status view.
      await this.deps.store.commit([{ type: 'put', sub: this.outcomes, key, value: outcome }]);
      return outcome;
    } catch (err) {
      const e = err instanceof ServiceError ? err : null;
      const outcome: ItemOutcome = {
        index,
        status: 'failed',
        result_id: null,
        value: null,
        unit: null,
        svcProof: null,
        svcond: null,
        error: { status: e?.status ?? 500, code: e?.code ?? 'SVC_INTERNAL_ERROR', message: e?.message ?? 'internal error' },
      };
      await this.deps.store.commit([{ type: 'put', sub: this.outcomes, key, value: outcome }]);
      return outcome;
    }
  }

  private async withBody(r: ItemOutcome): Promise<ItemOutcome> {
    const bytes = r.result_id === null ? undefined : await this.deps.resultBytes(r.result_id);
    if (bytes === undefined) return r;
    const body = JSON.parse(bytes.toString('utf8')) as { value: number; unit: string; svcProof: string };
    return { ...r, value: body.value, unit: body.unit, svcProof: body.svcProof };
  }

  /** GET /api/svc/batch/:id for its owner. */
  async view(id: string, zid: string): Promise<BatchView> {
    const rec = typeof id === 'string' && !id.startsWith('~') && id.length < 80 ? await this.deps.store.get<BatchRecord>(this.batches, id) : undefined;
    if (!rec) throw new ServiceError(404, 'SVC_NOT_FOUND', `no batch ${JSON.stringify(id)}`);
    if (rec.owner.zid !== zid) throw new ServiceError(403, 'SVC_FORBIDDEN', `batch ${id} belongs to another identity`);
    const recorded = [...(await this.outcomesOf(id)).values()].sort((a, b) => a.index - b.index);
    // An item the seal's batch recorded before the write that adds its body's value and proof (in flight, or lost
    // to a crash): those are read from the sealed body the seal stored, so a complete batch shows every proof.
    const results = await Promise.all(recorded.map((r) => (r.status === 'sealed' && r.svcProof === null ? this.withBody(r) : r)));
    const total = rec.items.length;
    return {
      id,
      status: results.length === total ? 'complete' : 'running',
      completed: results.length,
      failed: results.filter((r) => r.status === 'failed').length,
      total,
      percentage: Math.round((results.length * 100) / total),
      results,
    };
  }
}

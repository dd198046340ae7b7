// The webhook outbox (spec 6.2, 6.3; architecture.md §3 step 7): one record per delivery owed, in LevelDB. A delivery
// for a sealed result is written IN THE SEAL'S BATCH (ResultRecorder.sealOps), so it exists exactly when the result is
// durable: never sent before, never lost in a crash. Other events (computation.error, batch.*, webhook.test) are
// written in their own batch before anything is sent. The dispatcher (dispatcher.ts) sends what is due.
// Records: deliveries by id; the due index `<next_ms>!<id>`; each webhook's history `<webhook>!<created_ms>!<id>`.
import { padNum, type Op, type Store, type Sublevel } from '../store/db.js';
import { randomHex } from '../util/random-hex.js';
import { BoundedSet } from '../util/bounded-map.js';
import { NOTHING_TO_RECORD, type ResultRecorder, type SealRecorder, type SealedFacts } from '../records/types.js';
import type { DeliveryStatus, EventType } from './events.js';
import type { WebhookRecord, WebhookRegistry } from './registry.js';

/** Sealed results awaiting their kick (takeOwed) kept at most. */
const OWED_KEPT = 4096;

export interface DeliveryRecord {
  id: string;
  webhook_id: string;
  owner: string;
  event: EventType;
  computation_id: string;
  /** The event's data; for computation.complete the result is read from the ledger at send time (result_id). */
  data: Record<string, unknown>;
  result_id: string | null;
  status: DeliveryStatus;
  /** Attempts made so far (the next one is attempt + 1). */
  attempt: number;
  response_status: number | null;
  response_body: string | null;
  next_retry_at: number | null;
  created_at: number;
}

export function deliveryView(d: DeliveryRecord): Record<string, unknown> {
  return {
    id: d.id,
    webhook_id: d.webhook_id,
    event: d.event,
    computation_id: d.computation_id,
    status: d.status,
    attempt: d.attempt,
    response_status: d.response_status,
    response_body: d.response_body,
    next_retry_at: d.next_retry_at === null ? null : new Date(d.next_retry_at).toISOString(),
    created_at: new Date(d.created_at).toISOString(),
  };
}

export const dueKey = (ms: number, id: string) => `${padNum(ms, 15)}!${id}`;

export class Outbox implements ResultRecorder {
  readonly deliveries: Sublevel;
  readonly due: Sublevel;
  readonly history: Sublevel;
  /** Called when deliveries were written (the dispatcher looks at once). */
  onOwed: () => void = () => undefined;
  /**
   * Results whose sealing batch took deliveries, until that seal is durable (takeOwed). By result id, not one flag:
   * seals finish in any order, and another seal's completion must not take this one's kick. A batch that fails
   * leaves its id behind; the set is bounded, oldest dropped (its deliveries are then found by the dispatcher's timer).
   */
  private readonly owedBySeal = new BoundedSet<string>(OWED_KEPT);

  constructor(
    readonly store: Store,
    private readonly registry: WebhookRegistry,
    private readonly nowMs: () => number,
  ) {
    this.deliveries = store.sub('webhook_deliveries');
    this.due = store.sub('webhook_due', 'utf8');
    this.history = store.sub('webhook_history', 'utf8');
  }

  private opsFor(hooks: WebhookRecord[], event: EventType, computationId: string, data: Record<string, unknown>, resultId: string | null): Op[] {
    const now = this.nowMs();
    const ops: Op[] = [];
    for (const w of hooks) {
      const d: DeliveryRecord = {
        id: `dlv_${randomHex(24)}`,
        webhook_id: w.id,
        owner: w.owner,
        event,
        computation_id: computationId,
        data,
        result_id: resultId,
        status: 'pending',
        attempt: 0,
        response_status: null,
        response_body: null,
        next_retry_at: now,
        created_at: now,
      };
      ops.push({ type: 'put', sub: this.deliveries, key: d.id, value: d });
      ops.push({ type: 'put', sub: this.due, key: dueKey(now, d.id), value: d.id });
      ops.push({ type: 'put', sub: this.history, key: `${w.id}!${padNum(now, 15)}!${d.id}`, value: d.id });
    }
    return ops;
  }

  /**
   * The owner's computation.complete subscribers, asked before the sealing batch is built (from memory, or read from
   * the store when the owner is not there): the batch then writes their deliveries synchronously.
   */
  forOwner(owner: string | null): SealRecorder | Promise<SealRecorder> {
    if (owner === null) return NOTHING_TO_RECORD;
    const hooks = this.registry.subscribers(owner, 'computation.complete');
    return hooks instanceof Promise ? hooks.then((h) => this.completeTo(h)) : this.completeTo(hooks);
  }

  /** computation.complete deliveries to `hooks` for the sealing batch. */
  private completeTo(hooks: WebhookRecord[]): SealRecorder {
    if (hooks.length === 0) return NOTHING_TO_RECORD;
    return {
      sealOps: (f: SealedFacts) => {
        const data = { time_quantum: f.svcond, execution_time_ms: f.execution_time_ms ?? null };
        this.owedBySeal.add(f.result_id);
        return { ops: this.opsFor(hooks, 'computation.complete', f.result_id, data, f.result_id), bump: [] };
      },
    };
  }

  /** Did this result's seal owe deliveries? (The node kicks the dispatcher once the seal is durable.) */
  takeOwed(resultId: string): boolean {
    return this.owedBySeal.delete(resultId);
  }

  /**
   * Owe an event to the owner's webhooks subscribed to it, and to `also` (a webhook named by the request, e.g. a
   * batch's) when it is the owner's and enabled. Resolves when the deliveries are durable; returns their ids.
   */
  async enqueue(owner: string, event: EventType, computationId: string, data: Record<string, unknown>, also: string | null = null): Promise<string[]> {
    const hooks = [...(await this.registry.subscribers(owner, event))];
    if (also !== null && !hooks.some((w) => w.id === also)) {
      const w = await this.registry.get(also);
      if (w && w.owner === owner && w.status === 'enabled') hooks.push(w);
    }
    if (hooks.length === 0) return [];
    const ops = this.opsFor(hooks, event, computationId, data, null);
    await this.store.commit(ops);
    this.onOwed();
    return ops.filter((o) => o.sub === this.deliveries).map((o) => o.key);
  }

  /** webhook.test to one webhook, whatever it subscribes to. */
  async test(w: WebhookRecord): Promise<{ delivery_id: string; test_id: string }> {
    const testId = `test_${randomHex(16)}`;
    const ops = this.opsFor([w], 'webhook.test', testId, { test_id: testId, message: 'webhook test from svc-node' }, null);
    await this.store.commit(ops);
    this.onOwed();
    return { delivery_id: ops[0]!.key, test_id: testId };
  }

  /** Deliveries due or waiting for a retry, counted up to `max`. */
  backlog(max: number): Promise<number> {
    return this.store.count(this.due, max);
  }

  async get(id: string): Promise<DeliveryRecord | undefined> {
    return this.store.get<DeliveryRecord>(this.deliveries, id);
  }

  /** A webhook's deliveries, newest first, optionally of one status. */
  async list(webhookId: string, limit: number, status?: DeliveryStatus): Promise<DeliveryRecord[]> {
    const out: DeliveryRecord[] = [];
    let lt = `${webhookId}!~`;
    // Read in pages until `limit` of the status are found (a status filter may skip many).
    for (;;) {
      const page = await this.store.range<string>(this.history, { gte: `${webhookId}!`, lt, reverse: true, limit: 256 });
      if (page.length === 0) return out;
      const records = await this.store.getMany<DeliveryRecord>(
        this.deliveries,
        page.map((p) => p.value),
      );
      for (const d of records) {
        if (d && (status === undefined || d.status === status)) out.push(d);
        if (out.length >= limit) return out;
      }
      lt = page[page.length - 1]!.key;
    }
  }
}

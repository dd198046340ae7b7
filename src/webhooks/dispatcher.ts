// Sends what the outbox owes, on the schedule of spec 6.3: attempt 1 at once, then 5 s, 30 s, 5 min and 1 h after each
// failure; a 2xx within the response window is a success; after the 5th failed attempt the delivery is failed and its
// webhook disabled (part 3). Every attempt's outcome is written before the next is scheduled, so a restart resumes on
// schedule; an attempt cut by a crash is made again (at least once: receivers deduplicate on the delivery id, which
// is X-Svc-Delivery-ID and webhook-id alike). Time comes from the injected clock.
import { padNum, type Op } from '../store/db.js';
import { MAX_ATTEMPTS, RETRY_DELAYS_MS } from './events.js';
import { dueKey, type DeliveryRecord, type Outbox } from './outbox.js';
import type { WebhookRegistry } from './registry.js';
import type { Sender } from './sender.js';
import { standardSignature, svcSignature } from './signing.js';

export const DISPATCH_EVERY_MS = 1000;
const BATCH = 256;
const IN_FLIGHT_MAX = 32;
const STOP_WAIT_MS = 2000;

export interface DispatcherDeps {
  outbox: Outbox;
  registry: WebhookRegistry;
  send: Sender;
  nowMs: () => number;
  /** A sealed result's bytes (computation.complete carries the result and its proof). */
  resultBytes: (resultId: string) => Promise<Buffer | undefined>;
  onError?: (err: unknown) => void;
}

export class Dispatcher {
  private timer: NodeJS.Timeout | null = null;
  private readonly inFlight = new Map<string, Promise<void>>();
  private scanning: Promise<Promise<void>[]> | null = null;
  private again = false;
  private starved = false;
  private stopped = false;
  /** Attempts made (bench, status). */
  attempts = 0;

  constructor(private readonly deps: DispatcherDeps) {
    deps.outbox.onOwed = () => this.kick();
  }

  /** Look for due deliveries now (after a seal or an enqueue); starts their attempts without waiting for them. */
  kick(): void {
    if (this.stopped) return;
    void this.scan().catch((err: unknown) => this.deps.onError?.(err));
  }

  /** Start every due attempt and wait for those (tests, manual dispatch). Returns the attempts started. */
  async runDue(): Promise<number> {
    if (this.scanning)
      await this.scanning.then(
        () => undefined,
        () => undefined,
      );
    const started = await this.scan();
    await Promise.allSettled(started);
    return started.length;
  }

  /**
   * Start the due attempts, at most IN_FLIGHT_MAX out at once; one scan at a time (a kick during a scan scans again
   * after it). An attempt never holds up the others: a receiver that does not answer costs its own slot only.
   */
  private scan(): Promise<Promise<void>[]> {
    if (this.scanning) {
      this.again = true;
      return this.scanning;
    }
    const scanning = (async () => {
      const started: Promise<void>[] = [];
      do {
        this.again = false;
        for (const p of await this.scanOnce()) started.push(p);
      } while (this.again && !this.stopped);
      return started;
    })().finally(() => {
      this.scanning = null;
    });
    this.scanning = scanning;
    return scanning;
  }

  private async scanOnce(): Promise<Promise<void>[]> {
    const { outbox } = this.deps;
    const now = this.deps.nowMs();
    const due = await outbox.store.range<string>(outbox.due, { lt: `${padNum(now + 1, 15)}`, limit: BATCH });
    const started: Promise<void>[] = [];
    for (const { key, value: id } of due) {
      if (this.stopped) break;
      if (this.inFlight.has(id)) continue;
      if (this.inFlight.size >= IN_FLIGHT_MAX) {
        // Full: the next attempt to finish scans again.
        this.starved = true;
        break;
      }
      const p = this.attempt(key, id)
        .catch((err: unknown) => this.deps.onError?.(err))
        .finally(() => {
          this.inFlight.delete(id);
          if (this.starved) {
            this.starved = false;
            this.kick();
          }
        });
      this.inFlight.set(id, p);
      started.push(p);
    }
    if (due.length === BATCH && !this.starved) this.again = true;
    return started;
  }

  private async body(d: DeliveryRecord, attempt: number, timestamp: number): Promise<string> {
    let data: Record<string, unknown> = d.data;
    if (d.result_id !== null) {
      const bytes = await this.deps.resultBytes(d.result_id);
      const result = bytes ? (JSON.parse(bytes.toString('utf8')) as Record<string, unknown>) : null;
      data = { result, proof: result?.svcProof ?? null, metadata: d.data };
    }
    return JSON.stringify({ event: d.event, computation_id: d.computation_id, timestamp, delivery_attempt: attempt, data });
  }

  private async attempt(dueKeyNow: string, id: string): Promise<void> {
    const { outbox, registry } = this.deps;
    const d = await outbox.get(id);
    if (!d || d.status !== 'pending') {
      await outbox.store.commit([{ type: 'del', sub: outbox.due, key: dueKeyNow }]);
      return;
    }
    const w = await registry.get(d.webhook_id);
    const now = this.deps.nowMs();
    if (!w || w.status !== 'enabled') {
      const failed: DeliveryRecord = { ...d, status: 'failed', next_retry_at: null, response_body: w ? 'webhook disabled' : 'webhook deleted' };
      await outbox.store.commit([
        { type: 'put', sub: outbox.deliveries, key: id, value: failed },
        { type: 'del', sub: outbox.due, key: dueKeyNow },
      ]);
      return;
    }
    const attempt = d.attempt + 1;
    const timestamp = Math.floor(now / 1000);
    const body = await this.body(d, attempt, timestamp);
    const secret = registry.secretOf(w);
    const headers: Record<string, string> = {
      ...registry.headersOf(w),
      'content-type': 'application/json',
      'user-agent': 'svc-node-webhooks/1',
      'x-svc-event': d.event,
      'x-svc-signature': svcSignature(secret, body),
      'x-svc-timestamp': String(timestamp),
      'x-svc-delivery-id': d.id,
      'webhook-id': d.id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': standardSignature(secret, d.id, timestamp, body),
    };
    this.attempts++;
    const r = await this.deps.send(w.url, headers, body);
    const at = this.deps.nowMs();
    const last = !r.ok && attempt >= MAX_ATTEMPTS;
    const next = r.ok || last ? null : at + RETRY_DELAYS_MS[attempt - 1]!;
    const updated: DeliveryRecord = {
      ...d,
      attempt,
      status: r.ok ? 'delivered' : last ? 'failed' : 'pending',
      response_status: r.status,
      response_body: r.body ?? r.error,
      next_retry_at: next,
    };
    const ops: Op[] = [
      { type: 'put', sub: outbox.deliveries, key: id, value: updated },
      { type: 'del', sub: outbox.due, key: dueKeyNow },
    ];
    if (next !== null) ops.push({ type: 'put', sub: outbox.due, key: dueKey(next, id), value: id });
    await outbox.store.commit(ops);
    await registry.recordAttempt(w.id, r.ok, at, last);
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.kick(), DISPATCH_EVERY_MS);
    this.timer.unref();
    this.kick();
  }

  /** Stop sending; waits for attempts in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    // An attempt may wait out a receiver's whole response window: the stop waits STOP_WAIT_MS at most, and an attempt
    // still out then is made again after the restart (its outcome was not written).
    const settled = Promise.allSettled([this.scanning ?? Promise.resolve([]), ...this.inFlight.values()]);
    await Promise.race([settled, new Promise((r) => setTimeout(r, STOP_WAIT_MS).unref())]);
  }
}

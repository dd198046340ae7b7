// The delivery loop of an outbox of node-to-node messages (architecture.md §7), first written for cross-node transfers
// (transfer-delivery.ts) and shared by every outbox that must reach another home until it answers: remote charges'
// settlements (remote-charges.ts) too. Each pending item (kept in LevelDB by its owner) is sent to its home until that
// home answers it, with a backoff between attempts; the loop resumes the outbox when the node starts, so a crash or a
// peer outage only delays an item.
//
// The items due to one home go in one request, as many as fit (MAX per request and BATCH_BYTES); one request per home
// is in flight at a time (a home that is down gets one request per backoff step, not one per item). The sender signs
// the request and verifies the home's signed answer, one outcome per item; the owner records the outcomes (settle) in
// one batch, and the items not answered are tried again after their backoff.
import { canonicalJson } from '../kernel/canonical.js';
import type { WireEnvelope, MeshEvent } from '../mesh/wire.js';
import { HANDSHAKE_HEADER } from '../mesh/wire.js';
import { requestPeer, type PeerLinks } from '../mesh/peer-http.js';

/** Backoff between attempts of an item: 250 ms, doubling, at most 5 s (a home back from an outage is reached within 5 s). */
export const BACKOFF = { firstMs: 250, maxMs: 5_000 } as const;
/**
 * Bytes of deliveries packed into one request: under the validator's 64 KiB event body (mesh/validator.ts), with room
 * for the wrapper.
 */
export const BATCH_BYTES = 56 * 1024;
const SEND_TIMEOUT_MS = 10_000;

export interface DeliveryLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/**
 * The answer for one item of a request: its verified acknowledgement, or why it was not applied (with what the
 * refusing home showed of where the item's home went, for the owner to check in `settle`).
 */
export type Outcome<A> = { ack: A } | { error: string; shown?: unknown };

/** Sends the deliveries of a request to `home`; resolves to one outcome per delivery (throws when the request failed as a whole). */
export type Sender<D, A> = (home: string, url: string | null, deliveries: D[]) => Promise<Outcome<A>[]>;

export function backoffMs(attempts: number): number {
  return Math.min(BACKOFF.maxMs, BACKOFF.firstMs * 2 ** Math.max(0, attempts - 1));
}

/** What the loop asks of an outbox's owner. */
export interface OutboxSource<R, D, A> {
  /** Where new pending items go once durable (the loop). */
  onPending(sink: (r: R) => void): void;
  /** Every pending item: what the loop resumes at start. */
  pending(): Promise<R[]>;
  /** Records by id (undefined where there is none). */
  loadMany(ids: string[]): Promise<(R | undefined)[]>;
  /** After an attempt: the answered items done, the others' attempt count and error kept, in one batch. */
  settle(outcomes: { id: string; attempts: number; ack?: A; error?: string; shown?: unknown }[]): Promise<void>;
  idOf(r: R): string;
  homeOf(r: R): string;
  /** Is the record still waiting for an answer? */
  isPending(r: R): boolean;
  attemptsOf(r: R): number;
  /** The home's URL as known when the item was made (used while the peer table does not know it yet). */
  urlHint(r: R): string | null;
  /** What is sent for the item's `attempt`-th attempt. */
  deliveryOf(r: R, attempt: number): D;
}

export interface DeliveryLoopOptions<R, D, A> {
  source: OutboxSource<R, D, A>;
  send: Sender<D, A>;
  /** The home's URL now (the peer table), or null. */
  peerUrl: (peerId: string) => string | null;
  logger: DeliveryLogger;
  /** What the items are, in log lines ("transfer"). */
  what: string;
  /** The log field naming an item's id (`transfer_id`, `nonce`): what an operator greps the logs for. */
  idField: string;
  /** Most items in one request. */
  maxBatch: number;
  /** How long after it is scheduled (made, or resumed at start) an item is first due (default 0: at once). */
  firstDelayMs?: number;
  /** The clock of the backoff (ms). */
  nowMs?: () => number;
}

/** An item to try again after `retryMs`, at `home` when it is not the one it was sent to. */
interface Retry {
  id: string;
  retryMs: number;
  home?: string;
}

interface Due {
  home: string;
  /** When the next attempt may start (ms, this process's clock). */
  at: number;
}

export class DeliveryLoop<R, D, A> {
  /** Pending items waiting for an attempt, by id. */
  private readonly due = new Map<string, Due>();
  /** Homes with a request in flight, and the ids in it. */
  private readonly busy = new Map<string, string[]>();
  private readonly inflight = new Set<Promise<void>>();
  /**
   * Items made due while a request held them, and their home: due again when it ends. The request may have read them
   * before they changed (answered, then pending again at a home that took their identity over) and left them out.
   */
  private readonly dueAfterRequest = new Map<string, string>();
  private timer: NodeJS.Timeout | null = null;
  private stopped = true;
  /** Items delivered, and item attempts that failed (status and the bench). */
  readonly stats = { delivered: 0, failed: 0, requests: 0 };

  constructor(private readonly o: DeliveryLoopOptions<R, D, A>) {}

  private now(): number {
    return this.o.nowMs?.() ?? Date.now();
  }

  /** Resume the outbox: every pending item is due (after firstDelayMs). */
  async start(): Promise<number> {
    this.stopped = false;
    const src = this.o.source;
    const first = this.o.firstDelayMs ?? 0;
    src.onPending((r) => this.schedule(src.idOf(r), src.homeOf(r), first));
    const pending = await src.pending();
    const now = this.now();
    for (const r of pending) this.schedule(src.idOf(r), src.homeOf(r), first, now, false);
    this.arm();
    if (pending.length > 0) this.o.logger.info({ pending: pending.length }, `${this.o.what} deliveries resumed`);
    return pending.length;
  }

  /** Stop scheduling and wait for the requests under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await Promise.allSettled([...this.inflight]);
  }

  /** Items waiting for an attempt or being attempted. */
  get queued(): number {
    let n = this.due.size;
    for (const ids of this.busy.values()) n += ids.length;
    return n;
  }

  /** Make an item due now (its owner knows it may go before firstDelayMs). */
  soon(id: string, home: string): void {
    this.schedule(id, home, 0);
  }

  /** Make an item due after `delayMs`; `rearm` false when the caller schedules many and arms once after. */
  private schedule(id: string, home: string, delayMs: number, now = this.now(), rearm = true): void {
    if (this.stopped) return;
    const inFlight = this.busy.get(home);
    if (inFlight !== undefined && inFlight.includes(id)) {
      this.dueAfterRequest.set(id, home);
      return;
    }
    this.due.set(id, { home, at: now + delayMs });
    if (rearm) this.arm();
  }

  /** Wake up when the earliest due item of a home that is not busy may go. */
  private arm(): void {
    if (this.stopped) return;
    let earliest = Infinity;
    for (const d of this.due.values()) if (!this.busy.has(d.home) && d.at < earliest) earliest = d.at;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (earliest === Infinity) return;
    this.timer = setTimeout(() => this.pump(), Math.max(0, earliest - this.now()));
  }

  /** Start one request for each home that has due items and none in flight. */
  private pump(): void {
    this.timer = null;
    if (this.stopped) return;
    const now = this.now();
    const byHome = new Map<string, string[]>();
    for (const [id, d] of this.due) {
      if (d.at > now || this.busy.has(d.home)) continue;
      let ids = byHome.get(d.home);
      if (!ids) byHome.set(d.home, (ids = []));
      if (ids.length < this.o.maxBatch) ids.push(id);
    }
    for (const [home, ids] of byHome) {
      for (const id of ids) this.due.delete(id);
      this.busy.set(home, ids);
      const run = this.request(home, ids)
        .catch((err: unknown) => {
          // Only a failure to record the outcome lands here: the items are tried again.
          this.o.logger.warn({ home, err: String(err) }, `${this.o.what} delivery outcome not recorded`);
          return ids.map((id): Retry => ({ id, retryMs: BACKOFF.maxMs }));
        })
        .then((retries) => {
          this.busy.delete(home);
          // One clock reading for all: items that failed together stay due together (the next request takes them all).
          const now = this.now();
          for (const r of retries) this.schedule(r.id, r.home ?? home, r.retryMs, now, false);
          for (const id of ids) {
            const again = this.dueAfterRequest.get(id);
            if (again === undefined) continue;
            this.dueAfterRequest.delete(id);
            // Answered meanwhile: the next request finds it done and leaves it.
            if (!this.due.has(id)) this.schedule(id, again, 0, now, false);
          }
          this.arm();
        });
      const tracked = run.finally(() => this.inflight.delete(tracked));
      this.inflight.add(tracked);
    }
    this.arm();
  }

  /** One request to `home` for (some of) `ids`; resolves to the items to try again, when, and where when elsewhere. */
  private async request(home: string, ids: string[]): Promise<Retry[]> {
    const src = this.o.source;
    const records = (await src.loadMany(ids)).filter((r): r is R => r !== undefined && src.isPending(r));
    // Packed by size; what does not fit goes in the next request, at once, as does an item whose home moved.
    const batch: { r: R; attempt: number }[] = [];
    const later: Retry[] = [];
    let bytes = 0;
    for (const r of records) {
      if (src.homeOf(r) !== home) {
        later.push({ id: src.idOf(r), retryMs: 0, home: src.homeOf(r) });
        continue;
      }
      const size = Buffer.byteLength(canonicalJson(src.deliveryOf(r, src.attemptsOf(r) + 1)), 'utf8');
      if (batch.length > 0 && bytes + size > BATCH_BYTES) later.push({ id: src.idOf(r), retryMs: 0 });
      else {
        batch.push({ r, attempt: src.attemptsOf(r) + 1 });
        bytes += size;
      }
    }
    if (batch.length === 0) return later;
    const url = this.o.peerUrl(home) ?? src.urlHint(batch[0]!.r) ?? null;
    this.stats.requests++;
    let outcomes: Outcome<A>[];
    try {
      outcomes = await this.o.send(
        home,
        url,
        batch.map((b) => src.deliveryOf(b.r, b.attempt)),
      );
    } catch (err) {
      const message = (err as Error)?.message ?? String(err);
      outcomes = batch.map(() => ({ error: message }));
    }
    const settled = batch.map((b, k) => ({ id: src.idOf(b.r), attempts: b.attempt, ...outcomes[k]! }));
    // Answered ones are marked in this batch; should it fail, they are sent again, answered as duplicates, and marked.
    await src.settle(settled);
    for (const s of settled) {
      if ('ack' in s) {
        this.stats.delivered++;
        continue;
      }
      this.stats.failed++;
      later.push({ id: s.id, retryMs: backoffMs(s.attempts) });
      if (s.attempts === 1 || s.attempts % 10 === 0)
        this.o.logger.warn({ [this.o.idField]: s.id, attempt: s.attempts, err: s.error }, `${this.o.what} delivery failed; retrying`);
    }
    return later;
  }
}

/**
 * The sender of a direct message: signs the request as a `type` event, posts it to `path` of the home with the
 * handshake (at its URL, or over libp2p when it has none or the URL does not connect: mesh/peer-http.ts), and verifies
 * the home's signed answer (`verify` returns the outcomes, or null when the answer is not the home's signed answer to
 * exactly these deliveries).
 */
export function directSender<D, A>(deps: {
  sign: (type: string, body: unknown) => Promise<WireEnvelope>;
  links: PeerLinks;
  type: string;
  path: string;
  body: (deliveries: D[]) => unknown;
  verify: (answer: unknown, home: string, deliveries: D[]) => Promise<Outcome<A>[] | null>;
}): Sender<D, A> {
  return async (home, url, deliveries) => {
    const { event, handshake } = await deps.sign(deps.type, deps.body(deliveries));
    const headers = { 'content-type': 'application/json', [HANDSHAKE_HEADER]: handshake ?? '' };
    const body = JSON.stringify(event satisfies MeshEvent);
    const res = await requestPeer(deps.links, home, { method: 'POST', path: deps.path, headers, body }, AbortSignal.timeout(SEND_TIMEOUT_MS), url);
    if (res.status < 200 || res.status > 299) throw new Error(`node ${home} answered ${res.status} (${res.via}): ${res.text.slice(0, 300)}`);
    const outcomes = await deps.verify(JSON.parse(res.text) as unknown, home, deliveries);
    if (!outcomes) throw new Error(`node ${home} did not answer with an acknowledgement signed by it (${res.via})`);
    return outcomes;
  };
}

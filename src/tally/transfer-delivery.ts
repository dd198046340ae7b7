// The delivery loop of cross-node transfers (architecture.md §7): at the sender's home, each pending transfer (the
// outbox, in LevelDB) is sent to the receiver's home until that home acknowledges it, with a backoff between
// attempts; the loop resumes the outbox when the node starts, so a crash or a peer outage only delays a delivery.
//
// A delivery is a direct node-to-node HTTP request, POST DELIVER_PATH on the receiver's home: the body is a mesh
// event (type tally.transfer) signed with this node's key, with the mesh handshake in x-node-handshake, checked there
// by the same validator as the gossip entrance. It carries the due transfers to that home, as many as fit in one
// event body; one request per home is in flight at a time (so a home that is down gets one request per backoff step,
// not one per transfer). The answer is that home's signed acknowledgement (type tally.transfer.ack), one answer per
// transfer, verified here against the home's peer id before anything is marked delivered.
import { canonicalJson } from '../kernel/canonical.js';
import type { MeshEvent, WireEnvelope } from '../mesh/wire.js';
import { HANDSHAKE_HEADER, verifyEventSignature } from '../mesh/wire.js';
import {
  MAX_DELIVERY_BATCH,
  TRANSFER_ACK_EVENT,
  TRANSFER_EVENT,
  type DeliveryBody,
  type TransferAck,
  type TransferRecord,
  type TransferRefusal,
  type Transfers,
} from './transfers.js';

export const DELIVER_PATH = '/api/tally/transfers/deliver';
/** Backoff between attempts of a transfer: 250 ms, doubling, at most 5 s (a home back from an outage is reached within 5 s). */
export const BACKOFF = { firstMs: 250, maxMs: 5_000 } as const;
/**
 * Bytes of deliveries packed into one request: under the validator's 64 KiB event body (mesh/validator.ts), with room
 * for the wrapper. A single transfer (at most 200 envelopes) is under it on its own.
 */
export const BATCH_BYTES = 56 * 1024;
const SEND_TIMEOUT_MS = 10_000;

export interface DeliveryLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** The answer for one transfer of a request: its verified acknowledgement, or why it was not applied. */
export type DeliveryOutcome = { ack: TransferAck } | { error: string };

/** Sends the deliveries of a request to `home`; resolves to one outcome per delivery (throws when the request failed as a whole). */
export type DeliverySender = (home: string, url: string | null, deliveries: DeliveryBody[]) => Promise<DeliveryOutcome[]>;

export function backoffMs(attempts: number): number {
  return Math.min(BACKOFF.maxMs, BACKOFF.firstMs * 2 ** Math.max(0, attempts - 1));
}

/** The delivery of a pending transfer, for its `attempt`-th attempt. */
export function deliveryOf(r: TransferRecord, attempt: number): DeliveryBody {
  if (!r.envelopes) throw new Error(`transfer ${r.transfer_id} carries no envelopes`);
  return {
    transfer_id: r.transfer_id,
    from: r.from,
    to: r.to,
    from_home: r.from_home,
    to_home: r.to_home,
    created_svcond: r.created_svcond,
    created_unix_ms: r.created_unix_ms,
    attempt,
    picked_by: r.picked_by,
    seed: r.seed,
    envelopes: r.envelopes,
  };
}

/**
 * The outcomes of a request for `ids` in an answer from `home`, or null when the answer is not its signed
 * acknowledgement of exactly these transfers (wrong type, signer, ids or order, or a bad signature).
 */
export async function verifiedAnswers(answer: unknown, home: string, ids: readonly string[]): Promise<DeliveryOutcome[] | null> {
  const e = answer as MeshEvent | null;
  if (!e || typeof e !== 'object' || e.type !== TRANSFER_ACK_EVENT || e.sender !== home) return null;
  const acks = (e.body as { acks?: unknown } | null)?.acks;
  if (!Array.isArray(acks) || acks.length !== ids.length) return null;
  const out: DeliveryOutcome[] = [];
  for (let i = 0; i < ids.length; i++) {
    const a = acks[i] as Partial<TransferAck & TransferRefusal> | null;
    if (!a || typeof a !== 'object' || a.transfer_id !== ids[i]) return null;
    if (a.error && typeof a.error === 'object') out.push({ error: `${a.error.status} ${a.error.code}: ${a.error.message}` });
    else if (typeof a.delivered_svcond === 'number' && typeof a.delivered_unix_ms === 'number' && typeof a.duplicate === 'boolean')
      out.push({ ack: a as TransferAck });
    else return null;
  }
  return (await verifyEventSignature(e)) ? out : null;
}

/** The HTTP sender: signs the request, posts it to the receiver's home, verifies its signed answer. */
export function httpSender(deps: { sign: (type: string, body: unknown) => Promise<WireEnvelope> }): DeliverySender {
  return async (home, url, deliveries) => {
    if (!url) throw new Error(`no URL is known for node ${home}`);
    const { event, handshake } = await deps.sign(TRANSFER_EVENT, { deliveries });
    const res = await fetch(url + DELIVER_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [HANDSHAKE_HEADER]: handshake ?? '' },
      body: JSON.stringify(event),
      signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${url} answered ${res.status}: ${text.slice(0, 300)}`);
    const outcomes = await verifiedAnswers(
      JSON.parse(text) as unknown,
      home,
      deliveries.map((d) => d.transfer_id),
    );
    if (!outcomes) throw new Error(`${url} did not answer with an acknowledgement signed by ${home}`);
    return outcomes;
  };
}

interface Due {
  home: string;
  /** When the next attempt may start (ms, this process's clock). */
  at: number;
}

export class TransferDelivery {
  /** Pending transfers waiting for an attempt, by id. */
  private readonly due = new Map<string, Due>();
  /** Homes with a request in flight, and the ids in it. */
  private readonly busy = new Map<string, string[]>();
  private readonly inflight = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  private stopped = true;
  /** Transfers delivered, and transfer attempts that failed (status and the bench). */
  readonly stats = { delivered: 0, failed: 0, requests: 0 };

  constructor(
    private readonly o: {
      transfers: Transfers;
      send: DeliverySender;
      /** The home's URL now (the peer table), or null. */
      peerUrl: (peerId: string) => string | null;
      logger: DeliveryLogger;
      /** The clock of the backoff (ms). */
      nowMs?: () => number;
    },
  ) {}

  private now(): number {
    return this.o.nowMs?.() ?? Date.now();
  }

  /** Resume the outbox: every pending transfer is due now. */
  async start(): Promise<number> {
    this.stopped = false;
    this.o.transfers.onPending((r) => this.schedule(r.transfer_id, r.to_home, 0));
    const pending = await this.o.transfers.pending();
    const now = this.now();
    for (const r of pending) this.schedule(r.transfer_id, r.to_home, 0, now, false);
    this.arm();
    if (pending.length > 0) this.o.logger.info({ pending: pending.length }, 'transfer deliveries resumed');
    return pending.length;
  }

  /** Stop scheduling and wait for the requests under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await Promise.allSettled([...this.inflight]);
  }

  /** Transfers waiting for an attempt or being attempted. */
  get queued(): number {
    let n = this.due.size;
    for (const ids of this.busy.values()) n += ids.length;
    return n;
  }

  /** Make a transfer due after `delayMs`; `rearm` false when the caller schedules many and arms once after. */
  private schedule(id: string, home: string, delayMs: number, now = this.now(), rearm = true): void {
    if (this.stopped) return;
    const inFlight = this.busy.get(home);
    if (inFlight !== undefined && inFlight.includes(id)) return;
    this.due.set(id, { home, at: now + delayMs });
    if (rearm) this.arm();
  }

  /** Wake up when the earliest due transfer of a home that is not busy may go. */
  private arm(): void {
    if (this.stopped) return;
    let earliest = Infinity;
    for (const d of this.due.values()) if (!this.busy.has(d.home) && d.at < earliest) earliest = d.at;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (earliest === Infinity) return;
    this.timer = setTimeout(() => this.pump(), Math.max(0, earliest - this.now()));
  }

  /** Start one request for each home that has due transfers and none in flight. */
  private pump(): void {
    this.timer = null;
    if (this.stopped) return;
    const now = this.now();
    const byHome = new Map<string, string[]>();
    for (const [id, d] of this.due) {
      if (d.at > now || this.busy.has(d.home)) continue;
      let ids = byHome.get(d.home);
      if (!ids) byHome.set(d.home, (ids = []));
      if (ids.length < MAX_DELIVERY_BATCH) ids.push(id);
    }
    for (const [home, ids] of byHome) {
      for (const id of ids) this.due.delete(id);
      this.busy.set(home, ids);
      const run = this.request(home, ids)
        .catch((err: unknown) => {
          // Only a failure to record the outcome lands here: the transfers are tried again.
          this.o.logger.warn({ home, err: String(err) }, 'transfer delivery outcome not recorded');
          return ids.map((id) => ({ id, retryMs: BACKOFF.maxMs }));
        })
        .then((retries) => {
          this.busy.delete(home);
          // One clock reading for all: transfers that failed together stay due together (the next request takes them all).
          const now = this.now();
          for (const r of retries) this.schedule(r.id, home, r.retryMs, now, false);
          this.arm();
        });
      const tracked = run.finally(() => this.inflight.delete(tracked));
      this.inflight.add(tracked);
    }
    this.arm();
  }

  /** One request to `home` for (some of) `ids`; resolves to the transfers to try again and when. */
  private async request(home: string, ids: string[]): Promise<{ id: string; retryMs: number }[]> {
    const records = (await this.o.transfers.loadMany(ids)).filter((r): r is TransferRecord => r !== undefined && r.state === 'pending');
    // Packed by size; what does not fit goes in the next request, at once.
    const batch: { r: TransferRecord; attempt: number }[] = [];
    const later: { id: string; retryMs: number }[] = [];
    let bytes = 0;
    for (const r of records) {
      const size = Buffer.byteLength(canonicalJson(deliveryOf(r, r.attempts + 1)), 'utf8');
      if (batch.length > 0 && bytes + size > BATCH_BYTES) later.push({ id: r.transfer_id, retryMs: 0 });
      else {
        batch.push({ r, attempt: r.attempts + 1 });
        bytes += size;
      }
    }
    if (batch.length === 0) return later;
    const url = this.o.peerUrl(home) ?? batch[0]!.r.to_url ?? null;
    this.stats.requests++;
    let outcomes: DeliveryOutcome[];
    try {
      outcomes = await this.o.send(
        home,
        url,
        batch.map((b) => deliveryOf(b.r, b.attempt)),
      );
    } catch (err) {
      const message = (err as Error)?.message ?? String(err);
      outcomes = batch.map(() => ({ error: message }));
    }
    const settled = batch.map((b, k) => ({ id: b.r.transfer_id, attempts: b.attempt, ...outcomes[k]! }));
    // Delivered ones are marked in this batch; should it fail, they are sent again, acknowledged as duplicates, and marked.
    await this.o.transfers.settle(settled);
    for (const s of settled) {
      if ('ack' in s) {
        this.stats.delivered++;
        continue;
      }
      this.stats.failed++;
      later.push({ id: s.id, retryMs: backoffMs(s.attempts) });
      if (s.attempts === 1 || s.attempts % 10 === 0)
        this.o.logger.warn({ transfer_id: s.id, attempt: s.attempts, err: s.error }, 'transfer delivery failed; retrying');
    }
    return later;
  }
}

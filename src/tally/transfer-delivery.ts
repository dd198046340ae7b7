// The delivery loop of cross-node transfers (architecture.md §7): at the sender's home, each pending transfer (the
// outbox, in LevelDB) is sent to the receiver's home until that home acknowledges it, with a backoff between
// attempts; the loop resumes the outbox when the node starts, so a crash or a peer outage only delays a delivery.
//
// The delivery is a direct node-to-node HTTP request, POST DELIVER_PATH on the receiver's home: the body is a mesh
// event (type tally.transfer) signed with this node's key, with the mesh handshake in x-node-handshake, checked by
// the same validator as the gossip entrance. The answer is the receiver's home's signed acknowledgement (type
// tally.transfer.ack), verified here against that home's peer id before the transfer is marked delivered.
import type { MeshEvent, WireEnvelope } from '../mesh/wire.js';
import { HANDSHAKE_HEADER, verifyEventSignature } from '../mesh/wire.js';
import { TRANSFER_ACK_EVENT, TRANSFER_EVENT, type TransferAck, type DeliveryBody, type TransferRecord, type Transfers } from './transfers.js';

export const DELIVER_PATH = '/api/tally/transfers/deliver';
/** Backoff between attempts: 250 ms, doubling, at most 5 s (a peer back from an outage is reached within 5 s). */
export const BACKOFF = { firstMs: 250, maxMs: 5_000 } as const;
const SEND_TIMEOUT_MS = 10_000;

export interface DeliveryLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** Sends one delivery and resolves to the receiver's verified acknowledgement (throws on any failure). */
export type DeliverySender = (r: TransferRecord, attempt: number) => Promise<TransferAck>;

export function backoffMs(attempts: number): number {
  return Math.min(BACKOFF.maxMs, BACKOFF.firstMs * 2 ** Math.max(0, attempts - 1));
}

/** The signed body of a delivery. */
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

/** An acknowledgement from `home` for transfer `id`, or null when the answer is not one (wrong type, signer, id, signature). */
export async function verifiedAck(answer: unknown, home: string, id: string): Promise<TransferAck | null> {
  const e = answer as MeshEvent | null;
  if (!e || typeof e !== 'object' || e.type !== TRANSFER_ACK_EVENT || e.sender !== home) return null;
  const b = e.body as TransferAck | null;
  if (!b || typeof b !== 'object' || b.transfer_id !== id || typeof b.delivered_svcond !== 'number' || typeof b.duplicate !== 'boolean') return null;
  return (await verifyEventSignature(e)) ? b : null;
}

/** The HTTP sender: signs the delivery, posts it to the receiver's home, verifies its signed answer. */
export function httpSender(deps: { sign: (type: string, body: unknown) => Promise<WireEnvelope>; peerUrl: (peerId: string) => string | null }): DeliverySender {
  return async (r, attempt) => {
    const url = deps.peerUrl(r.to_home) ?? r.to_url ?? null;
    if (!url) throw new Error(`no URL is known for node ${r.to_home}`);
    const { event, handshake } = await deps.sign(TRANSFER_EVENT, deliveryOf(r, attempt));
    const res = await fetch(url + DELIVER_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [HANDSHAKE_HEADER]: handshake ?? '' },
      body: JSON.stringify(event),
      signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${url} answered ${res.status}: ${text.slice(0, 300)}`);
    const ack = await verifiedAck(JSON.parse(text) as unknown, r.to_home, r.transfer_id);
    if (!ack) throw new Error(`${url} did not answer with an acknowledgement signed by ${r.to_home}`);
    return ack;
  };
}

export class TransferDelivery {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly running = new Map<string, Promise<void>>();
  private stopped = false;
  /** Deliveries made, and attempts that failed (status and the bench). */
  readonly stats = { delivered: 0, failed: 0 };

  constructor(
    private readonly o: {
      transfers: Transfers;
      send: DeliverySender;
      logger: DeliveryLogger;
    },
  ) {}

  /** Resume the outbox: every pending transfer is attempted now. */
  async start(): Promise<number> {
    this.stopped = false;
    this.o.transfers.onPending((r) => this.schedule(r.transfer_id, 0));
    const pending = await this.o.transfers.pending();
    for (const r of pending) this.schedule(r.transfer_id, 0);
    if (pending.length > 0) this.o.logger.info({ pending: pending.length }, 'transfer deliveries resumed');
    return pending.length;
  }

  /** Stop scheduling and wait for the attempts under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    await Promise.allSettled([...this.running.values()]);
  }

  /** Transfers waiting for their next attempt or being attempted. */
  get queued(): number {
    return new Set([...this.timers.keys(), ...this.running.keys()]).size;
  }

  private schedule(id: string, delayMs: number): void {
    if (this.stopped || this.timers.has(id) || this.running.has(id)) return;
    const t = setTimeout(() => {
      this.timers.delete(id);
      const run = this.attempt(id)
        .catch((err: unknown) => {
          this.o.logger.warn({ transfer_id: id, err: String(err) }, 'transfer attempt failed unexpectedly');
          return BACKOFF.maxMs;
        })
        .then((retryMs) => {
          this.running.delete(id);
          if (retryMs !== null) this.schedule(id, retryMs);
        });
      this.running.set(id, run);
    }, delayMs);
    this.timers.set(id, t);
  }

  /** One attempt; resolves to the delay before the next one, or null when there is none to make. */
  private async attempt(id: string): Promise<number | null> {
    const r = await this.o.transfers.load(id);
    if (!r || r.state !== 'pending') return null;
    const attempt = r.attempts + 1;
    let ack: TransferAck;
    try {
      ack = await this.o.send(r, attempt);
    } catch (err) {
      this.stats.failed++;
      const message = (err as Error)?.message ?? String(err);
      await this.o.transfers.recordFailure(id, attempt, message);
      if (attempt === 1 || attempt % 10 === 0) this.o.logger.warn({ transfer_id: id, attempt, err: message }, 'transfer delivery failed; retrying');
      return backoffMs(attempt);
    }
    // Delivered. Should this write fail, the attempt is retried (schedule()), acknowledged as a duplicate, and marked.
    await this.o.transfers.markDelivered(id, ack, attempt);
    this.stats.delivered++;
    return null;
  }
}

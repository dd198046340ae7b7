// The delivery loop of cross-node transfers (architecture.md §7): at the sender's home, each pending transfer (the
// outbox, in LevelDB) is sent to the receiver's home until that home acknowledges it, with a backoff between
// attempts; the loop resumes the outbox when the node starts, so a crash or a peer outage only delays a delivery.
// The loop itself is delivery-loop.ts (shared with the settlements of remote charges); this file is the transfers' side.
//
// A delivery is a direct node-to-node HTTP request, POST DELIVER_PATH on the receiver's home: the body is a mesh
// event (type tally.transfer) signed with this node's key, with the mesh handshake in x-node-handshake, checked there
// by the same validator as the gossip entrance. It carries the due transfers to that home, as many as fit in one
// event body; one request per home is in flight at a time (so a home that is down gets one request per backoff step,
// not one per transfer). The answer is that home's signed acknowledgement (type tally.transfer.ack), one answer per
// transfer, verified here against the home's peer id before anything is marked delivered.
import type { WireEnvelope } from '../mesh/wire.js';
import { verifyEventSignature, type MeshEvent } from '../mesh/wire.js';
import type { PeerLinks } from '../mesh/peer-http.js';
import { BACKOFF, BATCH_BYTES, DeliveryLoop, backoffMs, directSender } from './delivery-loop.js';
import type { DeliveryLogger, Outcome, Sender } from './delivery-loop.js';
import type { Transfers } from './transfers.js';
import {
  MAX_DELIVERY_BATCH,
  TRANSFER_ACK_EVENT,
  TRANSFER_EVENT,
  type DeliveryBody,
  type TransferAck,
  type TransferRecord,
  type TransferRefusal,
} from './transfer-wire.js';

export { BACKOFF, BATCH_BYTES, backoffMs };
export type { DeliveryLogger };
export const DELIVER_PATH = '/api/tally/transfers/deliver';

/** The answer for one transfer of a request: its verified acknowledgement, or why it was not applied. */
export type DeliveryOutcome = Outcome<TransferAck>;

/** Sends the deliveries of a request to `home`; resolves to one outcome per delivery (throws when the request failed as a whole). */
export type DeliverySender = Sender<DeliveryBody, TransferAck>;

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
    debit_certificate: r.debit_certificate ?? null,
    ...(r.from_home_change === undefined ? {} : { from_home_change: r.from_home_change }),
  };
}

/** A refused delivery's outcome text: its part-7 status, code and message. */
export function refusalText(error: TransferRefusal['error']): string {
  return `${error.status} ${error.code}: ${error.message}`;
}

/** The outcome of one answer: its acknowledgement, or its refusal's text with the home change it shows. */
export function outcomeOf(answer: TransferAck | TransferRefusal): DeliveryOutcome {
  if (!('error' in answer)) return { ack: answer };
  return answer.home_change === undefined ? { error: refusalText(answer.error) } : { error: refusalText(answer.error), shown: answer.home_change };
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
    if (a.error && typeof a.error === 'object') out.push(outcomeOf(a as TransferRefusal));
    else if (typeof a.delivered_svcond === 'number' && typeof a.delivered_unix_ms === 'number' && typeof a.duplicate === 'boolean')
      out.push({ ack: a as TransferAck });
    else return null;
  }
  return (await verifyEventSignature(e)) ? out : null;
}

/** The sender: signs the request, posts it to the receiver's home (its URL, or libp2p), verifies its signed answer. */
export function httpSender(deps: { sign: (type: string, body: unknown) => Promise<WireEnvelope>; links: PeerLinks }): DeliverySender {
  return directSender<DeliveryBody, TransferAck>({
    sign: deps.sign,
    links: deps.links,
    type: TRANSFER_EVENT,
    path: DELIVER_PATH,
    body: (deliveries) => ({ deliveries }),
    verify: (answer, home, deliveries) =>
      verifiedAnswers(
        answer,
        home,
        deliveries.map((d) => d.transfer_id),
      ),
  });
}

/** The transfers' outbox on the shared delivery loop. */
export class TransferDelivery extends DeliveryLoop<TransferRecord, DeliveryBody, TransferAck> {
  constructor(o: {
    transfers: Transfers;
    send: DeliverySender;
    /** The home's URL now (the peer table), or null. */
    peerUrl: (peerId: string) => string | null;
    logger: DeliveryLogger;
    /** The clock of the backoff (ms). */
    nowMs?: () => number;
  }) {
    const t = o.transfers;
    super({
      source: {
        onPending: (sink) => t.onPending(sink),
        pending: () => t.pending(),
        loadMany: (ids) => t.loadMany(ids),
        // A refusal showing the receiver's home change: applied first, so the next attempt goes to the new home.
        settle: async (outcomes) => {
          const shown = new Map(outcomes.flatMap((o) => (o.shown === undefined ? [] : [[JSON.stringify(o.shown), o.shown] as const])));
          for (const change of shown.values()) await t.applyHomeChange(change);
          await t.settle(outcomes);
        },
        idOf: (r) => r.transfer_id,
        homeOf: (r) => r.to_home,
        isPending: (r) => r.state === 'pending',
        attemptsOf: (r) => r.attempts,
        urlHint: (r) => r.to_url ?? null,
        deliveryOf,
      },
      send: o.send,
      peerUrl: o.peerUrl,
      logger: o.logger,
      what: 'transfer',
      idField: 'transfer_id',
      maxBatch: MAX_DELIVERY_BATCH,
      ...(o.nowMs ? { nowMs: o.nowMs } : {}),
    });
  }
}

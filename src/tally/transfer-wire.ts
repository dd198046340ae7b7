// The wire and records of envelope transfers (spec 4.6 transfer-bulk; architecture.md §7): the transfer record kept
// at each home, the envelopes as they travel, the signed delivery request (sender's home → receiver's home) with its
// zod schemas and bounds, and the acknowledgement the receiver's home signs. The service is transfers.ts; the
// delivery loop transfer-delivery.ts.
import { z } from 'zod';
import type { DebitCertificateRecord } from '../records/types.js';
import { TOKEN_ID_PATTERN } from './folders.js';

export const TRANSFER_ID_PATTERN = /^xfer_[0-9a-f]{24}$/;
/** The type of a signed delivery request (sender's home → receiver's home) and of its signed acknowledgement. */
export const TRANSFER_EVENT = 'tally.transfer';
export const TRANSFER_ACK_EVENT = 'tally.transfer.ack';
/**
 * Most envelopes in one transfer: a delivery request is one signed mesh event, whose body the validator caps at 64 KiB
 * (mesh/validator.ts MAX_BODY_BYTES); a transfer of 200 envelopes (~220 bytes each) and its debit certificate (~1 KiB
 * with three signatures) fits in one on its own.
 */
export const MAX_TRANSFER_ENVELOPES = 200;

export type TransferState = 'pending' | 'delivered';

/** An envelope as it travels to the receiver's home (its owner, folder and seq are the receiver's there). */
export interface TravellingEnvelope {
  token_id: string;
  face_value: number;
  funding: 'paid';
  svcond: number;
  result_id: string;
  hash: string;
}

export interface TransferRecord {
  transfer_id: string;
  state: TransferState;
  from: string;
  to: string;
  /** Home nodes (peer ids) of sender and receiver: equal for a same-node transfer. */
  from_home: string;
  to_home: string;
  count: number;
  token_ids: string[];
  face_value_total: number;
  /**
   * How the envelopes were chosen: named (token_ids), or `count` at random with the house PRNG seeded by `seed`, the
   * SHA-256 hex of canonicalJson({transfer_id, from, to, count}) (pickAtRandom over the sender's movable envelopes).
   */
  picked_by: 'token_ids' | 'count';
  seed: string | null;
  /** Delivery attempts to the receiver's home (0 for a same-node transfer). */
  attempts: number;
  last_error: string | null;
  created_svcond: number;
  created_unix_ms: number;
  delivered_svcond: number | null;
  delivered_unix_ms: number | null;
  /** Cross-node, at the sender's home while pending: what is delivered. Dropped once delivered. */
  envelopes?: TravellingEnvelope[];
  /** The receiver's home URL when the transfer was made (used while the peer table does not know it yet). */
  to_url?: string | null;
  /**
   * The sender's debit certificate (custody/debit-certificate.ts): at the sender's home joined to a pending record from
   * where the debit's batch keeps it; at the receiver's home kept with the credit.
   */
  debit_certificate?: DebitCertificateRecord;
  /** At the sender's home while pending: the sender's latest home change, joined to the record as its delivery carries it. */
  from_home_change?: unknown;
}

/** One transfer as the receiver's home is told it. */
export const deliveryBody = z
  .object({
    transfer_id: z.string().regex(TRANSFER_ID_PATTERN),
    from: z.string().regex(/^zid_[0-9a-f]{32}$/),
    to: z.string().regex(/^zid_[0-9a-f]{32}$/),
    from_home: z.string().min(1).max(128),
    to_home: z.string().min(1).max(128),
    created_svcond: z.number().int().nonnegative(),
    created_unix_ms: z.number().int().nonnegative(),
    attempt: z.number().int().min(1),
    picked_by: z.enum(['token_ids', 'count']),
    seed: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .nullable(),
    envelopes: z
      .array(
        z
          .object({
            token_id: z.string().regex(TOKEN_ID_PATTERN),
            face_value: z.number().int().nonnegative(),
            funding: z.literal('paid'),
            svcond: z.number().int().nonnegative(),
            result_id: z.string().min(1).max(64),
            hash: z.string().regex(/^[0-9a-f]{64}$/),
          })
          .strict(),
      )
      .min(1)
      .max(MAX_TRANSFER_ENVELOPES),
    /**
     * The sender's certified debit of this transfer: its exact shape and checks are custody's
     * (custody/debit-certificate.ts), applied at the receiver's home before anything is written. Null when the
     * sender's home holds none (a debit a failover could not certify again): only a duplicate is acknowledged then.
     */
    debit_certificate: z
      .object({ entry: z.record(z.string(), z.unknown()), signatures: z.array(z.object({ node: z.string(), signature: z.string() })) })
      .nullable(),
    /**
     * The sender's latest home change its home knows (custody.home, with its earlier changes), when a failover moved
     * the sender: a receiver's home that missed it checks and applies it before it checks the debit certificate of
     * that epoch.
     */
    from_home_change: z.unknown().optional(),
  })
  .strict();
export type DeliveryBody = z.infer<typeof deliveryBody>;

/** Most transfers in one delivery request. */
export const MAX_DELIVERY_BATCH = 64;
/**
 * The body of a signed TRANSFER_EVENT: the pending transfers of one sender's home to one receiver's home, as many as
 * fit in one mesh event body (the sender packs them by size; the validator enforces the 64 KiB).
 */
export const deliveryBatch = z.object({ deliveries: z.array(deliveryBody).min(1).max(MAX_DELIVERY_BATCH) }).strict();
export type DeliveryBatch = z.infer<typeof deliveryBatch>;

/** A delivery the receiver's home refused (it stays pending at the sender's home and is tried again). */
export interface TransferRefusal {
  transfer_id: string;
  error: { status: number; code: string; message: string };
  /**
   * With a 404 "not homed on this node": the receiver's latest home change this node knows (custody.home, with its
   * earlier changes), so a sender whose directory still names this node applies it and delivers to the new home.
   */
  home_change?: unknown;
}

/** The body of a signed TRANSFER_ACK_EVENT: one answer per delivery, in the order of the request. */
export interface DeliveryAnswers {
  acks: (TransferAck | TransferRefusal)[];
}

/** What the receiver's home answers (signed as a TRANSFER_ACK_EVENT). */
export interface TransferAck {
  transfer_id: string;
  to: string;
  delivered_svcond: number;
  delivered_unix_ms: number;
  /** True when this delivery was a repeat: nothing was applied again. */
  duplicate: boolean;
}

export interface TransferRequest {
  to: string;
  count?: number;
  token_ids?: string[];
}

/** A transfer as GET /api/tally/transfers/:id shows it. */
export type TransferView = Omit<TransferRecord, 'envelopes' | 'to_url' | 'debit_certificate' | 'from_home_change'>;

/** The view of a record: everything but the travelling envelopes, the URL hint and the debit certificate. */
export function viewOf(r: TransferRecord): TransferView {
  const { envelopes: _e, to_url: _u, debit_certificate: _c, from_home_change: _h, ...view } = r;
  return view;
}

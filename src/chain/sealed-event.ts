// A sealed event (spec 2.7: transitionType 'sealed_event'): the payload's SHA-256 wrapped in an envelope sealed the
// way every result is sealed (kernel/receipt.ts: the tick receipt with its HMAC, the node's seal_signature and
// svcProof over the canonical body), so POST /api/svc/verify checks it like a result. The envelope carries the payload's digest, never its
// bytes; the audit row commits the SHA-256 of the envelope.
import type { TickStamp } from '../kernel/clock.js';
import { modulationFactor } from '../kernel/modulation.js';
import { sealWhole, tickReceipt, type SealSigner } from '../kernel/receipt.js';

export const SEALED_EVENT = 'sealed_event';
/** The unit of a sealed event's value (its row's seq). */
export const SEALED_EVENT_UNIT = 'row';

export interface SealedEventFacts {
  slug: string;
  seq: number;
  stamp: TickStamp;
  payloadSha256: string;
  node: string;
  phi0: number;
}

export function sealEvent(receiptKey: Buffer, sign: SealSigner, f: SealedEventFacts): Record<string, unknown> {
  const R_t = modulationFactor(f.stamp.phase, f.phi0);
  const body: Record<string, unknown> = {
    kind: SEALED_EVENT,
    slug: f.slug,
    seq: f.seq,
    svcond: f.stamp.svcond,
    node: f.node,
    payload_sha256: f.payloadSha256,
    // What verification recomputes the tick receipt over (as for a result: value, unit, result_digest).
    value: f.seq,
    unit: SEALED_EVENT_UNIT,
    result_digest: f.payloadSha256,
    svcond_receipt: tickReceipt(receiptKey, {
      svcond: f.stamp.svcond,
      phase: f.stamp.phase,
      R_t,
      value: f.seq,
      unit: SEALED_EVENT_UNIT,
      result_digest: f.payloadSha256,
      fields: {},
    }),
  };
  return sealWhole(receiptKey, sign, body);
}

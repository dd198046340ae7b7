// The settlement loop of remote charges (remote-charges.ts), on the shared delivery loop (delivery-loop.ts): at the
// caller's home, each pending charge is asked about at its machine's home (chain.charge.settle, signed, with the
// handshake) until that home answers it (chain.charge.outcome, signed, verified against its peer id), with the loop's
// backoff; resumed at start. A charge is first due SETTLE_AFTER_MS after it is made (or after a start), or at once when
// this node forwarded its request itself (settleSoon).
import type { WireEnvelope } from '../mesh/wire.js';
import type { PeerLinks } from '../mesh/peer-http.js';
import { DeliveryLoop, directSender, type DeliveryLogger } from './delivery-loop.js';
import {
  CHARGE_SETTLE_EVENT,
  CHARGE_SETTLE_PATH,
  MAX_SETTLE_BATCH,
  SETTLE_AFTER_MS,
  settleItemOf,
  verifiedOutcomes,
  type RemoteChargeRecord,
  type RemoteCharges,
  type SettleAck,
  type SettleItem,
} from './remote-charges.js';

export type SettlementLoop = DeliveryLoop<RemoteChargeRecord, SettleItem, SettleAck>;

export function settlementLoop(o: {
  charges: RemoteCharges;
  sign: (type: string, body: unknown) => Promise<WireEnvelope>;
  /** The ways to a machine's home (its URL, libp2p); its URL now, from the peer table, before the record's. */
  links: PeerLinks;
  logger: DeliveryLogger;
  /** Tests: how long after it is made a charge not forwarded by this node is first asked about (default SETTLE_AFTER_MS). */
  firstDelayMs?: number;
}): SettlementLoop {
  const c = o.charges;
  return new DeliveryLoop<RemoteChargeRecord, SettleItem, SettleAck>({
    source: {
      onPending: (sink) => c.onPending(sink),
      pending: () => c.pending(),
      loadMany: (ids) => c.loadMany(ids),
      settle: (outcomes) => c.settle(outcomes),
      idOf: (r) => r.nonce,
      homeOf: (r) => r.machine_home,
      isPending: (r) => r.state === 'pending',
      attemptsOf: (r) => r.attempts,
      urlHint: (r) => r.machine_url,
      deliveryOf: settleItemOf,
    },
    send: directSender<SettleItem, SettleAck>({
      sign: o.sign,
      links: o.links,
      type: CHARGE_SETTLE_EVENT,
      path: CHARGE_SETTLE_PATH,
      body: (charges) => ({ charges }),
      verify: (answer, home, items) =>
        verifiedOutcomes(
          answer,
          home,
          items.map((i) => i.nonce),
        ),
    }),
    peerUrl: o.links.peerUrl,
    logger: o.logger,
    what: 'remote charge settlement',
    idField: 'nonce',
    maxBatch: MAX_SETTLE_BATCH,
    firstDelayMs: o.firstDelayMs ?? SETTLE_AFTER_MS,
  });
}

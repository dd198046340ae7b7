// The refusal of a mesh event. Its gossipsub action travels on the error (Lodestar's GossipActionError): one place
// maps errors to verdicts, and no code string is matched. The HTTP entrance renders the same error as part 7.
//   reject: what is wrong with the event itself, so every node would refuse it (bad handshake, signature, shape,
//           body): gossipsub drops it and penalises the peer that sent it.
//   ignore: what depends on this node or the moment (stale tick, no mesh secret, a local failure, a spent budget):
//           dropped, not forwarded, and the peer is not penalised.
import { ServiceError, type ErrorCode } from '../kernel/errors.js';

export type GossipVerdict = 'accept' | 'ignore' | 'reject';
export type GossipAction = Exclude<GossipVerdict, 'accept'>;

export class GossipError extends ServiceError {
  readonly action: GossipAction;
  constructor(action: GossipAction, status: number, code: ErrorCode, message: string, extra: Record<string, unknown> = {}) {
    super(status, code, message, extra);
    this.name = 'GossipError';
    this.action = action;
  }
}

/** 400 INVALID_EVENT, reject: the event or its body does not have the shape its type requires. */
export function invalidEvent(message: string): GossipError {
  return new GossipError('reject', 400, 'INVALID_EVENT', message);
}

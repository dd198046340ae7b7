// A node has one bond slot, and it is its operator's: only the identity the operator names in its config
// (`contribution.operator`, a ZID) or an identity bonding with the node's operator token may take it. Anyone else,
// however many envelopes it holds, is refused before anything is marked.
import { ServiceError } from '../kernel/errors.js';

/** The header a bond request carries the node's operator token in (`Authorization` carries the identity's key). */
export const OPERATOR_TOKEN_HEADER = 'x-svc-operator-token';

export interface BondSlotOwner {
  /** The ZID the operator names (contribution.operator), or null when it names none. */
  operator: string | null;
  /** Whether the presented text is this node's operator token (constant time). */
  isOperatorToken(presented: string): boolean;
}

/** 403 SVC_FORBIDDEN with the reason unless `zid` may take this node's bond slot. */
export function assertBondSlotOwner(owner: BondSlotOwner, zid: string, presentedToken: string | null): void {
  if (owner.operator === zid) return;
  if (presentedToken !== null && owner.isOperatorToken(presentedToken)) return;
  const reason =
    presentedToken !== null
      ? 'the operator token presented is not this node’s'
      : owner.operator !== null
        ? 'this node’s operator names another identity (contribution.operator)'
        : `this node’s operator names no identity: bond with the operator token in ${OPERATOR_TOKEN_HEADER}, or set contribution.operator`;
  throw new ServiceError(403, 'SVC_FORBIDDEN', `the bond slot of this node belongs to its operator: ${reason}`, {
    zid,
    reason,
    operator_named: owner.operator !== null,
    header: OPERATOR_TOKEN_HEADER,
  });
}

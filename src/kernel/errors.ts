// The one error type that carries a part-7 code. Pure: the HTTP layer renders it, services and solvers throw it.

/**
 * Every error code the node answers with: one closed union, so a new code is a deliberate change here.
 * Part 7 of the spec names the first group; the rest are this node's own (docs/decisions.md gives their reasons).
 */
export type ErrorCode =
  // part 7
  | 'SVC_INVALID_DOMAIN'
  | 'SVC_INVALID_OPERATOR'
  | 'SVC_TOO_MANY_OPERATORS'
  | 'SVC_NO_KEY'
  | 'SVC_INVALID_KEY'
  | 'INSUFFICIENT_BALANCE'
  | 'SVC_TIER_LOCKED'
  | 'SVC_TOLERANCE_GATE' // part 7 gives the 422 without a code
  | 'SVC_RATE_LIMIT'
  | 'SVC_DAILY_LIMIT'
  | 'SVC_SOLVER_ERROR'
  | 'SVC_TIMEOUT'
  // part 7's gossip rows (503 no mesh secret, 401 handshake or signature) and the mesh event shape
  | 'MESH_DISABLED'
  | 'MISSING_HANDSHAKE'
  | 'INVALID_HANDSHAKE'
  | 'STALE_HANDSHAKE'
  | 'INVALID_SIGNATURE'
  | 'INVALID_EVENT'
  // requests: input, body, route
  | 'SVC_INVALID_INPUT'
  | 'SVC_INVALID_JSON'
  | 'SVC_INVALID_BODY'
  | 'SVC_PAYLOAD_TOO_LARGE'
  | 'SVC_UNSUPPORTED_MEDIA_TYPE'
  | 'SVC_BAD_REQUEST'
  | 'SVC_HEADERS_TOO_LARGE'
  | 'SVC_REQUEST_TIMEOUT'
  | 'SVC_METHOD_NOT_ALLOWED'
  | 'SVC_NOT_FOUND'
  // identities, sessions and access
  | 'SVC_FORBIDDEN'
  | 'SVC_CONFLICT'
  | 'SVC_INVALID_CREDENTIALS'
  | 'SVC_NO_SESSION'
  // a write's Idempotency-Key sent again with another request (http/idempotency.ts)
  | 'SVC_IDEMPOTENCY_KEY_REUSED'
  // the node itself
  | 'SVC_HOME_UNREACHABLE'
  | 'SVC_STORAGE_UNAVAILABLE'
  // custody (architecture.md §5): a ledger write no majority of the identity's custodians holds
  | 'SVC_CUSTODY_UNAVAILABLE'
  // custody: a transfer's credit whose debit certificate does not certify the sender's debit (node to node)
  | 'SVC_DEBIT_UNCERTIFIED'
  | 'SVC_INTERNAL_ERROR'
  // mesh DNS
  | 'DNS_INVALID_RECORD'
  | 'DNS_REGISTRY_FULL'
  // identity gossip: a key minted elsewhere past the records gossip may add (limits.remoteKeysMax)
  | 'MESH_KEYS_FULL'
  // consensus: a release or slashing of a bond not heard, past those the registry keeps (UNHEARD_BONDS_MAX)
  | 'BOND_REGISTRY_FULL'
  // contribution (architecture.md §6)
  | 'INVALID_ATTESTATION'
  | 'SVC_INSUFFICIENT_ENVELOPES'
  // the economy (architecture.md §7): a soulbound or bonded envelope named in a transfer
  | 'SVC_ENVELOPE_NOT_MOVABLE'
  | 'SVC_BOND_CHALLENGED'
  // a slashed operator's bond inside its cooldown, or a bond of a node that has not applied its slashing
  | 'SVC_BOND_COOLDOWN'
  | 'SVC_NO_BOND'
  // challenges, votes and verdicts (architecture.md §6)
  | 'SVC_RESULT_UNPUBLISHED'
  | 'SVC_NOT_AT_STAKE'
  | 'SVC_NO_COMMITTEE'
  | 'SVC_NOT_A_MEMBER'
  | 'INVALID_CHALLENGE'
  | 'INVALID_VOTE'
  | 'INVALID_VERDICT'
  // state machines: a contract transition the contract's table does not allow from its state
  | 'SVC_ILLEGAL_TRANSITION'
  // AI clients: a chat's language-model provider failed (nothing charged)
  | 'SVC_LLM_PROVIDER_ERROR'
  // offloaded execution, node to node only (/svc/exec/1.0.0 refusals; docs/protocol.md §14)
  | 'SVC_NOT_CONTRIBUTING'
  | 'SVC_PREEMPTED'
  // a state machine whose slug another home won (chain/slug-loss.ts): read-only at its node, by its owner
  | 'SVC_MACHINE_LOST';

export class ServiceError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  /** The code's own extra fields of part 7 (e.g. suggestion, available_similar, limit). */
  readonly extra: Record<string, unknown>;
  readonly details: unknown;
  constructor(status: number, code: ErrorCode, message: string, extra: Record<string, unknown> = {}, details?: unknown) {
    super(message);
    this.name = 'ServiceError';
    this.status = status;
    this.code = code;
    this.extra = extra;
    this.details = details;
  }
}

/** Bad solver or operator input (solvers.md §1): 400 SVC_INVALID_INPUT with field, reason, allowed. */
export class InputError extends ServiceError {
  readonly field: string;
  readonly reason: string;
  readonly allowed: unknown;
  constructor(field: string, reason: string, allowed: unknown = null) {
    super(400, 'SVC_INVALID_INPUT', `invalid input ${field}: ${reason}`, { field, reason, allowed });
    this.name = 'InputError';
    this.field = field;
    this.reason = reason;
    this.allowed = allowed;
  }
}

/**
 * Where part 7's SVC_SOLVER_ERROR sends a client to see whether the node is up: the node's own health route,
 * relative to the node that answered (a pure error cannot know the node's public URL).
 */
export const SOLVER_ERROR_STATUS_PAGE = '/api/health';

/** A numerical failure before the check (non-convergence, budget exhausted): 500 SVC_SOLVER_ERROR. */
export class SolverFailure extends ServiceError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super(500, 'SVC_SOLVER_ERROR', message, { details, status_page: SOLVER_ERROR_STATUS_PAGE }, details);
    this.name = 'SolverFailure';
  }
}

/**
 * An identity holds all the `what` its cap allows (webhooks, channels, reactors, contracts …): 409 SVC_CONFLICT,
 * not the retryable SVC_RATE_LIMIT, since only deleting or closing one (`free` says how) makes room, never a retry.
 * `limit` is the cap and `count` what the identity holds now.
 */
export function capReached(what: string, limit: number, count: number, free: string): ServiceError {
  return new ServiceError(409, 'SVC_CONFLICT', `an identity holds at most ${limit} ${what} on this node (it holds ${count}); ${free}`, {
    limit,
    count,
    resource: what,
  });
}

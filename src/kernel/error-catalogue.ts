// What every error code means: one entry per code of the closed union (errors.ts), so a code cannot be added without
// its status and meaning (the `satisfies` below fails to compile). The node serves it as GET /api/errors, one anchor
// per code, and every error's documentation_url points at its code's anchor there.
import type { ErrorCode } from './errors.js';

export interface ErrorEntry {
  /** The HTTP status the code is answered with (the usual one, for the few codes answered with several). */
  status: number;
  meaning: string;
  /**
   * Part 7's retryable codes (SVC_RATE_LIMIT, SVC_TIMEOUT, SVC_SOLVER_ERROR) and the node's own transient 503s: the
   * error carries `retryable: true` and `retry_after_seconds` (this default when the error does not say better).
   */
  retryAfterSeconds?: number;
  /** Where the code comes from: part 7 of the spec, the mesh wire (node to node), or this node's own. */
  origin: 'part 7' | 'mesh' | 'node';
}

/** The spec's recommended first backoff step (part 7: 1 s, 2 s, 4 s …). */
export const FIRST_BACKOFF_SECONDS = 1;

export const ERROR_CATALOGUE = {
  SVC_INVALID_DOMAIN: { status: 400, origin: 'part 7', meaning: 'The domain is not one of the recognised domains; `suggestion` names the closest.' },
  SVC_INVALID_OPERATOR: {
    status: 400,
    origin: 'part 7',
    meaning: 'An operator id does not exist or is not available for the domain; `available_similar` lists near names.',
  },
  SVC_TOO_MANY_OPERATORS: { status: 400, origin: 'part 7', meaning: 'More than 10 operators in one chain (`requested_operators`, `limit`).' },
  SVC_NO_KEY: { status: 401, origin: 'part 7', meaning: 'An authenticated route was called without a key (Bearer header or ?key=).' },
  SVC_INVALID_KEY: {
    status: 401,
    origin: 'part 7',
    meaning: 'A key was presented but is malformed, unknown, expired or revoked (`key_id`, `revoked_at`, `reason`); never read as no key.',
  },
  INSUFFICIENT_BALANCE: { status: 402, origin: 'part 7', meaning: 'The wallet is too low for a paid action; no work was done and nothing charged.' },
  SVC_TIER_LOCKED: { status: 403, origin: 'part 7', meaning: 'The action needs a higher tier (`required_tier`, `current_tier`, `upgrade_url`).' },
  SVC_TOLERANCE_GATE: {
    status: 422,
    origin: 'part 7',
    meaning: 'The result failed the <= 0.1 % tolerance gate (or its reality check cannot pass); nothing was sealed or charged.',
  },
  SVC_RATE_LIMIT: {
    status: 429,
    origin: 'part 7',
    retryAfterSeconds: FIRST_BACKOFF_SECONDS,
    meaning: 'Too many requests or queued runs (`limit`, `window_seconds`, `reset_at`); retry after `retry_after_seconds` (also Retry-After).',
  },
  SVC_DAILY_LIMIT: { status: 429, origin: 'part 7', meaning: 'The daily quota is used up until midnight UTC (`daily_limit`, `used_today`, `reset_at`).' },
  SVC_SOLVER_ERROR: {
    status: 500,
    origin: 'part 7',
    retryAfterSeconds: FIRST_BACKOFF_SECONDS,
    meaning:
      'The solver failed before its check (non-convergence, budget exhausted, a failed worker); `details` and `status_page`. Nothing sealed or charged. The same inputs fail the same way: change them, or retry a failure of the node.',
  },
  SVC_TIMEOUT: {
    status: 500,
    origin: 'part 7',
    retryAfterSeconds: FIRST_BACKOFF_SECONDS,
    meaning:
      'The run exceeded the tier time limit, counted from acceptance (`time_limit_seconds`, `elapsed_seconds`, `queued_seconds`, `run_seconds`, `suggestion`); nothing sealed or charged.',
  },
  MESH_DISABLED: { status: 503, origin: 'part 7', meaning: 'The node runs without a mesh (no mesh secret configured): mesh routes are off.' },
  MISSING_HANDSHAKE: { status: 401, origin: 'part 7', meaning: 'A mesh event arrived without its x-node-handshake.' },
  INVALID_HANDSHAKE: { status: 401, origin: 'part 7', meaning: 'The handshake is malformed or was made for another sender, tick or body.' },
  STALE_HANDSHAKE: { status: 401, origin: 'part 7', meaning: 'The event tick is more than about 120 ticks from now: a replayed or delayed handshake.' },
  INVALID_SIGNATURE: { status: 401, origin: 'part 7', meaning: "The event's Ed25519 signature does not verify with its sender's key." },
  INVALID_EVENT: { status: 400, origin: 'mesh', meaning: 'A mesh event does not have the wire shape, or is not the type this entrance takes.' },
  SVC_INVALID_INPUT: { status: 400, origin: 'node', meaning: 'A body, query or input field is wrong (`field`, `reason`, `allowed`); nothing was done.' },
  SVC_INVALID_JSON: { status: 400, origin: 'node', meaning: 'The request body is not valid JSON.' },
  SVC_INVALID_BODY: { status: 400, origin: 'node', meaning: 'The request body is not the JSON object the route takes.' },
  SVC_PAYLOAD_TOO_LARGE: { status: 413, origin: 'node', meaning: 'The request body (or its chunk extensions) is over the limit (`limit_bytes`).' },
  SVC_UNSUPPORTED_MEDIA_TYPE: { status: 415, origin: 'node', meaning: 'The request body has a content type or encoding the route does not read.' },
  SVC_BAD_REQUEST: { status: 400, origin: 'node', meaning: 'A malformed HTTP request (400, or the 4xx status the HTTP layer gave it).' },
  SVC_HEADERS_TOO_LARGE: { status: 431, origin: 'node', meaning: 'The request line and headers are too large.' },
  SVC_REQUEST_TIMEOUT: { status: 408, origin: 'node', meaning: 'The request did not arrive in time.' },
  SVC_METHOD_NOT_ALLOWED: { status: 405, origin: 'node', meaning: 'The path exists but not with this method (`allow` lists those it takes).' },
  SVC_NOT_FOUND: { status: 404, origin: 'node', meaning: 'No such route or resource here (a 404 of a route carries `discovery`).' },
  SVC_FORBIDDEN: { status: 403, origin: 'node', meaning: "The key is good but does not allow this (another identity's resource, a role, a scope)." },
  SVC_CONFLICT: { status: 409, origin: 'node', meaning: 'The request conflicts with the current state (taken name, closed channel, repeated id).' },
  SVC_INVALID_CREDENTIALS: { status: 401, origin: 'node', meaning: 'Email and password (or the identity proof) do not match.' },
  SVC_NO_SESSION: { status: 401, origin: 'node', meaning: 'The route needs the session cookie of a login.' },
  SVC_IDEMPOTENCY_KEY_REUSED: {
    status: 409,
    origin: 'node',
    meaning: "A write's Idempotency-Key was sent before with another method, path or body; the kept answer is for that request.",
  },
  SVC_HOME_UNREACHABLE: {
    status: 503,
    origin: 'node',
    retryAfterSeconds: FIRST_BACKOFF_SECONDS,
    meaning: "The identity's or machine's home node did not answer in time (`home`); nothing was written here.",
  },
  SVC_STORAGE_UNAVAILABLE: {
    status: 503,
    origin: 'node',
    retryAfterSeconds: FIRST_BACKOFF_SECONDS,
    meaning: 'The node could not write to its store: nothing was sealed or charged.',
  },
  SVC_CUSTODY_UNAVAILABLE: {
    status: 503,
    origin: 'node',
    retryAfterSeconds: FIRST_BACKOFF_SECONDS,
    meaning:
      "No majority of the identity's custodians held the ledger write in time (`reason`, `custodians`, `signed`, `needed`): it was not acknowledged and nothing of it is written.",
  },
  SVC_DEBIT_UNCERTIFIED: {
    status: 403,
    origin: 'mesh',
    meaning:
      "A transfer's delivery whose debit certificate does not certify the sender's debit (`reason`: not that transfer, amount, envelopes or receiver; a signer outside the sender's custody set; too few signers; a bad signature): nothing is credited.",
  },
  SVC_INTERNAL_ERROR: { status: 500, origin: 'node', meaning: 'An unexpected failure of the node; the trace_id is in its log.' },
  DNS_INVALID_RECORD: { status: 400, origin: 'mesh', meaning: 'A mesh DNS record is malformed or not signed by the node it names.' },
  DNS_REGISTRY_FULL: { status: 507, origin: 'node', meaning: 'The mesh DNS registry of this node is full.' },
  BOND_REGISTRY_FULL: {
    status: 507,
    origin: 'mesh',
    meaning: 'A release or slashing of a bond this node has not heard, past the 4,096 such records its registry keeps: ignored, not relayed.',
  },
  MESH_KEYS_FULL: {
    status: 507,
    origin: 'mesh',
    meaning:
      'An identity assertion of a key this node does not hold, past the keys minted elsewhere that gossip may add (`limits.remoteKeysMax`): ignored, not relayed.',
  },
  INVALID_ATTESTATION: { status: 400, origin: 'mesh', meaning: "A bond attestation is not signed by, or not gossiped by, the bond's node." },
  SVC_INSUFFICIENT_ENVELOPES: { status: 400, origin: 'node', meaning: 'Too few envelopes for a bond (`held`, `needed`).' },
  SVC_ENVELOPE_NOT_MOVABLE: { status: 400, origin: 'node', meaning: 'A transfer named a soulbound or bonded envelope.' },
  SVC_BOND_CHALLENGED: { status: 409, origin: 'node', meaning: 'The bond is under an open challenge and cannot be released yet.' },
  SVC_BOND_COOLDOWN: {
    status: 403,
    origin: 'node',
    meaning: 'The identity was slashed and cannot bond again before `cooldown_until` (the challenge is named).',
  },
  SVC_NO_BOND: { status: 403, origin: 'node', meaning: 'Contributing needs an active bond.' },
  SVC_RESULT_UNPUBLISHED: { status: 403, origin: 'node', meaning: 'The result is not published, so it cannot be challenged.' },
  SVC_NOT_AT_STAKE: { status: 409, origin: 'node', meaning: 'The result was sealed without a bond at stake: nothing to challenge.' },
  SVC_NO_COMMITTEE: { status: 409, origin: 'node', meaning: 'Too few eligible nodes to draw a committee for the challenge.' },
  SVC_NOT_A_MEMBER: { status: 403, origin: 'mesh', meaning: 'A vote from a node that is not on the challenge committee (ignored and counted).' },
  INVALID_CHALLENGE: { status: 400, origin: 'mesh', meaning: "A challenge event that is malformed or not gossiped by the challenger's home." },
  INVALID_VOTE: { status: 400, origin: 'mesh', meaning: 'A vote that is malformed or not gossiped by its voter.' },
  INVALID_VERDICT: { status: 400, origin: 'mesh', meaning: 'A verdict that does not re-fold from its votes, or comes before its deadline.' },
  SVC_ILLEGAL_TRANSITION: { status: 409, origin: 'node', meaning: "The contract's table does not allow this event from its current state." },
  SVC_LLM_PROVIDER_ERROR: { status: 502, origin: 'node', meaning: "The chat's language-model provider failed; nothing was charged." },
  SVC_NOT_CONTRIBUTING: { status: 503, origin: 'mesh', meaning: 'Node to node: the executor is not contributing, so it does not run offloaded work.' },
  SVC_PREEMPTED: { status: 503, origin: 'mesh', meaning: "Node to node: the executor's operator switched mode during the run; the requester re-places it." },
  SVC_MACHINE_LOST: { status: 409, origin: 'node', meaning: 'Another home won this state machine slug; here it is read-only, for its owner.' },
} as const satisfies Record<ErrorCode, ErrorEntry>;

/** Every code, in catalogue order. */
export const ERROR_CODES = Object.keys(ERROR_CATALOGUE) as ErrorCode[];

/** The anchor of a code in the catalogue (lower case, as documentation_url gives it). */
export function errorAnchor(code: ErrorCode): string {
  return code.toLowerCase();
}

/** The retry advice a code's error carries: null for codes that are not retryable. */
export function retryAdvice(code: ErrorCode, given: unknown): { retryable: true; retry_after_seconds: number } | null {
  const entry: ErrorEntry = ERROR_CATALOGUE[code];
  if (entry.retryAfterSeconds === undefined) return null;
  return { retryable: true, retry_after_seconds: typeof given === 'number' && Number.isFinite(given) && given > 0 ? given : entry.retryAfterSeconds };
}

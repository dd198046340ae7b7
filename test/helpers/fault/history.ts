// What a fault run records and reads (the checker's input): the operations the clients made, as they saw them, and the
// state the mesh holds once every fault is healed. Plain data, so the checker is a pure function of it and a test can
// write a small history by hand.

/** How an operation ended, for its client: acknowledged (2xx), refused (nothing applied), or unknown (maybe applied). */
export type Outcome = 'ok' | 'error' | 'unknown';

export type Call = 'spend' | 'transfer';

export interface Operation {
  /** Unique in the run: `c<client>-<n>`. */
  id: string;
  /** The identity that acts (the spender, the sender). */
  zid: string;
  /** Index of the node the request was sent to (not always the identity's home: others forward). */
  node: number;
  call: Call;
  body: Record<string, unknown>;
  /** ms since the run started. */
  invoked_at: number;
  completed_at: number;
  outcome: Outcome;
  /** HTTP status (null when no answer came). */
  status: number | null;
  /** The parsed answer body, or why there was none. */
  response: unknown;
}

/** An envelope as its holder's home lists it. */
export interface HeldEnvelope {
  token_id: string;
  owner: string;
  result_id: string;
  transfer_id?: string;
}

export interface ChainRow {
  seq: number;
  hash: string;
  transitionType: string;
}

/** A transfer's record at one home (GET /api/tally/transfers/:id). */
export interface TransferView {
  transfer_id: string;
  state: string;
  from: string;
  to: string;
  token_ids: string[];
  created_unix_ms: number;
}

export interface IdentityState {
  zid: string;
  /** Index of its home node. */
  home: number;
  slug: string;
  balance: { free: number; paid: number };
  envelopes: HeldEnvelope[];
  chain: ChainRow[];
}

export interface NodeFinalState {
  nodeId: string;
  /** /api/transparency/revenue: the node's running totals of what its charges burned and gave the foundation. */
  burned: number;
  foundation: number;
  /** Results sealed on the node (each gives its caller one envelope). */
  sealed: number;
}

/** What the harness put into the mesh besides the operations: the terms of the credit equation it knows. */
export interface LedgerInputs {
  /** Credits the operators granted (every grant acknowledged). */
  grants: number;
  /** Credits the daily claims gave. */
  claims: number;
  /** The initial credits every identity started with, summed (identities × limits.initialCredits). */
  initial: number;
  /**
   * Results the harness sealed for identities the final state does not read (the operators' bonded envelopes of a
   * custody run): counted in the nodes' sealed totals, held by nobody the checker sees. Absent: none.
   */
  setupSeals?: number;
}

/**
 * One certified ledger entry as a custodian holds it (custody: `{zid, epoch, seq, prev_hash, op, …}` signed by a
 * majority). `hash` is the digest of the entry; `holder` the node it was read from.
 */
export interface CertifiedEntry {
  zid: string;
  epoch: number;
  seq: number;
  hash: string;
  holder: string;
}

export interface FinalState {
  identities: IdentityState[];
  nodes: NodeFinalState[];
  /** Result ids found at their sealing home (GET /api/mesh/results/:id answered 200). */
  results: Record<string, boolean>;
  /** Every transfer id the history or the envelopes name, as each end's home holds it (null: not there). */
  transfers: { id: string; atSender: TransferView | null; atReceiver: TransferView | null }[];
  ledger: LedgerInputs;
  /** The certified entries every node holds: a home's log and its custodians' copies (with no bonds, a set of one, only transfer debits). */
  certified: CertifiedEntry[];
}

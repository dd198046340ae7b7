// The record types and ports that several domain folders share (identity, chain, tally, compute, consensus, and the
// folders above them), kept below all of them so that no two folders import each other for a type. Only kernel/ and
// store/ types come in here; the rules that make and check these records stay with their owners.
import type { Op } from '../store/db.js';

/** The kinds of API keys, by prefix (identity/keys.ts). */
export type KeyKind = 'sk' | 'sk_test' | 'svc_ak' | 'zsm' | 'zsm_pub';

/** An API key as stored (identity/service.ts), under its SHA-256 digest. */
export interface KeyRecord {
  key_id: string;
  kind: KeyKind;
  zid: string | null;
  slug: string | null;
  plan: 'standard' | 'demo' | 'test';
  created_unix_ms: number;
  expires_unix_ms: number | null;
  revoked_unix_ms: number | null;
  /** The node that minted the key (the identity's home); absent on records written before the mesh. */
  home?: string;
}

/** Who is calling, as resolved from a request's key or address. */
export type Caller =
  | { kind: 'identity'; zid: string; key: KeyRecord; slug: string; /** Node that keeps this identity's ledgers. */ home: string }
  | { kind: 'demo'; key: KeyRecord }
  | { kind: 'anonymous'; ip: string };

export interface Wallet {
  free: number;
  paid: number;
}

/** What an action cost its caller (tally/ledger.ts charges it). */
export interface TallyCharge {
  action: string;
  cost: number;
  charged: number;
  burned: number;
  foundation: number;
  funded_by: 'free' | 'paid' | 'demo' | 'anonymous';
  balance_after: Wallet | null;
}

/** Which part of the wallet a charge took its credits from (free first): kept where a charge may be refunded. */
export interface ChargeSplit {
  free: number;
  paid: number;
}

/** Which contributing node executed a run, and its bond at stake (signed and checked in consensus/executed-by.ts). */
export interface ExecutedBy {
  /** Peer id of the node that executed the run. */
  node: string;
  /** That node's bond (its operator's), at stake for this result. */
  bond_id: string;
  /** Tick the run was placed at (the home's stamping tick when offloaded). */
  svcond: number;
  request_digest: string;
  /** base64 Ed25519 by `node` over executionText(...). */
  signature: string;
}

/** The facts a sealed result is recorded with (compute/service.ts seals; tally/record.ts and webhooks record). */
export interface SealedFacts {
  result_id: string;
  /** The caller's ZID; null for demo and anonymous callers. */
  owner: string | null;
  kind: 'compute' | 'solver';
  solver: string | null;
  operators: string[] | null;
  result_digest: string;
  svcond: number;
  executed_by: ExecutedBy | null;
  /** What re-execution runs: the solver and its resolved inputs, or the chain request as validated. */
  request: CanonicalRequest;
  /** From the request's start to the stamp. */
  execution_time_ms?: number;
}

export type CanonicalRequest =
  { kind: 'solver'; solver: string; inputs: Record<string, unknown> } | { kind: 'compute'; domain: unknown; operators: unknown; inputs: unknown };

export interface ResultRecorder {
  /**
   * What the sealing batch of a result of `owner` writes, decided from what the recorder holds about the owner. Asked
   * before the batch is built: synchronously when the owner is in memory, else after reading the store (memory is a
   * bounded cache, the store the truth), so the batch never waits and an owner evicted from the cache is never missed.
   */
  forOwner(owner: string | null): SealRecorder | Promise<SealRecorder>;
}

export interface SealRecorder {
  /** Ops for the sealing batch and counters it bumps by one. */
  sealOps(facts: SealedFacts): { ops: Op[]; bump: string[] } | undefined;
}

/** A recorder with nothing to write for an owner. */
export const NOTHING_TO_RECORD: SealRecorder = { sealOps: () => undefined };

/**
 * A transfer's debit certificate as the transfer carries it (tally/): the sender's certified debit entry and the
 * signatures of a majority of the sender's custody set. custody/debit-certificate.ts makes it, gives its exact shape and
 * checks it; tally keeps it with a pending transfer, sends it, and has the receiver's home check it (DebitCheck).
 */
export interface DebitCertificateRecord {
  entry: Record<string, unknown>;
  signatures: { node: string; signature: string }[];
}

/** A credit as the receiver's home reads it from a delivery: what its sender's debit certificate must certify. */
export interface CreditFacts {
  transfer_id: string;
  /** The sender (the debited identity) and the receiver (the credited one). */
  from: string;
  to: string;
  /** The face value moved. */
  amount: number;
  token_ids: string[];
}

/** Why `cert` does not certify the debit of `credit`, or null when it does (custody/debit-certificate.ts). */
export type DebitCheck = (cert: DebitCertificateRecord | null, credit: CreditFacts) => Promise<string | null>;

/**
 * The certificate a pending debit's delivery carries, from the one kept with it (`kept`): the same while it certifies
 * the debit under the sender's custody set as its home sees it now, else one certified again under that set; without
 * one kept (a new home that could not certify it when it took the identity over), one made from the certified log,
 * or null (custody's).
 */
export type DebitRecertify = (kept: DebitCertificateRecord | null, transfer: { from: string; transfer_id: string }) => Promise<DebitCertificateRecord | null>;

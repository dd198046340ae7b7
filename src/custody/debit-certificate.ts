// A transfer's debit certificate (docs/protocol.md §19): the sender's certified debit entry and the signatures of a
// majority of the sender's custody set, the home's own among them. It travels with the transfer to the receiver's
// home and on with the credit entry to the receiver's custodians; each of them checks it before it writes or signs
// the credit. Where the sender's set is its home alone (a lone node, R = 1), the certificate is the home's own
// signature. The sender's home keeps each debit's certificate by transfer id, written in the batch of the debit (and
// so of its outbox entry): a delivery retried after a crash carries the same certificate.
import { z } from 'zod';
import type { Store, Sublevel, Op } from '../store/db.js';
import { setOfConfig, type SetConfig } from './custody-set.js';
import type { CreditFacts } from '../records/types.js';
import { entryHash, entrySchema, tokensDigest, verifyEntrySignature, type CustodyEntry, type EntrySignature, type EntryTransfer } from './entry.js';

/** Most signatures a certificate carries: one per custodian, and R (config custody.replicas) is at most 7. */
export const MAX_CERTIFICATE_SIGNATURES = 7;

export const debitCertificateSchema = z
  .object({
    entry: entrySchema,
    signatures: z
      .array(z.object({ node: z.string().min(1).max(128), signature: z.string().min(1).max(128) }).strict())
      .min(1)
      .max(MAX_CERTIFICATE_SIGNATURES),
  })
  .strict();
export type DebitCertificate = z.infer<typeof debitCertificateSchema>;

/** What the checker reads from its own node: the bonded members, R, the identity directory, Ed25519. */
export interface DebitCheckDeps {
  members: () => Iterable<string>;
  replicas: number;
  /** The identity's home in `epoch` as this node knows it, with the members its set passed over (null: not known here). */
  configAt: (zid: string, epoch: number) => Promise<SetConfig | null>;
  verify: (signer: string, text: string, signature: string) => boolean;
}

/** A credit as its receiver's side states it: the receiving identity and what the credit moves. */
export interface CreditClaim {
  zid: string;
  transfer: EntryTransfer;
}

/** The claim of a credit a receiver's home reads from a delivery. */
export function creditClaimOf(c: CreditFacts): CreditClaim {
  return { zid: c.to, transfer: { id: c.transfer_id, side: 'credit', party: c.from, amount: c.amount, tokens: tokensDigest(c.token_ids) } };
}

/**
 * Why `cert` does not certify the debit of `credit`, or null when it does: its entry debits that transfer id, amount
 * and envelopes from the credit's party to the credit's identity, and distinct members of the sender's custody set
 * of the entry's epoch (its home in that epoch as this node knows it, its members from this node's view of bonded
 * nodes) that are a majority of it each signed the entry.
 */
export async function debitCertificateFault(given: unknown, credit: CreditClaim, deps: DebitCheckDeps): Promise<string | null> {
  if (given === null || given === undefined) return 'the credit carries no debit certificate';
  const parsed = debitCertificateSchema.safeParse(given);
  if (!parsed.success) return `the debit certificate is malformed: ${parsed.error.issues[0]?.message ?? 'invalid'}`;
  const cert = parsed.data;
  const e = cert.entry;
  const t = e.transfer;
  if (t === null || t.side !== 'debit') return 'the certificate entry is not a transfer debit';
  if (t.id !== credit.transfer.id) return `the certificate debits transfer ${t.id}, not ${credit.transfer.id}`;
  if (e.zid !== credit.transfer.party) return `the certificate debits ${e.zid}, not the sender ${credit.transfer.party}`;
  if (t.party !== credit.zid) return `the certificate debits to ${t.party}, not to ${credit.zid}`;
  if (t.amount !== credit.transfer.amount) return `the certificate debits ${t.amount}, the credit is ${credit.transfer.amount}`;
  if (t.tokens !== credit.transfer.tokens) return 'the certificate debits other envelopes';
  // The set of the debit's epoch: a debit certified before a failover is delivered by the new home.
  const config = await deps.configAt(e.zid, e.epoch);
  if (config === null) return `the home of the sender ${e.zid} in epoch ${e.epoch} is not known to this node`;
  const set = setOfConfig(e.zid, config, deps.members(), deps.replicas);
  const hash = entryHash(e);
  const signers = new Set<string>();
  for (const s of cert.signatures) {
    if (!set.custodians.includes(s.node)) return `${s.node} is not a custodian of ${e.zid}`;
    if (!verifyEntrySignature(deps.verify, hash, s)) return `the signature of ${s.node} does not verify`;
    signers.add(s.node);
  }
  if (signers.size < set.majority) return `${signers.size} of the ${set.custodians.length} custodians of ${e.zid} signed the debit; ${set.majority} are needed`;
  return null;
}

/** The debit certificates a sender's home keeps, by transfer id. */
export class DebitCertificates {
  private readonly sub: Sublevel;

  constructor(private readonly store: Store) {
    this.sub = store.sub('custody_debits');
  }

  /** The op that keeps the certificate of a certified debit (in the debit's batch). */
  putOp(entry: CustodyEntry, signatures: EntrySignature[]): Op {
    const cert: DebitCertificate = { entry, signatures };
    return { type: 'put', sub: this.sub, key: entry.transfer!.id, value: cert };
  }

  async get(transferId: string): Promise<DebitCertificate | null> {
    return (await this.store.get<DebitCertificate>(this.sub, transferId)) ?? null;
  }
}

// A certified entry (docs/protocol.md §19): one ledger write of an identity, as its home proposes it to the identity's
// custodians. The entry names its place in the identity's chain of writes (epoch, seq, prev_hash), what the write did
// (kind, the digest of its records) and what it leaves (the wallet's balance, a transfer's side, party and amount); its hash is SHA-256 of
// its RFC 8785 canonical JSON, and a custodian signs `svc/custody/1|` + that hash with its node key.
import { z } from 'zod';
import { canonicalJson } from '../kernel/canonical.js';
import { sha256Hex } from '../kernel/bytes.js';
import { excludedSchema } from './custody-set.js';

/** prev_hash of an identity's first entry. */
export const GENESIS_ENTRY_HASH = '0'.repeat(64);
/** The first epoch of every identity: its home's (a failover starts the next). */
export const FIRST_EPOCH = 1;
/** Domain separation of a custodian's signature: a signed entry hash is never mistaken for another signed text. */
export const SIGNATURE_PREFIX = 'svc/custody/1|';

/**
 * What a write did to the identity's ledger (ledger-ops.ts reads it from the write's records): seal (a sealed result
 * and its charge), transfer (the debit or the credit of a transfer), wallet (a charge, grant or claim without a sealed
 * result, a grant of a tier alone), envelope (envelopes change within the identity: a folder move, a bond's mark),
 * epoch (the first entry of a home's epoch after a failover or a reconfiguration: no records, chained on the chain of
 * the highest head its promises showed).
 */
export const ENTRY_KINDS = ['seal', 'transfer', 'wallet', 'envelope', 'epoch'] as const;
export type EntryKind = (typeof ENTRY_KINDS)[number];

const HEX64 = /^[0-9a-f]{64}$/;
export const ZID_PATTERN = /^zid_[0-9a-f]{32}$/;
const credits = z.number().int().min(-Number.MAX_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER);

/** The side of a transfer an entry writes: the sender's debit or the receiver's credit. */
export const TRANSFER_SIDES = ['debit', 'credit'] as const;

/** What a transfer entry moves: enough for the receiver's custodians to match a credit to its sender's debit. */
export const entryTransferSchema = z
  .object({
    id: z.string().min(1).max(128),
    side: z.enum(TRANSFER_SIDES),
    /** The other identity: the receiver of a debit, the sender of a credit. */
    party: z.string().regex(ZID_PATTERN),
    /** The face value moved. */
    amount: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
    /** tokensDigest of the envelopes moved. */
    tokens: z.string().regex(HEX64),
  })
  .strict();
export type EntryTransfer = z.infer<typeof entryTransferSchema>;

export const entrySchema = z
  .object({
    v: z.literal(1),
    zid: z.string().regex(ZID_PATTERN),
    epoch: z.number().int().min(FIRST_EPOCH),
    seq: z.number().int().min(1),
    prev_hash: z.string().regex(HEX64),
    kind: z.enum(ENTRY_KINDS),
    /** SHA-256 over the write's records of this identity (ledger-ops.ts recordsDigest). */
    records: z.string().regex(HEX64),
    /** The wallet after the write; null when the write leaves it as it was. */
    balance: z.object({ free: credits, paid: credits }).strict().nullable(),
    /** The transfer this write debits or credits, else null. */
    transfer: entryTransferSchema.nullable(),
    /**
     * The home's attempt of the epoch this entry was proposed in (absent: 0): the home starts its next attempt,
     * kept on disk before any entry of it is sent, after a proposal it gave up and when it restarts, so no two of its
     * entries of one epoch share an attempt and a seq, and the entries of a later attempt are proposed after every
     * entry it gave up. A failover candidate takes the chain of the highest (epoch, attempt, seq) its promises show
     * (failover-rules.ts HEAD_ORDER).
     */
    attempt: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
    /**
     * On an epoch entry only: the members the epoch's custody set passes over (custody-set.ts; absent: none). The
     * entry is the certified record of the epoch's set: its custodians read the set from it, and a reconfiguration
     * (the home opening an epoch of its own to replace a custodian gone too long) is such an entry.
     */
    excluded: excludedSchema.optional(),
  })
  .strict()
  .refine((e) => e.excluded === undefined || e.kind === 'epoch', { message: 'only an epoch entry names excluded custodians', path: ['excluded'] });
export type CustodyEntry = z.infer<typeof entrySchema>;

/** A custodian's signature of an entry. */
export interface EntrySignature {
  node: string;
  signature: string;
}

export function entryHash(entry: CustodyEntry): string {
  return sha256Hex(canonicalJson(entry));
}

/** SHA-256 of the JCS array of a transfer's token ids, sorted: the same at both ends whatever order they travel in. */
export function tokensDigest(tokenIds: readonly string[]): string {
  return sha256Hex(canonicalJson([...tokenIds].sort()));
}

/** The text a custodian signs for an entry. */
export function signingTextOf(hash: string): string {
  return `${SIGNATURE_PREFIX}${hash}`;
}

/** A custodian's signature on `hash`, checked against the public key its peer id embeds. */
export function verifyEntrySignature(verify: (signer: string, text: string, signature: string) => boolean, hash: string, s: EntrySignature): boolean {
  return verify(s.node, signingTextOf(hash), s.signature);
}

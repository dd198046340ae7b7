// The wire of custody (docs/protocol.md §19): the libp2p stream protocol /svc/custody/1. One request and one answer
// per stream, each a frame of mesh/frame.ts (varint length + canonical JSON). The home sends a batch of entries, of
// one or many of its identities, each with its records, with the mesh handshake (an HMAC with the mesh secret over
// the sender, the tick and the batch's digest: only a mesh member proposes); noise authenticates the stream, so the
// remote peer id is the sender. The custodian answers one result per entry, in order: its signature, or a refusal
// with its code. A `fetch` asks a node for an identity's chain from a seq (state transfer, replica.ts).
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { debitCertificateSchema, MAX_CERTIFICATE_SIGNATURES } from './debit-certificate.js';
import { excludedSchema } from './custody-set.js';
import { entrySchema, ZID_PATTERN } from './entry.js';
import { changeSchema, homeChangeSchema } from './home-change.js';
import { signedPromiseSchema } from './promise.js';

export const CUSTODY_PROTOCOL = '/svc/custody/1';
/**
 * Entries per batch: the replicator sends what accumulated while the last batch was in flight, at most this many
 * (an entry is ~420 bytes of JSON, so a full batch stays far below the frame limit).
 */
export const MAX_BATCH_ENTRIES = 1024;
/**
 * Credits (each with its debit certificate, ~1.2 KiB with three signatures) per batch: with MAX_BATCH_ENTRIES entries
 * the request stays within MAX_REQUEST_BYTES.
 */
export const MAX_BATCH_CERTIFICATES = 256;
export const MAX_REQUEST_BYTES = 8 * 1024 * 1024;
/**
 * The records of one entry, as the sum of their keys' and values' lengths: a write larger than this (a folder move of
 * thousands of envelopes) is not certified (503). With the entry around it, one such entry fits a request.
 */
export const MAX_ENTRY_RECORDS_BYTES = 6 * 1024 * 1024;
/** Records (ops) of one entry. */
export const MAX_ENTRY_RECORD_OPS = 50_000;

/**
 * The sublevels an entry's records may name (ledger-ops.ts LEDGER_SUBLEVELS): the identity's ledger, its tier and its
 * audit rows, and what rides with them in the same write (replica.ts recordsFault): its sealed results and their
 * record, its counter record and day counters, its transfers and their outbox entries; the transfers credited to it.
 */
export const RECORD_SUBLEVELS = [
  'wallets',
  'envelopes',
  'env_owner',
  'env_folder',
  'chain_rows',
  'results',
  'result_index',
  'record',
  'record_by_owner',
  'counters',
  'transfers',
  'transfer_outbox',
  'transfer_credits',
  'tiers',
] as const;
export type RecordSublevel = (typeof RECORD_SUBLEVELS)[number];

/**
 * One record of a write: `["put", sublevel, key, JSON text]`, `["put64", sublevel, key, base64 bytes]` or
 * `["del", sublevel, key]`, the value as the home's store writes it.
 */
export type RecordOp = ['put', RecordSublevel, string, string] | ['put64', RecordSublevel, string, string] | ['del', RecordSublevel, string];

/** An entry's records (version 1): the ops of the write its `records` digest covers, in the write's order. */
export interface EntryRecords {
  v: 1;
  ops: RecordOp[];
}

const recordKey = z.string().min(1).max(512);
const recordSub = z.enum(RECORD_SUBLEVELS);
export const entryRecordsSchema = z
  .object({
    v: z.literal(1),
    ops: z
      .array(
        z.union([
          z.tuple([z.literal('put'), recordSub, recordKey, z.string()]),
          z.tuple([z.literal('put64'), recordSub, recordKey, z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/)]),
          z.tuple([z.literal('del'), recordSub, recordKey]),
        ]),
      )
      .max(MAX_ENTRY_RECORD_OPS),
  })
  .strict()
  .refine((r) => recordsSize(r as EntryRecords) <= MAX_ENTRY_RECORDS_BYTES, { message: `records over ${MAX_ENTRY_RECORDS_BYTES} bytes` });

/** The records' size as MAX_ENTRY_RECORDS_BYTES counts it (and the batcher estimates a request's). */
export function recordsSize(r: EntryRecords): number {
  let n = 0;
  for (const op of r.ops) n += op[2].length + (op[0] === 'del' ? 0 : op[3].length) + 24;
  return n;
}

/**
 * An entry's `records`: SHA-256 over its records in order, each `type|sublevel|key|` (type `put` or `del`; a put64's
 * type is `put`), then a put's value (the JSON text's UTF-8, or the bytes), then a newline.
 */
export function recordsDigest(r: EntryRecords): string {
  const h = createHash('sha256');
  for (const op of r.ops) {
    h.update(`${op[0] === 'del' ? 'del' : 'put'}|${op[1]}|${op[2]}|`);
    if (op[0] === 'put') h.update(op[3]);
    else if (op[0] === 'put64') h.update(Buffer.from(op[3], 'base64'));
    h.update('\n');
  }
  return h.digest('hex');
}
export const MAX_ANSWER_BYTES = 512 * 1024;
/** How far the request's tick may be from the custodian's (the mesh's handshake window, mesh/validator.ts). */
export const MAX_SKEW_TICKS = 120;

const handshake = z.string().min(1).max(128);

/** A batch of entries proposed by their home (a request without `kind` is one). */
export const proposalRequestSchema = z
  .object({
    v: z.literal(1),
    kind: z.literal('propose').optional(),
    svcond: z.number().int().min(0),
    entries: z.array(entrySchema).min(1).max(MAX_BATCH_ENTRIES),
    /** One per entry, in order: the records its `records` digest covers. */
    records: z.array(entryRecordsSchema).max(MAX_BATCH_ENTRIES),
    /**
     * Present when the batch holds a transfer credit: one per entry, in order, the sender's debit certificate of a
     * credit and null for any other entry.
     */
    certificates: z.array(debitCertificateSchema.nullable()).max(MAX_BATCH_ENTRIES).optional(),
    /** 'v1=' + HMAC(mesh secret, `${sender}|${svcond}|${digest of the request without handshake}`) (mesh/wire.ts handshakeFor). */
    handshake,
  })
  .strict()
  .refine((r) => r.records.length === r.entries.length, { message: 'one records per entry' })
  .refine((r) => r.certificates === undefined || r.certificates.length === r.entries.length, { message: 'one certificate (or null) per entry' });
export type ProposalRequest = z.infer<typeof proposalRequestSchema>;

/** Entries held here of an identity, from seq `from` (state transfer: a custodian catching up, a new home). */
export const chainRequestSchema = z
  .object({
    v: z.literal(1),
    kind: z.literal('fetch'),
    svcond: z.number().int().min(0),
    zid: z.string().regex(ZID_PATTERN),
    from: z.number().int().min(1),
    handshake,
  })
  .strict();
export type ChainRequest = z.infer<typeof chainRequestSchema>;

/**
 * The home changes a node keeps of an identity above an epoch (home-history.ts): a node that missed the change of an
 * epoch learns its home, each change checked from an epoch it knows. Any mesh member may ask: changes are public.
 */
export const changesRequestSchema = z
  .object({
    v: z.literal(1),
    kind: z.literal('changes'),
    svcond: z.number().int().min(0),
    zid: z.string().regex(ZID_PATTERN),
    after: z.number().int().min(1),
    handshake,
  })
  .strict();
export type ChangesRequest = z.infer<typeof changesRequestSchema>;

/** Changes per answer (each at most ~3 KiB with seven promises). */
export const MAX_CHANGES_PER_ANSWER = 64;

export const changesAnswerSchema = z
  .object({
    v: z.literal(1),
    refused: z
      .object({ code: z.literal('bad-request'), reason: z.string().max(500) })
      .strict()
      .optional(),
    /** The changes above the request's `after`, oldest first. */
    changes: z.array(changeSchema).max(MAX_CHANGES_PER_ANSWER),
    /** More changes follow the last one (ask again above its epoch). */
    more: z.boolean(),
    /**
     * The highest epoch of the identity the answering node accepted (signed an entry of) or promised as a custodian
     * (absent: none): a home back from a stop reads in it whether a later epoch may exist (home-check.ts).
     */
    fenced: z.number().int().min(1).optional(),
  })
  .strict();
export type ChangesAnswer = z.infer<typeof changesAnswerSchema>;

export const custodyRequestSchema = z.union([proposalRequestSchema, chainRequestSchema]);
export type CustodyRequest = z.infer<typeof custodyRequestSchema>;

/**
 * A candidate asks a custodian to promise it an epoch of an identity (promise.ts): `kind` tells it from a batch of
 * entries, which has none. The handshake is the batch's formula over this request without it.
 */
export const promiseRequestSchema = z
  .object({
    v: z.literal(1),
    kind: z.literal('promise'),
    svcond: z.number().int().min(0),
    zid: z.string().regex(ZID_PATTERN),
    epoch: z.number().int().min(2),
    /** The members the candidate's set passes over in that epoch (custody-set.ts; absent: none): the promise names them. */
    excluded: excludedSchema.optional(),
    /**
     * The latest home change of the identity the candidate knows (home-change.ts, with the earlier ones it carries;
     * absent: none): a custodian that has not heard of it (an old home back from a crash, which still believes itself
     * the home) checks it and applies it before it decides.
     */
    change: homeChangeSchema.optional(),
    handshake,
  })
  .strict();
export type PromiseRequest = z.infer<typeof promiseRequestSchema>;

/**
 * The promise, or why not: `home` (the custodian is the identity's home), `stale` (it accepted that epoch already),
 * `promised` (it promised that epoch or a later one to another candidate). A refusal carries the custodian's latest
 * home change of the identity when it is later than the one the request carried (`home`): the candidate learns it.
 */
export const promiseAnswerSchema = z.union([
  z.object({ v: z.literal(1), promise: signedPromiseSchema }).strict(),
  z
    .object({
      v: z.literal(1),
      refused: z
        .object({
          code: z.enum(['home', 'promised', 'stale', 'bad-request']),
          reason: z.string().max(500),
          epoch: z.number().int().min(1).optional(),
          home: homeChangeSchema.optional(),
        })
        .strict(),
    })
    .strict(),
]);
export type PromiseAnswer = z.infer<typeof promiseAnswerSchema>;

const refusalCodes = [
  'not-home',
  'fenced',
  'slot-taken',
  'seq',
  'prev-hash',
  'balance',
  'transfer-reused',
  'debit-uncertified',
  'records-mismatch',
  'behind',
  'not-custodian',
  'bad-request',
  'unavailable',
] as const;

export const custodyResultSchema = z.union([
  z.object({ ok: z.literal(true), signature: z.string().min(1).max(128) }).strict(),
  z
    .object({
      ok: z.literal(false),
      code: z.enum(refusalCodes),
      reason: z.string().max(500),
      /** With `seq`, `prev-hash` and `behind`: the custodian's head (what it would take next is head.seq + 1). */
      head: z
        .object({ seq: z.number().int().min(0), hash: z.string() })
        .strict()
        .optional(),
      /** With `fenced`: the home change that fenced the epoch, when the custodian knows it (home-change.ts). */
      home: homeChangeSchema.optional(),
    })
    .strict(),
]);
export type CustodyResult = z.infer<typeof custodyResultSchema>;

export const custodyAnswerSchema = z
  .object({
    v: z.literal(1),
    /** The whole batch refused (a bad handshake, a malformed request): every entry's result. */
    refused: z
      .object({ code: z.enum(refusalCodes), reason: z.string().max(500) })
      .strict()
      .optional(),
    results: z.array(custodyResultSchema).max(MAX_BATCH_ENTRIES),
  })
  .strict();
export type CustodyAnswer = z.infer<typeof custodyAnswerSchema>;

/** Entries per chain page, and the bytes a page fills before it ends (at least one entry, whatever its size). */
export const MAX_CHAIN_LINKS = 256;
export const CHAIN_PAGE_BYTES = 1024 * 1024;
/** A chain answer: one entry of the largest records fits. */
export const MAX_CHAIN_ANSWER_BYTES = MAX_REQUEST_BYTES;

/** An entry as state transfer carries it: with its records, the signatures the answering node holds, a credit's debit certificate. */
export const chainLinkSchema = z
  .object({
    entry: entrySchema,
    records: entryRecordsSchema,
    signatures: z.array(z.object({ node: z.string().min(1).max(128), signature: z.string().min(1).max(128) }).strict()).max(MAX_CERTIFICATE_SIGNATURES),
    certificate: debitCertificateSchema.nullable(),
  })
  .strict();
export type ChainLink = z.infer<typeof chainLinkSchema>;

export const chainAnswerSchema = z
  .object({
    v: z.literal(1),
    refused: z
      .object({ code: z.enum(refusalCodes), reason: z.string().max(500) })
      .strict()
      .optional(),
    /** The answering node's head of the identity (null: it holds none); a home's names its attempt (entry.ts). */
    head: z
      .object({ epoch: z.number().int().min(1), seq: z.number().int().min(0), hash: z.string(), attempt: z.number().int().min(0).optional() })
      .strict()
      .nullable(),
    /** Entries from the request's `from`, in seq order. */
    links: z.array(chainLinkSchema).max(MAX_CHAIN_LINKS),
    /** More entries follow the last one (ask again from its seq + 1). */
    more: z.boolean(),
  })
  .strict();
export type ChainAnswer = z.infer<typeof chainAnswerSchema>;

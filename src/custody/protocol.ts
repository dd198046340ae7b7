// The wire of custody (docs/protocol.md §19): the libp2p stream protocol /svc/custody/1. One request and one answer
// per stream, each a frame of mesh/frame.ts (varint length + canonical JSON). The home sends a batch of entries, of
// one or many of its identities, with the mesh handshake (an HMAC with the mesh secret over the sender, the tick and
// the batch's digest: only a mesh member proposes); noise authenticates the stream, so the remote peer id is the
// sender. The custodian answers one result per entry, in order: its signature, or a refusal with its code.
import { z } from 'zod';
import { debitCertificateSchema } from './debit-certificate.js';
import { entrySchema, ZID_PATTERN } from './entry.js';
import { homeChangeSchema } from './home-change.js';
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
export const MAX_REQUEST_BYTES = 1024 * 1024;
export const MAX_ANSWER_BYTES = 512 * 1024;
/** How far the request's tick may be from the custodian's (the mesh's handshake window, mesh/validator.ts). */
export const MAX_SKEW_TICKS = 120;

export const custodyRequestSchema = z
  .object({
    v: z.literal(1),
    svcond: z.number().int().min(0),
    entries: z.array(entrySchema).min(1).max(MAX_BATCH_ENTRIES),
    /**
     * Present when the batch holds a transfer credit: one per entry, in order, the sender's debit certificate of a
     * credit and null for any other entry.
     */
    certificates: z.array(debitCertificateSchema.nullable()).max(MAX_BATCH_ENTRIES).optional(),
    /** 'v1=' + HMAC(mesh secret, `${sender}|${svcond}|${digest of {v, svcond, entries}}`) (mesh/wire.ts handshakeFor). */
    handshake: z.string().min(1).max(128),
  })
  .strict()
  .refine((r) => r.certificates === undefined || r.certificates.length === r.entries.length, { message: 'one certificate (or null) per entry' });
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
    handshake: z.string().min(1).max(128),
  })
  .strict();
export type PromiseRequest = z.infer<typeof promiseRequestSchema>;

/** The promise, or why not: `promised` (it promised that epoch or a later one to another candidate), `stale` (it accepted that epoch already). */
export const promiseAnswerSchema = z.union([
  z.object({ v: z.literal(1), promise: signedPromiseSchema }).strict(),
  z
    .object({
      v: z.literal(1),
      refused: z
        .object({ code: z.enum(['promised', 'stale', 'bad-request']), reason: z.string().max(500), epoch: z.number().int().min(1).optional() })
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
      /** With `seq` and `prev-hash`: the custodian's head (what it would take next is head.seq + 1). */
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

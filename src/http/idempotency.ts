// Safe retries of writes: a keyed POST, PUT, PATCH or DELETE sent with an Idempotency-Key header (the IETF httpapi
// draft's field) is applied once. Its successful answer is kept (idempotent-answers.ts); the same request sent again
// with the same key gets that answer again, marked Idempotent-Replayed, and nothing is applied or charged twice. This
// is what a client told `may_have_applied: true` (forward.ts) retries with. Scope: the caller's key, so two callers'
// idempotency keys never meet. The header travels with a forwarded request, so the home that applied the write
// answers the retry whichever node it comes through. A replay is authorised again: an answer given to an API key is not
// sent to that key once it is revoked or expired (its answer may hold a secret, a key minted with it say). A write that
// is not naturally idempotent keeps its answer in its own batch too: a sealed compute or solver run (sealAnswerHooks),
// a transfer, a folder move, a batch's acceptance and a chain event (answerInBatch). A node that stops between that
// batch and the answer's own record replays the answer rather than applying the write again.
import { callerAddress } from './caller-address.js';
import { createHash } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { Logger } from 'pino';
import type { Op } from '../store/db.js';
import type { SealHooks } from '../compute/service.js';
import { ServiceError } from '../kernel/errors.js';
import type { Caller } from '../records/types.js';
import { presentedKey } from './auth.js';
import { ANSWER_KEPT_MAX_BYTES, ANSWER_KEPT_MS, type IdempotentAnswers, type KeptAnswer } from './idempotent-answers.js';

export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'Idempotent-Replayed';
const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** Longest idempotency key taken (a UUID is 36 characters). */
export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;
/** An answer header kept with the answer: what describes it, not the connection or this one exchange. */
const KEPT_HEADER = /^(content-type|location|x-svc-[a-z0-9-]+)$/;
/** The content type of a sealed result's answer (routes/compute.ts sendSealed) and of Koa's JSON bodies. */
const JSON_TYPE = 'application/json; charset=utf-8';

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The header's value as a key: a structured-field string ("…") or the bare text; null when malformed. */
export function parseIdempotencyKey(raw: string): string | null {
  const value = raw.length >= 2 && raw.startsWith('"') && raw.endsWith('"') ? raw.slice(1, -1) : raw;
  if (value.length === 0 || value.length > IDEMPOTENCY_KEY_MAX_LENGTH) return null;
  return /^[\x21-\x7e]+$/.test(value) && !value.includes('"') ? value : null;
}

/**
 * The caller's key as the request carries it (Bearer header or ?key=), or null for a keyless request or a malformed
 * header (the route refuses it).
 */
function callerKey(ctx: Context): string | null {
  try {
    return presentedKey(ctx);
  } catch {
    return null;
  }
}

/** The request's method, path and query (without ?key=) and body: what a reused key must match. */
function fingerprintOf(ctx: Context): string {
  const u = new URL(ctx.originalUrl, 'http://local');
  u.searchParams.delete('key');
  return sha256(`${ctx.method} ${u.pathname}${u.search}\n${(ctx.request as { rawBody?: string }).rawBody ?? ''}`);
}

/** The answer's body as text, when it is one that can be sent again (not a stream). */
function bodyText(body: unknown): string | undefined {
  if (body === undefined || body === null) return '';
  if (typeof body === 'string') return body;
  if (Buffer.isBuffer(body)) return body.toString('utf8');
  if (typeof (body as { pipe?: unknown }).pipe === 'function') return undefined;
  return JSON.stringify(body);
}

/** Where a route finds the ops keeping its write's answer in the write's batch (set for a keyed write with a caller). */
const ANSWER_OPS = 'idempotentAnswerOps';

interface AnswerOps {
  sealed(resultId: string): Op[];
  json(status: number, body: unknown): Op[];
}

/**
 * The hooks a sealing route passes to its seal: they put the answer's record (the result's id) into the seal's batch.
 * Undefined for a request sent without an Idempotency-Key.
 */
export function sealAnswerHooks(ctx: Context): SealHooks | undefined {
  const ops = ctx.state[ANSWER_OPS] as AnswerOps | undefined;
  return ops === undefined ? undefined : { ops: (facts) => ops.sealed(facts.result_id) };
}

/**
 * For a write whose JSON answer is known before its batch commits: the ops keeping that answer (its status and
 * body, as Koa will send it) in the batch. Undefined for a request sent without an Idempotency-Key.
 */
export function answerInBatch(ctx: Context): ((status: number, body: unknown) => Op[]) | undefined {
  const ops = ctx.state[ANSWER_OPS] as AnswerOps | undefined;
  return ops?.json;
}

/** Was the write's caller resolved from an API key (a replay resolves it again)? */
function byKey(ctx: Context): boolean {
  const caller = ctx.state.caller as Caller | undefined;
  return caller !== undefined && caller.kind !== 'anonymous';
}

function replay(ctx: Context, kept: KeptAnswer, body: string | null, idempotencyKey: string): void {
  if (body === null) {
    throw new ServiceError(
      409,
      'SVC_CONFLICT',
      `the request sent with Idempotency-Key ${idempotencyKey} was applied already; its answer was larger than ${ANSWER_KEPT_MAX_BYTES} bytes and was not kept`,
      { idempotency_key: idempotencyKey, applied: true, status: kept.status },
    );
  }
  ctx.status = kept.status;
  for (const [name, value] of Object.entries(kept.headers)) ctx.set(name, value);
  ctx.set(REPLAYED_HEADER, 'true');
  ctx.body = body;
}

/** The scope of a caller's idempotency keys: its API key's id, which a voucher of its home names too. */
function keyScope(keyId: string): string {
  return sha256(`key_id:${keyId}`).slice(0, 32);
}

/** The request's Idempotency-Key, null without one (or for a read); 400 when it is malformed. */
function idempotencyKeyOf(ctx: Context): string | null {
  const raw = ctx.get(IDEMPOTENCY_KEY_HEADER);
  if (!raw || !WRITE_METHODS.has(ctx.method)) return null;
  const idempotencyKey = parseIdempotencyKey(raw);
  if (idempotencyKey === null) {
    throw new ServiceError(
      400,
      'SVC_BAD_REQUEST',
      `Idempotency-Key must be 1 to ${IDEMPOTENCY_KEY_MAX_LENGTH} visible ASCII characters (a UUID, say), optionally in double quotes`,
      { header: 'Idempotency-Key' },
    );
  }
  return idempotencyKey;
}

export interface IdempotentWrites {
  /** App middleware (after the body is read): a keyed write sent with an Idempotency-Key is applied once. */
  middleware(ctx: Context, next: Next): Promise<void>;
  /**
   * At a machine's home, a write forwarded with a voucher of its caller's home (no key travels): applied once in the
   * scope of the key the voucher names, the scope the same key has when it is presented here.
   */
  vouched(ctx: Context, keyId: string, next: Next): Promise<void>;
}

/**
 * Applies writes sent with an Idempotency-Key once (see the file's head). `resolveKey` resolves an API key as the
 * routes do (throws 401 for a revoked, expired or unknown one); a replay of an answer given to a key resolves it again.
 */
export function idempotentWrites(
  answers: IdempotentAnswers,
  logger: Logger,
  resolveKey: (key: string, asker: string) => Promise<{ key_id: string }>,
): IdempotentWrites {
  const inFlight = new Set<string>();

  /** Serve the write once under `scope`; `reauthorise` before a replay of an answer given to a key. */
  async function once(ctx: Context, next: Next, idempotencyKey: string, scope: string, reauthorise: () => Promise<unknown>): Promise<void> {
    const id = `${scope}:${sha256(idempotencyKey).slice(0, 32)}`;
    if (inFlight.has(id)) {
      ctx.set('Retry-After', '1');
      throw new ServiceError(409, 'SVC_CONFLICT', `a request with Idempotency-Key ${idempotencyKey} is still being served: retry when it has its answer`, {
        idempotency_key: idempotencyKey,
        in_progress: true,
      });
    }
    inFlight.add(id);
    try {
      const fingerprint = fingerprintOf(ctx);
      const kept = await answers.get(id);
      if (kept !== undefined) {
        if (kept.fingerprint !== fingerprint) {
          throw new ServiceError(
            409,
            'SVC_IDEMPOTENCY_KEY_REUSED',
            `Idempotency-Key ${idempotencyKey} was used for another request (method, path or body differ, byte for byte): send this one with a new key`,
            {
              idempotency_key: idempotencyKey,
              kept_for_seconds: ANSWER_KEPT_MS / 1000,
            },
          );
        }
        if (kept.by_key === true) await reauthorise();
        replay(ctx, kept, await answers.bodyOf(kept), idempotencyKey);
        return;
      }
      const answerOps: AnswerOps = {
        sealed: (resultId) =>
          answers.opsInBatch(id, { fingerprint, status: 200, headers: { 'content-type': JSON_TYPE }, body: null, result_id: resultId, by_key: byKey(ctx) }),
        json: (status, value) => {
          const text = JSON.stringify(value);
          const body = Buffer.byteLength(text) > ANSWER_KEPT_MAX_BYTES ? null : text;
          return answers.opsInBatch(id, { fingerprint, status, headers: { 'content-type': JSON_TYPE }, body, by_key: byKey(ctx) });
        },
      };
      ctx.state[ANSWER_OPS] = answerOps;
      await next();
      // Only an applied write is kept: an error applied nothing, and the same request may be sent again as new.
      if (ctx.status < 200 || ctx.status >= 300) return;
      const text = bodyText(ctx.body);
      if (text === undefined) return;
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(ctx.response.headers)) {
        if (KEPT_HEADER.test(name) && value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : String(value);
      }
      const body = Buffer.byteLength(text) > ANSWER_KEPT_MAX_BYTES ? null : text;
      // The write is applied whatever happens here: a store failure costs the replay, unless the write kept its answer
      // in its own batch (sealAnswerHooks, answerInBatch).
      await answers.keep(id, { fingerprint, status: ctx.status, headers, body, by_key: byKey(ctx) }).catch((err: unknown) => {
        logger.warn({ err, trace_id: ctx.state.traceId as string }, 'the answer of an idempotent write could not be kept');
      });
    } finally {
      inFlight.delete(id);
    }
  }

  return {
    async middleware(ctx, next) {
      const idempotencyKey = idempotencyKeyOf(ctx);
      if (idempotencyKey === null) return next();
      // A keyless write has no caller to scope the key to: it is served as if the header were absent (decisions.md),
      // unless a voucher names its caller at a machine's home (vouched).
      const key = callerKey(ctx);
      if (key === null) return next();
      // An API key is scoped by its id; what no key record resolves (the operator token; a revoked key, which the
      // route refuses) by the text's digest. A key resolved here needs no second look before a replay.
      const record = await resolveKey(key, callerAddress(ctx)).catch(() => null);
      if (record !== null) return once(ctx, next, idempotencyKey, keyScope(record.key_id), async () => undefined);
      return once(ctx, next, idempotencyKey, sha256(key).slice(0, 32), () => resolveKey(key, callerAddress(ctx)));
    },
    async vouched(ctx, keyId, next) {
      const idempotencyKey = idempotencyKeyOf(ctx);
      if (idempotencyKey === null) return next();
      // The voucher was checked for this request: its caller's home vouches for the key now.
      return once(ctx, next, idempotencyKey, keyScope(keyId), async () => undefined);
    },
  };
}

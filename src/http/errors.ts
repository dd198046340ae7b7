// Part 7: every error is {error:{code, message, details?, trace_id, timestamp, documentation_url, …extra}}.
// The trace id is also in the X-Trace-Id header and in the log line. A client mistake is never a 500.
import { loggedPath } from './logged-path.js';
import type { Context, Next } from 'koa';
import type { Logger } from 'pino';
import { z } from 'zod';
import { ServiceError, type ErrorCode } from '../kernel/errors.js';
import { errorAnchor, retryAdvice } from '../kernel/error-catalogue.js';
import { StoreWriteError } from '../store/db.js';

/**
 * The error catalogue this node serves (routes/docs.ts), one anchor per code. documentation_url is this path, relative:
 * an error made before routing (Node's parser, the MCP tools, a WebSocket upgrade) cannot know which of the node's
 * addresses the client used, and a relative reference resolves against the URL that answered, behind any proxy.
 */
export const ERRORS_PATH = '/api/errors';

/** The catalogue entry of a code: what documentation_url (and SVC_NO_KEY's docs_url) give. */
export function documentationUrl(code: ErrorCode): string {
  return `${ERRORS_PATH}#${errorAnchor(code)}`;
}

/** Statuses whose answers carry a Retry-After header when the error says when to come back (RFC 6585, RFC 9110 §10.2.3). */
const RETRY_AFTER_STATUSES = new Set([429, 503]);

export function errorPayload(
  ctx: Context,
  status: number,
  code: ErrorCode,
  message: string,
  extra: Record<string, unknown> = {},
  details?: unknown,
): Record<string, unknown> {
  return errorBody(ctx.state.traceId as string, status, code, message, extra, details);
}

/** The part-7 body for a trace id (errorPayload without a Koa context: Node's parser errors, server.ts). */
export function errorBody(
  traceId: string,
  status: number,
  code: ErrorCode,
  message: string,
  extra: Record<string, unknown> = {},
  details?: unknown,
): Record<string, unknown> {
  return {
    error: {
      code,
      message,
      ...(details !== undefined ? { details } : {}),
      ...extra,
      // Part 7's retryable codes: retryable and when (the error's own figure, else the catalogue's first backoff step).
      ...retryAdvice(code, extra.retry_after_seconds),
      status,
      trace_id: traceId,
      timestamp: new Date().toISOString(),
      documentation_url: documentationUrl(code),
    },
  };
}

export function sendError(ctx: Context, err: ServiceError): void {
  ctx.status = err.status;
  const retry = retryAdvice(err.code, err.extra.retry_after_seconds)?.retry_after_seconds ?? err.extra.retry_after_seconds;
  // Every 429, and a 503 that says when to come back (SVC_HOME_UNREACHABLE), carries Retry-After. A retryable 500
  // (SVC_TIMEOUT, SVC_SOLVER_ERROR) says it in the body only: HTTP defines the header for 429, 503 and 3xx.
  if (RETRY_AFTER_STATUSES.has(err.status) && typeof retry === 'number') ctx.set('Retry-After', String(Math.max(1, Math.ceil(retry))));
  if (err.status === 429 && !ctx.response.get('Retry-After')) ctx.set('Retry-After', '1');
  ctx.body = errorPayload(ctx, err.status, err.code, err.message, err.extra, err.details);
}

/** Map errors thrown by Koa, body parsing and libraries onto part-7 codes. */
function classify(err: unknown): ServiceError {
  if (err instanceof ServiceError) return err;
  const e = err as { status?: number; statusCode?: number; type?: string; message?: string; expose?: boolean };
  const status = e.status ?? e.statusCode;
  if (e.type === 'entity.parse.failed' || (status === 400 && /json/i.test(e.message ?? ''))) {
    return new ServiceError(400, 'SVC_INVALID_JSON', 'request body is not valid JSON');
  }
  if (e.type === 'entity.too.large' || status === 413)
    return new ServiceError(413, 'SVC_PAYLOAD_TOO_LARGE', 'request body is too large', { limit_bytes: 1_048_576 });
  if (e.type === 'encoding.unsupported' || status === 415) return new ServiceError(415, 'SVC_UNSUPPORTED_MEDIA_TYPE', e.message ?? 'unsupported content type');
  if (typeof status === 'number' && status >= 400 && status < 500)
    return new ServiceError(status, 'SVC_BAD_REQUEST', e.expose && e.message ? e.message : 'bad request');
  if (err instanceof StoreWriteError) {
    return new ServiceError(503, 'SVC_STORAGE_UNAVAILABLE', 'the node could not write to its store: nothing was sealed or charged; try again', {
      retry_after_seconds: 1,
    });
  }
  return new ServiceError(500, 'SVC_INTERNAL_ERROR', 'internal error');
}

export function errorMiddleware(logger: Logger) {
  return async function renderErrors(ctx: Context, next: Next): Promise<void> {
    try {
      await next();
    } catch (err) {
      const se = classify(err);
      // A thrown error the node did not type, or one it typed as its own fault (SVC_INTERNAL_ERROR: a NaN to hash, a
      // corrupt record): logged with its stack, under the trace id the caller was given.
      if (se.status >= 500 && (!(err instanceof ServiceError) || se.code === 'SVC_INTERNAL_ERROR')) {
        logger.error({ err, trace_id: ctx.state.traceId, path: loggedPath(ctx.path) }, 'unhandled error');
      } else {
        logger.debug({ trace_id: ctx.state.traceId, code: se.code, status: se.status, path: loggedPath(ctx.path) }, 'request error');
      }
      sendError(ctx, se);
    }
  };
}

/** The part-7 error object as a schema: the OpenAPI document's Error component (every error body fits it). */
export const errorSchema = z
  .looseObject({
    error: z.looseObject({
      code: z.string().describe('a part-7 code, e.g. SVC_INVALID_INPUT'),
      message: z.string(),
      details: z.unknown().optional(),
      status: z.number().int().min(400).max(599),
      trace_id: z.string(),
      timestamp: z.string(),
      documentation_url: z.string(),
    }),
  })
  .describe('Part 7 error object; individual codes add their own fields (limit, retry_after_seconds, allow, …)');

// JSON request bodies: taken from the request's buffer when they came whole with the headers, else read with
// raw-body (length check, size limit, decoding); parsed with JSON.parse.
// Replaces @koa/bodyparser, whose content-type matching and parser layers cost ~10 % of a sealed compute.
// What it accepts:
// - JSON media types (application/json, anything +json): an object or array; an empty body is {}.
// - No content type, text/plain or a form type, when the body is empty or starts with { or [ (what `curl -d '{…}'`
//   sends): parsed as JSON, so a forgotten header is not a silent empty body.
// - Anything else with a body: 415 (this and the 400s below are thrown when the route reads the body, after its
//   authentication). A body over the limit: 413. Invalid JSON, a scalar at the top level or a
//   __proto__ / constructor.prototype key (prototype poisoning): 400 SVC_INVALID_JSON. Arrays and objects nested
//   deeper than BODY_MAX_DEPTH, or a string or key holding a lone UTF-16 surrogate (a `\ud800` escape without its
//   pair, which nothing the node hashes or signs can carry): 400 SVC_INVALID_INPUT naming the field's path.
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import type { Context, Next } from 'koa';
import getRawBody from 'raw-body';
import { ServiceError } from '../kernel/errors.js';
import { InputError } from '../solvers/errors.js';

export const BODY_LIMIT_BYTES = 1_048_576;
const PARSED_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'QUERY']);
// These two match RFC 8259's whitespace, control characters included on purpose.
/* eslint-disable no-control-regex */
/** RFC 8259 whitespace, then the start of an object or array. */
const OBJECT_OR_ARRAY = /^[\x20\x09\x0a\x0d]*[[{]/;
/** Empty or RFC 8259 whitespace only. */
const BLANK = /^[\x20\x09\x0a\x0d]*$/;
/* eslint-enable no-control-regex */
const LENIENT_TYPES = new Set(['text/plain', 'application/x-www-form-urlencoded']);

type BodyKind = 'json' | 'lenient' | 'other';

function bodyKind(contentType: string | undefined): BodyKind {
  if (contentType === undefined || contentType === '') return 'lenient';
  const semi = contentType.indexOf(';');
  const type = (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
  if (type === 'application/json' || (type.endsWith('+json') && type.startsWith('application/'))) return 'json';
  return LENIENT_TYPES.has(type) ? 'lenient' : 'other';
}

function decoded(req: Readable & { headers: Record<string, string | string[] | undefined> }): { stream: Readable; length: number | undefined } {
  const encoding = String(req.headers['content-encoding'] ?? 'identity').toLowerCase();
  const declared = req.headers['content-length'];
  const length = declared === undefined ? undefined : Number(declared);
  switch (encoding) {
    case 'identity':
      return { stream: req, length };
    case 'gzip':
      return { stream: req.pipe(createGunzip()), length: undefined };
    case 'deflate':
      return { stream: req.pipe(createInflate()), length: undefined };
    case 'br':
      return { stream: req.pipe(createBrotliDecompress()), length: undefined };
    default:
      throw new ServiceError(415, 'SVC_UNSUPPORTED_MEDIA_TYPE', `content encoding ${encoding} is not supported (identity, gzip, deflate, br)`);
  }
}

/** Deepest nesting of arrays and objects a body may have: far above any route's schema, low enough for recursion. */
export const BODY_MAX_DEPTH = 64;
/** A text shorter than this cannot nest deeper than BODY_MAX_DEPTH (each level takes an opening and a closing). */
const DEPTH_CHECK_MIN_LENGTH = 2 * (BODY_MAX_DEPTH + 1);
/**
 * An escape of a surrogate code unit (\uD800 to \uDFFF). UTF-8 text decodes to well-formed strings only (a bad
 * sequence becomes U+FFFD), so a parsed body can hold a lone surrogate only where its text has such an escape.
 */
const SURROGATE_ESCAPE = /\\u[dD][89abcdefABCDEF]/;
/** String.prototype.isWellFormed (ES2024, in Node ≥ 20); the project's TypeScript lib predates it. */
type WellFormed = { isWellFormed(): boolean };
const wellFormed = (s: string): boolean => (s as unknown as WellFormed).isWellFormed();
const joinPath = (parent: string, segment: string): string => (parent === '' ? segment : `${parent}.${segment}`);

function loneSurrogate(path: string, where: 'string' | 'key'): InputError {
  // A lone surrogate has no UTF-8 form and no RFC 8785 text: it would fail only when the body is hashed or signed.
  return new InputError(path, `a ${where} holds a lone UTF-16 surrogate; only well-formed Unicode text is accepted`, null);
}

function isPoisoned(obj: Record<string, unknown>): boolean {
  if (Object.prototype.hasOwnProperty.call(obj, '__proto__')) return true;
  const ctor = obj.constructor;
  return (
    Object.prototype.hasOwnProperty.call(obj, 'constructor') &&
    ctor !== null &&
    typeof ctor === 'object' &&
    Object.prototype.hasOwnProperty.call(ctor, 'prototype')
  );
}

/**
 * One walk of a parsed body for its nesting depth, (when `poisonable`) its prototype-poisoning keys and (when
 * `surrogates`) strings and keys holding a lone surrogate, named by their path (`a.0.b`). Iterative, with its own
 * stack: JSON.parse accepts a 1 MiB body nested ~500,000 levels deep, which a recursive walk (or any later recursive
 * serialisation) would overflow into a 500. Paths are kept only when `surrogates`, and no deeper than the depth bound.
 */
function checkShape(root: unknown, poisonable: boolean, surrogates: boolean): void {
  if (root === null || typeof root !== 'object') return;
  const values: object[] = [root];
  const depths: number[] = [1];
  const paths: string[] = [''];
  while (values.length > 0) {
    const value = values.pop()!;
    const depth = depths.pop()!;
    const path = surrogates ? paths.pop()! : '';
    if (depth > BODY_MAX_DEPTH) throw new InputError('body', `arrays and objects nest deeper than ${BODY_MAX_DEPTH} levels`, { max_depth: BODY_MAX_DEPTH });
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const v: unknown = value[i];
        if (v !== null && typeof v === 'object') {
          values.push(v);
          depths.push(depth + 1);
          if (surrogates) paths.push(joinPath(path, String(i)));
        } else if (surrogates && typeof v === 'string' && !wellFormed(v)) {
          throw loneSurrogate(joinPath(path, String(i)), 'string');
        }
      }
      continue;
    }
    const obj = value as Record<string, unknown>;
    if (poisonable && isPoisoned(obj)) {
      throw new ServiceError(400, 'SVC_INVALID_JSON', 'request body is not valid JSON: __proto__ and constructor.prototype keys are not accepted');
    }
    for (const k in obj) {
      const v = obj[k];
      // The key is named escaped (`\ud800`), so the message itself stays well-formed.
      if (surrogates && !wellFormed(k)) throw loneSurrogate(joinPath(path, JSON.stringify(k).slice(1, -1)), 'key');
      if (v !== null && typeof v === 'object') {
        values.push(v);
        depths.push(depth + 1);
        if (surrogates) paths.push(joinPath(path, k));
      } else if (surrogates && typeof v === 'string' && !wellFormed(v)) {
        throw loneSurrogate(joinPath(path, k), 'string');
      }
    }
  }
}

/**
 * Parse JSON request text: an object or array, {} when empty. Throws SVC_INVALID_JSON, or SVC_INVALID_INPUT when too
 * deep or when a string or key holds a lone surrogate.
 */
export function parseJsonBody(text: string): unknown {
  if (BLANK.test(text)) return {};
  if (!OBJECT_OR_ARRAY.test(text)) throw new ServiceError(400, 'SVC_INVALID_JSON', 'request body is not valid JSON: only an object or an array is accepted');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new ServiceError(400, 'SVC_INVALID_JSON', `request body is not valid JSON: ${(err as Error).message}`);
  }
  // The walk is skipped when it cannot find anything: a short text cannot be deep, and the key names and surrogate
  // escapes only occur in the text when someone wrote them.
  const poisonable = text.includes('__proto__') || text.includes('constructor');
  const surrogates = SURROGATE_ESCAPE.test(text);
  if (poisonable || surrogates || text.length >= DEPTH_CHECK_MIN_LENGTH) checkShape(parsed, poisonable, surrogates);
  return parsed;
}

function readError(err: unknown): ServiceError {
  const e = err as { type?: string; message?: string };
  if (err instanceof ServiceError) return err;
  if (e.type === 'entity.too.large') return new ServiceError(413, 'SVC_PAYLOAD_TOO_LARGE', 'request body is too large', { limit_bytes: BODY_LIMIT_BYTES });
  if (e.type === 'encoding.unsupported' || e.type === 'charset.unsupported')
    return new ServiceError(415, 'SVC_UNSUPPORTED_MEDIA_TYPE', e.message ?? 'unsupported body encoding');
  // Length mismatch, aborted request, bad compressed data: the body could not be read as sent.
  return new ServiceError(400, 'SVC_INVALID_BODY', `request body could not be read: ${e.message ?? 'unknown error'}`);
}

/**
 * The whole body of a request whose `length` bytes are all in its buffer, as text; undefined otherwise. (The parser
 * never buffers more than the declared length, so then the body is whole, even before the request is marked complete.)
 */
function bufferedText(req: IncomingMessage, length: number): string | undefined {
  if (req.readableLength !== length) return undefined;
  if (length === 0) return '';
  const bytes = req.read(length) as Buffer | null;
  if (bytes === null || bytes.length !== length) return undefined;
  const text = bytes.toString('utf8');
  // As raw-body's decoder does: a UTF-8 byte order mark is not part of the text.
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** Middleware: sets ctx.request.body (parsed JSON, {} when there is none) and ctx.request.rawBody (the text). */
export function jsonBody() {
  return async function parseBody(ctx: Context, next: Next): Promise<void> {
    if (!PARSED_METHODS.has(ctx.method) || ctx.request.body !== undefined) return next();
    const req = ctx.req;
    const kind = bodyKind(req.headers['content-type']);
    // No body at all (no length, not chunked): nothing to read.
    if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined) {
      ctx.request.body = {};
      ctx.request.rawBody = '';
      return next();
    }
    let text: string | undefined;
    try {
      const { stream, length } = decoded(req);
      if (stream === req && length !== undefined && length <= BODY_LIMIT_BYTES) {
        // A small body comes in the packet of its headers: the parser delivers it after the handlers of the headers
        // return, so one microtask later it is in the request's buffer, whole, and is taken from there (raw-body's
        // listeners, decoder and events cost ~4 µs per request). A body still on its way is read with raw-body.
        await null;
        text = bufferedText(req, length);
      }
      text ??= await getRawBody(stream, { length, limit: BODY_LIMIT_BYTES, encoding: 'utf8' });
    } catch (err) {
      // The rest of the body is still unread (a 413 stops reading): the connection cannot carry another request.
      ctx.set('Connection', 'close');
      throw readError(err);
    }
    ctx.request.rawBody = text;
    let parsed: unknown;
    try {
      if (kind === 'other' && text.length > 0) {
        throw new ServiceError(
          415,
          'SVC_UNSUPPORTED_MEDIA_TYPE',
          `content type ${req.headers['content-type']} is not accepted: send JSON with Content-Type: application/json`,
        );
      }
      if (kind === 'lenient' && !BLANK.test(text) && !OBJECT_OR_ARRAY.test(text)) {
        throw new ServiceError(415, 'SVC_UNSUPPORTED_MEDIA_TYPE', `this body is not JSON: send JSON with Content-Type: application/json`);
      }
      parsed = parseJsonBody(text);
    } catch (err) {
      if (!(err instanceof ServiceError) && !(err instanceof InputError)) throw err;
      refuseWhenRead(ctx.request, err);
      return next();
    }
    ctx.request.body = parsed;
    return next();
  };
}

/**
 * A body that was read whole but cannot be taken (not JSON, a media type not accepted, a lone surrogate) is refused
 * when the route reads it, not before: a route authenticates first and reads its body after, so a caller without a
 * valid key hears 401 whatever it sent, and one with a key hears what is wrong with its body. The bytes were all read,
 * so the connection stays usable. A route that takes no body never reads it and ignores it, as it ignores a valid one.
 */
function refuseWhenRead(request: Context['request'], err: Error): void {
  Object.defineProperty(request, 'body', {
    configurable: true,
    enumerable: true,
    get() {
      throw err;
    },
    set(value: unknown) {
      Object.defineProperty(request, 'body', { configurable: true, enumerable: true, writable: true, value });
    },
  });
}

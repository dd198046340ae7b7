// zod at the route: a body that does not fit its schema is 400 SVC_INVALID_INPUT (field, reason, allowed).
//
// A route declares its schemas in its middleware list — `router.post(path, auth, body(schema), handler)` — and that
// declaration is both the validation (the middleware parses before the handler runs) and what the OpenAPI document
// (openapi.ts) reads from the router. The handler's own `validate(schema, ctx.request.body)` then returns the parse
// the middleware made (remembered per request object), so a handler reads typed data without a second parse.
import type { Context, Middleware } from 'koa';
import type { z } from 'zod';
import { zodIssueToInputError } from '../solvers/util.js';

/** What a route's middleware tells the OpenAPI document (openapi.ts reads it from the router's layers). */
export interface RouteDoc {
  /** The request body's schema (JSON). */
  body?: z.ZodType;
  /** The query string's schema. */
  query?: z.ZodType;
  /** The success response body's schema. */
  response?: z.ZodType;
  /** The success status when it is not 200 (201 for a creation, 202 for accepted work); several when the route answers several. */
  status?: number | readonly number[];
  /** Who may call: a key (401 without), a key or anonymous (counted by IP), a mesh node (x-node-handshake), the node's operator token. */
  auth?: 'key' | 'optional' | 'node' | 'operator';
  /** The response is not JSON (text/markdown, text/html, text/event-stream, text/plain). */
  contentType?: string;
  summary?: string;
}

export const ROUTE_DOC: unique symbol = Symbol.for('svc.route-doc');

/** Attach a route-doc declaration to a middleware (returned as is, tagged). */
export function documented<M extends Middleware>(mw: M, doc: RouteDoc): M {
  const prev = (mw as unknown as { [ROUTE_DOC]?: RouteDoc })[ROUTE_DOC];
  (mw as unknown as { [ROUTE_DOC]: RouteDoc })[ROUTE_DOC] = { ...prev, ...doc };
  return mw;
}

/** The declarations of one route's middleware stack, merged in order. */
export function routeDoc(stack: readonly unknown[]): RouteDoc {
  let doc: RouteDoc = {};
  for (const mw of stack) {
    const d = (mw as { [ROUTE_DOC]?: RouteDoc } | null)?.[ROUTE_DOC];
    if (d) doc = { ...doc, ...d };
  }
  return doc;
}

/** Parses already made by body()/query() for this request, keyed by the parsed object (ctx.request.body, ctx.query). */
const parsed = new WeakMap<object, { schema: z.ZodType; data: unknown }>();

export function validate<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  if (body !== null && typeof body === 'object') {
    const done = parsed.get(body);
    if (done !== undefined && done.schema === schema) return done.data as z.infer<S>;
  }
  const result = schema.safeParse(body === undefined ? {} : body);
  if (result.success) return result.data;
  // An issue with the body as a whole (an array, a string) names the body, not a field in it.
  throw zodIssueToInputError(result.error.issues[0]!, 'body');
}

function remember(schema: z.ZodType, input: unknown): void {
  const data = validate(schema, input);
  if (input !== null && typeof input === 'object') parsed.set(input, { schema, data });
}

/**
 * How a body()/query() declaration parses. `inHandler`: the handler itself authorizes first (it must look the resource
 * up to know who may call: a chain machine, a stream channel) and then calls `validate(schema, …)` with this same
 * schema, so the middleware only declares; a refused caller keeps its 401/403/404 ahead of a 400 for its body.
 */
export interface ParseOptions {
  inHandler?: boolean;
}

const passThrough: Middleware = (_ctx, next) => next();

/** Middleware: the request body must fit `schema` (400 SVC_INVALID_INPUT otherwise); declared for the document. */
export function body(schema: z.ZodType, options: ParseOptions = {}): Middleware {
  return documented(
    options.inHandler
      ? (ctx: Context, next) => passThrough(ctx, next)
      : (ctx: Context, next) => {
          remember(schema, ctx.request.body);
          return next();
        },
    { body: schema },
  );
}

/** Middleware: the query string must fit `schema`; declared for the document. */
export function query(schema: z.ZodType, options: ParseOptions = {}): Middleware {
  return documented(
    options.inHandler
      ? (ctx: Context, next) => passThrough(ctx, next)
      : (ctx: Context, next) => {
          remember(schema, ctx.query);
          return next();
        },
    { query: schema },
  );
}

/** Middleware that only declares: the success response's schema (the OpenAPI test checks real responses against it). */
export function responds(schema: z.ZodType, extra: Omit<RouteDoc, 'response'> = {}): Middleware {
  return documented((_ctx, next) => next(), { ...extra, response: schema });
}

/** Middleware that only declares (content type, summary) without a response schema. */
export function describes(doc: Omit<RouteDoc, 'response' | 'body' | 'query'>): Middleware {
  return documented((_ctx, next) => next(), doc);
}

// The OpenAPI 3.1 document, generated from the router itself: every layer of the router is an operation, and what a
// route declares in its middleware list (validate.ts: body(), query(), responds(), the auth middlewares) gives its
// request, response and security. A route added the standard way appears with no edit here; there is no second,
// hand-written list of routes or schemas. QUERY (spec part 4, RFC 10008) has no operation key in 3.1: a path that
// answers it carries the operation under the path item's `x-query` extension.
import type Router from '@koa/router';
import { z } from 'zod';
import { errorSchema } from './errors.js';
import { routeDoc, type RouteDoc } from './validate.js';

type Json = Record<string, unknown>;

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'patch', 'trace'] as const;

/** The `format` values JSON Schema 2020-12 and OpenAPI 3.1 define; zod names others (starts_with, ends_with, …). */
const STANDARD_FORMATS = new Set([
  'date-time',
  'date',
  'time',
  'duration',
  'email',
  'idn-email',
  'hostname',
  'idn-hostname',
  'ipv4',
  'ipv6',
  'uri',
  'uri-reference',
  'iri',
  'iri-reference',
  'uuid',
  'uri-template',
  'json-pointer',
  'relative-json-pointer',
  'regex',
  'int32',
  'int64',
  'float',
  'double',
  'password',
]);

/** Drops non-standard `format` keywords in place; what they say stays in `pattern`, which zod writes beside them. */
function standardFormats(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) standardFormats(item);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const obj = node as Json;
  if (typeof obj.format === 'string' && !STANDARD_FORMATS.has(obj.format)) delete obj.format;
  for (const value of Object.values(obj)) standardFormats(value);
}

/** zod → JSON Schema 2020-12 (OpenAPI 3.1's dialect); what JSON cannot say (transforms) is left open. */
export function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Json {
  const out = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Json;
  delete out.$schema;
  standardFormats(out);
  return out;
}

/** operationId: the method, then the path's words in camel case (GET /api/tally/envelopes/:zid → getApiTallyEnvelopesZid). */
function operationId(method: string, path: string): string {
  return `${method}${path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}`;
}

/** :name and /* of the router as OpenAPI path templates. */
function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');
}

function queryParameters(schema: z.ZodType): Json[] {
  const s = jsonSchema(schema, 'input');
  const props = (s.properties ?? {}) as Record<string, Json>;
  const required = new Set((s.required as string[] | undefined) ?? []);
  return Object.entries(props).map(([name, p]) => ({ name, in: 'query', required: required.has(name) && !('default' in p), schema: p }));
}

const SECURITY: Record<NonNullable<RouteDoc['auth']>, Json[]> = {
  key: [{ bearerKey: [] }, { queryKey: [] }],
  optional: [{ bearerKey: [] }, { queryKey: [] }, {}],
  node: [{ nodeHandshake: [] }],
  operator: [{ operatorToken: [] }],
};

/** The success statuses a route answers: 200 unless it declares others (201 for a creation, 202 for accepted work). */
function successStatuses(doc: RouteDoc): readonly number[] {
  if (doc.status === undefined) return [200];
  return typeof doc.status === 'number' ? [doc.status] : doc.status;
}

function operation(method: string, path: string, paramNames: readonly string[], doc: RouteDoc): Json {
  const errorRef = { $ref: '#/components/responses/Error' };
  const okContent = doc.contentType
    ? { [doc.contentType]: { schema: { type: 'string' } } }
    : { 'application/json': { schema: doc.response ? jsonSchema(doc.response, 'output') : {} } };
  const responses: Json = {};
  for (const status of successStatuses(doc)) {
    const description = doc.response || doc.contentType ? 'OK' : 'OK (body not described by this route)';
    responses[String(status)] = status === 204 ? { description: 'No content yet' } : { description, content: okContent };
  }
  if (doc.body || doc.query || paramNames.length > 0) responses['400'] = errorRef;
  if (doc.auth !== undefined) responses['401'] = errorRef;
  responses.default = errorRef;
  const tag = path.split('/')[2] ?? 'root';
  const op: Json = {
    operationId: operationId(method, path),
    summary: doc.summary ?? `${method.toUpperCase()} ${path}`,
    tags: [tag],
    parameters: [
      ...paramNames.map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } })),
      ...(doc.query ? queryParameters(doc.query) : []),
    ],
    security: doc.auth ? SECURITY[doc.auth] : [],
    responses,
  };
  // A route that declares no body reads none (an empty body or {} is what it takes), so it has no requestBody.
  if (doc.body) op.requestBody = { required: false, content: { 'application/json': { schema: jsonSchema(doc.body, 'input') } } };
  return op;
}

/** The version of the published interface description (part 9); the kernel names its own (config kernel.version). */
export const INTERFACE_VERSION = '1.287.0';

export interface DocumentInfo {
  title: string;
  /** The interface's version (INTERFACE_VERSION). */
  version: string;
  /** The kernel's, carried as `x-kernel-version`. */
  kernelVersion?: string;
  description?: string;
}

/** The document for a router as it stands (call it after every route is registered). */
export function openApiDocument(router: Router, info: DocumentInfo): Json {
  const paths: Record<string, Json> = {};
  for (const layer of router.stack) {
    if (typeof layer.path !== 'string') continue;
    const path = openApiPath(layer.path);
    const doc = routeDoc(layer.stack as unknown[]);
    const params = layer.paramNames.map((p) => String(p.name));
    const item = (paths[path] ??= {});
    for (const m of layer.methods) {
      const method = m.toLowerCase();
      if (method === 'head') continue;
      const op = operation(method, layer.path, params, doc);
      if (method === 'query') item['x-query'] = op;
      else if ((METHODS as readonly string[]).includes(method) && item[method] === undefined) item[method] = op;
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: info.title,
      version: info.version,
      ...(info.description ? { description: info.description } : {}),
      ...(info.kernelVersion ? { 'x-kernel-version': info.kernelVersion } : {}),
    },
    jsonSchemaDialect: 'https://spec.openapis.org/oas/3.1/dialect/base',
    paths,
    components: {
      schemas: { Error: jsonSchema(errorSchema, 'output') },
      responses: { Error: { description: 'Part-7 error object', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } } },
      securitySchemes: {
        bearerKey: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <API_KEY> (sk_, zsm_, svc_ak_ keys)' },
        queryKey: { type: 'apiKey', in: 'query', name: 'key', description: 'the same key as the key= query parameter' },
        operatorToken: { type: 'http', scheme: 'bearer', description: 'the node operator token (op_…, in the data dir; svc-node keys shows it)' },
        nodeHandshake: { type: 'apiKey', in: 'header', name: 'x-node-handshake', description: 'a mesh node: HMAC-SHA256 handshake (part 5 item 8)' },
      },
    },
  };
}

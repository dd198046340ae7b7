// The API's own description: GET /api/openapi.json (generated from the router, openapi.ts), GET /api/docs, a
// reference page rendered by swagger-ui-dist's files served from this node (no CDN), and GET /api/errors, the error
// catalogue every error's documentation_url points into.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type Router from '@koa/router';
import { ServiceError } from '../../kernel/errors.js';
import type { HttpKit } from '../kit.js';
import { openApiResponse } from '../responses.js';
import type { RouteGroup } from '../route-group.js';
import { INTERFACE_VERSION, openApiDocument } from '../openapi.js';
import { describes, responds } from '../validate.js';
import { ERROR_CATALOGUE, ERROR_CODES, errorAnchor, type ErrorEntry } from '../../kernel/error-catalogue.js';
import { ERRORS_PATH } from '../errors.js';

const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
};

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>svc-node API</title><link rel="stylesheet" href="/api/docs/swagger-ui.css"></head>
<body><div id="ui"></div><script src="/api/docs/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({ url: '/api/openapi.json', dom_id: '#ui', deepLinking: true });</script>
</body></html>`;

const escapeHtml = (text: string): string => text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

/** The catalogue as data: one row per code of the closed union, in catalogue order. */
export function errorCatalogueRows(): (ErrorEntry & { code: string; anchor: string; retryable: boolean })[] {
  return ERROR_CODES.map((code) => {
    const entry: ErrorEntry = ERROR_CATALOGUE[code];
    return { code, anchor: errorAnchor(code), ...entry, retryable: entry.retryAfterSeconds !== undefined };
  });
}

/** The catalogue as a page: one section per code, its id the anchor documentation_url names. */
function errorCataloguePage(): string {
  const sections = errorCatalogueRows().map(
    (r) =>
      `<section id="${r.anchor}"><h2><a href="#${r.anchor}">${r.code}</a></h2><p>HTTP ${r.status} · ${r.origin}${
        r.retryable ? ` · retryable (retry_after_seconds, default ${r.retryAfterSeconds} s)` : ''
      }</p><p>${escapeHtml(r.meaning)}</p></section>`,
  );
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>svc-node errors</title></head>
<body><h1>Errors</h1>
<p>Every error is JSON: <code>{"error": {code, message, details?, status, trace_id, timestamp, documentation_url, …}}</code>
(spec part 7); the trace id is also in the X-Trace-Id header. The same list as JSON: <code>GET ${ERRORS_PATH}</code> with
<code>Accept: application/json</code>.</p>
${sections.join('\n')}
</body></html>`;
}

export function docsRoutes(): RouteGroup {
  return { name: 'docs', register: registerDocsRoutes };
}

function registerDocsRoutes(router: Router, kit: HttpKit): void {
  const dir = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const assets = new Map<string, Buffer>();
  let document: string | null = null;

  router.get('/api/openapi.json', responds(openApiResponse), (ctx) => {
    // Built on first use: by then every route group (extra routers and QUERY included) is registered.
    document ??= JSON.stringify(
      openApiDocument(router, {
        title: 'svc-node',
        version: INTERFACE_VERSION,
        kernelVersion: kit.config.kernel.version,
        description: `A node of the Deterministic Computation Service (interface ${INTERFACE_VERSION}, kernel ${kit.config.kernel.version}). Generated from the routes’ own zod schemas.`,
      }),
    );
    ctx.type = 'application/json; charset=utf-8';
    ctx.body = document;
  });

  // The error catalogue: HTML (anchors per code) unless the client prefers JSON.
  const errorPage = errorCataloguePage();
  router.get(
    ERRORS_PATH,
    describes({
      contentType: 'text/html',
      summary: 'The error catalogue: one anchor per error code, with its status and meaning (JSON with Accept: application/json).',
    }),
    (ctx) => {
      if (ctx.accepts('html', 'json') === 'json') {
        ctx.body = { count: ERROR_CODES.length, errors: errorCatalogueRows() };
        return;
      }
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = errorPage;
    },
  );

  router.get('/api/docs', describes({ contentType: 'text/html' }), (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = PAGE;
  });

  router.get('/api/docs/:asset', describes({ contentType: 'text/plain' }), (ctx) => {
    const name = String(ctx.params.asset);
    const type = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
    if (type === undefined) throw new ServiceError(404, 'SVC_NOT_FOUND', `no asset ${name}`);
    let bytes = assets.get(name);
    if (bytes === undefined) assets.set(name, (bytes = readFileSync(join(dir, name))));
    ctx.type = type;
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = bytes;
  });
}

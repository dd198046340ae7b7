// The API's own description: GET /api/openapi.json (generated from the router, openapi.ts) and GET /api/docs, a
// reference page rendered by swagger-ui-dist's files served from this node (no CDN).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type Router from '@koa/router';
import { ServiceError } from '../../kernel/errors.js';
import type { HttpKit } from '../kit.js';
import type { RouteGroup } from '../route-group.js';
import { openApiDocument } from '../openapi.js';
import { describes } from '../validate.js';

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

export function docsRoutes(): RouteGroup {
  return { name: 'docs', register: registerDocsRoutes };
}

function registerDocsRoutes(router: Router, kit: HttpKit): void {
  const dir = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const assets = new Map<string, Buffer>();
  let document: string | null = null;

  router.get('/api/openapi.json', (ctx) => {
    // Built on first use: by then every route group (extra routers and QUERY included) is registered.
    document ??= JSON.stringify(
      openApiDocument(router, {
        title: 'svc-node',
        version: kit.config.kernel.version,
        description: 'A node of the Deterministic Computation Service (interface 1.287.0). Generated from the routes’ own zod schemas.',
      }),
    );
    ctx.type = 'application/json; charset=utf-8';
    ctx.body = document;
  });

  router.get('/api/docs', describes({ contentType: 'text/html' }), (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = PAGE;
  });

  router.get('/api/docs/:asset', describes({ contentType: 'text/plain' }), (ctx) => {
    const name = String(ctx.params.asset);
    const type = ASSETS[name];
    if (type === undefined) throw new ServiceError(404, 'SVC_NOT_FOUND', `no asset ${name}`);
    let bytes = assets.get(name);
    if (bytes === undefined) assets.set(name, (bytes = readFileSync(join(dir, name))));
    ctx.type = type;
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = bytes;
  });
}

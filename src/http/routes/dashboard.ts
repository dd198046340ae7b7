// GET /: the node's dashboard, a plain page (public/dashboard: HTML, CSS and a small script; no build step) that
// reads the node's own keyless API in the browser. Served from the repository's public/ folder, found from this
// module (src/http/routes or dist/http/routes: both three levels below the root).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type Router from '@koa/router';
import { ServiceError } from '../../kernel/errors.js';
import { describes } from '../validate.js';
import type { RouteGroup } from '../route-group.js';

const DIR = fileURLToPath(new URL('../../../public/dashboard/', import.meta.url));
const FILES: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'dashboard.css': 'text/css; charset=utf-8',
  'dashboard.js': 'application/javascript; charset=utf-8',
};

export function dashboardRoutes(): RouteGroup {
  return { name: 'dashboard', register: registerDashboardRoutes };
}

function registerDashboardRoutes(router: Router): void {
  const cache = new Map<string, Buffer>();
  const file = (name: string): Buffer => {
    let bytes = cache.get(name);
    if (bytes === undefined) cache.set(name, (bytes = readFileSync(DIR + name)));
    return bytes;
  };

  router.get('/', describes({ contentType: 'text/html', summary: 'The dashboard page' }), (ctx) => {
    ctx.type = FILES['index.html']!;
    ctx.set('Cache-Control', 'no-cache');
    ctx.body = file('index.html');
  });

  router.get('/dashboard/:file', describes({ contentType: 'text/plain', summary: 'The dashboard’s script and style sheet' }), (ctx) => {
    const name = String(ctx.params.file);
    const type = name === 'index.html' ? undefined : FILES[name];
    if (type === undefined) throw new ServiceError(404, 'SVC_NOT_FOUND', `no dashboard file ${name}`);
    ctx.type = type;
    ctx.set('Cache-Control', 'no-cache');
    ctx.body = file(name);
  });
}

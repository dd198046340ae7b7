// The baseline of the compute benchmark: a bare Koa app as the Koa project documents it (Koa, @koa/router,
// @koa/bodyparser), one JSON route. Kept the same since the first measurement so figures stay comparable; the
// bench also reports the ratio against the same app with the node's own JSON body middleware (src/http/body.ts).
import Koa from 'koa';
import Router from '@koa/router';
import { bodyParser } from '@koa/bodyparser';
import { jsonBody } from '../../src/http/body.js';

const app = new Koa();
const router = new Router();
const handler = (ctx: Koa.Context) => {
  ctx.body = { ok: true, echo: (ctx.request as unknown as { body?: unknown }).body ?? null };
};
router.get('/ping', handler);
router.post('/ping', handler);
// BARE_BODY=node: the node's own body middleware instead of @koa/bodyparser.
app.use(process.env.BARE_BODY === 'node' ? jsonBody() : bodyParser({ enableTypes: ['json'] }));
app.use(router.routes());
const server = app.listen(0, '127.0.0.1', () => {
  const addr = server.address() as { port: number };
  console.log(JSON.stringify({ msg: 'listening', url: `http://127.0.0.1:${addr.port}` }));
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));

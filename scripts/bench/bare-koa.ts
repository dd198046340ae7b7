// The baseline of the compute benchmark: a bare Koa app with the node's JSON body middleware, one JSON route.
import Koa from 'koa';
import Router from '@koa/router';
import { jsonBody } from '../../src/http/body.js';

const app = new Koa();
const router = new Router();
const handler = (ctx: Koa.Context) => {
  ctx.body = { ok: true, echo: (ctx.request as unknown as { body?: unknown }).body ?? null };
};
router.get('/ping', handler);
router.post('/ping', handler);
app.use(jsonBody());
app.use(router.routes());
const server = app.listen(0, '127.0.0.1', () => {
  const addr = server.address() as { port: number };
  console.log(JSON.stringify({ msg: 'listening', url: `http://127.0.0.1:${addr.port}` }));
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));

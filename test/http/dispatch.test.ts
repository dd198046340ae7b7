// Route dispatch (src/http/dispatch.ts): the exact-path shortcut must answer exactly as @koa/router alone would.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import Koa from 'koa';
import Router from '@koa/router';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes } from '../../src/http/dispatch.js';

/** Which handlers ran, per request (a header lists them). */
function app(shortcut: boolean): Koa {
  const a = new Koa();
  const router = new Router();
  const ran = (ctx: Koa.Context, name: string) => {
    ctx.state.ran = [...(ctx.state.ran ?? []), name];
  };
  router.use('/mw', (ctx, next) => {
    ran(ctx, 'mw');
    return next();
  });
  router.get('/mw/x', (ctx) => {
    ran(ctx, 'mw-x');
    ctx.body = { route: 'mw-x' };
  });
  router.get('/a', (ctx) => {
    ran(ctx, 'a');
    ctx.body = { route: 'a', params: ctx.params };
  });
  router.post(
    '/a',
    async (ctx, next) => {
      ran(ctx, 'a-post-1');
      await next();
    },
    (ctx) => {
      ran(ctx, 'a-post-2');
      ctx.body = { route: 'a-post' };
    },
  );
  // A handler that passes the request on: it must reach the app's fallback once, not run twice.
  router.get('/pass', (ctx, next) => {
    ran(ctx, 'pass');
    return next();
  });
  router.get('/items/new', (ctx) => {
    ran(ctx, 'new');
    ctx.body = { route: 'new' };
  });
  router.get('/items/:id', (ctx) => {
    ran(ctx, 'item');
    ctx.body = { route: 'item', id: ctx.params.id };
  });
  a.use(async (ctx, next) => {
    await next();
    ctx.set('x-ran', (ctx.state.ran ?? []).join(','));
  });
  a.use(shortcut ? routes(router) : router.routes());
  a.use((ctx) => {
    if (ctx.body !== undefined) return;
    ran(ctx, 'fallback');
    ctx.status = 404;
    ctx.body = { route: 'none' };
  });
  return a;
}

let servers: Server[] = [];
const urls: { shortcut: string; router: string } = { shortcut: '', router: '' };

beforeAll(async () => {
  const listen = (a: Koa) =>
    new Promise<Server>((resolve) => {
      const s = a.listen(0, '127.0.0.1', () => resolve(s));
    });
  servers = [await listen(app(true)), await listen(app(false))];
  urls.shortcut = `http://127.0.0.1:${(servers[0]!.address() as AddressInfo).port}`;
  urls.router = `http://127.0.0.1:${(servers[1]!.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
});

async function answer(base: string, method: string, path: string): Promise<{ status: number; ran: string | null; body: string }> {
  const res = await fetch(base + path, { method });
  return { status: res.status, ran: res.headers.get('x-ran'), body: await res.text() };
}

describe('route dispatch with the exact-path shortcut', () => {
  const cases: [string, string][] = [
    ['GET', '/a'],
    ['POST', '/a'],
    ['GET', '/a?x=1'],
    ['GET', '/a/'],
    ['GET', '/A'],
    ['HEAD', '/a'],
    ['DELETE', '/a'],
    ['GET', '/pass'],
    ['GET', '/mw/x'],
    ['GET', '/items/new'],
    ['GET', '/items/42'],
    ['GET', '/nowhere'],
  ];

  it.each(cases)('%s %s answers as the router alone does', async (method, path) => {
    const fast = await answer(urls.shortcut, method, path);
    const plain = await answer(urls.router, method, path);
    expect(fast).toEqual(plain);
  });

  it('runs every handler of a route once, a passing handler reaches the fallback once, and params are {}', async () => {
    expect(await answer(urls.shortcut, 'POST', '/a')).toMatchObject({ status: 200, ran: 'a-post-1,a-post-2' });
    expect(await answer(urls.shortcut, 'GET', '/pass')).toMatchObject({ status: 404, ran: 'pass,fallback' });
    const a = await answer(urls.shortcut, 'GET', '/a');
    expect(JSON.parse(a.body)).toEqual({ route: 'a', params: {} });
    // A path behind router-level middleware, and a static path a parameter route also matches, keep every match.
    expect(await answer(urls.shortcut, 'GET', '/mw/x')).toMatchObject({ ran: 'mw,mw-x' });
    expect(JSON.parse((await answer(urls.shortcut, 'GET', '/items/7')).body)).toEqual({ route: 'item', id: '7' });
  });
});

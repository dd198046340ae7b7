// Route dispatch: @koa/router's middleware behind an exact-path shortcut for parameterless routes.
import type Koa from 'koa';
import type Router from '@koa/router';
import compose from 'koa-compose';

/**
 * The router's middleware, with a shortcut: a request whose path is exactly a parameterless route's path goes by one
 * map lookup to that route's stack, composed once. @koa/router tests every route's pattern (80+), reads the Host
 * header and composes a fresh chain on every request: ~8 µs of a sealed compute's main-thread time. Only a (method,
 * path) pair that the router matches to exactly that one route is taken, so the answer is the router's own; any
 * other request (parameters, trailing slash, case, several matches, 404/405) goes to the router as before. Both
 * continue to the same downstream middleware.
 */
export function routes(router: Router): Koa.Middleware {
  // As the router sets them for a route without parameters.
  const noParams =
    (path: string): Koa.Middleware =>
    (ctx, next) => {
      ctx.params = {};
      (ctx.request as unknown as { params: Record<string, string> }).params = ctx.params;
      // The route's path, as the router sets it (the metrics label requests by it).
      (ctx as unknown as { _matchedRoute: string })._matchedRoute = path;
      return next();
    };
  const statics = new Map<string, Koa.Middleware>();
  for (const layer of router.stack) {
    if (layer.paramNames.length > 0 || typeof layer.path !== 'string') continue;
    for (const method of layer.methods) {
      const match = router.match(layer.path, method);
      if (match.pathAndMethod.length !== 1 || match.pathAndMethod[0] !== layer) continue;
      statics.set(`${method} ${layer.path}`, compose([noParams(layer.path), ...(layer.stack as unknown as Koa.Middleware[])]));
    }
  }
  const dispatch = router.routes() as unknown as Koa.Middleware;
  return function route(ctx, next) {
    const exact = statics.get(`${ctx.method} ${ctx.path}`);
    return exact === undefined ? dispatch(ctx, next) : exact(ctx, next);
  };
}

// @koa/bodyparser sets request.body and request.rawBody.
import 'koa';

declare module 'koa' {
  interface Request {
    body?: unknown;
    rawBody?: string;
  }
}

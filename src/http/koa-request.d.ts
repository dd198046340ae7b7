// jsonBody (src/http/body.ts) sets request.body and request.rawBody.
import 'koa';

declare module 'koa' {
  interface Request {
    body?: unknown;
    rawBody?: string;
  }
}

// A request's work is for its client: when the client closes its request or connection before the answer has been
// sent, nobody will read it. Routes whose work is long or spends the node's slots (solver runs, MCP tool calls,
// chat tool loops) stop it on this signal instead of finishing it for nobody.
import type { Context } from 'koa';
import { ServiceError } from '../kernel/errors.js';

const GONE = Symbol('clientGone');

/**
 * Aborted when the response closes before it finished: the client left. Its reason is a 499 (a status of the HTTP
 * layer, nginx's "client closed request"), so work that throws it ends as a request error, not an unhandled one.
 * One signal per request, however many callers ask.
 */
export function clientGone(ctx: Context): AbortSignal {
  const state = ctx.state as Record<symbol, AbortSignal | undefined>;
  const known = state[GONE];
  if (known) return known;
  const controller = new AbortController();
  const res = ctx.res;
  const left = () => {
    if (!res.writableFinished) controller.abort(new ServiceError(499, 'SVC_BAD_REQUEST', 'the client left before its answer: its work was stopped'));
  };
  if (res.closed) left();
  else res.once('close', left);
  state[GONE] = controller.signal;
  return controller.signal;
}

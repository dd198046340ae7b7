// The home-node rule (architecture.md §5): an identity's ledgers are written only on its home node, and a state
// machine's chain lives only on its home node. A request for a remote identity or machine that reaches this node
// is forwarded to the home node's HTTP API once, and the answer relayed as it came. A request that was already
// forwarded is never forwarded again (no loops).
import type { Context, Next } from 'koa';
import { ServiceError } from '../kernel/errors.js';
import type { Caller } from '../tally/ledger.js';
import type { HttpServices } from './context.js';

export const FORWARDED_HEADER = 'x-svc-forwarded-by';
export const SERVED_BY_HEADER = 'X-Svc-Served-By';
const FORWARD_TIMEOUT_MS = 130_000;
const RETRY_AFTER_SECONDS = 5;

/** Did this request come from another node's forward? (Such a request is never forwarded again.) */
export function wasForwarded(ctx: Context): boolean {
  return ctx.get(FORWARDED_HEADER) !== '';
}

/**
 * Forward the request once to `home`'s HTTP API (same method, path, query, Authorization and body) and relay the
 * answer with X-Svc-Served-By: <home>. `subject` names what the home is the home of, in error messages. 503
 * SVC_HOME_UNREACHABLE when the request was itself forwarded here, when the home's URL is unknown, or when it
 * does not answer.
 */
export async function relayToHome(ctx: Context, s: HttpServices, home: string, subject = 'identity', extra: Record<string, unknown> = {}): Promise<void> {
  if (wasForwarded(ctx)) {
    throw new ServiceError(503, 'SVC_HOME_UNREACHABLE', `this request was forwarded here but this node is not the ${subject}'s home`, { home, ...extra });
  }
  const url = s.mesh?.peers().find((p) => p.peerId === home)?.url ?? null;
  if (!url) throw new ServiceError(503, 'SVC_HOME_UNREACHABLE', `the home node of this ${subject} is not reachable from here`, { home, ...extra, retry_after_seconds: RETRY_AFTER_SECONDS });
  const headers: Record<string, string> = { [FORWARDED_HEADER]: s.nodeId(), 'x-forwarded-for': ctx.ip };
  const auth = ctx.get('authorization');
  if (auth) headers.authorization = auth;
  const raw = ctx.request.rawBody;
  const hasBody = !['GET', 'HEAD'].includes(ctx.method) && typeof raw === 'string' && raw.length > 0;
  if (hasBody) headers['content-type'] = 'application/json';
  let res: Response;
  let text: string;
  try {
    res = await fetch(url + ctx.originalUrl, { method: ctx.method, headers, body: hasBody ? raw : undefined, signal: AbortSignal.timeout(FORWARD_TIMEOUT_MS) });
    text = await res.text();
  } catch (err) {
    throw new ServiceError(503, 'SVC_HOME_UNREACHABLE', `the home node did not answer: ${(err as Error).message}`, { home, ...extra, retry_after_seconds: RETRY_AFTER_SECONDS });
  }
  ctx.status = res.status;
  // The home's trace id too: a relayed error's trace_id is then the one in X-Trace-Id (part 7), as logged at the home.
  for (const h of ['content-type', 'retry-after', 'x-trace-id']) {
    const v = res.headers.get(h);
    if (v) ctx.set(h, v);
  }
  ctx.set(SERVED_BY_HEADER, home);
  ctx.body = text;
}

/** Middleware for ledger routes: a caller whose identity is homed on another node is served by that node. */
export function forwardToHome(s: HttpServices) {
  return async function forward(ctx: Context, next: Next): Promise<void> {
    const caller = ctx.state.caller as Caller | undefined;
    if (!caller || caller.kind !== 'identity' || caller.home === s.nodeId() || !s.mesh) return next();
    await relayToHome(ctx, s, caller.home);
  };
}

// The home-node rule (architecture.md §5): an identity's ledgers are written only on its home node. A request
// for a remote identity that reaches this node is forwarded to the home node's HTTP API once, and the answer
// relayed as it came. A request that was already forwarded is never forwarded again (no loops).
import type { Context, Next } from 'koa';
import { ServiceError } from '../kernel/errors.js';
import type { Caller } from '../tally/ledger.js';
import type { HttpServices } from './context.js';

export const FORWARDED_HEADER = 'x-svc-forwarded-by';
const FORWARD_TIMEOUT_MS = 130_000;

export function forwardToHome(s: HttpServices) {
  return async function forward(ctx: Context, next: Next): Promise<void> {
    const caller = ctx.state.caller as Caller | undefined;
    if (!caller || caller.kind !== 'identity' || caller.home === s.nodeId() || !s.mesh) return next();
    if (ctx.get(FORWARDED_HEADER)) {
      throw new ServiceError(503, 'SVC_HOME_UNREACHABLE', 'this request was forwarded here but this node is not the identity\'s home', { home: caller.home });
    }
    const url = s.mesh.peers().find((p) => p.peerId === caller.home)?.url ?? null;
    if (!url) throw new ServiceError(503, 'SVC_HOME_UNREACHABLE', 'the home node of this identity is not reachable from here', { home: caller.home, retry_after_seconds: 5 });
    const headers: Record<string, string> = { [FORWARDED_HEADER]: s.nodeId(), 'x-forwarded-for': ctx.ip };
    const auth = ctx.get('authorization');
    if (auth) headers.authorization = auth;
    const raw = ctx.request.rawBody;
    const hasBody = !['GET', 'HEAD'].includes(ctx.method) && typeof raw === 'string' && raw.length > 0;
    if (hasBody) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(url + ctx.originalUrl, { method: ctx.method, headers, body: hasBody ? raw : undefined, signal: AbortSignal.timeout(FORWARD_TIMEOUT_MS) });
    } catch (err) {
      throw new ServiceError(503, 'SVC_HOME_UNREACHABLE', `the home node did not answer: ${(err as Error).message}`, { home: caller.home, retry_after_seconds: 5 });
    }
    ctx.status = res.status;
    for (const h of ['content-type', 'retry-after']) {
      const v = res.headers.get(h);
      if (v) ctx.set(h, v);
    }
    ctx.set('X-Svc-Served-By', caller.home);
    ctx.body = await res.text();
  };
}

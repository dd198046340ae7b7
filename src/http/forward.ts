// The home-node rule (architecture.md §5): an identity's ledgers are written only on its home node, and a state
// machine's chain lives only on its home node. A request for a remote identity or machine that reaches this node
// is forwarded to the home node's HTTP API once, and the answer relayed as it came. A request that was already
// forwarded is never forwarded again (no loops).
//
// The home is reached at its URL from its tick events, and over libp2p (/svc/http/1, mesh/peer-http.ts) when no URL
// is known or the URL does not take the connection (a home behind NAT); the order is in docs/decisions.md.
//
// A home that is stopped (not dead: its socket accepts and never answers) must not hang its callers: it has
// mesh.forwardTimeoutMs to show life, by answering or by answering a probe of its health sent while the request is
// pending (a home busy with a long solver run answers its probes, and is waited for up to the tier time limit); over
// libp2p, by opening the stream within that time. Past that, 503 SVC_HOME_UNREACHABLE with Retry-After, and the home
// is skipped until a probe finds it again. When neither way reaches it, the 503 names the home and what was tried.
//
// A caller that leaves (client-gone.ts) cuts its request to the home too, at the URL or over libp2p: the home then
// sees its own client leave and stops the work it keeps for nobody, as it would for a caller of its own.
import type { Context, Next } from 'koa';
import { ServiceError } from '../kernel/errors.js';
import { LONGEST_TIME_LIMIT_SECONDS } from '../tally/tiers.js';
import type { Caller } from '../records/types.js';
import type { HttpKit } from './kit.js';
import { clientGone } from './client-gone.js';
import { probeHealth, RECHECK_WAIT_MS, type HungHomes } from './home-health.js';
import { FORWARDED_FOR_HEADER, forwardedForValue, statedClientIp } from './forwarded-address.js';
import { addressKey } from './caller-address.js';
import { PEER_HTTP_PROTOCOL, PeerStreamNotOpened, fetchFailure, isConnectFailure, type OverMesh, type PeerRequest } from '../mesh/peer-http.js';
import { PEER_STREAM_PROTOCOL, type OpenPeerStream, type PeerStreamSession } from '../mesh/peer-stream.js';
import { SSE_MAX_UNSENT_BYTES } from './sse-bound.js';
import { IDEMPOTENCY_KEY_HEADER } from './idempotency.js';

export const FORWARDED_HEADER = 'x-svc-forwarded-by';
export const SERVED_BY_HEADER = 'X-Svc-Served-By';

/** Where other nodes' HTTP APIs are, and which of them are skipped as hung (one per node). */
export interface HomeLinks {
  /** The HTTP URL of a peer (null: not known). */
  peerUrl: (nodeId: string) => string | null;
  /** A peer's API over libp2p (null: the mesh does not run). */
  overMesh: OverMesh | null;
  /** A peer's long-lived answers (an SSE stream, a WebSocket) over libp2p (absent or null: the mesh does not run). */
  streamOverMesh?: OpenPeerStream | null;
  hung: HungHomes;
}

/** What forwarding to a home uses from the kit. */
export type ForwardKit = Pick<HttpKit, 'config' | 'nodeId' | 'homes'>;

/** Did this request come from another node's forward? (Such a request is never forwarded again.) */
export function wasForwarded(ctx: Context): boolean {
  return ctx.get(FORWARDED_HEADER) !== '';
}

export interface RelayOptions {
  /**
   * Send no key: the caller's key belongs to another home and must not travel to this one (a public machine is
   * then read as by anyone). The Authorization header and a ?key= are left out.
   */
  withoutKey?: boolean;
  /** Headers sent besides the forwarding ones (a caller's voucher: chain-delegation.ts). */
  headers?: Record<string, string>;
}

export interface HomeAnswer {
  status: number;
  headers: Headers;
  text: string;
}

function retryAfterSeconds(kit: ForwardKit): number {
  return Math.max(1, Math.ceil(kit.config.mesh.forwardTimeoutMs / 1000));
}

/** The request's path and query, without a ?key= when the key stays here (as askHome sends it). */
export function pathFor(ctx: Context, withoutKey: boolean): string {
  if (!withoutKey || !('key' in ctx.query)) return ctx.originalUrl;
  const u = new URL(ctx.originalUrl, 'http://local');
  u.searchParams.delete('key');
  return u.pathname + u.search;
}

/**
 * Send the request once to `home`'s HTTP API (same method, path, query, Authorization and body) and return its
 * answer. 503 SVC_HOME_UNREACHABLE when the request was itself forwarded here, when the home's URL is unknown, when
 * it does not answer, when it shows no life within the deadline, and at once while it is marked hung.
 */
export async function askHome(
  ctx: Context,
  kit: ForwardKit,
  home: string,
  subject = 'identity',
  extra: Record<string, unknown> = {},
  opts: RelayOptions = {},
): Promise<HomeAnswer> {
  if (wasForwarded(ctx)) {
    throw new ServiceError(503, 'SVC_HOME_UNREACHABLE', `this request was forwarded here but this node is not the ${subject}'s home`, { home, ...extra });
  }
  const retry = retryAfterSeconds(kit);
  const url = kit.homes.peerUrl(home);
  const overMesh = kit.homes.overMesh;
  if (!url && !overMesh)
    throw new ServiceError(503, 'SVC_HOME_UNREACHABLE', `the home node of this ${subject} is not reachable from here`, {
      home,
      ...extra,
      tried: ['HTTP: no URL is known for it', 'libp2p: the mesh is not running'],
      retry_after_seconds: retry,
      may_have_applied: false,
    });
  const deadlineMs = kit.config.mesh.forwardTimeoutMs;
  const hung = kit.homes.hung;
  // A marked home is asked once more, briefly (one probe shared by the requests waiting): back, it is served at once.
  if (hung.isHung(home) && !(url && (await hung.recheck(home, url, Math.min(deadlineMs, RECHECK_WAIT_MS))))) {
    throw new ServiceError(
      503,
      'SVC_HOME_UNREACHABLE',
      `the home node of this ${subject} did not answer within ${deadlineMs} ms; it is skipped until it answers again`,
      { home, ...extra, deadline_ms: deadlineMs, retry_after_seconds: retry, may_have_applied: false },
    );
  }
  const req = homeRequest(ctx, kit, opts);
  // The request's own bound: a live home answers within its time limit (a solver run at the caller's tier, which
  // only the home knows: the longest), plus the deadline.
  const capMs = LONGEST_TIME_LIMIT_SECONDS * 1000 + deadlineMs;
  const gone = clientGone(ctx);
  gone.throwIfAborted();
  const tried: string[] = [];
  if (url) {
    const sent = await askAtUrl(url, req, deadlineMs, capMs, gone);
    if ('answer' in sent) return sent.answer;
    // Cut because the caller left: nothing is wrong with the home, and nobody reads a 503.
    gone.throwIfAborted();
    if (sent.hung) {
      hung.mark(home, Date.now());
      throw new ServiceError(
        503,
        'SVC_HOME_UNREACHABLE',
        `the home node of this ${subject} did not answer within ${deadlineMs} ms (nor its health probe); it is skipped until it answers again. ${MAY_HAVE_APPLIED}`,
        { home, ...extra, deadline_ms: deadlineMs, retry_after_seconds: retry, may_have_applied: true },
      );
    }
    tried.push(`HTTP at ${url}: ${sent.reason}`);
    // A request that reached the home may have been applied there: it is not sent a second way.
    if (!sent.connectFailed || !overMesh)
      throw new ServiceError(503, 'SVC_HOME_UNREACHABLE', `the home node did not answer: ${sent.reason}${sent.connectFailed ? '' : `. ${MAY_HAVE_APPLIED}`}`, {
        home,
        ...extra,
        tried,
        retry_after_seconds: retry,
        may_have_applied: !sent.connectFailed,
      });
  } else tried.push('HTTP: no URL is known for it');
  // Over the mesh, a failure once the stream is open is not told apart from one after the home applied the write.
  let sentOverMesh = false;
  if (overMesh) {
    try {
      // The caller leaving resets the stream: the home reads that as its client leaving (peer-entrance.ts).
      const a = await overMesh(home, req, AbortSignal.any([AbortSignal.timeout(capMs), gone]), deadlineMs);
      return { status: a.status, headers: new Headers(a.headers), text: a.text };
    } catch (err) {
      gone.throwIfAborted();
      sentOverMesh = !(err instanceof PeerStreamNotOpened);
      tried.push(`libp2p ${PEER_HTTP_PROTOCOL}: ${err instanceof Error ? err.message : String(err)}`);
    }
  } else tried.push('libp2p: the mesh is not running');
  throw new ServiceError(
    503,
    'SVC_HOME_UNREACHABLE',
    `the home node ${home} of this ${subject} could not be reached: ${tried.join('; ')}${sentOverMesh ? `. ${MAY_HAVE_APPLIED}` : ''}`,
    { home, ...extra, tried, retry_after_seconds: retry, may_have_applied: sentOverMesh },
  );
}

/** Said with a 503 whose request reached (or may have reached) the home: a write there may have been applied. */
const MAY_HAVE_APPLIED =
  'The request may have been applied there: send the write again with the same Idempotency-Key (applied once), or read what it would have changed before sending it without one';

/** The request as it is sent on to the home: same method, path, query, Authorization and body, with the forwarding headers. */
function homeRequest(ctx: Context, kit: ForwardKit, opts: RelayOptions): PeerRequest {
  const headers: Record<string, string> = { ...opts.headers, [FORWARDED_HEADER]: kit.nodeId(), 'x-forwarded-for': ctx.ip };
  const auth = ctx.get('authorization');
  if (auth && !opts.withoutKey) headers.authorization = auth;
  // The home keeps the answer of a write sent with one (idempotency.ts): a retry through any node finds it there.
  const idempotencyKey = ctx.get(IDEMPOTENCY_KEY_HEADER);
  // Also without the key: a voucher names the caller at a machine's home, which scopes the idempotency key by it.
  if (idempotencyKey) headers[IDEMPOTENCY_KEY_HEADER] = idempotencyKey;
  const raw = ctx.request.rawBody;
  const hasBody = !['GET', 'HEAD'].includes(ctx.method) && typeof raw === 'string' && raw.length > 0;
  if (hasBody) headers['content-type'] = 'application/json';
  const path = pathFor(ctx, !!opts.withoutKey);
  // The caller's address, stated under the mesh secret: the home's per-address limits count the caller, not this node.
  const secret = kit.config.mesh.secret;
  if (secret)
    headers[FORWARDED_FOR_HEADER] = forwardedForValue(secret, {
      forwarder: kit.nodeId(),
      ip: ctx.ip,
      unixMs: Date.now(),
      method: ctx.method,
      path,
      body: hasBody ? raw : '',
    });
  return { method: ctx.method as PeerRequest['method'], path, headers, body: hasBody ? raw : '' };
}

/**
 * One attempt at the home's URL, watched: every half deadline without an answer, the home's health is probed with
 * half the deadline to answer, so a home that shows no life is known within one deadline of the request, or of its
 * last sign of life. `gone` (the caller left) cuts the request: its connection closes, as the caller's did.
 */
async function askAtUrl(
  url: string,
  req: PeerRequest,
  deadlineMs: number,
  capMs: number,
  gone: AbortSignal,
): Promise<{ answer: HomeAnswer } | { hung: boolean; connectFailed: boolean; reason: string }> {
  const controller = new AbortController();
  const cap = setTimeout(() => controller.abort(new Error('no answer within the time limit')), capMs);
  const cut = () => controller.abort(gone.reason);
  gone.addEventListener('abort', cut, { once: true });
  let hungNow = false;
  let probing = false;
  const watch = setInterval(
    () => {
      if (probing) return;
      probing = true;
      void probeHealth(url, Math.max(1, Math.floor(deadlineMs / 2))).then((health) => {
        probing = false;
        // Refused: nothing listens there now — a home stopping answers the requests it holds (a gone one closes
        // their connections): this one is waited for. Only a home that accepts and never answers is hung.
        if (health !== 'silent' || controller.signal.aborted) return;
        hungNow = true;
        controller.abort(new Error(`no sign of life within ${deadlineMs} ms`));
      });
    },
    Math.max(1, Math.floor(deadlineMs / 2)),
  );
  try {
    const res = await fetch(url + req.path, {
      method: req.method,
      headers: req.headers,
      body: req.body === '' ? undefined : req.body,
      signal: controller.signal,
    });
    const text = await res.text();
    return { answer: { status: res.status, headers: res.headers, text } };
  } catch (err) {
    const reason = controller.signal.aborted ? (controller.signal.reason as Error).message : fetchFailure(err);
    return { hung: hungNow, connectFailed: !controller.signal.aborted && isConnectFailure(err), reason };
  } finally {
    clearTimeout(cap);
    clearInterval(watch);
    gone.removeEventListener('abort', cut);
  }
}

/** Relay a home's answer as it came, with X-Svc-Served-By: <home>. */
export function relayAnswer(ctx: Context, home: string, answer: HomeAnswer): void {
  ctx.status = answer.status;
  // The home's trace id too: a relayed error's trace_id is then the one in X-Trace-Id (part 7), as logged at the home.
  // And whether it was a replay of a kept answer (idempotency.ts).
  for (const h of ['content-type', 'retry-after', 'x-trace-id', 'idempotent-replayed']) {
    const v = answer.headers.get(h);
    if (v) ctx.set(h, v);
  }
  ctx.set(SERVED_BY_HEADER, home);
  ctx.body = answer.text;
}

/** Forward the request once to `home` and relay its answer (see askHome). `subject` names what home is the home of. */
export async function relayToHome(
  ctx: Context,
  kit: ForwardKit,
  home: string,
  subject = 'identity',
  extra: Record<string, unknown> = {},
  opts: RelayOptions = {},
): Promise<void> {
  relayAnswer(ctx, home, await askHome(ctx, kit, home, subject, extra, opts));
}

/**
 * Serve an event stream (SSE) of `home` here, relayed over libp2p (/svc/stream/1, mesh/peer-stream.ts): for a home
 * whose URL is unknown or does not connect, where a client could not follow a redirect. The home's head is the
 * client's (its refusal as it gave it); then each chunk as it comes, until either side ends. 503
 * SVC_HOME_UNREACHABLE (with what was tried) when the home cannot be reached this way either.
 */
export async function relayEventStream(ctx: Context, kit: ForwardKit, home: string, tried: string[], subject = 'identity'): Promise<void> {
  if (wasForwarded(ctx))
    throw new ServiceError(503, 'SVC_HOME_UNREACHABLE', `this request was forwarded here but this node is not the ${subject}'s home`, { home });
  const retry = retryAfterSeconds(kit);
  const open = kit.homes.streamOverMesh;
  if (!open)
    throw new ServiceError(503, 'SVC_HOME_UNREACHABLE', `the home node of this ${subject} is not reachable from here`, {
      home,
      tried: [...tried, 'libp2p: the mesh is not running'],
      retry_after_seconds: retry,
    });
  const req = homeRequest(ctx, kit, {});
  const headers = { ...req.headers };
  for (const h of ['last-event-id', 'accept']) if (ctx.get(h)) headers[h] = ctx.get(h);
  const gone = clientGone(ctx);
  let session: PeerStreamSession;
  try {
    session = await open(home, { kind: 'sse', path: req.path, headers }, AbortSignal.any([AbortSignal.timeout(kit.config.mesh.forwardTimeoutMs), gone]));
  } catch (err) {
    gone.throwIfAborted();
    const all = [...tried, `libp2p ${PEER_STREAM_PROTOCOL}: ${err instanceof Error ? err.message : String(err)}`];
    throw new ServiceError(503, 'SVC_HOME_UNREACHABLE', `the home node ${home} of this ${subject} could not be reached: ${all.join('; ')}`, {
      home,
      tried: all,
      retry_after_seconds: retry,
    });
  }
  const head = session.head;
  if (head.status !== 200) {
    session.close();
    relayAnswer(ctx, home, { status: head.status, headers: new Headers(head.headers), text: head.body });
    return;
  }
  ctx.respond = false;
  const res = ctx.res;
  res.writeHead(200, {
    'content-type': head.headers['content-type'] ?? 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    [SERVED_BY_HEADER]: home,
  });
  res.flushHeaders();
  if (gone.aborted) session.close();
  else gone.addEventListener('abort', () => session.close(), { once: true });
  try {
    for await (const f of session.frames) {
      if (!('data' in f) || res.destroyed) break;
      // A client that does not read is let go, as a slow subscriber is (the home's bound, kept at this hop).
      if (res.writableLength > SSE_MAX_UNSENT_BYTES) break;
      res.write(f.data);
    }
  } catch {
    // The home or the relay went away: the client sees its stream end and reconnects with Last-Event-ID.
  } finally {
    session.close();
    res.end();
  }
}

/** The caller's address as limits count it (caller-address.ts): the IP stated by the forwarding mesh node (verified), else the socket's. */
export function clientAddress(ctx: Context, kit: Pick<HttpKit, 'config'>): string {
  return addressKey(statedClientIp(ctx, kit.config.mesh.secret, ctx.get(FORWARDED_HEADER) || null));
}

/** Middleware for ledger routes: a caller whose identity is homed on another node is served by that node. */
export function forwardToHome(kit: ForwardKit) {
  return async function forward(ctx: Context, next: Next): Promise<void> {
    const caller = ctx.state.caller as Caller | undefined;
    if (!caller || caller.kind !== 'identity' || caller.home === kit.nodeId()) return next();
    await relayToHome(ctx, kit, caller.home);
  };
}

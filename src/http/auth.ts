// Part 5 at the door: a Bearer header or ?key= resolves to a caller. A key that is present but bad is always
// 401 SVC_INVALID_KEY (never an anonymous fallback); no key at all is anonymous on computing routes and
// 401 SVC_NO_KEY elsewhere.
import type { Context, Middleware, Next } from 'koa';
import { ServiceError } from '../kernel/errors.js';
import type { IdentityService } from '../identity/service.js';
import type { Caller } from '../records/types.js';
import type { MachineRecord } from '../chain/service.js';
import { documented } from './validate.js';
import { documentationUrl } from './errors.js';
import { callerAddress } from './caller-address.js';

/**
 * The key a request presents: its Bearer header, else `?key=` (null: none). A header that is there but not
 * "Bearer <key>" is 401, never read as no key. The HTTP routes and the WebSocket upgrade (ws-stream.ts) both use it.
 */
export function keyFrom(authorization: string | undefined, queryKey: unknown): string | null {
  if (authorization) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!m)
      throw new ServiceError(401, 'SVC_INVALID_KEY', 'Authorization header must be "Bearer <API_KEY>"', {
        key_id: null,
        revoked_at: null,
        reason: 'malformed header',
      });
    return m[1]!;
  }
  return typeof queryKey === 'string' && queryKey.length > 0 ? queryKey : null;
}

export function presentedKey(ctx: Context): string | null {
  return keyFrom(ctx.get('authorization') || undefined, ctx.query.key);
}

/** 401 SVC_NO_KEY (part 7: with an example of the credential the route takes and the code's documentation). */
export function noKeyError(message = 'this route needs an API key', example = 'Authorization: Bearer sk_…'): ServiceError {
  return new ServiceError(401, 'SVC_NO_KEY', message, { auth_header_example: example, docs_url: documentationUrl('SVC_NO_KEY') });
}

export interface AuthDeps {
  identity: IdentityService;
  nodeId: () => string;
  /**
   * The home of an identity whose record names this node, once this node checked it still is after its start
   * (node/custody.ts checkedHome: this node, the new home it learned, or 503). Absent: the record's word.
   */
  checkedHome?: (zid: string) => Promise<string>;
}

/** Resolve the key of the request into a Caller (throws SVC_INVALID_KEY / SVC_NO_KEY). */
export async function resolveCaller(ctx: Context, deps: AuthDeps, allowAnonymous: boolean): Promise<Caller> {
  const key = presentedKey(ctx);
  if (!key) {
    // A request forwarded to a machine's home with its caller vouched for by the caller's home (chain-delegation.ts).
    const vouched = ctx.state.vouchedCaller as Caller | undefined;
    if (vouched) return vouched;
    if (allowAnonymous) return { kind: 'anonymous', ip: callerAddress(ctx) };
    throw noKeyError();
  }
  const rec = await deps.identity.resolveKey(key, callerAddress(ctx));
  if (rec.kind === 'zsm_pub') {
    throw new ServiceError(401, 'SVC_INVALID_KEY', 'public embed keys are read-only and valid on the embed ingest endpoint only', {
      key_id: rec.key_id,
      revoked_at: null,
      reason: 'read-only embed key',
    });
  }
  if (rec.plan === 'demo' || !rec.zid) return { kind: 'demo', key: rec };
  // A machine's key is served at the machine's home, which a custody failover does not move (decisions.md "Custody"):
  // nothing more is read for it. An identity's record holds its current home (a failover moves it).
  if (rec.kind === 'zsm' && rec.slug) return { kind: 'identity', zid: rec.zid, key: rec, slug: rec.slug, home: rec.home ?? deps.nodeId() };
  const ident = await deps.identity.getIdentity(rec.zid);
  let home = ident?.home ?? rec.home ?? deps.nodeId();
  if (!ident)
    throw new ServiceError(401, 'SVC_INVALID_KEY', 'the identity of this key no longer exists', {
      key_id: rec.key_id,
      revoked_at: null,
      reason: 'unknown identity',
    });
  // A node back from a stop serves an identity homed here once it checked it still is its home (custody/home-check.ts).
  if (home === deps.nodeId() && deps.checkedHome !== undefined) home = await deps.checkedHome(rec.zid);
  return { kind: 'identity', zid: rec.zid, key: rec, slug: ident.default_machine ?? deps.identity.defaultSlug(rec.zid), home };
}

/**
 * Part 5 item 3: a `zsm_` key is 1:1 with its machine. It acts on that machine (and on compute); anything the
 * identity does as a whole needs one of the identity's own keys. 403 naming the key's scope and how to get one.
 */
export function refuseMachineKey(caller: Caller): void {
  if (caller.kind !== 'identity' || caller.key.kind !== 'zsm') return;
  throw new ServiceError(
    403,
    'SVC_FORBIDDEN',
    `a state-machine key acts on its own machine ${caller.key.slug ?? ''} and on compute only: this action needs an identity key (sk_; a v3 identity gets one with POST /api/svc-auth/login-v3, then POST /api/auth/api-key)`,
    {
      key_id: caller.key.key_id,
      key_kind: 'zsm',
      key_scope: caller.key.slug,
      reason: 'identity-wide action with a state-machine key',
      required: 'identity key (sk_ or sk_test_)',
    },
  );
}

/** A `zsm_` key opens its own machine only: 403 on any other machine, whatever role its identity holds there. */
export function refuseOtherMachine(caller: Caller, slug: string): void {
  if (caller.kind !== 'identity' || caller.key.kind !== 'zsm' || caller.key.slug === slug) return;
  throw new ServiceError(403, 'SVC_FORBIDDEN', `this state-machine key belongs to machine ${caller.key.slug ?? ''}, not to ${slug}`, {
    key_id: caller.key.key_id,
    key_kind: 'zsm',
    key_scope: caller.key.slug,
    slug,
    reason: 'state-machine key of another machine',
  });
}

/** The identity behind the request's key (set by requireKey), or 403 for a key that belongs to no identity. */
export function identityOf(ctx: Context): Extract<Caller, { kind: 'identity' }> {
  const c = ctx.state.caller as Caller;
  if (c.kind !== 'identity') throw new ServiceError(403, 'SVC_FORBIDDEN', 'this route needs a key that belongs to an identity');
  return c;
}

/** Middleware: authenticated route (no anonymous). */
export function requireKey(deps: AuthDeps) {
  return documented(
    async (ctx: Context, next: Next): Promise<void> => {
      ctx.state.caller = await resolveCaller(ctx, deps, false);
      await next();
    },
    { auth: 'key' },
  );
}

/** Middleware: an identity-wide route (envelopes, transfers, bonds, webhooks, credentials, chat, keys): refuses `zsm_` keys. */
export function requireIdentityKey(deps: AuthDeps) {
  return documented(
    async (ctx: Context, next: Next): Promise<void> => {
      const caller = await resolveCaller(ctx, deps, false);
      refuseMachineKey(caller);
      ctx.state.caller = caller;
      await next();
    },
    { auth: 'key' },
  );
}

/** Middleware: computing route (anonymous callers allowed, counted by IP). */
export function computeCaller(deps: AuthDeps) {
  return documented(
    async (ctx: Context, next: Next): Promise<void> => {
      ctx.state.caller = await resolveCaller(ctx, deps, true);
      await next();
    },
    { auth: 'optional' },
  );
}

/**
 * Who may read a state machine's chain: anyone when it is public, keyed or not (a key that is present must still be
 * good: 401, never read as no key); a private one only an identity holding a role on it. Not "the key's own slug":
 * a role is what grants access, so an admin key whose machine record no longer names its identity opens nothing.
 */
export async function authorizeMachineRead(ctx: Context, deps: AuthDeps, machine: MachineRecord): Promise<void> {
  if (machine.is_public) {
    if (presentedKey(ctx)) await resolveCaller(ctx, deps, false);
    return;
  }
  const caller = await resolveCaller(ctx, deps, false);
  refuseOtherMachine(caller, machine.slug);
  if (caller.kind !== 'identity' || machine.roles[caller.zid] === undefined) {
    throw new ServiceError(403, 'SVC_FORBIDDEN', `no access to state machine ${machine.slug}`);
  }
}

/** 401 unless the request carries this node's operator token as `Authorization: Bearer`. */
function requireOperator(ctx: Context, isOperator: (token: string) => boolean): void {
  const header = ctx.get('authorization');
  if (!header) {
    throw new ServiceError(401, 'SVC_NO_KEY', 'this route needs the node operator token', {
      auth_header_example: 'Authorization: Bearer op_…',
      docs_url: documentationUrl('SVC_NO_KEY'),
    });
  }
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m || !isOperator(m[1]!)) {
    throw new ServiceError(401, 'SVC_INVALID_KEY', 'not the operator token of this node', { key_id: null, revoked_at: null, reason: 'not the operator token' });
  }
}

/** The middleware of an operator route (documented as such): the node's operator token or 401. */
export function operatorOnly(isOperator: (token: string) => boolean): Middleware {
  return documented<Middleware>(
    (ctx, next) => {
      requireOperator(ctx, isOperator);
      return next();
    },
    { auth: 'operator' },
  );
}

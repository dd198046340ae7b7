// Identity routes (spec 2.4, 4.4, part 5): v1 /api/auth/*, v3 /api/svc-auth/*-v3, demo keys.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import { perMinuteLimit } from '../limits.js';
import { ServiceError } from '../../kernel/errors.js';
import type { HttpKit } from '../kit.js';
import type { RouteGroup } from '../route-group.js';
import { zidOfEquation, type IdentityService, type KeyListing } from '../../identity/service.js';
import type { KeyRecord } from '../../records/types.js';
import type { DemoKeys } from '../../identity/demo.js';
import {
  apiKeyMintedResponse,
  demoKeyMintedResponse,
  demoKeyResponse,
  keyListResponse,
  keyMintedResponse,
  keyViewResponse,
  okResponse,
  registerResponse,
  registerV3Response,
  saltResponse,
  sessionCheckResponse,
  sessionKeyResponse,
  sessionResponse,
  whoamiResponse,
} from '../responses.js';
import { body, describes, responds, validate } from '../validate.js';
import { identityOf, requireIdentityKey, resolveCaller } from '../auth.js';
import { askHome, forwardToHome, relayAnswer, wasForwarded } from '../forward.js';
import { sessionTokenZid } from '../../identity/session-token.js';
import { callerAddress } from '../caller-address.js';

const credentials = z.object({ email: z.string().trim().email().max(254), password: z.string().min(8).max(1024) }).strict();
const loginBody = z.object({ email: z.string().trim().min(1).max(254), password: z.string().min(1).max(1024) }).strict();
const zkBody = z.object({ equation_sha256: z.string().regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex characters: SHA-256 of the client-held equation') }).strict();
const apiKeyBody = z.object({ kind: z.enum(['sk', 'sk_test', 'svc_ak']).default('sk') }).strict();
const mintBody = z
  .object({
    kind: z.enum(['sk', 'sk_test']).default('sk'),
    ttl_seconds: z
      .number()
      .int()
      .min(60)
      .max(366 * 86_400)
      .optional(),
  })
  .strict();
const KEY_ID = /^(sk_test_|sk_|svc_ak_|zsm_pub_|zsm_)[0-9a-f]{8}$/;
const SESSION_COOKIE = 'session';

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** What a key acts on: its identity as a whole, one machine (zsm_), or one machine's embed ingest (zsm_pub_). */
function scopeOf(k: KeyRecord): { scope: 'identity' | 'machine' | 'embed'; slug: string | null } {
  if (k.kind === 'zsm') return { scope: 'machine', slug: k.slug };
  if (k.kind === 'zsm_pub') return { scope: 'embed', slug: k.slug };
  return { scope: 'identity', slug: null };
}

/** A key as listed and revoked: never the key nor its digest. */
export function keyView(k: KeyRecord, lastUsedMs: number | null): Record<string, unknown> {
  return {
    key_id: k.key_id,
    kind: k.kind,
    ...scopeOf(k),
    plan: k.plan,
    created_at: iso(k.created_unix_ms),
    expires_at: iso(k.expires_unix_ms),
    last_used_at: iso(lastUsedMs),
    revoked_at: iso(k.revoked_unix_ms),
  };
}

function setSessionCookie(ctx: Context, token: string, expiresMs: number): void {
  ctx.cookies.set(SESSION_COOKIE, token, { httpOnly: true, sameSite: 'lax', path: '/', expires: new Date(expiresMs), overwrite: true });
}

/**
 * Sessions are kept by the identity's home, which checks its logins: a login, or a route of the session cookie, for
 * an identity homed on another node is relayed there (once: a relayed request is served where it lands), with the
 * cookie, and the home's answer relayed back with the cookie it sets or clears. True when relayed.
 */
async function servedAtHome(ctx: Context, kit: HttpKit, identity: IdentityService, zid: string | null): Promise<boolean> {
  if (zid === null || wasForwarded(ctx)) return false;
  const ident = await identity.findIdentity(zid, callerAddress(ctx));
  if (ident === undefined || ident.home === kit.nodeId()) return false;
  const token = ctx.cookies.get(SESSION_COOKIE);
  const answer = await askHome(ctx, kit, ident.home, 'identity', { zid }, { headers: token ? { cookie: `${SESSION_COOKIE}=${token}` } : {} });
  relayAnswer(ctx, ident.home, answer);
  const cookie = answer.headers.get('set-cookie');
  if (cookie) ctx.set('Set-Cookie', cookie);
  return true;
}

/** The identity the request's session cookie names (null: none, or a token that names none). */
const cookieZid = (ctx: Context): string | null => sessionTokenZid(ctx.cookies.get(SESSION_COOKIE));

export interface IdentityRouteServices {
  identity: IdentityService;
  demoKeys: DemoKeys;
}

export function identityRoutes(s: IdentityRouteServices): RouteGroup {
  return { name: 'identity', register: (router, kit) => registerIdentityRoutes(router, kit, s) };
}

function registerIdentityRoutes(router: Router, kit: HttpKit, s: IdentityRouteServices): void {
  // Each of these hashes a secret with scrypt (~0.1 s of a core): counted together per caller address.
  const authLimit = perMinuteLimit(kit.config.limits.authPerMinute, 'registrations and logins');
  router.post('/api/auth/register', responds(registerResponse, { status: 201 }), authLimit, body(credentials), async (ctx) => {
    const body = validate(credentials, ctx.request.body);
    ctx.status = 201;
    ctx.body = await s.identity.register(body.email, body.password);
  });

  router.post('/api/auth/login', responds(sessionResponse), authLimit, body(loginBody), async (ctx) => {
    const body = validate(loginBody, ctx.request.body);
    const session = await s.identity.login(body.email, body.password);
    setSessionCookie(ctx, session.token, session.expires_unix_ms);
    ctx.body = { zid: session.zid, expiresAt: new Date(session.expires_unix_ms).toISOString(), message: 'logged in; session cookie set' };
  });

  router.post('/api/auth/logout', responds(okResponse), async (ctx) => {
    if (await servedAtHome(ctx, kit, s.identity, cookieZid(ctx))) return;
    const token = ctx.cookies.get(SESSION_COOKIE);
    if (token) await s.identity.logout(token);
    ctx.cookies.set(SESSION_COOKIE, '', { httpOnly: true, sameSite: 'lax', path: '/', expires: new Date(0) });
    ctx.body = { ok: true };
  });

  router.post('/api/auth/verify', responds(sessionCheckResponse), async (ctx) => {
    if (await servedAtHome(ctx, kit, s.identity, cookieZid(ctx))) return;
    ctx.body = await s.identity.verifySession(ctx.cookies.get(SESSION_COOKIE));
  });

  router.post('/api/auth/session-key', responds(sessionKeyResponse), async (ctx) => {
    if (await servedAtHome(ctx, kit, s.identity, cookieZid(ctx))) return;
    ctx.body = await s.identity.sessionKey(ctx.cookies.get(SESSION_COOKIE));
  });

  router.post('/api/auth/api-key', responds(apiKeyMintedResponse, { status: 201 }), body(apiKeyBody), async (ctx) => {
    const body = validate(apiKeyBody, ctx.request.body);
    if (await servedAtHome(ctx, kit, s.identity, cookieZid(ctx))) return;
    const session = await s.identity.verifySession(ctx.cookies.get(SESSION_COOKIE));
    if (!session.valid || !session.zid) throw new ServiceError(401, 'SVC_NO_SESSION', 'a valid session cookie is required');
    const { key, record } = await s.identity.mintKeyFor(session.zid, body.kind, null);
    ctx.status = 201;
    ctx.body = { key, key_id: record.key_id, kind: record.kind, plan: record.plan, message: 'shown once; only its digest is stored' };
  });

  router.get('/api/auth/salt/:email', responds(saltResponse), async (ctx) => {
    const email = String(ctx.params.email ?? '');
    if (email.length < 3 || email.length > 254)
      throw new ServiceError(400, 'SVC_INVALID_INPUT', 'email is not valid', { field: 'email', reason: 'length 3 … 254', allowed: null });
    ctx.body = { email: email.trim().toLowerCase(), salt: await s.identity.saltFor(email), algorithm: 'scrypt', params: { N: 16384, r: 8, p: 1, keylen: 32 } };
  });

  router.post('/api/svc-auth/register-v3', responds(registerV3Response, { status: 201 }), authLimit, body(zkBody), async (ctx) => {
    const body = validate(zkBody, ctx.request.body);
    const svcond = kit.time.nowSvcond();
    const { zid, machine, adminKey } = await s.identity.registerV3(body.equation_sha256, svcond);
    ctx.status = 201;
    ctx.body = {
      zid,
      message: 'identity registered; the admin key of your default state machine is shown once',
      state_machine: {
        slug: machine.slug,
        owner: machine.owner,
        genesis_svcond: machine.genesis_svcond,
        is_public: machine.is_public,
        inject_agent_rail: machine.inject_agent_rail,
        inject_pulse_orb: machine.inject_pulse_orb,
        roles: machine.roles,
      },
      admin_key: adminKey,
    };
  });

  router.post('/api/svc-auth/login-v3', responds(sessionResponse), authLimit, body(zkBody), async (ctx) => {
    const body = validate(zkBody, ctx.request.body);
    if (await servedAtHome(ctx, kit, s.identity, zidOfEquation(body.equation_sha256))) return;
    const session = await s.identity.loginV3(body.equation_sha256);
    setSessionCookie(ctx, session.token, session.expires_unix_ms);
    ctx.body = { zid: session.zid, expiresAt: new Date(session.expires_unix_ms).toISOString() };
  });

  router.get('/api/demo-key', responds(demoKeyResponse), async (ctx) => {
    ctx.body = { key: await s.demoKeys.sharedKey(), plan: 'demo', dailyLimit: kit.config.limits.demoKeyPerDay };
  });

  router.post('/api/demo-key/mint', responds(demoKeyMintedResponse, { status: 201 }), async (ctx) => {
    ctx.status = 201;
    ctx.body = {
      key: await s.demoKeys.mint(callerAddress(ctx)),
      plan: 'demo',
      dailyLimit: kit.config.limits.demoKeyPerDay,
      message: 'your own demo key; shown once',
    };
  });

  // The caller's keys (an identity key; at the identity's home, which mints and revokes them).
  const keyOwner = [requireIdentityKey(kit.auth), forwardToHome(kit)] as const;
  router.get('/api/auth/keys', responds(keyListResponse), ...keyOwner, async (ctx) => {
    const c = identityOf(ctx);
    const keys = await s.identity.listKeys(c.zid);
    ctx.body = { zid: c.zid, total: keys.length, keys: keys.map((k: KeyListing) => keyView(k.key, k.last_used_unix_ms)) };
  });

  router.post('/api/auth/keys', responds(keyMintedResponse, { status: 201 }), ...keyOwner, body(mintBody), async (ctx) => {
    const c = identityOf(ctx);
    const b = validate(mintBody, ctx.request.body ?? {});
    const { key, record } = await s.identity.mintKeyFor(c.zid, b.kind, b.ttl_seconds === undefined ? null : b.ttl_seconds * 1000, c.key);
    ctx.status = 201;
    ctx.body = { key, ...keyView(record, null), message: 'shown once; only its digest is stored' };
  });

  router.delete('/api/auth/keys/:key_id', responds(keyViewResponse), ...keyOwner, async (ctx) => {
    const c = identityOf(ctx);
    const id = String(ctx.params.key_id);
    if (!KEY_ID.test(id))
      throw new ServiceError(400, 'SVC_INVALID_INPUT', 'invalid input key_id: a key prefix and 8 hex characters, as GET /api/auth/keys lists it', {
        field: 'key_id',
        reason: 'format',
        allowed: null,
      });
    ctx.body = keyView(await s.identity.revokeKeyOf(c.zid, id), null);
  });

  // Who am I (useful to clients holding only a key).
  router.get('/api/auth/whoami', responds(whoamiResponse), describes({ auth: 'key' }), async (ctx) => {
    const caller = await resolveCaller(ctx, kit.auth, false);
    ctx.body =
      caller.kind === 'identity'
        ? { kind: 'identity', zid: caller.zid, key_id: caller.key.key_id, key_kind: caller.key.kind, machine: caller.slug }
        : { kind: caller.kind };
  });
}

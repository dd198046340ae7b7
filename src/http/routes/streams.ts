// Stream channel routes (spec 4.5): thin — validate with zod, check who may open the channel, call the stream service.
// Who opens a channel: its owner's key, or the channel's own key (Authorization header or ?key=); a pull link's
// signature opens its keyless pull only (part 5 item 7). A closed channel is still read (GET, latest, verify); a link,
// a pull, a secure session and its pull are refused 409 SVC_CONFLICT after the credential is checked (stillOpen).
import type Router from '@koa/router';
import type { Context, Next } from 'koa';
import { z } from 'zod';
import type { HttpKit } from '../kit.js';
import type { RouteGroup } from '../route-group.js';
import type { MeshService } from '../../mesh/service.js';
import { noKeyError, presentedKey, requireKey, resolveCaller, type AuthDeps } from '../auth.js';
import { forwardToHome, relayToHome, wasForwarded } from '../forward.js';
import { body, responds, validate } from '../validate.js';
import {
  channelCreatedResponse,
  channelResponse,
  pullLinkResponse,
  sealedResponse,
  secureFrameResponse,
  secureOpenResponse,
  verifyResponse,
} from '../responses.js';
import { verifyBody, verifyCandidate } from './compute.js';
import { ServiceError } from '../../kernel/errors.js';
import type { Caller } from '../../records/types.js';
import {
  CHANNEL_CONTRACT_REFUSAL,
  channelView,
  headersOf,
  stillOpen,
  TICK_INTERVAL_MAX,
  type ChannelRecord,
  type StreamService,
} from '../../streams/channels.js';
import { TEMPLATE_MAX } from '../../streams/template.js';
import { LINK_TTL_DEFAULT_SECONDS, LINK_TTL_MAX_SECONDS } from '../../streams/links.js';
import { x25519PublicKey } from '../../streams/secure.js';
import { homeOfChannel } from '../../streams/channel-id.js';

export const createBody = z
  .object({
    solver: z.string().min(1).max(64).optional(),
    domain: z.string().min(1).max(64).optional(),
    // Counted by the chain (more than 10: SVC_TOO_MANY_OPERATORS of part 7), not by a generic bound here.
    operators: z.array(z.string().min(1).max(64)).min(1).optional(),
    inputs: z.record(z.string(), z.any()).optional(),
    initialState: z.any().optional(),
    outputFormat: z.enum(['json', 'template']).default('json'),
    template: z.string().max(TEMPLATE_MAX).optional(),
    // Spec 2.7 shows a channel's contract but not what it does: only null (none) is taken (docs/decisions.md).
    contract: z.null({ error: CHANNEL_CONTRACT_REFUSAL }).optional(),
    autotick: z.boolean().default(false),
    tickIntervalZeqonds: z.number().int().min(1).max(TICK_INTERVAL_MAX).default(1),
  })
  .strict()
  .refine((b) => (b.solver !== undefined) !== (b.domain !== undefined || b.operators !== undefined), {
    message: 'give either solver, or domain and operators',
    path: ['solver'],
  })
  .refine((b) => b.solver !== undefined || (b.domain !== undefined && b.operators !== undefined), {
    message: 'an operator chain needs domain and operators',
    path: ['operators'],
  })
  .refine((b) => (b.outputFormat === 'template') === (b.template !== undefined), {
    message: 'template is required with outputFormat template, and only then',
    path: ['template'],
  })
  .refine((b) => b.solver !== undefined || b.initialState === undefined, { message: 'initialState is for stateful solvers', path: ['initialState'] })
  // An operator chain's inputs are required, as compute's (part 2.1; {} asks for every default); a solver's default to {}.
  .refine((b) => b.solver !== undefined || b.inputs !== undefined, {
    message: "required for an operator chain: an object of the chain's input keys with numeric values ({} takes every default)",
    path: ['inputs'],
  });

export const patchBody = z
  .object({
    autotick: z.boolean(),
    tickIntervalZeqonds: z.number().int().min(1).max(TICK_INTERVAL_MAX).optional(),
  })
  .strict();

const linkBody = z.object({ ttlSeconds: z.number().int().min(1).max(LINK_TTL_MAX_SECONDS).default(LINK_TTL_DEFAULT_SECONDS) }).strict();
const secureOpenBody = z.object({ client_public_key: z.string().min(1).max(64) }).strict();

function setStreamHeaders(ctx: Context, bytes: Buffer | null, verifyUrl: string): void {
  const h = headersOf(bytes);
  ctx.set('X-Svc-Sealed', String(h.sealed));
  ctx.set('X-Svc-Proof', h.proof);
  ctx.set('X-Svc-Token', h.token);
  ctx.set('X-Svc-Svcond', h.svcond);
  ctx.set('X-Svc-Verify', verifyUrl);
}

/**
 * Who may open a channel: the channel's key, or a key of its owner. A key present but wrong is 401 (never read as no
 * key); another identity's key is 403.
 */
export async function authorizeChannel(ctx: Context, auth: AuthDeps, streams: StreamService, channel: ChannelRecord): Promise<void> {
  const key = presentedKey(ctx);
  if (!key) throw noKeyError();
  if (streams.isChannelKey(channel, key)) return;
  if (key.startsWith('stk_'))
    throw new ServiceError(401, 'SVC_INVALID_KEY', 'this is not the channel key', { key_id: null, revoked_at: null, reason: 'wrong channel key' });
  const caller = await resolveCaller(ctx, auth, false);
  if (caller.kind !== 'identity' || caller.zid !== channel.owner.zid)
    throw new ServiceError(403, 'SVC_FORBIDDEN', `stream channel ${channel.id} belongs to another identity`);
}

export interface StreamRouteServices {
  streams: StreamService;
  mesh: MeshService | null;
  /** POST /api/svc/verify's check of a sealed result (compute/service.ts verifyResult). */
  verify: (candidate: unknown) => unknown;
}

export function streamRoutes(s: StreamRouteServices): RouteGroup {
  return { name: 'streams', register: (router, kit) => registerStreamRoutes(router, kit, s) };
}

function registerStreamRoutes(router: Router, kit: HttpKit, s: StreamRouteServices): void {
  const { streams } = s;
  const auth = kit.auth;
  const home = forwardToHome(kit);
  /**
   * X-Svc-Verify: the channel's own verify, which whoever holds what opened the answer can call — a pull link's
   * signature (keyless, part 5 item 7) or a key that opens the channel.
   */
  const verifyUrl = (id: string, sig?: string) =>
    `${kit.publicUrl()}/api/svc/streams/${encodeURIComponent(id)}/verify${sig === undefined ? '' : `?sig=${encodeURIComponent(sig)}`}`;

  /**
   * The stream headers are on every answer of a tick or a pull (part 2.7), a refusal included: X-Svc-Sealed false and
   * no proof, token or tick until a sealed envelope replaces them.
   */
  const unsealedHeaders = (ctx: Context) => setStreamHeaders(ctx, null, verifyUrl(ctx.params.id!));

  const create = async (ctx: Context) => {
    const b = validate(createBody, ctx.request.body);
    const { channel, key } = await streams.create(ctx.state.caller as Caller, {
      source:
        b.solver !== undefined
          ? { kind: 'solver', solver: b.solver, inputs: b.inputs ?? {} }
          : { kind: 'compute', domain: b.domain!, operators: b.operators!, inputs: b.inputs! },
      outputFormat: b.outputFormat,
      template: b.template ?? null,
      contract: b.contract ?? null,
      autotick: b.autotick,
      tickIntervalZeqonds: b.tickIntervalZeqonds,
      ...(b.initialState !== undefined ? { initialState: b.initialState } : {}),
    });
    ctx.status = 201;
    ctx.body = { ...channelView(channel), key, key_notice: 'the channel key is shown once; it is stored only as a digest' };
  };
  router.post('/api/svc/streams', responds(channelCreatedResponse, { status: 201 }), requireKey(auth), home, body(createBody), create);
  router.post('/api/svc/stream/channels', responds(channelCreatedResponse, { status: 201 }), requireKey(auth), home, body(createBody), create);

  /**
   * A channel lives at its owner's home: a request with an owner's key (not a channel key) whose home is another node
   * is relayed there, as compute is. A channel key or a link names no home: it is served where the channel is.
   */
  /**
   * The channel's id names its home: whatever the request carries (owner key, channel key, signed link), it is
   * relayed there once (a relayed request is served where it lands). True when it was.
   */
  const relayedToChannelHome = async (ctx: Context): Promise<boolean> => {
    const channelHome = ctx.params.id ? homeOfChannel(ctx.params.id) : null;
    if (!channelHome || channelHome === kit.nodeId() || !s.mesh?.enabled || wasForwarded(ctx)) return false;
    await relayToHome(ctx, kit, channelHome, 'stream channel', { channel: ctx.params.id });
    return true;
  };
  const atChannelHome = async (ctx: Context, next: Next): Promise<void> => {
    if (!(await relayedToChannelHome(ctx))) await next();
  };

  const ownerHome = async (ctx: Context, next: Next): Promise<void> => {
    if (await relayedToChannelHome(ctx)) return;
    const key = presentedKey(ctx);
    if (key && !key.startsWith('stk_') && s.mesh?.enabled) ctx.state.caller = await resolveCaller(ctx, auth, false);
    await home(ctx, next);
  };

  const opened = async (ctx: Context): Promise<ChannelRecord> => {
    const channel = await streams.get(ctx.params.id!);
    await authorizeChannel(ctx, kit.auth, streams, channel);
    return channel;
  };

  router.get('/api/svc/streams/:id', responds(channelResponse), ownerHome, async (ctx) => {
    ctx.body = channelView(await opened(ctx));
  });

  router.post('/api/svc/streams/:id/tick', responds(sealedResponse), ownerHome, async (ctx) => {
    unsealedHeaders(ctx);
    const channel = await opened(ctx);
    const { sealed } = await streams.tick(channel.id);
    setStreamHeaders(ctx, sealed.bytes, verifyUrl(channel.id));
    ctx.type = 'application/json; charset=utf-8';
    ctx.body = sealed.bytes;
  });

  /** The channel key opens a channel but does not own it: what only the owner may do is 403 with it. */
  const refuseChannelKey = (ctx: Context, channel: ChannelRecord, what: string) => {
    const key = presentedKey(ctx);
    if (key !== null && streams.isChannelKey(channel, key))
      throw new ServiceError(403, 'SVC_FORBIDDEN', `${what} stream channel ${channel.id} needs its owner's key, not the channel key`);
  };

  const close = async (ctx: Context) => {
    const channel = await opened(ctx);
    refuseChannelKey(ctx, channel, 'closing');
    ctx.body = channelView(await streams.close(channel.id));
  };
  router.post('/api/svc/streams/:id/close', responds(channelResponse), ownerHome, close);
  router.delete('/api/svc/streams/:id', responds(channelResponse), ownerHome, close);

  // The owner turns autotick back on (after it stopped for lack of funds: 402 while still unfunded) or off. The
  // channel key opens the channel but does not own it: 403.
  router.patch('/api/svc/streams/:id', responds(channelResponse), ownerHome, body(patchBody, { inHandler: true }), async (ctx) => {
    const channel = await opened(ctx);
    refuseChannelKey(ctx, channel, 'changing');
    const b = validate(patchBody, ctx.request.body);
    ctx.body = channelView(await streams.setAutotick(channel.id, b.autotick, b.tickIntervalZeqonds));
  });

  /** Answer a channel's latest envelope with the stream headers (204 before its first tick), as `encode` renders it. */
  const answerLatest = (ctx: Context, bytes: Buffer | null, verify: string, encode: (bytes: Buffer) => { type: string; body: unknown }): void => {
    setStreamHeaders(ctx, bytes, verify);
    if (bytes === null) {
      ctx.status = 204;
      ctx.body = '';
      return;
    }
    const out = encode(bytes);
    ctx.type = out.type;
    ctx.body = out.body;
  };

  router.get('/api/svc/streams/:id/latest', responds(sealedResponse, { status: [200, 204] }), ownerHome, async (ctx) => {
    const channel = await opened(ctx);
    const out = await streams.latest(channel);
    answerLatest(ctx, out.bytes, verifyUrl(channel.id), () => ({ type: out.contentType, body: out.body }));
  });

  router.post('/api/svc/streams/:id/link', responds(pullLinkResponse, { status: 201 }), ownerHome, body(linkBody, { inHandler: true }), async (ctx) => {
    const channel = await opened(ctx);
    const b = validate(linkBody, ctx.request.body);
    const { sig, expiresMs } = await streams.link(channel.id, b.ttlSeconds);
    ctx.status = 201;
    ctx.body = {
      url: `${kit.publicUrl()}/api/svc/streams/${channel.id}/pull?sig=${encodeURIComponent(sig)}`,
      ws_url: `${kit.publicUrl().replace(/^http/, 'ws')}/ws/stream?channel=${channel.id}&sig=${encodeURIComponent(sig)}`,
      sig,
      expires_at: new Date(expiresMs).toISOString(),
    };
  });

  /** A pull link's signature (?sig=) for channel `id`, or 401 naming why not. */
  const checkedLink = (ctx: Context, id: string): string => {
    if (ctx.query.sig === undefined) throw noKeyError('a keyless pull needs its signed link', `GET /api/svc/streams/${id}/pull?sig=…`);
    const check = streams.checkLink(id, ctx.query.sig);
    if (!check.ok)
      throw new ServiceError(401, 'SVC_INVALID_KEY', `pull link refused: ${check.reason}`, { key_id: null, revoked_at: null, reason: check.reason });
    return String(ctx.query.sig);
  };

  router.get('/api/svc/streams/:id/pull', responds(sealedResponse, { status: [200, 204] }), atChannelHome, async (ctx) => {
    unsealedHeaders(ctx);
    const id = ctx.params.id!;
    const sig = checkedLink(ctx, id);
    const bytes = await streams.latestBytes(stillOpen(await streams.get(id)));
    answerLatest(ctx, bytes, verifyUrl(id, sig), (b) => ({ type: 'application/json; charset=utf-8', body: b }));
  });

  // The verify X-Svc-Verify names: /api/svc/verify's check, opened by the pull link's signature (no key) or by a key
  // that opens the channel, so whoever received an envelope from the channel can check it.
  router.post('/api/svc/streams/:id/verify', responds(verifyResponse), body(verifyBody, { inHandler: true }), atChannelHome, async (ctx) => {
    const channel = await streams.get(ctx.params.id!);
    if (ctx.query.sig !== undefined) checkedLink(ctx, channel.id);
    else await authorizeChannel(ctx, kit.auth, streams, channel);
    ctx.body = s.verify(verifyCandidate(ctx.request.body));
  });

  router.post(
    '/api/svc/streams/:id/secure/open',
    responds(secureOpenResponse, { status: 201 }),
    ownerHome,
    body(secureOpenBody, { inHandler: true }),
    async (ctx) => {
      const channel = await opened(ctx);
      const b = validate(secureOpenBody, ctx.request.body);
      const pub = x25519PublicKey(b.client_public_key);
      if (pub === null)
        throw new ServiceError(400, 'SVC_INVALID_INPUT', 'client_public_key must be a raw X25519 public key (32 bytes, base64url)', {
          field: 'client_public_key',
          reason: 'not an X25519 public key',
          allowed: '32 bytes, base64url',
        });
      const { session, serverPublicKey } = await streams.openSecure(channel.id, pub);
      ctx.status = 201;
      ctx.body = {
        session: session.id,
        server_public_key: serverPublicKey,
        algorithm: 'AES-256-GCM',
        key_agreement: 'X25519',
        kdf: { name: 'HKDF-SHA256', salt: 'utf8(session)', info: `svc-stream-secure/v1|${channel.id}`, length: 32 },
        nonce: '4 zero bytes || seq (8 bytes, big-endian), seq from 1',
        aad: 'utf8(session + "|" + seq)',
        expires_at: new Date(session.expiresMs).toISOString(),
      };
    },
  );

  router.get('/api/svc/streams/:id/secure/pull', responds(secureFrameResponse, { status: [200, 204] }), atChannelHome, async (ctx) => {
    unsealedHeaders(ctx);
    const id = ctx.params.id!;
    if (ctx.query.session === undefined)
      throw noKeyError('a secure pull needs its session (POST /api/svc/streams/:id/secure/open)', `GET /api/svc/streams/${id}/secure/pull?session=…`);
    const session = await streams.secure.get(id, ctx.query.session);
    if (session === null)
      throw new ServiceError(401, 'SVC_INVALID_KEY', 'unknown or expired secure session', { key_id: null, revoked_at: null, reason: 'no session' });
    const bytes = await streams.latestBytes(stillOpen(await streams.get(id)));
    const frame = bytes === null ? null : await streams.secure.seal(session, bytes);
    answerLatest(ctx, bytes, verifyUrl(id), () => ({ type: 'application/json; charset=utf-8', body: frame }));
  });
}

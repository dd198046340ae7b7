// POST /api/llm/chat (spec 4.2): an identity's chat message, answered with the node's tools (llm/chat.ts), and the
// identity's provider credentials under /api/svc/llm/credentials (llm/credentials.ts). Authenticated; served at the
// identity's home (its day counter, wallet and credentials are there).
import type Router from '@koa/router';
import { z } from 'zod';
import { ServiceError } from '../../kernel/errors.js';
import type { Caller } from '../../records/types.js';
import type { HttpKit } from '../kit.js';
import type { RouteGroup } from '../route-group.js';
import type { ChatService } from '../../llm/chat.js';
import type { ProviderDirectory } from '../../llm/directory.js';
import type { CredentialStore } from '../../llm/credentials.js';
import type { TierBook } from '../../tally/tiers.js';
import { requireIdentityKey } from '../auth.js';
import { forwardToHome } from '../forward.js';
import { body, responds, validate } from '../validate.js';
import { chatResponse, credentialDeletedResponse, credentialListResponse, credentialResponse, credentialTestResponse } from '../responses.js';
import type { LocalTools } from '../local-tools.js';
import { assertFeatureAllowed } from '../../tally/tier-gates.js';
import { PROVIDER_KIND_NAMES, probeProvider } from '../../llm/providers.js';
import { completeProvider } from '../../llm/directory.js';
import { clientGone } from '../client-gone.js';

export const chatBody = z
  .object({
    messages: z
      .array(z.object({ role: z.enum(['system', 'user', 'assistant']), content: z.string().max(32_000) }).strict())
      .min(1)
      .max(64)
      .refine((m) => m.some((x) => x.role === 'user'), 'at least one user message'),
    provider: z.string().min(1).max(64).optional().describe('a provider kind, or "offline"; default: your own credential, else the node’s, else offline'),
    model: z.string().min(1).max(200).optional(),
    tools: z.boolean().default(false).describe("let the model call this node's tools"),
  })
  .strict();

export const credentialBody = z
  .object({
    kind: z.enum(PROVIDER_KIND_NAMES),
    api_key: z.string().min(8).max(4096),
    base_url: z
      .string()
      .url()
      .max(500)
      .refine((u) => /^https?:\/\//i.test(u), 'an http or https URL')
      .optional(),
    model: z.string().min(1).max(200).optional(),
    label: z.string().min(1).max(100).optional(),
  })
  .strict();

export interface LlmRouteServices {
  chat: ChatService;
  /** Where a chat's provider comes from. */
  directory: ProviderDirectory;
  /** Identities' own provider keys; absent: not enabled on this node (404). */
  credentials?: CredentialStore;
  tiers: TierBook;
  /** This node's tools, offered to the model: requests to its own routes on the caller's behalf. */
  tools: LocalTools;
}

export function llmRoutes(s: LlmRouteServices): RouteGroup {
  return { name: 'llm', register: (router, kit) => registerLlmRoutes(router, kit, s) };
}

function registerLlmRoutes(router: Router, kit: HttpKit, s: LlmRouteServices): void {
  const { tools } = s;
  const auth = kit.auth;
  router.post('/api/llm/chat', responds(chatResponse), requireIdentityKey(auth), forwardToHome(kit), body(chatBody, { inHandler: true }), async (ctx) => {
    const caller = ctx.state.caller as Caller;
    if (caller.kind !== 'identity')
      throw new ServiceError(403, 'SVC_FORBIDDEN', 'chat needs a key that belongs to an identity (its messages are counted per ZID)');
    const body = validate(chatBody, ctx.request.body);
    const provider = await s.directory.providerFor(caller.zid, body.provider, body.model);
    const source = tools.sourceFor(kit.selfApi.targetOf(ctx), ctx.state.traceId as string);
    ctx.body = await s.chat.chat(caller, { messages: body.messages, tools: body.tools }, provider, source, clientGone(ctx));
  });

  // Provider credentials (spec 5.10): the identity's own, at its home; creating and testing need a paid tier.
  const identityOf = (c: Caller) => {
    if (c.kind !== 'identity') throw new ServiceError(403, 'SVC_FORBIDDEN', 'provider credentials belong to an identity: use a key of one');
    if (!s.credentials) throw new ServiceError(404, 'SVC_NOT_FOUND', 'provider credentials are not enabled on this node');
    return { caller: c, store: s.credentials };
  };
  const paid = (c: Extract<Caller, { kind: 'identity' }>) => assertFeatureAllowed('llm_credentials', s.tiers.ofCaller(c), `${kit.publicUrl()}/api/tally/tiers`);
  const base = '/api/svc/llm/credentials';
  router.post(
    base,
    responds(credentialResponse, { status: 201 }),
    requireIdentityKey(auth),
    forwardToHome(kit),
    body(credentialBody, { inHandler: true }),
    async (ctx) => {
      const { caller, store } = identityOf(ctx.state.caller as Caller);
      paid(caller);
      const body = validate(credentialBody, ctx.request.body);
      // The kind, base URL and model must make a provider (openai_compatible needs a base URL) before anything is kept.
      completeProvider({ kind: body.kind, baseUrl: body.base_url ?? null, apiKey: body.api_key, model: body.model ?? null, policy: store.urlPolicy }, null);
      ctx.status = 201;
      ctx.body = await store.create(caller.zid, body);
    },
  );
  router.get(base, responds(credentialListResponse), requireIdentityKey(auth), forwardToHome(kit), async (ctx) => {
    const { caller, store } = identityOf(ctx.state.caller as Caller);
    ctx.body = { credentials: await store.list(caller.zid) };
  });
  router.delete(`${base}/:id`, responds(credentialDeletedResponse), requireIdentityKey(auth), forwardToHome(kit), async (ctx) => {
    const { caller, store } = identityOf(ctx.state.caller as Caller);
    await store.delete(caller.zid, String(ctx.params.id));
    ctx.body = { id: String(ctx.params.id), deleted: true };
  });
  router.post(`${base}/:id/test`, responds(credentialTestResponse), requireIdentityKey(auth), forwardToHome(kit), async (ctx) => {
    const { caller, store } = identityOf(ctx.state.caller as Caller);
    paid(caller);
    const id = String(ctx.params.id);
    const provider = completeProvider(await store.withKey(caller.zid, id), null);
    try {
      const probe = await probeProvider(provider, kit.config.llm.timeoutMs, () => Date.now());
      ctx.body = { id, ok: true, provider: provider.kind, model: provider.model, ...probe };
    } catch (err) {
      if (!(err instanceof ServiceError)) throw err;
      ctx.body = { id, ok: false, provider: provider.kind, model: provider.model, error: { code: err.code, message: err.message, ...err.extra } };
    }
  });
}

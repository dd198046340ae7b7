// POST /api/llm/chat (spec 4.2): an identity's chat message, answered with the node's tools (llm/chat.ts).
// Authenticated; served at the identity's home (its day counter and wallet are there).
import type Router from '@koa/router';
import { z } from 'zod';
import { ServiceError } from '../../kernel/errors.js';
import type { Caller } from '../../tally/ledger.js';
import type { HttpServices } from '../context.js';
import { requireKey } from '../auth.js';
import { forwardToHome } from '../forward.js';
import { validate } from '../validate.js';
import type { LocalTools } from '../local-tools.js';
import type { SelfApi } from '../self-request.js';

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

export function llmRoutes(router: Router, s: HttpServices, tools: LocalTools, self: SelfApi): void {
  const auth = { identity: s.identity, chain: s.chain, nodeId: s.nodeId };
  router.post('/api/llm/chat', requireKey(auth), forwardToHome(s), async (ctx) => {
    const caller = ctx.state.caller as Caller;
    if (caller.kind !== 'identity')
      throw new ServiceError(403, 'SVC_FORBIDDEN', 'chat needs a key that belongs to an identity (its messages are counted per ZID)');
    if (!s.llm) throw new ServiceError(404, 'SVC_NOT_FOUND', 'chat is not enabled on this node');
    const body = validate(chatBody, ctx.request.body);
    const provider = await s.llm.directory.providerFor(caller.zid, body.provider, body.model);
    const source = tools.sourceFor(self.targetOf(ctx), ctx.state.traceId as string);
    ctx.body = await s.llm.chat.chat(caller, { messages: body.messages, tools: body.tools }, provider, source);
  });
}

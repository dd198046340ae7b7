// POST /api/genesis/execute (spec 4.2): a new state machine from a genesis document, at the caller's home. Thin:
// validate the document (its contract with the chain's contract schema, errors at `document.contract.<path>`), call
// the genesis service, answer 201 (created) or 200 (the same document again).
import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import { ServiceError } from '../../kernel/errors.js';
import { parseContract } from '../../chain/contract-language.js';
import { PULSE_ORB_REFUSAL } from '../../chain/settings.js';
import type { HttpKit } from '../kit.js';
import { genesisResponse } from '../responses.js';
import type { RouteGroup } from '../route-group.js';
import type { ChainService } from '../../chain/service.js';
import type { MeshService } from '../../mesh/service.js';
import { requireIdentityKey } from '../auth.js';
import { forwardToHome } from '../forward.js';
import { body, responds, validate } from '../validate.js';
import type { Caller } from '../../records/types.js';
import { SLUG_PATTERN } from '../../mesh/machines.js';
import type { GenesisService } from '../../genesis/service.js';
import { claimSlug, refuseSlugHeldElsewhere } from '../slug-claims.js';

const documentSchema = z
  .object({
    slug: z.string().regex(SLUG_PATTERN, '3 … 48 of a-z, 0-9 and -'),
    is_public: z.boolean().default(false),
    inject_agent_rail: z.boolean().default(false),
    inject_pulse_orb: z.literal(false, { error: PULSE_ORB_REFUSAL }).default(false),
    roles: z
      .record(z.string().regex(/^zid_[A-Za-z0-9]{1,64}$/, 'a ZID'), z.enum(['viewer', 'operator', 'admin']))
      .refine((r) => Object.keys(r).length <= 64, 'at most 64 roles')
      .default({}),
    events: z
      .array(
        z
          .object({ type: z.string().regex(/^[a-z][a-z0-9_.-]{0,47}$/, 'a-z, 0-9, _ . - (1 … 48, a letter first)'), payload: z.unknown().default(null) })
          .strict(),
      )
      .max(64)
      .default([]),
    metadata: z.record(z.string().max(64), z.unknown()).default({}),
    contract: z.unknown().optional(),
  })
  .strict();
const executeBody = z.object({ document: documentSchema }).strict();

export interface GenesisRouteServices {
  genesis: GenesisService;
  chain: ChainService;
  /** Slugs are mesh-wide (slug-claims.ts). */
  mesh: MeshService | null;
}

export function genesisRoutes(s: GenesisRouteServices): RouteGroup {
  return { name: 'genesis', register: (router, kit) => registerGenesisRoutes(router, kit, s) };
}

function registerGenesisRoutes(router: Router, kit: HttpKit, s: GenesisRouteServices): void {
  const auth = kit.auth;
  const home = forwardToHome(kit);

  router.post(
    '/api/genesis/execute',
    responds(genesisResponse, { status: [201, 200] }),
    requireIdentityKey(auth),
    home,
    body(executeBody, { inHandler: true }),
    async (ctx: Context) => {
      const c = ctx.state.caller as Caller;
      if (c.kind !== 'identity') throw new ServiceError(403, 'SVC_FORBIDDEN', 'a genesis document is executed by an identity: use a key of one');
      const { document } = validate(executeBody, ctx.request.body);
      const { contract, inject_agent_rail, inject_pulse_orb, ...doc } = document;
      // The digested document: a setting only when true and the contract only when given, so a document written
      // without them keeps the digest it had before they were read.
      // Slugs are mesh-wide, as for POST /api/chain/state-machines.
      await refuseSlugHeldElsewhere(kit, s, document.slug);
      const { created, body } = await s.genesis.execute(c.zid, {
        ...doc,
        events: doc.events.map((e) => ({ type: e.type, payload: e.payload ?? null })),
        ...(contract !== undefined ? { contract: parseContract(contract, 'document.contract') } : {}),
        ...(inject_agent_rail ? { inject_agent_rail: true as const } : {}),
        ...(inject_pulse_orb ? { inject_pulse_orb: true as const } : {}),
      });
      if (created) {
        const machine = await s.chain.getMachine(document.slug);
        if (machine) await claimSlug(kit, s, machine);
      }
      ctx.status = created ? 201 : 200;
      ctx.body = body;
    },
  );
}

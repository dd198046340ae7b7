// The economy's routes (architecture.md §7): the cost table, operator grants, the daily claim, folder moves and
// transfers (with the node-to-node delivery route of cross-node transfers).
import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import { ServiceError } from '../../kernel/errors.js';
import { stampAt } from '../../kernel/clock.js';
import type { HttpKit } from '../kit.js';
import type { RouteGroup } from '../route-group.js';
import type { Grants } from '../../tally/grants.js';
import type { ClaimService } from '../../tally/claim.js';
import type { Folders } from '../../tally/folders.js';
import type { MeshService } from '../../mesh/service.js';
import {
  claimResponse,
  claimStatusResponse,
  costsResponse,
  folderMoveResponse,
  grantResponse,
  signedMeshEventResponse,
  tiersResponse,
  transferResponse,
} from '../responses.js';
import { body, responds, validate } from '../validate.js';
import { costSheet } from '../../tally/costs.js';
import { tierSheet } from '../../tally/tier-gates.js';
import { TIERS, type TierBook } from '../../tally/tiers.js';
import { identityOf, requireIdentityKey, requireKey, operatorOnly } from '../auth.js';
import { clientAddress, forwardToHome } from '../forward.js';
import { answerInBatch } from '../idempotency.js';
import { MAX_TRANSFER_ENVELOPES, TRANSFER_ACK_EVENT, TRANSFER_EVENT, deliveryBatch, type TransferView } from '../../tally/transfer-wire.js';
import type { Transfers } from '../../tally/transfers.js';
import { DELIVER_PATH } from '../../tally/transfer-delivery.js';
import { HANDSHAKE_HEADER } from '../../mesh/wire.js';

const ZID_PATTERN = /^zid_[0-9a-f]{32}$/;
const grantBody = z
  .object({
    zid: z.string().regex(ZID_PATTERN, 'zid_ followed by 32 lower-case hex digits'),
    credits: z.number().int().min(0).max(1_000_000_000),
    tier: z.enum(TIERS).optional(),
  })
  .strict()
  .refine((b) => b.credits > 0 || b.tier !== undefined, { message: 'a grant gives credits (> 0), a tier, or both', path: ['credits'] });

const folderBody = z
  .object({
    folder: z.string().min(1).max(64),
    token_ids: z.array(z.string().min(1).max(128)).min(1).optional(),
    count: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
    from_folder: z.string().min(1).max(64).optional(),
    q: z.string().min(1).max(128).optional(),
  })
  .strict();
const transferBody = z
  .object({
    to: z.string().regex(ZID_PATTERN, 'zid_ followed by 32 lower-case hex digits'),
    token_ids: z.array(z.string().min(1).max(128)).min(1).max(MAX_TRANSFER_ENVELOPES).optional(),
    count: z.number().int().min(1).max(MAX_TRANSFER_ENVELOPES).optional(),
  })
  .strict()
  .refine((b) => (b.token_ids === undefined) !== (b.count === undefined), { message: 'give token_ids or count (one of them)', path: ['token_ids'] });
const claimBody = z.object({ challenge: z.string().min(1).max(200), nonce: z.string().min(1).max(64) }).strict();

export interface TallyRouteServices {
  grants: Grants;
  tiers: TierBook;
  claims: ClaimService;
  folders: Folders;
  transfers: Transfers;
  /** Null: a node without a mesh (the delivery route answers 503 MESH_DISABLED). */
  mesh: MeshService | null;
}

export function tallyRoutes(s: TallyRouteServices): RouteGroup {
  return { name: 'tally', register: (router, kit) => registerTallyRoutes(router, kit, s) };
}

function registerTallyRoutes(router: Router, kit: HttpKit, s: TallyRouteServices): void {
  const auth = kit.auth;
  const home = forwardToHome(kit);
  const zidOf = (ctx: Context): string => identityOf(ctx).zid;

  // Spec 4.6: moves the caller's envelopes (soulbound included, no cap). Registered before GET
  // /api/tally/envelopes/:zid, whose path would otherwise answer this POST with 405.
  router.post('/api/tally/envelopes/folder', responds(folderMoveResponse), requireIdentityKey(auth), home, body(folderBody), async (ctx) => {
    const zid = zidOf(ctx);
    const kept = answerInBatch(ctx);
    ctx.body = await s.folders.move(zid, validate(folderBody, ctx.request.body), kept && ((moved) => kept(200, moved)));
  });

  // Spec 4.6: movable envelopes to another identity (architecture.md §7). Also before GET /api/tally/envelopes/:zid.
  // Served at the sender's home (forwarded there); 200 when delivered at once (same node), 202 while pending.
  router.post(
    '/api/tally/envelopes/transfer-bulk',
    responds(transferResponse, { status: [200, 202] }),
    requireIdentityKey(auth),
    home,
    body(transferBody),
    async (ctx) => {
      const zid = zidOf(ctx);
      const statusOf = (view: TransferView) => (view.state === 'delivered' ? 200 : 202);
      const kept = answerInBatch(ctx);
      const view = await s.transfers.transfer(zid, validate(transferBody, ctx.request.body), kept && ((v) => kept(statusOf(v), v)));
      ctx.status = statusOf(view);
      ctx.body = view;
    },
  );

  // A transfer's state, to its sender and receiver, each at its own home.
  router.get('/api/tally/transfers/:id', responds(transferResponse), requireIdentityKey(auth), home, async (ctx) => {
    ctx.body = await s.transfers.view(String(ctx.params.id), zidOf(ctx));
  });

  // Node to node: cross-node transfers delivered by the senders' home to the receivers'. The body is a signed mesh
  // event with its handshake (the gossip entrance's checks, mesh.verifyDirect); the answer a signed acknowledgement
  // with one answer per transfer (applied, a duplicate, or refused with its part-7 status and code).
  router.post(DELIVER_PATH, responds(signedMeshEventResponse), body(signedMeshEventResponse, { inHandler: true }), async (ctx) => {
    if (!s.mesh) throw new ServiceError(503, 'MESH_DISABLED', 'this node runs without a mesh');
    const { event } = await s.mesh.verifyDirect(ctx.request.body, ctx.get(HANDSHAKE_HEADER) || undefined);
    if (event.type !== TRANSFER_EVENT) throw new ServiceError(400, 'INVALID_EVENT', `this route takes ${TRANSFER_EVENT} events, not ${event.type}`);
    const answers = await s.transfers.receiveAll(validate(deliveryBatch, event.body), event.sender);
    ctx.body = await kit.signMeshEvent(TRANSFER_ACK_EVENT, answers);
  });

  router.get('/api/tally/claim', responds(claimStatusResponse), requireKey(auth), home, async (ctx) => {
    ctx.body = await s.claims.status(zidOf(ctx), clientAddress(ctx, kit), kit.time.nowMs());
  });

  router.post('/api/tally/claim', responds(claimResponse), requireIdentityKey(auth), home, body(claimBody), async (ctx) => {
    const zid = zidOf(ctx);
    const body = validate(claimBody, ctx.request.body);
    const now = kit.time.nowNs();
    ctx.body = await s.claims.claim(zid, clientAddress(ctx, kit), body.challenge, body.nonce, stampAt(now).svcond, Number(now / 1_000_000n));
  });

  router.get('/api/tally/costs', responds(costsResponse), (ctx) => {
    ctx.body = costSheet();
  });

  // Keyless, like the costs: every tier's allowance and time limit, the inputs each tier unlocks, how to upgrade.
  router.get('/api/tally/tiers', responds(tiersResponse), (ctx) => {
    ctx.body = tierSheet(s.tiers.policy, kit.config.limits.enforceDailyQuota);
  });

  router.post(
    '/api/tally/grants',
    responds(grantResponse, { status: 201 }),
    operatorOnly((token) => s.grants.isOperator(token)),
    body(grantBody),
    async (ctx) => {
      const body = validate(grantBody, ctx.request.body);
      const now = kit.time.nowNs();
      try {
        ctx.status = 201;
        ctx.body = await s.grants.grant(body.zid, body.credits, body.tier, stampAt(now).svcond, Number(now / 1_000_000n));
      } catch (err) {
        // An identity homed elsewhere: its home's operator grants it. The operator token is this node's own secret
        // and is never sent to another node, so the request is not forwarded; the answer names the home and its URL.
        if (err instanceof ServiceError && err.code === 'SVC_CONFLICT' && typeof err.extra.home === 'string') {
          const url = s.mesh?.peerUrl(err.extra.home) ?? null;
          throw new ServiceError(409, 'SVC_CONFLICT', err.message, { ...err.extra, home_url: url });
        }
        throw err;
      }
    },
  );
}

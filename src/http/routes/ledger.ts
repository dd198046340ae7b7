// Usage, envelopes, balances and state-machine chains (spec 2.4, 4.6, 4.8).
import type Router from '@koa/router';
import type { Context, Next } from 'koa';
import { z } from 'zod';
import { ServiceError } from '../../kernel/errors.js';
import type { HttpKit } from '../kit.js';
import type { RouteGroup } from '../route-group.js';
import type { QuotaService } from '../../tally/quota.js';
import type { TierBook } from '../../tally/tiers.js';
import { balanceResponse, chainValidationResponse } from '../responses.js';
import { authorizeMachineRead, presentedKey, requireKey, resolveCaller } from '../auth.js';
import { body, describes, query, responds, validate } from '../validate.js';
import { askHome, forwardToHome, pathFor, relayAnswer, relayToHome, wasForwarded } from '../forward.js';
import { CHAIN_CALLER_HEADER, vouchedCaller, voucherFor, type Voucher } from '../chain-delegation.js';
import type { Caller, TallyCharge } from '../../records/types.js';
import { MACHINE_HOME, SLUG_PATTERN } from '../../mesh/machines.js';
import { COSTS } from '../../tally/costs.js';
import { registerChainRoutes, type ChainRouteServices } from './chain.js';
import { claimSlug, refuseSlugHeldElsewhere } from '../slug-claims.js';

const envelopeQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(500).default(50),
    offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
    folder: z.string().min(1).max(64).optional(),
    q: z.string().min(1).max(128).optional(),
    key: z.string().optional(),
  })
  .strict();
const machineBody = z.object({ slug: z.string().regex(SLUG_PATTERN, '3 … 48 of a-z, 0-9 and -'), is_public: z.boolean().default(false) }).strict();
export const exploreQuery = z
  .object({ from: z.coerce.number().int().min(1).default(1), to: z.coerce.number().int().min(1).optional(), key: z.string().optional() })
  .strict();

/** What GET /api/chain/:slug/…?lost=1 reads of a lost machine (atLostMachine): nothing that signs. */
const LOST_READABLE_ROUTES = ['explore', 'pohc/validate', 'settings', 'tally/summary', 'tally/charges', 'tally/envelopes', 'contracts', 'contracts/:id'];
const LOST_READABLE = new RegExp(`^/(${LOST_READABLE_ROUTES.map((r) => r.replace(/:[a-z]+/g, '[^/]+')).join('|')})/?$`);

function forbidden(message: string): ServiceError {
  return new ServiceError(403, 'SVC_FORBIDDEN', message);
}

export interface LedgerRouteServices extends ChainRouteServices {
  quota: QuotaService;
  tiers: TierBook;
}

/** Usage, envelopes, balances and machines, then the state-machine chains (chain.ts). */
export function ledgerRoutes(s: LedgerRouteServices): RouteGroup {
  return { name: 'ledger', register: (router, kit) => registerLedgerRoutes(router, kit, s) };
}

function registerLedgerRoutes(router: Router, kit: HttpKit, s: LedgerRouteServices): void {
  const auth = kit.auth;
  const home = forwardToHome(kit);
  const identityOf = (ctx: Context): Extract<Caller, { kind: 'identity' }> => {
    const c = ctx.state.caller as Caller;
    if (c.kind !== 'identity') throw forbidden('this route needs a key that belongs to an identity');
    return c;
  };

  router.get('/api/compute/usage', requireKey(auth), home, (ctx) => {
    const c = ctx.state.caller as Caller;
    const now = kit.time.nowMs();
    // The bundle is the published statement for a free ZID (10 a day) and a demo key (10); a paid tier's bundle is its
    // allowance. The tier's allowance is the cap limits.enforceDailyQuota enforces for an identity (a demo key's cap is
    // its bundle, always enforced).
    const tier = s.tiers.ofCaller(c);
    const allowance = c.kind === 'demo' ? kit.config.limits.demoKeyPerDay : s.tiers.allowance(tier);
    const bundle = c.kind === 'demo' ? allowance : tier === 'free' ? kit.config.limits.freeDailyComputations : allowance;
    const used = c.kind === 'identity' ? s.quota.usedToday(c.zid, now) : c.kind === 'demo' ? s.quota.demoUsedToday(c.key.key_id, now) : 0;
    ctx.body = {
      used,
      bundle,
      remaining: Math.max(0, bundle - used),
      overage: Math.max(0, used - bundle),
      enforced: kit.config.limits.enforceDailyQuota,
      tier,
      daily_allowance: allowance,
      allowance_remaining: Math.max(0, allowance - used),
    };
  });

  router.get('/api/tally/balance', responds(balanceResponse), requireKey(auth), home, async (ctx) => {
    const c = identityOf(ctx);
    const w = await s.ledger.wallet(c.zid);
    ctx.body = { zid: c.zid, free: w.free, paid: w.paid, total: w.free + w.paid };
  });

  router.get('/api/tally/envelopes/:zid', requireKey(auth), home, query(envelopeQuery), async (ctx) => {
    const c = identityOf(ctx);
    const zid = String(ctx.params.zid);
    if (zid !== c.zid) throw forbidden('envelopes are listed to their owner only');
    const q = validate(envelopeQuery, ctx.query);
    const { total, items } = await s.ledger.listEnvelopes(zid, { limit: q.limit, offset: q.offset, folder: q.folder, q: q.q });
    ctx.body = { zid, total, limit: q.limit, offset: q.offset, folder: q.folder ?? null, items };
  });

  router.get('/api/tally/envelopes/:zid/folders', requireKey(auth), home, async (ctx) => {
    const c = identityOf(ctx);
    const zid = String(ctx.params.zid);
    if (zid !== c.zid) throw forbidden('folders are listed to their owner only');
    await s.ledger.loadCounts(zid);
    ctx.body = { zid, folders: s.ledger.folders(zid) };
  });

  router.post('/api/chain/state-machines', requireKey(auth), home, body(machineBody), async (ctx) => {
    const c = identityOf(ctx);
    const body = validate(machineBody, ctx.request.body);
    // Slugs are mesh-wide (mesh/machines.ts): a slug another node has claimed is never handed out here.
    await refuseSlugHeldElsewhere(kit, s, body.slug);
    // Part 8: creating a state machine costs 50, charged in the creation's batch (402 and nothing created if short).
    await s.ledger.wallet(c.zid);
    let charge: TallyCharge | null = null;
    const { machine, adminKey } = await s.identity.createMachine(c.zid, body.slug, kit.time.nowSvcond(), body.is_public, () => {
      const paid = s.ledger.chargeOps(c.zid, 'state_machine_creation', COSTS.stateMachineCreation);
      charge = paid.charge;
      // The machine's own tally records its creation charge (seq 0), in the same batch.
      return { ops: [...paid.ops, s.chain.chargeOp(body.slug, 0, c.zid, paid.charge, paid.split)], rollback: paid.rollback };
    });
    await claimSlug(kit, s, machine);
    ctx.status = 201;
    ctx.body = {
      slug: machine.slug,
      owner: machine.owner,
      genesis_svcond: machine.genesis_svcond,
      is_public: machine.is_public,
      admin_key: adminKey,
      tally_charge: charge,
      message: 'the admin key is shown once',
    };
  });

  const notFound = (slug: string) => new ServiceError(404, 'SVC_NOT_FOUND', `no state machine ${slug}`);
  const noAccess = (slug: string) => forbidden(`no access to state machine ${slug}`);

  /**
   * Every route under /api/chain/:slug goes through here first. A machine held here is served here. One held by
   * another node (its home, from the mesh's directory or a signed answer of the home) is read there: the request
   * is forwarded once and the answer relayed with X-Svc-Served-By; the home enforces keys and public-machine
   * rules. A presented key is checked here first and goes only to its own home, so a key never travels to a node
   * that is not its home: any other key (another home's identity, a demo key) can open only a public machine, so the
   * request goes without it, and the home's "no key" for a private machine is this key's 403.
   */
  // A public machine is read without a key; a private one needs a key with a role on it (authorizeMachineRead).
  const machineReader = describes({ auth: 'optional' });
  async function atMachineHome(ctx: Context, next: Next): Promise<void> {
    const slug = String(ctx.params.slug);
    if (ctx.query.lost !== undefined) return atLostMachine(ctx, next);
    // Held here, unless another home won the slug (an earlier claim: mesh/machines.ts); then it is served there.
    const won = s.mesh?.enabled ? await s.mesh.machines.known(slug) : null;
    if ((won === null || won === kit.nodeId()) && (await s.chain.getMachine(slug))) {
      // Forwarded with a voucher of the caller's home (a key homed elsewhere never travels here): the caller it names.
      const vouched = await vouchedCaller(ctx, kit, s);
      if (vouched) {
        ctx.state.vouchedCaller = vouched.caller;
        ctx.state.voucher = vouched;
      }
      return next();
    }
    if (wasForwarded(ctx)) {
      throw new ServiceError(503, 'SVC_HOME_UNREACHABLE', `this request was forwarded here but this node does not hold state machine ${slug}`, {
        slug,
        retry_after_seconds: 5,
      });
    }
    const home = won ?? (s.mesh?.enabled && SLUG_PATTERN.test(slug) ? await s.mesh.machines.homeOf(slug) : null);
    if (!home || home === kit.nodeId()) throw notFound(slug);
    if (presentedKey(ctx)) {
      const caller = await resolveCaller(ctx, auth, false);
      if (caller.kind === 'identity' && caller.home !== home) {
        // An identity homed elsewhere than the machine: its key stays, its home vouches for it (chain-delegation.ts),
        // so a role it holds there works from any node.
        // Its home unreachable: the request goes on without the key, as before (a public machine stays readable).
        const voucher = await voucherFor(ctx, kit, s, caller, pathFor(ctx, true)).catch((err: unknown) => {
          if (err instanceof ServiceError && err.status === 503) return null;
          throw err;
        });
        if (voucher !== null) {
          // A voucher this node signed with a charge: once the home has answered (or could not be asked), what became of
          // the charge is asked of it at once (tally/remote-charges.ts).
          const v = voucher.event.body as Voucher;
          const charged = caller.home === kit.nodeId() ? v.charge : undefined;
          try {
            const answer = await askHome(ctx, kit, home, 'state machine', { slug }, { withoutKey: true, headers: { [CHAIN_CALLER_HEADER]: voucher.header } });
            return relayAnswer(ctx, home, answer);
          } finally {
            if (charged) s.remoteCharges?.settleSoon(v.nonce, charged.machine_home);
          }
        }
      }
      if (caller.kind !== 'identity' || caller.home !== home) {
        const answer = await askHome(ctx, kit, home, 'state machine', { slug }, { withoutKey: true });
        if (answer.status === 401) throw noAccess(slug);
        return relayAnswer(ctx, home, answer);
      }
    }
    await relayToHome(ctx, kit, home, 'state machine', { slug });
  }

  /**
   * `?lost=1`: a machine whose slug another home won (chain/slug-loss.ts) stays on this node, its rows, settings,
   * tally and contracts readable here by its owner only (a key of the owner's identity; the admin key is revoked),
   * never forwarded. Anything else on it — a write, or a read that may sign a checkpoint — answers 409
   * SVC_MACHINE_LOST (docs/decisions.md, "State machines").
   */
  async function atLostMachine(ctx: Context, next: Next): Promise<void> {
    const slug = String(ctx.params.slug);
    if (ctx.query.lost !== '1') {
      throw new ServiceError(400, 'SVC_INVALID_INPUT', 'invalid input lost: 1 or absent', { field: 'lost', reason: '1 or absent', allowed: ['1'] });
    }
    const machine = await s.chain.getMachine(slug);
    if (!machine?.lost || machine.home !== kit.nodeId()) throw new ServiceError(404, 'SVC_NOT_FOUND', `no lost state machine ${slug} on this node`);
    const caller = await resolveCaller(ctx, auth, false);
    if (caller.kind !== 'identity' || caller.zid !== machine.owner) throw forbidden(`a lost state machine is read by its owner only`);
    const rest = ctx.path.slice(`/api/chain/${slug}`.length);
    if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || !LOST_READABLE.test(rest)) {
      throw new ServiceError(409, 'SVC_MACHINE_LOST', `state machine ${slug} lost its slug to ${machine.lost.lost_to}: it is read-only here`, {
        slug,
        lost_to: machine.lost.lost_to,
        lost_unix_ms: machine.lost.lost_unix_ms,
        readable: LOST_READABLE_ROUTES,
      });
    }
    // The routes' own query schemas do not know `lost`: it is taken off once read.
    const params = new URLSearchParams(ctx.querystring);
    params.delete('lost');
    ctx.querystring = params.toString();
    return next();
  }

  /** Routes under /api/chain/:slug: public machines are readable by anyone, keyed or not; private ones by role. */
  async function readableMachine(ctx: Context): Promise<string> {
    const slug = String(ctx.params.slug);
    const machine = await s.chain.getMachine(slug);
    if (!machine) throw notFound(slug);
    await authorizeMachineRead(ctx, auth, machine);
    return slug;
  }

  router.get('/api/chain/:slug/pohc/validate', responds(chainValidationResponse), machineReader, atMachineHome, async (ctx) => {
    const slug = await readableMachine(ctx);
    ctx.body = await s.chain.validate(slug);
  });

  router.get('/api/chain/:slug/explore', machineReader, atMachineHome, query(exploreQuery), async (ctx) => {
    const slug = await readableMachine(ctx);
    const q = validate(exploreQuery, ctx.query);
    const head = await s.chain.headOf(slug);
    ctx.body = { slug, head, rows: await s.chain.explore(slug, q.from, q.to ?? q.from + 99) };
  });

  /** Peers ask where a machine lives: answered only by its home, as a `machine.home` event signed by this node. */
  router.get('/api/mesh/machines/:slug', async (ctx) => {
    const slug = String(ctx.params.slug);
    if (!SLUG_PATTERN.test(slug))
      throw new ServiceError(400, 'SVC_INVALID_INPUT', 'slug must be 3 … 48 of a-z, 0-9 and -', { field: 'slug', reason: 'format', allowed: null });
    const machine = await s.chain.getMachine(slug);
    if (!machine || machine.home !== kit.nodeId()) throw new ServiceError(404, 'SVC_NOT_FOUND', `no state machine ${slug} is homed here`);
    ctx.body = await kit.signMeshEvent(MACHINE_HOME, { slug, home: kit.nodeId(), created_unix_ms: machine.created_unix_ms });
  });

  registerChainRoutes(router, kit, s, { atMachineHome });
}

// State-machine routes (spec 2.7, 4.8): settings and roles, the aggregate list, the machine's tally.
// Every /api/chain/:slug route goes through atMachineHome first (machine-home.ts): the machine's home answers.
import { callerAddress } from '../caller-address.js';
import type Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { z } from 'zod';
import { ContractSchema } from '../../chain/contract-language.js';
import { ServiceError } from '../../kernel/errors.js';
import type { HttpKit } from '../kit.js';
import type { RouteGroup } from '../route-group.js';
import { machineHome } from './machine-home.js';
import { claimSlug, refuseSlugHeldElsewhere } from '../slug-claims.js';
import type { Ledger } from '../../tally/ledger.js';
import type { AppendedEvent, ChainService, MachineRecord } from '../../chain/service.js';
import {
  authorizeMachineRead,
  identityOf,
  noKeyError as noKey,
  presentedKey,
  refuseOtherMachine,
  requireIdentityKey,
  requireKey,
  resolveCaller,
  type AuthDeps,
} from '../auth.js';
import { body, describes, query, responds, validate } from '../validate.js';
import {
  chainCallerResponse,
  chainValidationResponse,
  checkpointResponse,
  embedKeyResponse,
  embedKeysResponse,
  machineEnvelopesResponse,
  chainEventResponse,
  chainExportResponse,
  consistencyProofResponse,
  contractDeployedResponse,
  contractDetailResponse,
  contractListResponse,
  embedKeyMintedResponse,
  embedRowResponse,
  exploreResponse,
  forksResponse,
  inclusionProofResponse,
  machineChargesResponse,
  machineCreatedResponse,
  machineListResponse,
  machineSettingsResponse,
  machineTallySummaryResponse,
  meshMachineViewResponse,
  signedMeshEventResponse,
  transitionResponse,
} from '../responses.js';
import { forwardToHome, relayToHome, wasForwarded } from '../forward.js';
import { machinePlace } from '../machine-place.js';
import { perMinuteLimit } from '../limits.js';
import { chargedVoucherHere, signVoucher, tallyChargeOf, voucherRequest, type DelegationServices, type Vouched } from '../chain-delegation.js';
import type { ChargeClaim } from '../../tally/charge-outcomes.js';
import { CHARGE_OUTCOME_EVENT, CHARGE_SETTLE_EVENT, CHARGE_SETTLE_PATH, settleBatch } from '../../tally/remote-charges.js';
import { HANDSHAKE_HEADER } from '../../mesh/wire.js';
import { MACHINE_HOME, SLUG_PATTERN } from '../../mesh/machines.js';
import type { Caller, TallyCharge, KeyRecord } from '../../records/types.js';
import { answerInBatch } from '../idempotency.js';
import { requireRole, type ChainAction, type Role } from '../../chain/roles.js';
import { stampAt } from '../../kernel/clock.js';
import { COSTS } from '../../tally/costs.js';
import { CHECKPOINT_FORMAT } from '../../chain/checkpoints.js';
import { EXPORT_FORMAT } from '../../chain/verify-log.js';
import { PULSE_ORB_REFUSAL } from '../../chain/settings.js';

const ZID = z.string().regex(/^zid_[0-9a-f]{32}$/, 'a zid: zid_ and 32 hex characters');
const settingsBody = z
  .object({
    is_public: z.boolean().optional(),
    inject_agent_rail: z.boolean().optional(),
    inject_pulse_orb: z.literal(false, { error: PULSE_ORB_REFUSAL }).optional(),
    roles: z
      .record(ZID, z.enum(['viewer', 'operator', 'admin']).nullable())
      .refine((r) => Object.keys(r).length <= 100, 'at most 100 role changes in one patch')
      .optional(),
  })
  .strict();
/** Any JSON value but null; its bytes are hashed and dropped. */
export const eventBody = z
  .object({ payload: z.unknown().refine((v) => v !== undefined && v !== null, 'a payload (any JSON value but null)'), sealed: z.boolean().default(false) })
  .strict();
export const transitionBody = z.object({ event: z.unknown() }).strict();
/** Embed rows accepted per embed key per minute. */
export const EMBED_PER_MINUTE = 60;
/** Minting an embed key takes no options: the body is empty (or {}). */
const embedKeysBody = z.object({}).strict();
const embedBody = z.object({ payload: z.unknown().refine((v) => v !== undefined && v !== null, 'a payload (any JSON value but null)') }).strict();
/**
 * How a proof's hashes are written: lower-case hex (the default, like every hash of this API, the rows and the
 * checkpoints) or standard base64 (RFC 6962 §4's JSON API). `svc-node verify-log` reads either.
 */
const hashEncoding = z.enum(['hex', 'base64']).default('hex');
const inclusionQuery = z
  .object({ seq: z.coerce.number().int().min(1), size: z.coerce.number().int().min(1).optional(), encoding: hashEncoding, key: z.string().optional() })
  .strict();
const consistencyQuery = z
  .object({ from: z.coerce.number().int().min(1), to: z.coerce.number().int().min(1).optional(), encoding: hashEncoding, key: z.string().optional() })
  .strict();
/** Rows one export carries at most. */
export const EXPORT_ROWS_MAX = 200_000;
const pageQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(500).default(50),
    offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
    key: z.string().optional(),
  })
  .strict();

/** An embed key as listed: never the key nor its digest. */
function embedKeyView(k: KeyRecord): Record<string, unknown> {
  return {
    key_id: k.key_id,
    kind: k.kind,
    minted_by: k.zid,
    created_at: new Date(k.created_unix_ms).toISOString(),
    revoked_at: k.revoked_unix_ms === null ? null : new Date(k.revoked_unix_ms).toISOString(),
  };
}

export function settingsView(m: MachineRecord): Record<string, unknown> {
  return {
    slug: m.slug,
    owner: m.owner,
    genesis_svcond: m.genesis_svcond,
    is_public: m.is_public,
    inject_agent_rail: m.inject_agent_rail,
    inject_pulse_orb: m.inject_pulse_orb,
    roles: m.roles,
    home: m.home,
    status: m.lost ? 'lost' : 'active',
    ...(m.lost ? { lost: m.lost } : {}),
  };
}

export interface ChainRouteServices extends DelegationServices {
  ledger: Ledger;
}

/** State machines: their creation, the home rule (machine-home.ts), then every route under /api/chain/:slug. */
export function chainRoutes(s: ChainRouteServices): RouteGroup {
  return { name: 'chain', register: (router, kit) => registerChainRoutes(router, kit, s) };
}

const machineBody = z.object({ slug: z.string().regex(SLUG_PATTERN, '3 … 48 of a-z, 0-9 and -'), is_public: z.boolean().default(false) }).strict();
export const exploreQuery = z
  .object({ from: z.coerce.number().int().min(1).default(1), to: z.coerce.number().int().min(1).optional(), key: z.string().optional() })
  .strict();

/** The machine of the route (404 when this node, its home, does not hold it). */
export async function machineOf(s: { chain: ChainService }, ctx: Context): Promise<MachineRecord> {
  const slug = String(ctx.params.slug);
  const machine = await s.chain.getMachine(slug);
  if (!machine) throw new ServiceError(404, 'SVC_NOT_FOUND', `no state machine ${slug}`);
  return machine;
}

/**
 * The keyed caller's role on the machine, checked against the role matrix for `action` (401 without a good key;
 * 403 naming the action and the roles that may, for a key of an identity whose role does not allow it).
 */
export async function authorizeMachine(
  auth: AuthDeps,
  ctx: Context,
  machine: MachineRecord,
  action: ChainAction,
): Promise<{ zid: string; role: Role; home: string }> {
  const caller = await resolveCaller(ctx, auth, false);
  refuseOtherMachine(caller, machine.slug);
  const zid = caller.kind === 'identity' ? caller.zid : null;
  const role = zid ? machine.roles[zid] : undefined;
  requireRole(machine.slug, role, action);
  return { zid: zid!, role: role!, home: (caller as Extract<Caller, { kind: 'identity' }>).home };
}

function registerChainRoutes(router: Router, kit: HttpKit, s: ChainRouteServices): void {
  const auth = kit.auth;
  const home = forwardToHome(kit);
  const { atMachineHome, readableMachine } = machineHome(kit, s);
  const h = { atMachineHome };
  const machineReader = describes({ auth: 'optional' });

  router.post(
    '/api/chain/state-machines',
    responds(machineCreatedResponse, { status: 201 }),
    requireIdentityKey(auth),
    home,
    body(machineBody),
    async (ctx) => {
      const c = identityOf(ctx);
      const body = validate(machineBody, ctx.request.body);
      // Slugs are mesh-wide (mesh/machines.ts): a slug another node has claimed is never handed out here.
      await refuseSlugHeldElsewhere(kit, s, body.slug);
      // Part 8: creating a state machine costs 50, charged in the creation's batch (402 and nothing created if short).
      let charge: TallyCharge | null = null;
      const { machine, adminKey } = await s.ledger.holding(c.zid, () =>
        s.identity.createMachine(c.zid, body.slug, kit.time.nowSvcond(), body.is_public, () => {
          const paid = s.ledger.chargeOps(c.zid, 'state_machine_creation', COSTS.stateMachineCreation);
          charge = paid.charge;
          // The machine's own tally records its creation charge (seq 0), in the same batch.
          return { ops: [...paid.ops, s.chain.chargeOp(body.slug, 0, c.zid, paid.charge, paid.split)], rollback: paid.rollback };
        }),
      );
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
    },
  );

  router.get('/api/chain/:slug/pohc/validate', responds(chainValidationResponse), machineReader, atMachineHome, async (ctx) => {
    const slug = await readableMachine(ctx);
    ctx.body = await s.chain.validate(slug);
  });

  router.get('/api/chain/:slug/explore', responds(exploreResponse), machineReader, atMachineHome, query(exploreQuery), async (ctx) => {
    const slug = await readableMachine(ctx);
    const q = validate(exploreQuery, ctx.query);
    const head = await s.chain.headOf(slug);
    ctx.body = { slug, head, rows: await s.chain.explore(slug, q.from, q.to ?? q.from + 99) };
  });

  /** Peers ask where a machine lives: answered only by its home, as a `machine.home` event signed by this node. */
  router.get('/api/mesh/machines/:slug', responds(signedMeshEventResponse), async (ctx) => {
    const slug = String(ctx.params.slug);
    if (!SLUG_PATTERN.test(slug))
      throw new ServiceError(400, 'SVC_INVALID_INPUT', 'slug must be 3 … 48 of a-z, 0-9 and -', { field: 'slug', reason: 'format', allowed: null });
    const machine = await s.chain.getMachine(slug);
    if (!machine || machine.home !== kit.nodeId()) throw new ServiceError(404, 'SVC_NOT_FOUND', `no state machine ${slug} is homed here`);
    ctx.body = await kit.signMeshEvent(MACHINE_HOME, { slug, home: kit.nodeId(), created_unix_ms: machine.created_unix_ms });
  });

  /**
   * Where this node holds a machine to be, without asking anyone (machine-place.ts; null: not known). A peer weighs a
   * holder's answer against these views (mesh/machines.ts lookup).
   */
  router.get('/api/mesh/machines/:slug/home', responds(meshMachineViewResponse), async (ctx) => {
    const slug = String(ctx.params.slug);
    if (!SLUG_PATTERN.test(slug))
      throw new ServiceError(400, 'SVC_INVALID_INPUT', 'slug must be 3 … 48 of a-z, 0-9 and -', { field: 'slug', reason: 'format', allowed: null });
    const place = await machinePlace(kit.nodeId(), s, slug, false);
    ctx.body = { nodeId: kit.nodeId(), slug, home: place === 'here' ? kit.nodeId() : place };
  });

  /** Take a charged voucher for this request (401 when its nonce was used, asked about or is in use). */
  const claimCharge = (v: Vouched, slug: string): Promise<ChargeClaim> => {
    if (!s.remoteCharges) throw new ServiceError(503, 'MESH_DISABLED', 'this node does not apply charged vouchers');
    return s.remoteCharges.outcomes.claim(v.sender, v.voucher.nonce, v.voucher.zid, slug);
  };
  /** A key is optional here; when present it must be good, and the request goes to the key's home. */
  const optionalKey: Middleware = async (ctx, next) => {
    if (!presentedKey(ctx)) return next();
    return requireKey(auth)(ctx, () => home(ctx, next));
  };

  /**
   * A node asks this one, the home of the presented key's identity, to vouch for a request it forwards to a
   * machine's home without the key (chain-delegation.ts): a `chain.caller` event signed here, for that one request.
   */
  router.post('/api/mesh/chain-caller', requireKey(auth), body(voucherRequest), responds(chainCallerResponse), async (ctx) => {
    const caller = ctx.state.caller as Caller;
    if (caller.kind !== 'identity') throw new ServiceError(403, 'SVC_FORBIDDEN', 'only an identity is vouched for');
    ctx.body = await signVoucher(kit, s, caller, validate(voucherRequest, ctx.request.body));
  });

  router.get('/api/chain/aggregate/list', responds(machineListResponse), optionalKey, query(pageQuery), async (ctx) => {
    const q = validate(pageQuery, ctx.query);
    const caller = ctx.state.caller as Caller | undefined;
    const zid = caller?.kind === 'identity' ? caller.zid : null;
    const { total, items } = await s.chain.index.list(zid, q.limit, q.offset);
    // Each machine's status: `lost` when another home won its slug (chain/slug-loss.ts), with the loss and refund.
    const records = await s.chain.machinesBySlug(items.map((i) => i.slug));
    const listed = items.map((i, n) => {
      const lost = records[n]?.lost;
      return lost ? { ...i, status: 'lost', lost } : { ...i, status: 'active' };
    });
    ctx.body = { zid, total, limit: q.limit, offset: q.offset, node: kit.nodeId(), items: listed };
  });

  router.get('/api/chain/:slug/settings', responds(machineSettingsResponse), h.atMachineHome, async (ctx) => {
    const machine = await machineOf(s, ctx);
    await authorizeMachineRead(ctx, auth, machine);
    ctx.body = settingsView(machine);
  });

  router.patch('/api/chain/:slug/settings', responds(machineSettingsResponse), h.atMachineHome, body(settingsBody, { inHandler: true }), async (ctx) => {
    const machine = await machineOf(s, ctx);
    const caller = await resolveCaller(ctx, auth, false);
    refuseOtherMachine(caller, machine.slug);
    if (caller.kind !== 'identity' || machine.roles[caller.zid] === undefined) requireRole(machine.slug, undefined, 'settings');
    const body = validate(settingsBody, ctx.request.body);
    const next = await s.chain.updateSettings(machine.slug, (caller as Extract<Caller, { kind: 'identity' }>).zid, body);
    ctx.body = settingsView(next);
  });

  router.get('/api/chain/:slug/tally/charges', responds(machineChargesResponse), h.atMachineHome, query(pageQuery, { inHandler: true }), async (ctx) => {
    const machine = await machineOf(s, ctx);
    await authorizeMachine(kit.auth, ctx, machine, 'tally');
    const q = validate(pageQuery, ctx.query);
    const { total, credits, items } = await s.chain.listCharges(machine.slug, q.limit, q.offset);
    ctx.body = { slug: machine.slug, total, credits_charged: credits, limit: q.limit, offset: q.offset, items };
  });

  router.get('/api/chain/:slug/tally/summary', responds(machineTallySummaryResponse), h.atMachineHome, async (ctx) => {
    const machine = await machineOf(s, ctx);
    await authorizeMachine(kit.auth, ctx, machine, 'tally');
    const tally = await s.chain.tally(machine.slug);
    const head = await s.chain.headOf(machine.slug);
    ctx.body = { slug: machine.slug, owner: machine.owner, charges: tally.charges, credits_charged: tally.credits, envelopes: tally.envelopes, rows: head.seq };
  });

  /**
   * The envelopes sealed with a row on this machine (its callers' compute seals), newest first: the row's seq and
   * the envelope record as it is now (a transferred envelope shows its new owner and folder).
   */
  router.get('/api/chain/:slug/tally/envelopes', h.atMachineHome, query(pageQuery, { inHandler: true }), responds(machineEnvelopesResponse), async (ctx) => {
    const machine = await machineOf(s, ctx);
    await authorizeMachine(kit.auth, ctx, machine, 'tally');
    const q = validate(pageQuery, ctx.query);
    const { total, items } = await s.chain.listEnvelopes(machine.slug, q.limit, q.offset);
    const records = await s.ledger.envelopesById(items.map((e) => e.token_id));
    ctx.body = {
      slug: machine.slug,
      total,
      limit: q.limit,
      offset: q.offset,
      items: items.map((e, i) => ({ seq: e.seq, token_id: e.token_id, envelope: records[i] ?? null })),
    };
  });

  /** Spec 2.7: a row commits SHA-256 of the payload, never the bytes; sealed: a sealed envelope and 'sealed_event'. */
  router.post('/api/chain/:slug/events', responds(chainEventResponse, { status: 201 }), h.atMachineHome, body(eventBody, { inHandler: true }), async (ctx) => {
    const machine = await machineOf(s, ctx);
    await authorizeMachine(kit.auth, ctx, machine, 'append');
    const body = validate(eventBody, ctx.request.body);
    const answer = ({ row, envelope }: AppendedEvent) => (envelope ? { slug: machine.slug, row, envelope } : { slug: machine.slug, row });
    const kept = answerInBatch(ctx);
    const appended = await s.chain.appendEvent(machine.slug, stampAt(kit.time.nowNs()), body.payload, body.sealed, kept && ((a) => kept(201, answer(a))));
    ctx.status = 201;
    ctx.body = answer(appended);
  });

  router.post(
    '/api/chain/:slug/contracts',
    responds(contractDeployedResponse, { status: 201 }),
    body(ContractSchema, { inHandler: true }),
    h.atMachineHome,
    async (ctx) => {
      const machine = await machineOf(s, ctx);
      const { zid } = await authorizeMachine(kit.auth, ctx, machine, 'deploy');
      const { contract, row } = await s.chain.contracts.deploy(machine.slug, kit.time.nowSvcond(), zid, ctx.request.body);
      ctx.status = 201;
      ctx.body = { ...contract, row };
    },
  );

  router.get('/api/chain/:slug/contracts', responds(contractListResponse), h.atMachineHome, async (ctx) => {
    const machine = await machineOf(s, ctx);
    await authorizeMachineRead(ctx, auth, machine);
    ctx.body = { slug: machine.slug, contracts: await s.chain.contracts.list(machine.slug) };
  });

  router.get('/api/chain/:slug/contracts/:id', responds(contractDetailResponse), h.atMachineHome, async (ctx) => {
    const machine = await machineOf(s, ctx);
    await authorizeMachineRead(ctx, auth, machine);
    ctx.body = await s.chain.contracts.get(machine.slug, String(ctx.params.id));
  });

  /**
   * Part 8: a contract transition costs 5, charged in the transition's batch (402 and nothing applied when short).
   * A caller homed on another node pays at its home: the voucher of its home states the charge, made there when the
   * voucher was signed (chain-delegation.ts; tally/remote-charges.ts). Here the voucher's outcome is recorded — applied
   * in the transition's batch, refused when anything after the voucher's acceptance refuses — and the caller's home
   * asks for it and refunds a refusal.
   */
  router.post(
    '/api/chain/:slug/contracts/:id/transition',
    responds(transitionResponse),
    h.atMachineHome,
    body(transitionBody, { inHandler: true }),
    async (ctx) => {
      const machine = await machineOf(s, ctx);
      let vouched = ctx.state.voucher as Vouched | undefined;
      let claim: ChargeClaim | null = vouched?.voucher.charge ? await claimCharge(vouched, machine.slug) : null;
      try {
        const { zid, home } = await authorizeMachine(kit.auth, ctx, machine, 'transition');
        const body = validate(transitionBody, ctx.request.body);
        if (home !== kit.nodeId() && !vouched) {
          // Asked here with a key of an identity homed elsewhere: its home charges the wallet and vouches (the key goes there only).
          const caller = await resolveCaller(ctx, auth, false);
          if (caller.kind !== 'identity') throw new ServiceError(403, 'SVC_FORBIDDEN', 'only an identity transitions a contract');
          vouched = await chargedVoucherHere(ctx, kit, s, caller);
          if (vouched.voucher.charge) claim = await claimCharge(vouched, machine.slug);
        }
        if (home !== kit.nodeId() && !claim) {
          throw new ServiceError(403, 'SVC_FORBIDDEN', `a contract transition is charged at the caller's home ${home}, and its voucher states no charge`, {
            slug: machine.slug,
            action: 'transition',
            reason: 'not charged at the caller’s home',
            home,
          });
        }
        const remote = claim !== null ? tallyChargeOf(vouched!.voucher) : null;
        let charge: TallyCharge | null = remote;
        const run = () =>
          s.chain.contracts.transition(
            machine.slug,
            String(ctx.params.id),
            kit.time.nowSvcond(),
            // The caller the row records and a `{"caller": "zid"}` operand reads: the key's identity, or for a caller
            // homed elsewhere the identity its home's voucher names (authorizeMachine resolved either).
            zid,
            body.event,
            remote
              ? { prepare: async () => undefined, take: () => ({ ops: [], rollback: () => undefined }) }
              : {
                  prepare: () => s.ledger.wallet(zid),
                  take: () => {
                    const paid = s.ledger.chargeOps(zid, 'contract_transition', COSTS.contractTransition);
                    charge = paid.charge;
                    return paid;
                  },
                },
            (seq) => [s.chain.chargeOp(machine.slug, seq, zid, charge!), ...(claim ? [claim.appliedOp(seq)] : [])],
          );
        // Charged here: the wallet stays in memory from its load to the charge, across the contract's lock and load.
        const out = remote ? await run() : await s.ledger.holding(zid, run);
        claim?.release();
        claim = null;
        ctx.body = {
          ...out.contract,
          from: out.from,
          event: (body.event as { type: string }).type,
          transition: out.transition,
          caller: zid,
          row: out.row,
          tally_charge: charge,
          ...(remote && vouched ? { remote_charge: { home, nonce: vouched.voucher.nonce } } : {}),
        };
      } catch (err) {
        // The voucher's charge was made and the transition did not happen: recorded refused, so its payer refunds it.
        if (claim) {
          const reason = err instanceof ServiceError ? `${err.status} ${err.code}: ${err.message}` : 'the transition failed';
          await claim.refused(reason).catch((e: unknown) => kit.logger.warn({ err: String(e) }, 'a refused charge was not recorded; its payer will void it'));
          claim.release();
        }
        throw err;
      }
    },
  );

  /**
   * Node to node: a caller's home asks what became of the charges it made for vouchers good here (chain.charge.settle,
   * a signed event with the handshake, mesh.verifyDirect); the answer is signed (chain.charge.outcome), one per charge.
   */
  router.post(
    CHARGE_SETTLE_PATH,
    responds(signedMeshEventResponse),
    body(signedMeshEventResponse, { inHandler: true }),
    describes({ auth: 'node' }),
    async (ctx) => {
      if (!s.mesh || !s.remoteCharges) throw new ServiceError(503, 'MESH_DISABLED', 'this node runs without a mesh');
      const { event } = await s.mesh.verifyDirect(ctx.request.body, ctx.get(HANDSHAKE_HEADER) || undefined);
      if (event.type !== CHARGE_SETTLE_EVENT) throw new ServiceError(400, 'INVALID_EVENT', `this route takes ${CHARGE_SETTLE_EVENT} events, not ${event.type}`);
      const answers = await s.remoteCharges.outcomes.answer(validate(settleBatch, event.body).charges, event.sender);
      ctx.body = await kit.signMeshEvent(CHARGE_OUTCOME_EVENT, answers);
    },
  );

  router.post(
    '/api/chain/:slug/embed-keys',
    responds(embedKeyMintedResponse, { status: 201 }),
    h.atMachineHome,
    body(embedKeysBody, { inHandler: true }),
    async (ctx) => {
      const machine = await machineOf(s, ctx);
      const { zid } = await authorizeMachine(kit.auth, ctx, machine, 'embed_keys');
      validate(embedKeysBody, ctx.request.body);
      const { key, record } = await s.identity.mintEmbedKey(zid, machine.slug);
      ctx.status = 201;
      ctx.body = {
        slug: machine.slug,
        embed_key: key,
        key_id: record.key_id,
        kind: 'zsm_pub',
        message: 'the embed key is shown once; it is valid on POST /api/chain/:slug/embed only',
      };
    },
  );

  /** The machine's embed keys: ids and times only (a key is shown once, at minting; its digest never leaves the store). */
  router.get('/api/chain/:slug/embed-keys', h.atMachineHome, query(pageQuery, { inHandler: true }), responds(embedKeysResponse), async (ctx) => {
    const machine = await machineOf(s, ctx);
    await authorizeMachine(kit.auth, ctx, machine, 'embed_keys');
    const q = validate(pageQuery, ctx.query);
    const { total, items } = await s.identity.listEmbedKeys(machine.slug, q.limit, q.offset);
    ctx.body = { slug: machine.slug, total, limit: q.limit, offset: q.offset, items: items.map(embedKeyView) };
  });

  /** Revoke an embed key: 401 on the ingest from this answer on, and after a restart (the revoked record is stored). */
  router.delete('/api/chain/:slug/embed-keys/:id', h.atMachineHome, responds(embedKeyResponse), async (ctx) => {
    const machine = await machineOf(s, ctx);
    await authorizeMachine(kit.auth, ctx, machine, 'embed_keys');
    ctx.body = { slug: machine.slug, ...embedKeyView(await s.identity.revokeEmbedKey(machine.slug, String(ctx.params.id))) };
  });

  /**
   * The embed ingest: zsm_pub_ keys of this machine only (any other key → 401), rate-limited per key, appending rows
   * of type `embed` that commit the payload's SHA-256. A machine held elsewhere: the request goes to its home as
   * it is (the home holds the embed key).
   */
  const embedLimit = perMinuteLimit(EMBED_PER_MINUTE, 'embed', { what: 'embed key', keyOf: (ctx) => (ctx.state.embedKey as KeyRecord).key_id });
  const embedKey: Middleware = async (ctx, next) => {
    const slug = String(ctx.params.slug);
    const place = await machinePlace(kit.nodeId(), s, slug, !wasForwarded(ctx));
    if (place !== 'here') {
      if (place === null || wasForwarded(ctx)) throw new ServiceError(404, 'SVC_NOT_FOUND', `no state machine ${slug}`);
      return relayToHome(ctx, kit, place, 'state machine', { slug });
    }
    const key = presentedKey(ctx);
    if (!key) throw noKey();
    const rec = await s.identity.resolveKey(key, callerAddress(ctx));
    if (rec.kind !== 'zsm_pub' || rec.slug !== slug) {
      throw new ServiceError(401, 'SVC_INVALID_KEY', `the embed ingest accepts this machine's zsm_pub_ embed keys only`, {
        key_id: rec.key_id,
        revoked_at: null,
        reason: rec.kind === 'zsm_pub' ? 'embed key of another machine' : 'not an embed key',
      });
    }
    ctx.state.embedKey = rec;
    return next();
  };
  router.post('/api/chain/:slug/embed', responds(embedRowResponse, { status: 201 }), embedKey, embedLimit, body(embedBody), async (ctx) => {
    const slug = String(ctx.params.slug);
    const body = validate(embedBody, ctx.request.body);
    const row = await s.chain.append(slug, kit.time.nowSvcond(), 'embed', body.payload);
    ctx.status = 201;
    ctx.body = { slug, row };
  });

  /** The machine's latest signed checkpoint, covering every row (signed now when rows came after the last one). */
  router.get('/api/chain/:slug/checkpoint', responds(checkpointResponse), h.atMachineHome, async (ctx) => {
    const machine = await machineOf(s, ctx);
    await authorizeMachineRead(ctx, auth, machine);
    ctx.body = { format: CHECKPOINT_FORMAT, ...(await s.chain.checkpoints.current(machine.slug)) };
  });

  const badSize = (field: string, reason: string) =>
    new ServiceError(400, 'SVC_INVALID_INPUT', `invalid input ${field}: ${reason}`, { field, reason, allowed: null });

  /** RFC 9162 inclusion proof of row `seq` (leaf_index = seq − 1) in the tree of `size` rows (default: the checkpoint's). */
  router.get('/api/chain/:slug/proof/inclusion', responds(inclusionProofResponse), h.atMachineHome, query(inclusionQuery, { inHandler: true }), async (ctx) => {
    const machine = await machineOf(s, ctx);
    await authorizeMachineRead(ctx, auth, machine);
    const q = validate(inclusionQuery, ctx.query);
    const cp = await s.chain.checkpoints.current(machine.slug);
    const size = q.size ?? cp.tree_size;
    if (size > cp.tree_size) throw badSize('size', `the tree has ${cp.tree_size} rows`);
    if (q.seq > size) throw badSize('seq', `row ${q.seq} is not in a tree of ${size} rows`);
    const [path, leaf, root] = await Promise.all([
      s.chain.merkle.inclusion(machine.slug, q.seq - 1, size),
      s.chain.merkle.leaf(machine.slug, q.seq),
      size === cp.tree_size ? Promise.resolve(Buffer.from(cp.root_hash, 'hex')) : s.chain.merkle.root(machine.slug, size),
    ]);
    const enc = q.encoding;
    ctx.body = {
      slug: machine.slug,
      seq: q.seq,
      leaf_index: q.seq - 1,
      tree_size: size,
      encoding: enc,
      leaf_hash: leaf.toString(enc),
      audit_path: path.map((p) => p.toString(enc)),
      root_hash: root.toString(enc),
      checkpoint: size === cp.tree_size ? cp : ((await s.chain.checkpoints.at(machine.slug, size)) ?? null),
    };
  });

  /** RFC 9162 consistency proof between the trees of `from` and `to` rows (default: the checkpoint's). */
  router.get(
    '/api/chain/:slug/proof/consistency',
    responds(consistencyProofResponse),
    h.atMachineHome,
    query(consistencyQuery, { inHandler: true }),
    async (ctx) => {
      const machine = await machineOf(s, ctx);
      await authorizeMachineRead(ctx, auth, machine);
      const q = validate(consistencyQuery, ctx.query);
      const cp = await s.chain.checkpoints.current(machine.slug);
      const to = q.to ?? cp.tree_size;
      if (to > cp.tree_size) throw badSize('to', `the tree has ${cp.tree_size} rows`);
      if (q.from > to) throw badSize('from', `from must be at most to (${to})`);
      const [path, first, second] = await Promise.all([
        s.chain.merkle.consistency(machine.slug, q.from, to),
        s.chain.merkle.root(machine.slug, q.from),
        s.chain.merkle.root(machine.slug, to),
      ]);
      const enc = q.encoding;
      ctx.body = {
        slug: machine.slug,
        tree_size_1: q.from,
        tree_size_2: to,
        encoding: enc,
        root_hash_1: first.toString(enc),
        root_hash_2: second.toString(enc),
        consistency_path: path.map((p) => p.toString(enc)),
      };
    },
  );

  /** The log as `svc-node verify-log` reads it: the rows up to the latest checkpoint, and every checkpoint signed here. */
  router.get('/api/chain/:slug/export', responds(chainExportResponse), h.atMachineHome, async (ctx) => {
    const machine = await machineOf(s, ctx);
    await authorizeMachineRead(ctx, auth, machine);
    const cp = await s.chain.checkpoints.current(machine.slug);
    if (cp.tree_size > EXPORT_ROWS_MAX) throw badSize('slug', `the log has ${cp.tree_size} rows; one export carries at most ${EXPORT_ROWS_MAX}`);
    const rows = cp.tree_size === 0 ? [] : await s.chain.explore(machine.slug, 1, cp.tree_size, EXPORT_ROWS_MAX);
    ctx.body = { format: EXPORT_FORMAT, slug: machine.slug, home: machine.home, rows, checkpoints: await s.chain.checkpoints.list(machine.slug) };
  });

  /** Fork evidence kept here: pairs of checkpoints one home signed for the same machine and size with different roots. */
  router.get('/api/chain/forks', responds(forksResponse), async (ctx) => {
    ctx.body = { ...s.chain.checkpoints.forkReport(), evidence: await s.chain.checkpoints.evidence() };
  });
}

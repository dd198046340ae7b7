// A caller's role on a state machine homed on another node than the caller's identity. The forwarding rule holds: a key
// travels to its own home only. So a node that is not the machine's home, asked with a key of an identity homed
// elsewhere, does not send the key to the machine's home: it gets the key's home to vouch for the caller, and
// forwards the request without the key and with that voucher — a `chain.caller` mesh event signed by the identity's
// home, naming the zid and binding the exact request (method, path, SHA-256 of the body), at a tick near now, with a
// nonce. The machine's home accepts it only when the signer is the home it knows for that zid (identity gossip),
// the request is the one vouched for, and the nonce is new; the caller is then that identity, with its role.
//
//   caller → X (any node) ──key──▶ B (the key's home): POST /api/mesh/chain-caller → signed voucher
//            X ──request, no key, x-svc-chain-caller: voucher──▶ H (the machine's home)
// (X = B: the voucher is signed at once; X = H: the key is resolved there through identity gossip, no voucher.)
//
// A voucher for a charged action (CHARGED_ROUTES: a contract transition) is also a charge: B debits the
// caller's wallet when it signs, in one batch with a pending record (tally/remote-charges.ts), and the voucher states
// the charge and the machine's home it is good at; B later asks H what became of it and refunds what H did not apply.
// H, asked with a key of an identity homed at B, gets the voucher from B itself (chargedVoucherHere).
import { createHash, randomBytes } from 'node:crypto';
import type { Context } from 'koa';
import { z } from 'zod';
import { ServiceError } from '../kernel/errors.js';
import { MAX_SKEW_TICKS } from '../mesh/validator.js';
import { verifyEventSignature, type MeshEvent } from '../mesh/wire.js';
import { PeerUnreachable, requestPeer, type PeerAnswer } from '../mesh/peer-http.js';
import type { Caller, TallyCharge } from '../records/types.js';
import type { HttpKit } from './kit.js';
import type { IdentityService } from '../identity/service.js';
import type { ChainService } from '../chain/service.js';
import type { MeshService } from '../mesh/service.js';
import type { RemoteCharges } from '../tally/remote-charges.js';
import type { ChargeOutcomes } from '../tally/charge-outcomes.js';
import { FORWARDED_HEADER, pathFor } from './forward.js';
import { machinePlace } from './machine-place.js';
import { refuseMachineKey, refuseOtherMachine } from './auth.js';
import { COSTS } from '../tally/costs.js';

export const CHAIN_CALLER_HEADER = 'x-svc-chain-caller';
export const CHAIN_CALLER_EVENT = 'chain.caller';
/** How long the key's home has to answer for a voucher. */
const VOUCHER_TIMEOUT_MS = 5_000;

/**
 * The routes whose request is charged to the caller's wallet at its home when the voucher is signed: the action's
 * name, its cost, and the machine's slug taken from the path.
 */
export const CHARGED_ROUTES: readonly { method: string; pattern: RegExp; action: string; cost: number }[] = [
  {
    method: 'POST',
    pattern: /^\/api\/chain\/([a-z0-9][a-z0-9-]{2,47})\/contracts\/[^/?]+\/transition(?:\?.*)?$/,
    action: 'contract_transition',
    cost: COSTS.contractTransition,
  },
];

/** The charge a request is made with, when it is one of CHARGED_ROUTES. */
export function chargedAction(method: string, path: string): { action: string; cost: number; slug: string } | null {
  for (const r of CHARGED_ROUTES) {
    const m = r.method === method ? r.pattern.exec(path) : null;
    if (m) return { action: r.action, cost: r.cost, slug: m[1]! };
  }
  return null;
}

/** What the caller's home charged for the request (its TallyCharge, without the balance), and the one home it is good at. */
export const voucherCharge = z
  .object({
    action: z.string().min(1).max(64),
    cost: z.number().int().nonnegative(),
    charged: z.number().int().nonnegative(),
    burned: z.number().int().nonnegative(),
    foundation: z.number().int().nonnegative(),
    funded_by: z.enum(['free', 'paid']),
    machine_home: z.string().min(1).max(128),
  })
  .strict();

/** What a voucher vouches for: the identity and the one request it may make (and, for a charged route, what it paid). */
export const voucherBody = z
  .object({
    zid: z.string().regex(/^zid_[0-9a-f]{32}$/),
    key_id: z.string().min(1).max(64),
    method: z.string().regex(/^[A-Z]{3,7}$/),
    path: z.string().min(1).max(4096),
    body_sha256: z.string().regex(/^[0-9a-f]{64}$/),
    nonce: z.string().regex(/^[0-9a-f]{32}$/),
    charge: voucherCharge.optional(),
  })
  .strict();
export type Voucher = z.infer<typeof voucherBody>;

/** A voucher checked at the machine's home: the caller it names, the voucher, and its signer (the caller's home). */
export interface Vouched {
  caller: Extract<Caller, { kind: 'identity' }>;
  voucher: Voucher;
  sender: string;
}

/** The charge a voucher states, as the machine's tally records it (no balance: the wallet is the caller's home's). */
export function tallyChargeOf(v: Voucher): TallyCharge | null {
  if (!v.charge) return null;
  const { machine_home: _h, ...c } = v.charge;
  return { ...c, balance_after: null };
}

/** What a node asks the key's home to vouch for (POST /api/mesh/chain-caller). */
export const voucherRequest = voucherBody.pick({ method: true, path: true, body_sha256: true }).strict();

/**
 * Charges made at a caller's home for an action at a machine's home elsewhere (tally/remote-charges.ts): the payer's
 * records, the machine home's outcomes, and the nudge that asks about a charge now.
 */
export interface RemoteChargeServices {
  payer: RemoteCharges;
  outcomes: ChargeOutcomes;
  settleSoon: (nonce: string, machineHome: string) => void;
}

/** What vouching for a caller uses from the kit. */
export type DelegationKit = Pick<HttpKit, 'nodeId' | 'signMeshEvent' | 'time' | 'homes'>;

/** The services vouching for a caller and checking a voucher use. */
export interface DelegationServices {
  identity: IdentityService;
  chain: ChainService;
  mesh: MeshService | null;
  /** Absent: this node neither charges for requests it forwards nor applies charged vouchers (503). */
  remoteCharges?: RemoteChargeServices;
}

export function bodyDigest(raw: string): string {
  return createHash('sha256').update(raw).digest('hex');
}

/** The voucher the key's home (this node) signs for its own identity. */
export async function signVoucher(
  kit: DelegationKit,
  s: DelegationServices,
  caller: Extract<Caller, { kind: 'identity' }>,
  req: z.infer<typeof voucherRequest>,
): Promise<MeshEvent> {
  if (caller.home !== kit.nodeId()) {
    throw new ServiceError(403, 'SVC_FORBIDDEN', 'a node vouches only for identities homed at it', { home: caller.home });
  }
  // A state-machine key is vouched for on its own machine only (part 5 item 3).
  const slug = /^\/api\/chain\/([^/?]+)/.exec(req.path)?.[1];
  if (slug === undefined) refuseMachineKey(caller);
  else refuseOtherMachine(caller, decodeURIComponent(slug));
  const body: Voucher = { zid: caller.zid, key_id: caller.key.key_id, ...req, nonce: randomBytes(16).toString('hex') };
  const charged = chargedAction(req.method, req.path);
  const machineHome = charged ? await machineHomeOf(kit, s, charged.slug) : null;
  // A charged route on a machine homed elsewhere: the wallet is debited now, with the pending record (402: nothing signed).
  if (charged && machineHome) {
    if (!s.remoteCharges) throw new ServiceError(503, 'MESH_DISABLED', 'this node does not charge for requests it forwards');
    const c = await s.remoteCharges.payer.charge({
      nonce: body.nonce,
      zid: caller.zid,
      action: charged.action,
      credits: charged.cost,
      slug: charged.slug,
      machineHome,
    });
    body.charge = {
      action: c.action,
      cost: c.cost,
      charged: c.charged,
      burned: c.burned,
      foundation: c.foundation,
      funded_by: c.funded_by === 'paid' ? 'paid' : 'free',
      machine_home: machineHome,
    };
  }
  return kit.signMeshEvent(CHAIN_CALLER_EVENT, body);
}

/** The home of machine `slug` when it is another node (null: held here); 404 when no node is known to hold it. */
async function machineHomeOf(kit: DelegationKit, s: DelegationServices, slug: string): Promise<string | null> {
  const place = await machinePlace(kit.nodeId(), s, slug);
  if (place === null) throw new ServiceError(404, 'SVC_NOT_FOUND', `no state machine ${slug}`);
  return place === 'here' ? null : place;
}

/** A voucher for the caller's request as it will be sent on (path and body), from the caller's home: signed here, or asked there. */
export async function voucherFor(
  ctx: Context,
  kit: DelegationKit,
  s: DelegationServices,
  caller: Extract<Caller, { kind: 'identity' }>,
  path: string,
): Promise<{ header: string; event: MeshEvent }> {
  const raw = typeof ctx.request.rawBody === 'string' && !['GET', 'HEAD'].includes(ctx.method) ? ctx.request.rawBody : '';
  const req = { method: ctx.method, path, body_sha256: bodyDigest(raw) };
  let event: MeshEvent;
  if (caller.home === kit.nodeId()) event = await signVoucher(kit, s, caller, req);
  else {
    const headers = {
      authorization: ctx.get('authorization') || `Bearer ${String(ctx.query.key)}`,
      'content-type': 'application/json',
      [FORWARDED_HEADER]: kit.nodeId(),
    };
    let res: PeerAnswer;
    try {
      res = await requestPeer(
        kit.homes,
        caller.home,
        { method: 'POST', path: '/api/mesh/chain-caller', headers, body: JSON.stringify(req) },
        AbortSignal.timeout(VOUCHER_TIMEOUT_MS),
      );
    } catch (err) {
      const tried = err instanceof PeerUnreachable ? err.tried : [(err as Error).message];
      throw new ServiceError(503, 'SVC_HOME_UNREACHABLE', `the home node of this identity could not be reached: ${tried.join('; ')}`, {
        home: caller.home,
        tried,
        retry_after_seconds: Math.max(1, Math.ceil(VOUCHER_TIMEOUT_MS / 1000)),
      });
    }
    // A wallet too short for a charged route: the caller's home's 402, as it gave it (nothing was charged there).
    if (res.status === 402) throw relayedError(res.text);
    if (res.status < 200 || res.status > 299)
      throw new ServiceError(503, 'SVC_HOME_UNREACHABLE', `the home node of this identity did not vouch for it (${res.status})`, { home: caller.home });
    event = JSON.parse(res.text) as MeshEvent;
  }
  return { header: Buffer.from(JSON.stringify(event)).toString('base64url'), event };
}

/** Another node's part-7 402 as this node's error (its code, message and members; a fresh trace id here). */
function relayedError(text: string): ServiceError {
  let body: { error?: Record<string, unknown> } | null = null;
  try {
    body = JSON.parse(text) as { error?: Record<string, unknown> } | null;
  } catch {
    // not JSON: the error is named from this node
  }
  const { code, message, trace_id: _t, timestamp: _s, documentation_url: _d, ...extra } = body?.error ?? {};
  return new ServiceError(
    402,
    code === 'INSUFFICIENT_BALANCE' ? code : 'INSUFFICIENT_BALANCE',
    typeof message === 'string' ? message : "the caller's wallet cannot pay for this request",
    extra,
  );
}

function refused(reason: string): ServiceError {
  return new ServiceError(401, 'SVC_INVALID_KEY', `the caller's voucher was refused: ${reason}`, { key_id: null, revoked_at: null, reason });
}

/**
 * At the machine's home: the caller a forwarded request's voucher names, or null when it carries none. 401 when the
 * voucher is malformed, not signed by the identity's home, old, for another request or another home, or used before.
 */
export async function vouchedCaller(ctx: Context, kit: DelegationKit, s: DelegationServices): Promise<Vouched | null> {
  const header = ctx.get(CHAIN_CALLER_HEADER);
  if (!header || ctx.get(FORWARDED_HEADER) === '') return null;
  let event: MeshEvent;
  try {
    event = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as MeshEvent;
  } catch {
    throw refused('malformed');
  }
  return checkVoucher(ctx, kit, s, event, ctx.originalUrl);
}

/**
 * At the machine's home asked with a key of an identity homed elsewhere, for a charged route: the voucher of the key's
 * home (which charges the wallet there), checked as a forwarded one is. The key travels to its own home only.
 */
export async function chargedVoucherHere(
  ctx: Context,
  kit: DelegationKit,
  s: DelegationServices,
  caller: Extract<Caller, { kind: 'identity' }>,
): Promise<Vouched> {
  const path = pathFor(ctx, true);
  const { event } = await voucherFor(ctx, kit, s, caller, path);
  return checkVoucher(ctx, kit, s, event, path);
}

async function checkVoucher(ctx: Context, kit: DelegationKit, s: DelegationServices, event: MeshEvent, path: string): Promise<Vouched> {
  const parsed = voucherBody.safeParse(event?.body);
  if (!parsed.success || event.type !== CHAIN_CALLER_EVENT || typeof event.sender !== 'string' || typeof event.svcond !== 'number') throw refused('malformed');
  const v = parsed.data;
  if (!(await verifyEventSignature(event))) throw refused('bad signature');
  const ident = await s.identity.getIdentity(v.zid);
  if (!ident || ident.home !== event.sender) throw refused('not signed by the identity’s home');
  const now = kit.time.nowSvcond();
  if (Math.abs(event.svcond - now) > MAX_SKEW_TICKS) throw refused('too old');
  const raw = typeof ctx.request.rawBody === 'string' && !['GET', 'HEAD'].includes(ctx.method) ? ctx.request.rawBody : '';
  if (v.method !== ctx.method || v.path !== path || v.body_sha256 !== bodyDigest(raw)) throw refused('for another request');
  // A charge is good at the one home its payer will ask about it (elsewhere it would be applied and never settled).
  if (v.charge && v.charge.machine_home !== kit.nodeId()) throw refused('charged for another home');
  // A voucher is good for one request: its nonce joins the mesh's replay window (kept for the tick's skew window).
  if (!s.mesh?.firstSight(`${CHAIN_CALLER_EVENT}:${v.nonce}`, event.svcond)) throw refused('used before');
  return {
    caller: {
      kind: 'identity',
      zid: v.zid,
      key: {
        key_id: v.key_id,
        kind: 'sk',
        zid: v.zid,
        slug: null,
        plan: 'standard',
        created_unix_ms: 0,
        expires_unix_ms: null,
        revoked_unix_ms: null,
        home: ident.home,
      },
      slug: ident.default_machine ?? s.identity.defaultSlug(v.zid),
      home: ident.home,
    },
    voucher: v,
    sender: event.sender,
  };
}

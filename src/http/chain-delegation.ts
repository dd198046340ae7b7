// A caller's role on a state machine homed on another node than the caller's identity. Session 10's rule stays: a key
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
import { createHash, randomBytes } from 'node:crypto';
import type { Context } from 'koa';
import { z } from 'zod';
import { ServiceError } from '../kernel/errors.js';
import { stampAt } from '../kernel/clock.js';
import { MAX_SKEW_TICKS } from '../mesh/validator.js';
import { verifyEventSignature, type MeshEvent } from '../mesh/wire.js';
import type { Caller } from '../tally/ledger.js';
import type { HttpServices } from './context.js';
import { FORWARDED_HEADER } from './forward.js';

export const CHAIN_CALLER_HEADER = 'x-svc-chain-caller';
export const CHAIN_CALLER_EVENT = 'chain.caller';
/** How long the key's home has to answer for a voucher. */
const VOUCHER_TIMEOUT_MS = 5_000;

/** What a voucher vouches for: the identity and the one request it may make. */
export const voucherBody = z
  .object({
    zid: z.string().regex(/^zid_[0-9a-f]{32}$/),
    key_id: z.string().min(1).max(64),
    method: z.string().regex(/^[A-Z]{3,7}$/),
    path: z.string().min(1).max(4096),
    body_sha256: z.string().regex(/^[0-9a-f]{64}$/),
    nonce: z.string().regex(/^[0-9a-f]{32}$/),
  })
  .strict();
export type Voucher = z.infer<typeof voucherBody>;

/** What a node asks the key's home to vouch for (POST /api/mesh/chain-caller). */
export const voucherRequest = voucherBody.pick({ method: true, path: true, body_sha256: true }).strict();

export function bodyDigest(raw: string): string {
  return createHash('sha256').update(raw).digest('hex');
}

/** The voucher the key's home (this node) signs for its own identity. */
export async function signVoucher(s: HttpServices, caller: Extract<Caller, { kind: 'identity' }>, req: z.infer<typeof voucherRequest>): Promise<MeshEvent> {
  if (caller.home !== s.nodeId()) {
    throw new ServiceError(403, 'SVC_FORBIDDEN', 'a node vouches only for identities homed at it', { home: caller.home });
  }
  const body: Voucher = { zid: caller.zid, key_id: caller.key.key_id, ...req, nonce: randomBytes(16).toString('hex') };
  return s.signMeshEvent(CHAIN_CALLER_EVENT, body);
}

/** A voucher for the caller's request as it will be sent on (path and body), from the caller's home: signed here, or asked there. */
export async function voucherFor(ctx: Context, s: HttpServices, caller: Extract<Caller, { kind: 'identity' }>, path: string): Promise<string> {
  const raw = typeof ctx.request.rawBody === 'string' && !['GET', 'HEAD'].includes(ctx.method) ? ctx.request.rawBody : '';
  const req = { method: ctx.method, path, body_sha256: bodyDigest(raw) };
  let event: MeshEvent;
  if (caller.home === s.nodeId()) event = await signVoucher(s, caller, req);
  else {
    const url = s.mesh?.peerUrl(caller.home) ?? null;
    if (!url) throw new ServiceError(503, 'SVC_HOME_UNREACHABLE', 'the home node of this identity is not reachable from here', { home: caller.home });
    let res: Response;
    try {
      res = await fetch(`${url}/api/mesh/chain-caller`, {
        method: 'POST',
        headers: {
          authorization: ctx.get('authorization') || `Bearer ${String(ctx.query.key)}`,
          'content-type': 'application/json',
          [FORWARDED_HEADER]: s.nodeId(),
        },
        body: JSON.stringify(req),
        signal: AbortSignal.timeout(VOUCHER_TIMEOUT_MS),
      });
    } catch (err) {
      throw new ServiceError(503, 'SVC_HOME_UNREACHABLE', `the home node of this identity did not answer: ${(err as Error).message}`, { home: caller.home });
    }
    if (!res.ok)
      throw new ServiceError(503, 'SVC_HOME_UNREACHABLE', `the home node of this identity did not vouch for it (${res.status})`, { home: caller.home });
    event = (await res.json()) as MeshEvent;
  }
  return Buffer.from(JSON.stringify(event)).toString('base64url');
}

function refused(reason: string): ServiceError {
  return new ServiceError(401, 'SVC_INVALID_KEY', `the caller's voucher was refused: ${reason}`, { key_id: null, revoked_at: null, reason });
}

/**
 * At the machine's home: the caller a forwarded request's voucher names, or null when it carries none. 401 when the
 * voucher is malformed, not signed by the identity's home, old, for another request, or used before.
 */
export async function vouchedCaller(ctx: Context, s: HttpServices): Promise<Caller | null> {
  const header = ctx.get(CHAIN_CALLER_HEADER);
  if (!header || ctx.get(FORWARDED_HEADER) === '') return null;
  let event: MeshEvent;
  try {
    event = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as MeshEvent;
  } catch {
    throw refused('malformed');
  }
  const parsed = voucherBody.safeParse(event?.body);
  if (!parsed.success || event.type !== CHAIN_CALLER_EVENT || typeof event.sender !== 'string' || typeof event.svcond !== 'number') throw refused('malformed');
  const v = parsed.data;
  if (!(await verifyEventSignature(event))) throw refused('bad signature');
  const ident = await s.identity.getIdentity(v.zid);
  if (!ident || ident.home !== event.sender) throw refused('not signed by the identity’s home');
  const now = stampAt(s.clock.nowNs()).svcond;
  if (Math.abs(event.svcond - now) > MAX_SKEW_TICKS) throw refused('too old');
  const raw = typeof ctx.request.rawBody === 'string' && !['GET', 'HEAD'].includes(ctx.method) ? ctx.request.rawBody : '';
  if (v.method !== ctx.method || v.path !== ctx.originalUrl || v.body_sha256 !== bodyDigest(raw)) throw refused('for another request');
  // A voucher is good for one request: its nonce joins the mesh's replay window (kept for the tick's skew window).
  if (!s.mesh?.firstSight(`${CHAIN_CALLER_EVENT}:${v.nonce}`, event.svcond)) throw refused('used before');
  return {
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
  };
}

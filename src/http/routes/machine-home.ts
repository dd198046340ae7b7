// The home rule of state machines: every route under /api/chain/:slug goes through atMachineHome first, and a
// machine's home answers (architecture.md §5). A lost machine (?lost=1) is read at its old home by its owner only.
import type { Context, Middleware, Next } from 'koa';
import { ServiceError } from '../../kernel/errors.js';
import type { HttpKit } from '../kit.js';
import { authorizeMachineRead, presentedKey, refuseOtherMachine, resolveCaller } from '../auth.js';
import { askHome, pathFor, relayAnswer, relayToHome, wasForwarded } from '../forward.js';
import { CHAIN_CALLER_HEADER, vouchedCaller, voucherFor, type DelegationServices, type Voucher } from '../chain-delegation.js';
import { machinePlace } from '../machine-place.js';

/** What GET /api/chain/:slug/…?lost=1 reads of a lost machine (atLostMachine): nothing that signs. */
const LOST_READABLE_ROUTES = ['explore', 'pohc/validate', 'settings', 'tally/summary', 'tally/charges', 'tally/envelopes', 'contracts', 'contracts/:id'];
const LOST_READABLE = new RegExp(`^/(${LOST_READABLE_ROUTES.map((r) => r.replace(/:[a-z]+/g, '[^/]+')).join('|')})/?$`);

function forbidden(message: string): ServiceError {
  return new ServiceError(403, 'SVC_FORBIDDEN', message);
}

export interface MachineHome {
  /** Serves a machine held here, relays one held by another home; `?lost=1` reads a lost machine held here. */
  atMachineHome: Middleware;
  /** The slug of the route, once the caller may read its machine (404 when this node does not hold it). */
  readableMachine(ctx: Context): Promise<string>;
}

export function machineHome(kit: HttpKit, s: DelegationServices): MachineHome {
  const auth = kit.auth;
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
  async function atMachineHome(ctx: Context, next: Next): Promise<void> {
    const slug = String(ctx.params.slug);
    if (ctx.query.lost !== undefined) return atLostMachine(ctx, next);
    const place = await machinePlace(kit.nodeId(), s, slug, !wasForwarded(ctx));
    if (place === 'here') {
      // Forwarded with a voucher of the caller's home (a key homed elsewhere never travels here): the caller it names.
      const vouched = await vouchedCaller(ctx, kit, s);
      if (vouched) {
        ctx.state.vouchedCaller = vouched.caller;
        ctx.state.voucher = vouched;
        // Its Idempotency-Key in the scope of the key the voucher names: a retry through any node is applied once.
        if (kit.idempotentWrites) return kit.idempotentWrites.vouched(ctx, vouched.voucher.key_id, next);
      }
      return next();
    }
    if (wasForwarded(ctx)) {
      throw new ServiceError(503, 'SVC_HOME_UNREACHABLE', `this request was forwarded here but this node does not hold state machine ${slug}`, {
        slug,
        retry_after_seconds: 5,
      });
    }
    const home = place;
    if (home === null) throw notFound(slug);
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
    refuseOtherMachine(caller, slug);
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

  return { atMachineHome, readableMachine };
}

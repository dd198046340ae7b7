// Contribution routes (spec 4.7, architecture.md §6): the policy (keyless), and the caller's status, bond, release
// and mode. The authenticated routes are served at the caller's home (forward.ts), where its envelopes, bond and
// mode are kept. Thin: consensus/bonds.ts and modes.ts do the work.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import { ServiceError } from '../../kernel/errors.js';
import { daysRemaining, MODES, policyDocument, quorumOf } from '../../consensus/policy.js';
import type { AttestedBond, BondService } from '../../consensus/bonds.js';
import type { Caller } from '../../records/types.js';
import type { HttpKit } from '../kit.js';
import type { RouteGroup } from '../route-group.js';
import type { ModeService } from '../../consensus/modes.js';
import type { ChallengeService } from '../../consensus/challenges.js';
import { assertBondSlotOwner, OPERATOR_TOKEN_HEADER, type BondSlotOwner } from '../../consensus/bond-slot.js';
import { bondResponse, contributeStatusResponse, contributionPolicyResponse, modeResponse, releaseResponse } from '../responses.js';
import { requireIdentityKey, requireKey } from '../auth.js';
import { forwardToHome } from '../forward.js';
import { body, responds, validate } from '../validate.js';

const bondBody = z.object({ token_ids: z.array(z.string().min(1).max(128)).min(1).max(1_500).optional() }).strict();
const releaseBody = z.object({}).strict();
const modeBody = z.object({ mode: z.enum(MODES) }).strict();

export interface ContributeRouteServices {
  bonds: BondService;
  modes: ModeService;
  /** The verdicts on a caller's bonds. */
  challenges: ChallengeService;
  /** Who may take this node's one bond slot: its operator's identity. */
  bondSlot: BondSlotOwner;
}

export function contributeRoutes(s: ContributeRouteServices): RouteGroup {
  return { name: 'contribute', register: (router, kit) => registerContributeRoutes(router, kit, s) };
}

function registerContributeRoutes(router: Router, kit: HttpKit, s: ContributeRouteServices): void {
  const auth = kit.auth;
  const home = forwardToHome(kit);
  const policy = kit.config.contribution;
  const identityOf = (ctx: Context): Extract<Caller, { kind: 'identity' }> => {
    const c = ctx.state.caller as Caller;
    if (c.kind !== 'identity') throw new ServiceError(403, 'SVC_FORBIDDEN', 'contribution needs a key that belongs to an identity');
    return c;
  };
  const now = () => kit.time.nowSvcond();
  const showBond = (b: AttestedBond) => ({
    bond_id: b.bond.bond_id,
    node: b.bond.node,
    token_ids_count: b.bond.token_ids.length,
    since_svcond: b.bond.svcond,
    term_days: policy.bondTermDays,
    days_remaining: daysRemaining(policy, b.bond.svcond, now()),
    attestation: b.attestation,
  });

  router.get('/api/contribute/policy', responds(contributionPolicyResponse), (ctx) => {
    ctx.body = policyDocument(policy);
  });

  router.get('/api/contribute/status', responds(contributeStatusResponse), requireKey(auth), home, async (ctx) => {
    const c = identityOf(ctx);
    const { bonds, modes } = s;
    const held = bonds.ofZid(c.zid);
    const recorded = modes.of(c.zid);
    // Contributing needs an active bond: one marked slashed (or released) elsewhere before its home moved this
    // identity back to idle leaves it contributing with nothing at stake, which it is not.
    const mode = held === null && recorded.mode === 'contributing' ? { mode: 'idle' as const, svcond: recorded.svcond } : recorded;
    ctx.body = {
      zid: c.zid,
      node: kit.nodeId(),
      bonded: held !== null,
      bond: held ? showBond(held) : null,
      mode: mode.mode,
      mode_since_svcond: mode.svcond,
      open_challenges: held ? bonds.openChallenges(held.bond.bond_id) : [],
      // A slashed identity's cooldown: no bond before this tick (null: none, or over).
      cooldown: cooldownView(bonds.cooldownOf(c.zid), kit.time.nowSvcond()),
      // Verdicts on challenges of this identity's bonds (the active one and any earlier), newest first.
      // Read through the by-bond index: only these bonds' challenges.
      verdicts: (await Promise.all(bonds.idsOf(c.zid).map((id) => s.challenges.ofBond(id))))
        .flat()
        .filter((e) => e.verdict !== null)
        .sort(
          (a, b) => b.verdict!.decided_svcond - a.verdict!.decided_svcond || (a.challenge.challenge.challenge_id < b.challenge.challenge.challenge_id ? -1 : 1),
        )
        .map((e) => ({
          challenge_id: e.challenge.challenge.challenge_id,
          bond_id: e.challenge.challenge.executed_by.bond_id,
          result_id: e.challenge.challenge.result_id,
          outcome: e.verdict!.outcome,
          decided_svcond: e.verdict!.decided_svcond,
        })),
      policy: { bond_envelopes: policy.bondEnvelopes, committee_size: policy.committeeSize, quorum: quorumOf(policy.committeeSize) },
    };
  });

  // A node's operator token speaks for its own bond slot and is never forwarded: sent to a node that is not the
  // identity's home, it is refused here, naming the home (at the home, its absence would read as "send the token").
  const tokenStaysHere = async (ctx: Context, next: () => Promise<unknown>) => {
    const caller = identityOf(ctx);
    if (ctx.get(OPERATOR_TOKEN_HEADER) && caller.home !== kit.nodeId())
      throw new ServiceError(
        403,
        'SVC_FORBIDDEN',
        `the operator token of a node takes that node's bond slot only, and is never forwarded: identity ${caller.zid} is homed on node ${caller.home}, so send the bond to that node directly with its operator token in ${OPERATOR_TOKEN_HEADER}`,
        { zid: caller.zid, home: caller.home, reason: 'operator token sent to a node that is not the identity’s home', header: OPERATOR_TOKEN_HEADER },
      );
    await next();
  };

  router.post('/api/contribute/bond', responds(bondResponse, { status: 201 }), requireIdentityKey(auth), tokenStaysHere, home, body(bondBody), async (ctx) => {
    const c = identityOf(ctx);
    const body = validate(bondBody, ctx.request.body);
    assertBondSlotOwner(s.bondSlot, c.zid, ctx.get(OPERATOR_TOKEN_HEADER) || null);
    const bond = await s.bonds.bond(c.zid, body.token_ids);
    ctx.status = 201;
    ctx.body = { zid: c.zid, ...showBond(bond), token_ids: bond.bond.token_ids, record: bond.bond };
  });

  router.post('/api/contribute/release', responds(releaseResponse), requireIdentityKey(auth), home, body(releaseBody), async (ctx) => {
    const c = identityOf(ctx);
    validate(releaseBody, ctx.request.body);
    const { bonds, modes } = s;
    const idle = modes.idleOnRelease(c.zid);
    const released = await bonds.release(c.zid, idle.ops);
    idle.apply();
    ctx.body = {
      zid: c.zid,
      bond_id: released.release.bond_id,
      released_svcond: released.release.svcond,
      mode: modes.of(c.zid).mode,
      attestation: released.attestation,
    };
  });

  router.post('/api/contribute/mode', responds(modeResponse), requireIdentityKey(auth), home, body(modeBody), async (ctx) => {
    const c = identityOf(ctx);
    const body = validate(modeBody, ctx.request.body);
    const { bonds, modes } = s;
    const r = await modes.set(c.zid, body.mode);
    ctx.body = { zid: c.zid, mode: r.mode, previous: r.previous, since_svcond: r.svcond, bond_id: bonds.ofZid(c.zid)?.bond.bond_id ?? null };
  });
}

/** A cooldown still running at `now`, as status shows it. */
function cooldownView(cooldown: { until_svcond: number; challenge_id: string } | null, now: number): Record<string, unknown> | null {
  return cooldown && now < cooldown.until_svcond ? { challenge_id: cooldown.challenge_id, until_svcond: cooldown.until_svcond } : null;
}

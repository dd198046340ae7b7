// Challenges and verdicts (architecture.md §6): open a challenge (at the challenger's home, where its stake is
// held), list them, and show one with its committee, votes and verdict. Thin: consensus/challenges.ts does the work.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import { ServiceError } from '../../kernel/errors.js';
import { documentOf, type ChallengeEntry, type ChallengeService } from '../../consensus/challenges.js';
import { STATES } from '../../consensus/challenge-lifecycle.js';
import { DIGEST_PATTERN, sealedResultSchema } from '../../consensus/challenge-wire.js';
import type { Caller } from '../../records/types.js';
import type { HttpKit } from '../kit.js';
import type { RouteGroup } from '../route-group.js';
import type { SlashingService } from '../../consensus/slashing.js';
import { challengeDetailResponse, challengeListResponse, challengeOpenedResponse } from '../responses.js';
import { requireIdentityKey } from '../auth.js';
import { forwardToHome } from '../forward.js';
import { body, query, responds, validate } from '../validate.js';

const challengeBody = z
  .object({
    result_id: z.string().min(1).max(128),
    claimed_digest: z.string().regex(DIGEST_PATTERN, '64 lower-case hex digits (a result digest)'),
    // The sealed result itself, for a result no node's record holds (consensus/result-lookup.ts carriedResult), or
    // whose home gives no body to carry; at any size (the body bound of every route holds it).
    result: sealedResultSchema().optional(),
  })
  .strict();
const listQuery = z
  .object({
    state: z.enum(STATES).optional(),
    limit: z.coerce.number().int().min(1).max(500).default(50),
    offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
  })
  .strict();

/** A challenge as the listing shows it. */
export function challengeSummary(e: ChallengeEntry): Record<string, unknown> {
  const c = e.challenge.challenge;
  return {
    challenge_id: c.challenge_id,
    state: e.state,
    result_id: c.result_id,
    challenger: c.challenger,
    challenger_home: c.challenger_home,
    executor: c.executed_by.node,
    bond_id: c.executed_by.bond_id,
    claimed_digest: c.claimed_digest,
    executor_digest: c.executor_digest,
    svcond: c.svcond,
    deadline_svcond: c.deadline_svcond,
    committee: c.committee,
    votes: e.votes.length,
    outcome: e.verdict?.outcome ?? null,
    ticks_taken: e.verdict?.ticks_taken ?? null,
  };
}

export interface ConsensusRouteServices {
  challenges: ChallengeService;
  slashing: SlashingService;
}

export function consensusRoutes(s: ConsensusRouteServices): RouteGroup {
  return { name: 'consensus', register: (router, kit) => registerConsensusRoutes(router, kit, s) };
}

function registerConsensusRoutes(router: Router, kit: HttpKit, s: ConsensusRouteServices): void {
  const auth = kit.auth;
  const home = forwardToHome(kit);
  const zidOf = (ctx: Context): string => {
    const c = ctx.state.caller as Caller;
    if (c.kind !== 'identity') throw new ServiceError(403, 'SVC_FORBIDDEN', 'a challenge needs a key that belongs to an identity (the stake is its credits)');
    return c.zid;
  };

  router.post(
    '/api/tally/consensus/challenges',
    responds(challengeOpenedResponse, { status: 201 }),
    requireIdentityKey(auth),
    home,
    body(challengeBody),
    async (ctx) => {
      const zid = zidOf(ctx);
      const body = validate(challengeBody, ctx.request.body);
      const e = await s.challenges.open(zid, body.result_id, body.claimed_digest, body.result);
      ctx.status = 201;
      ctx.body = { ...challengeSummary(e), stake: e.stake?.amount ?? 0, eligible: e.challenge.challenge.eligible, quorum: e.challenge.challenge.quorum };
    },
  );

  router.get('/api/tally/consensus', responds(challengeListResponse), query(listQuery), async (ctx) => {
    const q = validate(listQuery, ctx.query);
    const { challenges } = s;
    const { total, items } = await challenges.list(q);
    ctx.body = { total, limit: q.limit, offset: q.offset, state: q.state ?? null, counts: challenges.stats(), items: items.map(challengeSummary) };
  });

  router.get('/api/tally/consensus/:id', responds(challengeDetailResponse), async (ctx) => {
    const id = String(ctx.params.id);
    const { challenges, slashing } = s;
    const e = await challenges.find(id);
    if (!e) throw new ServiceError(404, 'SVC_NOT_FOUND', `no challenge ${id} is known to this node`, { challenge_id: id });
    const c = e.challenge.challenge;
    ctx.body = {
      challenge_id: c.challenge_id,
      state: e.state,
      challenge: e.challenge,
      committee: c.committee,
      quorum: c.quorum,
      votes: e.votes,
      votes_heard_late: e.heard_late ?? [],
      non_member_votes: e.non_member_votes,
      refused_votes: e.refused_votes,
      verdict: e.verdict,
      ticks_taken: e.verdict?.ticks_taken ?? null,
      stake: (await slashing.stakeRecord(id)) ?? (e.stake ? { zid: e.stake.zid, amount: e.stake.amount, effect: 'held' } : null),
      slashing: (await slashing.slashRecord(id)) ?? null,
      document: documentOf(e),
    };
  });
}

// The reactor (spec 4.8): POST /api/svc/reactor opens one; the sub-paths take {id} and answer its state (/close,
// beyond the spec's sub-paths, deletes it). Thin: validate, call the reactor service at the caller's home
// (forwardToHome), shape the answer.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import { InputError, ServiceError } from '../../kernel/errors.js';
import type { HttpKit } from '../kit.js';
import type { RouteGroup } from '../route-group.js';
import { requireKey } from '../auth.js';
import { forwardToHome } from '../forward.js';
import { body, responds, validate } from '../validate.js';
import {
  reactorNextResponse,
  reactorObserveResponse,
  reactorResponse,
  reactorStepResponse,
  reactorTelemetryResponse,
  reactorTrajectoryResponse,
} from '../responses.js';
import type { Caller } from '../../records/types.js';
import type { ReactorRecord, ReactorService } from '../../reactor/service.js';
import { TRAJECTORY_PAGE_MAX } from '../../reactor/service.js';

const openBody = z
  .object({
    solver: z.string().min(1).max(64).optional(),
    inputs: z.record(z.string(), z.any()).default({}),
    initialState: z.any().optional(),
    /** Instead of a solver: an operator chain whose inputs the feedback rule sets from each result. */
    chain: z
      .object({
        domain: z.string().min(1).max(64),
        operators: z.array(z.string().min(1).max(64)).min(2),
        inputs: z.record(z.string(), z.number()).default({}),
      })
      .strict()
      .optional(),
    feedback: z.record(z.string().max(64), z.union([z.string().max(256), z.number()])).optional(),
  })
  .strict();
const idBody = z.object({ id: z.string().min(1).max(64) }).strict();
const pageBody = z
  .object({
    id: z.string().min(1).max(64),
    offset: z.number().int().min(0).max(1_000_000_000).default(0),
    limit: z.number().int().min(1).max(TRAJECTORY_PAGE_MAX).default(100),
  })
  .strict();

/** Reactor paths that read only: they also answer QUERY (app.ts). */
export const REACTOR_READ_PATHS = [
  '/api/svc/reactor/observe',
  '/api/svc/reactor/state',
  '/api/svc/reactor/trajectory',
  '/api/svc/reactor/telemetry',
  '/api/svc/reactor/next',
];

export function reactorView(r: ReactorRecord): Record<string, unknown> {
  return {
    id: r.id,
    kind: r.kind ?? 'solver',
    solver: r.solver,
    ...(r.chain ? { chain: r.chain } : {}),
    owner: r.owner,
    home: r.home,
    inputs: r.inputs,
    step: r.steps,
    opened_svcond: r.opened_svcond,
    last_svcond: r.last_svcond,
    last_result_id: r.last_result_id,
    value: r.last_value,
    unit: r.unit,
    state: r.state,
  };
}

export interface ReactorRouteServices {
  reactor: ReactorService;
}

export function reactorRoutes(s: ReactorRouteServices): RouteGroup {
  return { name: 'reactor', register: (router, kit) => registerReactorRoutes(router, kit, s) };
}

function registerReactorRoutes(router: Router, kit: HttpKit, s: ReactorRouteServices): void {
  const auth = kit.auth;
  const home = forwardToHome(kit);
  const key = requireKey(auth);
  const identityOf = (ctx: Context): Extract<Caller, { kind: 'identity' }> => {
    const c = ctx.state.caller as Caller;
    if (c.kind !== 'identity') throw new ServiceError(403, 'SVC_FORBIDDEN', 'a reactor belongs to an identity: use a key of one');
    return c;
  };
  const r = s.reactor;

  router.post('/api/svc/reactor', responds(reactorResponse, { status: 201 }), key, home, body(openBody), async (ctx) => {
    const body = validate(openBody, ctx.request.body);
    let rec: ReactorRecord;
    if (body.chain) {
      if (body.solver !== undefined || body.initialState !== undefined)
        throw new InputError('chain', 'a reactor runs a solver or an operator chain, not both', null);
      if (!body.feedback || Object.keys(body.feedback).length === 0)
        throw new InputError(
          'feedback',
          'an operator chain needs a feedback rule: input keys set from each result, e.g. {"mass_kg": "{{result.value}}"}',
          null,
        );
      rec = await r.openChain(identityOf(ctx), { domain: body.chain.domain, operators: body.chain.operators, feedback: body.feedback }, body.chain.inputs);
    } else {
      if (body.solver === undefined) throw new InputError('solver', 'a stateful solver id (or chain with feedback)', null);
      rec = await r.open(identityOf(ctx), body.solver, body.inputs, body.initialState);
    }
    ctx.status = 201;
    ctx.body = reactorView(rec);
  });
  router.post('/api/svc/reactor/step', responds(reactorStepResponse), key, home, body(idBody), async (ctx) => {
    const { id } = validate(idBody, ctx.request.body);
    const { reactor, row, sealed } = await r.step(identityOf(ctx), id);
    ctx.body = { ...reactorView(reactor), invariant: row.invariant, ms: row.ms, result: JSON.parse(sealed.toString('utf8')) as unknown };
  });
  router.post('/api/svc/reactor/observe', responds(reactorObserveResponse), key, home, body(idBody), async (ctx) => {
    const { id } = validate(idBody, ctx.request.body);
    ctx.body = await r.observe(identityOf(ctx), id);
  });
  router.post('/api/svc/reactor/state', responds(reactorResponse), key, home, body(idBody), async (ctx) => {
    const { id } = validate(idBody, ctx.request.body);
    ctx.body = reactorView(await r.get(identityOf(ctx), id));
  });
  router.post('/api/svc/reactor/trajectory', responds(reactorTrajectoryResponse), key, home, body(pageBody), async (ctx) => {
    const q = validate(pageBody, ctx.request.body);
    const page = await r.trajectory(identityOf(ctx), q.id, q.offset, q.limit);
    ctx.body = { id: q.id, total: page.total, offset: q.offset, limit: q.limit, items: page.items };
  });
  router.post('/api/svc/reactor/telemetry', responds(reactorTelemetryResponse), key, home, body(idBody), async (ctx) => {
    const { id } = validate(idBody, ctx.request.body);
    ctx.body = await r.telemetry(identityOf(ctx), id);
  });
  // Closing deletes the reactor and its trajectory, and frees one of the identity's reactor slots.
  router.post('/api/svc/reactor/close', responds(reactorResponse), key, home, body(idBody), async (ctx) => {
    const { id } = validate(idBody, ctx.request.body);
    ctx.body = reactorView(await r.close(identityOf(ctx), id));
  });
  router.post('/api/svc/reactor/next', responds(reactorNextResponse), key, home, body(idBody), async (ctx) => {
    const { id } = validate(idBody, ctx.request.body);
    ctx.body = await r.next(identityOf(ctx), id);
  });
}

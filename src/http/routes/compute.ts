// Compute and verification routes (spec 4.1, 4.2, 4.3): thin — validate with zod, call the compute service.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import type { HttpKit } from '../kit.js';
import type { RouteGroup } from '../route-group.js';
import {
  autoResponse,
  latticeResponse,
  playgroundResponse,
  proveResponse,
  proveVerifyResponse,
  sealedResponse,
  verifyResponse,
  shiftResponse,
} from '../responses.js';
import { solverBodySchema } from '../solver-body.js';
import { computeCaller, requireKey } from '../auth.js';
import { perMinuteLimit } from '../limits.js';
import { forwardToHome } from '../forward.js';
import { sealAnswerHooks } from '../idempotency.js';
import { clientGone } from '../client-gone.js';
import { body, responds, validate } from '../validate.js';
import type { Caller } from '../../records/types.js';
import type { ComputeService, Sealed } from '../../compute/service.js';
import type { VerdictMark } from '../../consensus/slashing.js';

/** Send a sealed result as the JSON bytes that were stored (serialised once). */
function sendSealed(ctx: Context, sealed: Sealed): void {
  ctx.type = 'application/json; charset=utf-8';
  ctx.body = sealed.bytes;
}

// The members are checked by the chain itself (SVC_INVALID_DOMAIN, SVC_INVALID_OPERATOR, SVC_TOO_MANY_OPERATORS of
// part 7, not a generic 400); their metadata is what the JSON Schema of the MCP tool shows.
export const chainBody = z
  .object({
    domain: z.any().meta({ type: 'string', description: 'a recognised domain (GET /api/operators/categories), e.g. "mechanics"' }),
    operators: z.any().meta({
      type: 'array',
      items: { type: 'string' },
      description: 'operator ids, KO42 first, then 1-3 domain operators (at most 10 in all), e.g. ["KO42", "MECH_KINETIC_ENERGY"]',
    }),
    // Required (part 2.1): a request without it is refused rather than sealed on every default; {} asks for them.
    inputs: z
      .any()
      .refine((v) => v !== undefined, { message: "required: an object of the chain's input keys with numeric values ({} takes every default)" })
      .meta({ type: 'object', additionalProperties: { type: 'number' }, description: 'operator input keys with numeric values (POST /api/svc/operator-spec)' }),
  })
  .strict();
/** POST /api/svc/verify: a sealed result as it was answered, or {result: <that result>}. */
export const verifyBody = z.union([
  z.object({ result: z.looseObject({}).describe('a sealed result, unchanged') }).strict(),
  z.looseObject({ result_id: z.string(), svcProof: z.string() }).describe('a sealed result, unchanged'),
]);
// No length bound on an operator list here: the chain counts it (more than 10: SVC_TOO_MANY_OPERATORS of part 7).
const proveBody = z
  .object({
    operators: z.array(z.string()).min(1).optional(),
    domain: z.string().optional(),
    inputs: z.record(z.string(), z.number()).optional(),
  })
  .strict();
export const shiftBody = z.object({ variance: z.number().min(0).max(100), phase: z.number().min(0).lt(1).optional() }).strict();
export const latticeBody = z
  .object({
    domain: z.string(),
    operators: z.array(z.string()).min(2),
    inputs: z.record(z.string(), z.number()).default({}),
    sweep: z.object({ key: z.string().min(1), from: z.number(), to: z.number(), points: z.number().int().min(1).max(64) }).strict(),
  })
  .strict();
const solveBody = z.object({ solver: z.string(), inputs: z.any().optional(), initialState: z.any().optional() }).strict();
export const autoBody = z.object({ query: z.string().min(1).max(2000), constants: z.record(z.string(), z.any()).default({}) }).strict();

/** A solver endpoint takes the inputs object itself as the body, plus an optional initialState. */
function splitSolverBody(body: unknown): { inputs: unknown; initialState: unknown } {
  if (body === undefined || body === null) return { inputs: {}, initialState: undefined };
  if (typeof body !== 'object' || Array.isArray(body)) return { inputs: body, initialState: undefined };
  const { initialState, ...inputs } = body as Record<string, unknown>;
  return { inputs, initialState };
}

export interface ComputeRouteServices {
  compute: ComputeService;
  /** The verdict mark of a verified result's bond: upheld with the challenge id when it is slashed (consensus/slashing.ts). */
  verdictOf: (executedBy: { bond_id?: unknown } | null | undefined) => VerdictMark;
}

/** What a verify request checks: the sealed result as sent, or wrapped as {result} (the MCP tool's form). */
export function verifyCandidate(body: unknown): unknown {
  const b = body as Record<string, unknown> | undefined;
  return b && typeof b === 'object' && 'result' in b && Object.keys(b).length === 1 ? b.result : b;
}

export function computeRoutes(s: ComputeRouteServices): RouteGroup {
  return { name: 'compute', register: (router, kit) => registerComputeRoutes(router, kit, s) };
}

function registerComputeRoutes(router: Router, kit: HttpKit, s: ComputeRouteServices): void {
  const auth = kit.auth;
  const caller = (ctx: Context) => ctx.state.caller as Caller;
  const home = forwardToHome(kit);

  router.post('/api/svc/compute', responds(sealedResponse), computeCaller(auth), home, body(chainBody), async (ctx) => {
    const body = validate(chainBody, ctx.request.body);
    sendSealed(ctx, await s.compute.compute(caller(ctx), body, { seal: true, requestText: ctx.request.rawBody }, sealAnswerHooks(ctx)));
  });

  router.post('/api/playground/compute', responds(playgroundResponse), requireKey(auth), body(chainBody), async (ctx) => {
    const body = validate(chainBody, ctx.request.body);
    sendSealed(ctx, await s.compute.compute(caller(ctx), body, { seal: false, requestText: ctx.request.rawBody }));
  });

  router.post('/api/svc/verify', responds(verifyResponse), requireKey(auth), body(verifyBody, { inHandler: true }), (ctx) => {
    const candidate = verifyCandidate(ctx.request.body);
    const executedBy = candidate && typeof candidate === 'object' ? (candidate as { executed_by?: { bond_id?: unknown } | null }).executed_by : null;
    ctx.body = { ...s.compute.verifyResult(candidate), ...s.verdictOf(executedBy) };
  });

  const proveLimit = perMinuteLimit(kit.config.limits.provePerMinute, 'prove');
  const proveVerifyLimit = perMinuteLimit(kit.config.limits.provePerMinute, 'prove-verify');
  router.post('/api/svc/prove', responds(proveResponse), proveLimit, body(proveBody), (ctx) => {
    const body = validate(proveBody, ctx.request.body);
    ctx.body = s.compute.prove(body);
  });
  router.post('/api/svc/prove/verify', responds(proveVerifyResponse), proveVerifyLimit, body(proveResponse, { inHandler: true }), (ctx) => {
    ctx.body = s.compute.proveVerify(ctx.request.body);
  });

  router.post('/api/svc/shift', responds(shiftResponse), requireKey(auth), body(shiftBody), (ctx) => {
    const body = validate(shiftBody, ctx.request.body);
    ctx.body = s.compute.shift(body.variance, body.phase);
  });

  router.post('/api/svc/lattice', responds(latticeResponse), requireKey(auth), body(latticeBody), (ctx) => {
    const body = validate(latticeBody, ctx.request.body);
    ctx.body = s.compute.lattice(body);
  });

  for (const solver of s.compute.registry.list()) {
    if (!solver.endpoint) continue;
    // The body is declared, not parsed here: the solver pipeline checks the inputs itself (its part-7 codes).
    router.post(solver.endpoint, responds(sealedResponse), computeCaller(auth), home, body(solverBodySchema(solver), { inHandler: true }), async (ctx) => {
      const { inputs, initialState } = splitSolverBody(ctx.request.body);
      sendSealed(ctx, await s.compute.solve(caller(ctx), solver.id, inputs, initialState, {}, sealAnswerHooks(ctx), clientGone(ctx)));
    });
  }

  router.post('/api/svc/solve', responds(sealedResponse), computeCaller(auth), home, body(solveBody), async (ctx) => {
    const body = validate(solveBody, ctx.request.body);
    const inputs = body.inputs === undefined ? {} : body.inputs;
    sendSealed(ctx, await s.compute.solve(caller(ctx), body.solver, inputs, body.initialState, {}, sealAnswerHooks(ctx), clientGone(ctx)));
  });

  router.post('/api/svc/auto', responds(autoResponse), computeCaller(auth), home, body(autoBody), async (ctx) => {
    const body = validate(autoBody, ctx.request.body);
    ctx.body = await s.compute.auto(caller(ctx), body.query, body.constants, clientGone(ctx));
  });
}

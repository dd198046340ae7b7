// Keyless system routes: health, discovery, clock and pulse (JSON and SSE), kernel, operators, library.
import type Router from '@koa/router';
import type { Middleware } from 'koa';
import { createSession } from 'better-sse';
import { z } from 'zod';
import { PULSE_HZ, stampAt, TICK_NS, TICK_NS_NUMBER, TICK_SECONDS_DISPLAY, TICK_SECONDS_EXACT } from '../../kernel/clock.js';
import { modulationFactor, MODULATION_AMPLITUDE, PRECISION_BOUND, TOLERANCE_GATE } from '../../kernel/modulation.js';
import { VARIANCE_THRESHOLD } from '../../kernel/parity.js';
import { categories, listOperators, operatorSpec } from '../../kernel/operators/registry.js';
import { DOMAINS } from '../../kernel/operators/types.js';
import { KEY_PREFIX } from '../../identity/keys.js';
import { KERNEL_DOCS, type Library } from '../../compute/library.js';
import { InputError } from '../../solvers/errors.js';
import type { Warning } from '../../health/warnings.js';
import type { HttpKit } from '../kit.js';
import type { RouteGroup } from '../route-group.js';
import type { SolverRegistry } from '../../solvers/registry.js';
import type { TierBook } from '../../tally/tiers.js';
import { callerAddress } from '../caller-address.js';
import { StreamSlots } from '../stream-slots.js';
import {
  capabilitiesResponse,
  categoriesResponse,
  clockResponse,
  discoveryResponse,
  fieldStatusResponse,
  healthResponse,
  kernelResponse,
  libSearchResponse,
  operatorSpecBody,
  operatorSpecResponse,
  operatorsResponse,
  pulseResponse,
} from '../responses.js';
import { body, describes, responds, validate } from '../validate.js';
import { tierSheet } from '../../tally/tier-gates.js';
import { INTERFACE_VERSION } from '../openapi.js';
import { droppedWhenBehind } from '../sse-bound.js';

const libSearchBody = z
  .object({
    query: z.string().min(1).max(500),
    limit: z.number().int().min(1).max(100).default(10),
    kind: z.enum(['operator', 'solver', 'kernel_doc']).optional(),
  })
  .strict();

export function pulseObject(kit: Pick<HttpKit, 'time' | 'config' | 'nodeId'>): Record<string, unknown> {
  const ns = kit.time.nowNs();
  const st = stampAt(ns);
  const nextNs = (BigInt(st.svcond) + 1n) * TICK_NS;
  return {
    svcond: st.svcond,
    phase: st.phase,
    R_t: modulationFactor(st.phase, kit.config.kernel.phi0),
    pulse_hz: PULSE_HZ,
    zeqond_ns: TICK_NS_NUMBER,
    zeqond_sec: TICK_SECONDS_DISPLAY,
    zeqond_sec_exact: TICK_SECONDS_EXACT,
    unix_ns: st.unix_ns,
    next_tick_in_ms: Number(nextNs - ns) / 1e6,
    node: kit.nodeId(),
  };
}

export function kernelPrompt(kit: Pick<HttpKit, 'config'>, registry: SolverRegistry): string {
  const lines = [
    `# svc kernel v${kit.config.kernel.version}`,
    '',
    'You are talking to a node of the Deterministic Computation Service. Every result is stamped to a fixed',
    `${PULSE_HZ} Hz clock (tick period ${TICK_SECONDS_EXACT} s = ${TICK_NS_NUMBER} ns), wrapped in a result envelope (CKO) and signed`,
    'with an HMAC-SHA256 receipt (svcProof).',
    '',
    '## Rules',
    ...KERNEL_DOCS.filter((d) => d.id.startsWith('rule-')).map((d, i) => `${i + 1}. **${d.title}.** ${d.text}`),
    '',
    '## How to compute',
    '- Closed form: `POST /api/svc/compute` with `{"domain": "mechanics", "operators": ["KO42", "MECH_KINETIC_ENERGY"], "inputs": {"mass_kg": 2, "velocity_m_s": 3}}`.',
    '- A solver: `POST /api/svc/<solver>` with its inputs, or `POST /api/svc/solve` with `{"solver": "<id>", "inputs": {}}`.',
    '- In words: `POST /api/svc/auto` with `{"query": "..."}`.',
    '- Verify a result: `POST /api/svc/verify` with the response body.',
    '',
    `## Domains\n${DOMAINS.map((d) => `- ${d}`).join('\n')}`,
    '',
    `## Solvers\n${registry
      .list()
      .map((x) => `- \`${x.id}\` — ${x.kind} (${x.endpoint ?? 'POST /api/svc/solve'})`)
      .join('\n')}`,
    '',
  ];
  return lines.join('\n');
}

/** The methods some route answers (HEAD comes with GET): what capabilities advertises. */
function routedMethods(router: Router): string[] {
  const methods = new Set<string>();
  for (const layer of router.stack) for (const m of layer.methods) if (m !== 'HEAD') methods.add(m);
  return [...methods];
}

/** What the field status reads of the mesh (null: a node without one). */
export interface FieldCoherence {
  coherenceScore: number | null;
  peers: number;
  recentGossipCount: number;
}

/**
 * The field now (svc_field_status): the KO42 modulation at this instant — tick, phase, R(t) and its distance from 1
 * against rule 2's bound — the gate and parity thresholds every result is held to (rules 4 and 6), and how far the
 * mesh agrees with this node's clock and kernel (coherenceScore). Everything is read, nothing is stored.
 */
export function fieldStatus(kit: Pick<HttpKit, 'time' | 'config' | 'nodeId'>, mesh: FieldCoherence | null): Record<string, unknown> {
  const pulse = pulseObject(kit);
  const deviation = Math.abs((pulse.R_t as number) - 1);
  return {
    node: kit.nodeId(),
    svcond: pulse.svcond,
    phase: pulse.phase,
    R_t: pulse.R_t,
    modulation: {
      formula: 'R(t) = S(t)[1 + a sin(2 pi f t + phi0)]',
      amplitude: MODULATION_AMPLITUDE,
      pulse_hz: PULSE_HZ,
      phi0: kit.config.kernel.phi0,
      deviation,
      within_bound: deviation <= MODULATION_AMPLITUDE,
    },
    zeqond_ns: TICK_NS_NUMBER,
    next_tick_in_ms: pulse.next_tick_in_ms,
    gate: { tolerance: TOLERANCE_GATE, precision_bound: PRECISION_BOUND },
    parity: { variance_threshold: VARIANCE_THRESHOLD },
    mesh: mesh === null ? { enabled: false, coherenceScore: null, peers: 0, recentGossipCount: 0 } : { enabled: true, ...mesh },
    kernel_version: kit.config.kernel.version,
  };
}

export interface SystemRouteServices {
  registry: SolverRegistry;
  library: Library;
  tiers: TierBook;
  /** The mesh's agreement for the field status (null or absent: no mesh). */
  coherence?: () => Promise<FieldCoherence | null>;
  /** The node's open warnings (health/warnings.ts); absent: none. */
  warnings?: () => Warning[];
  /** Slots of keyless long-lived streams, shared with /ws/stream (stream-slots.ts); absent: the pulse stream makes its own. */
  keylessStreams?: StreamSlots;
}

export function systemRoutes(s: SystemRouteServices): RouteGroup {
  return { name: 'system', register: (router, kit) => registerSystemRoutes(router, kit, s) };
}

function registerSystemRoutes(router: Router, kit: HttpKit, s: SystemRouteServices): void {
  const { library } = s;
  const health: Middleware = (ctx) => {
    ctx.body = {
      ok: true,
      status: 'live',
      node: kit.nodeId(),
      kernel_version: kit.config.kernel.version,
      svcond: kit.time.nowSvcond(),
      uptime_s: Math.round(process.uptime()),
      warnings: s.warnings?.() ?? [],
    };
  };
  router.get('/api/health', responds(healthResponse), health);
  // Part 4.8 lists health among the /api/tally/* routes: the same liveness answer under the tally prefix.
  router.get('/api/tally/health', responds(healthResponse), health);

  router.get('/api', responds(discoveryResponse), (ctx) => {
    ctx.body = kit.discovery(router);
  });

  router.get('/api/svc/pulse', responds(pulseResponse), (ctx) => {
    ctx.body = pulseObject(kit);
  });

  router.get('/api/svc/field/status', responds(fieldStatusResponse), async (ctx) => {
    ctx.body = fieldStatus(kit, (await s.coherence?.()) ?? null);
  });

  router.get('/api/tally/clock', responds(clockResponse), (ctx) => {
    const st = stampAt(kit.time.nowNs());
    ctx.body = {
      zeqond_sec: TICK_SECONDS_DISPLAY,
      zeqond_sec_exact: TICK_SECONDS_EXACT,
      zeqond_ns: TICK_NS_NUMBER,
      pulse_hz: PULSE_HZ,
      svcond: st.svcond,
      phase: st.phase,
      unix_ns: st.unix_ns,
    };
  });

  // One SSE event per tick, sent at the tick boundary. Keyless, so capped per caller address and per node
  // (stream-slots.ts); the slot is given back when the connection closes, however it ends.
  const slots =
    s.keylessStreams ?? new StreamSlots({ perAddress: kit.config.limits.keylessStreamsPerAddress, perNode: kit.config.limits.keylessStreamsPerNode });
  router.get('/api/svc/pulse/stream', describes({ contentType: 'text/event-stream' }), async (ctx) => {
    // A HEAD asks for the head only: an SSE session would never send it (and hold the connection open).
    if (ctx.method === 'HEAD') {
      ctx.status = 200;
      ctx.type = 'text/event-stream';
      return;
    }
    const release = slots.take(callerAddress(ctx), 'pulse');
    ctx.res.once('close', release);
    ctx.respond = false;
    ctx.res.statusCode = 200;
    let session: Awaited<ReturnType<typeof createSession>>;
    try {
      session = await createSession(ctx.req, ctx.res, { keepAlive: null, retry: 1000 });
    } catch (err) {
      release();
      throw err;
    }
    let timer: NodeJS.Timeout | null = null;
    let lastSent = -1;
    const send = (): void => {
      const pulse = pulseObject(kit);
      // A timer may fire a hair before the boundary: never send the same tick twice.
      if (pulse.svcond !== lastSent) {
        lastSent = pulse.svcond as number;
        // A client that does not read is let go past the bound (its slot released by the close).
        if (droppedWhenBehind(ctx.res)) return;
        session.push(pulse, 'tick');
      }
      timer = setTimeout(
        () => {
          if (session.isConnected) send();
        },
        Math.max(1, Math.ceil(Number(pulse.next_tick_in_ms))),
      );
    };
    send();
    session.on('disconnected', () => {
      if (timer) clearTimeout(timer);
      release();
    });
  });

  router.get('/api/operators', responds(operatorsResponse), (ctx) => {
    const ops = listOperators();
    ctx.body = { count: ops.length, operators: ops };
  });

  router.get('/api/operators/categories', responds(categoriesResponse), (ctx) => {
    ctx.body = { categories: categories() };
  });

  router.post('/api/svc/operator-spec', responds(operatorSpecResponse), body(operatorSpecBody, { inHandler: true }), (ctx) => {
    const body = ctx.request.body as Record<string, unknown> | undefined;
    if (body && typeof body === 'object' && typeof body.solver === 'string') {
      const solver = s.registry.get(body.solver);
      if (!solver) throw new InputError('solver', `unknown solver ${body.solver}`, s.registry.ids());
      ctx.body = {
        solver: solver.id,
        endpoint: solver.endpoint ?? '/api/svc/solve',
        modes: solver.modes,
        stateful: solver.stateful,
        inputs: solver.inputs,
        accepted_keys: solver.inputs.map((i) => i.key),
      };
      return;
    }
    ctx.body = operatorSpec(body ?? {});
  });

  router.post('/api/svc/lib-search', responds(libSearchResponse), body(libSearchBody), (ctx) => {
    const body = validate(libSearchBody, ctx.request.body);
    ctx.body = { query: body.query, ...library.search(body.query, body.limit, body.kind) };
  });

  router.get('/api/kernel', responds(kernelResponse), (ctx) => {
    ctx.body = {
      version: kit.config.kernel.version,
      interface_version: INTERFACE_VERSION,
      clock: { pulse_hz: PULSE_HZ, zeqond_ns: TICK_NS_NUMBER, zeqond_sec: TICK_SECONDS_DISPLAY, zeqond_sec_exact: TICK_SECONDS_EXACT },
      modulation: { amplitude: MODULATION_AMPLITUDE, phi0: kit.config.kernel.phi0, formula: 'R(t) = S(t)[1 + a·sin(2π·f·t + φ0)]' },
      gate: { tolerance: TOLERANCE_GATE, precision_bound: PRECISION_BOUND },
      parity: { variance_threshold: VARIANCE_THRESHOLD },
      rules: KERNEL_DOCS.filter((d) => d.id.startsWith('rule-')).map((d) => ({ id: d.id, title: d.title, text: d.text })),
      domains: DOMAINS,
      operators: listOperators().length,
      solvers: s.registry.ids(),
    };
  });

  router.get('/api/kernel/prompt', describes({ contentType: 'text/markdown' }), (ctx) => {
    ctx.type = 'text/markdown; charset=utf-8';
    ctx.body = kernelPrompt(kit, s.registry);
  });

  router.get('/api/system/capabilities', responds(capabilitiesResponse), (ctx) => {
    ctx.body = {
      node: kit.nodeId(),
      kernel_version: kit.config.kernel.version,
      storage: 'leveldb',
      methods: routedMethods(router),
      key_kinds: Object.values(KEY_PREFIX),
      domains: DOMAINS,
      operators: listOperators().length,
      solvers: s.registry
        .list()
        .map((x) => ({ id: x.id, kind: x.kind, endpoint: x.endpoint ?? '/api/svc/solve', catalogue: x.catalogue, modes: x.modes, stateful: x.stateful })),
      limits: {
        keyless_prove_per_minute: kit.config.limits.provePerMinute,
        demo_key_per_day: kit.config.limits.demoKeyPerDay,
        anonymous_compute_per_day: kit.config.limits.anonymousComputePerDay,
        max_operators: 10,
        daily_quota_enforced: kit.config.limits.enforceDailyQuota,
        tiers: tierSheet(s.tiers.policy, kit.config.limits.enforceDailyQuota).tiers,
      },
      mesh: { enabled: kit.config.mesh.secret !== null },
    };
  });
}

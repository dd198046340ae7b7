// MMIO (spec 4.8, 9 item 6): GET /api/svc/mmio, the public manifest with the node's live registers;
// GET /api/svc/mmio/registers (authenticated), the caller's own registers. The map is mmio/map.ts.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { stampAt, TICK_NS_NUMBER } from '../../kernel/clock.js';
import { modulationFactor } from '../../kernel/modulation.js';
import { ServiceError } from '../../kernel/errors.js';
import { CALLER_REGISTERS, MMIO_VERSION, NODE_REGISTERS, readBank } from '../../mmio/map.js';
import type { HttpKit } from '../kit.js';
import { mmioCallerResponse, mmioMapResponse } from '../responses.js';
import { responds } from '../validate.js';
import type { RouteGroup } from '../route-group.js';
import type { MeshService } from '../../mesh/service.js';
import type { Counters } from '../../store/counters.js';
import type { QuotaService } from '../../tally/quota.js';
import type { TierBook } from '../../tally/tiers.js';
import { requireKey } from '../auth.js';
import { forwardToHome } from '../forward.js';
import type { Ledger } from '../../tally/ledger.js';
import type { Caller } from '../../records/types.js';

/** What the node's registers read that the routes' services do not have (node/assistants.ts). */
export interface MmioSources {
  queueDepth(): number;
  agentsRunning(): number;
  /** The caller's agents (running, ever) and its open agent streams. */
  agentsOf(zid: string): Promise<{ running: number; total: number }>;
  streamsOf(zid: string): number;
  reactorsOf(zid: string): Promise<number>;
}

export interface MmioRouteServices {
  mmio: MmioSources;
  mesh: MeshService | null;
  counters: Counters;
  ledger: Ledger;
  quota: QuotaService;
  tiers: TierBook;
}

export function mmioRoutes(s: MmioRouteServices): RouteGroup {
  return { name: 'mmio', register: (router, kit) => registerMmioRoutes(router, kit, s) };
}

function registerMmioRoutes(router: Router, kit: HttpKit, s: MmioRouteServices): void {
  const auth = kit.auth;
  const home = forwardToHome(kit);

  router.get('/api/svc/mmio', responds(mmioMapResponse), async (ctx) => {
    const st = stampAt(kit.time.nowNs());
    const status = s.mesh ? await s.mesh.status() : null;
    const values = {
      map_version: Number(MMIO_VERSION.split('.')[0]),
      svcond: st.svcond,
      phase: st.phase,
      R_t: modulationFactor(st.phase, kit.config.kernel.phi0),
      sealed_count: s.counters.get('sealed_total'),
      peers: status ? status.meshSize - 1 : 0,
      queue_depth: s.mmio.queueDepth(),
      coherence: status?.coherenceScore ?? null,
      zeqond_ns: TICK_NS_NUMBER,
      agents_running: s.mmio.agentsRunning(),
    };
    ctx.body = {
      version: MMIO_VERSION,
      node: kit.nodeId(),
      svcond: st.svcond,
      registers: readBank(NODE_REGISTERS, values),
      caller_registers: { path: '/api/svc/mmio/registers', auth: 'Bearer key', registers: readBank(CALLER_REGISTERS, {}).map(({ value: _v, ...r }) => r) },
    };
  });

  router.get('/api/svc/mmio/registers', responds(mmioCallerResponse), requireKey(auth), home, async (ctx: Context) => {
    const c = ctx.state.caller as Caller;
    if (c.kind !== 'identity') throw new ServiceError(403, 'SVC_FORBIDDEN', 'caller registers belong to an identity: use a key of one');
    const w = await s.ledger.wallet(c.zid);
    const now = kit.time.nowMs();
    const agents = await s.mmio.agentsOf(c.zid);
    const values = {
      balance_free: w.free,
      balance_paid: w.paid,
      balance_total: w.free + w.paid,
      usage_today: s.quota.usedToday(c.zid, now),
      allowance_today: s.tiers.allowance(s.tiers.ofCaller(c)),
      open_streams: s.mmio.streamsOf(c.zid),
      reactors: await s.mmio.reactorsOf(c.zid),
      agents: agents.running,
      agents_total: agents.total,
    };
    ctx.body = { version: MMIO_VERSION, zid: c.zid, svcond: kit.time.nowSvcond(), registers: readBank(CALLER_REGISTERS, values) };
  });
}

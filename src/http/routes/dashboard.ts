// GET /: the node's dashboard, a plain page (public/dashboard: HTML, CSS and a small script; no build step) that
// reads the node's own keyless API in the browser. Served from the repository's public/ folder, found from this
// module (src/http/routes or dist/http/routes: both three levels below the root). GET /api/system/stats is the
// dashboard's data: the machine's latest sample (machine-stats.ts) with its history, the node's own bond and mode,
// its own recent seals, and the health warnings (the alarm strip).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type Router from '@koa/router';
import { ServiceError } from '../../kernel/errors.js';
import { describes, responds } from '../validate.js';
import type { RouteGroup } from '../route-group.js';
import type { MachineStats } from '../machine-stats.js';
import type { RegistryEntry, SlashState } from '../../consensus/bonds.js';
import { systemStatsResponse } from '../responses.js';

const DIR = fileURLToPath(new URL('../../../public/dashboard/', import.meta.url));
const FILES: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'dashboard.css': 'text/css; charset=utf-8',
  'dashboard.js': 'application/javascript; charset=utf-8',
};

/** A health warning as the alarm strip shows it. */
export interface HealthWarning {
  code: string;
  message: string;
  since: string;
  count: number;
}

export interface DashboardSources {
  machine: MachineStats;
  nowSvcond: () => number;
  meshEnabled: () => boolean;
  /** This node's operator's mode (idle without a bond). */
  mode: () => string;
  /** This node's latest bond (active, released or slashed) and where its slashing stands. */
  ownBond: () => RegistryEntry | null;
  slashState: (bondId: string, now: number) => SlashState | null;
  /** The node's open health warnings (node/health.ts), as /api/health lists them. */
  warnings: () => HealthWarning[];
}

export function dashboardRoutes(sources: DashboardSources): RouteGroup {
  return { name: 'dashboard', register: (router) => registerDashboardRoutes(router, sources) };
}

/** The node's own bond as the dashboard shows it: its size in envelopes and its state. */
export function ownBondView(entry: RegistryEntry | null, slashState: SlashState | null): Record<string, unknown> | null {
  const bond = entry?.bond?.bond;
  if (!entry || !bond) return null;
  const slashed = slashState !== null;
  return {
    bond_id: bond.bond_id,
    zid: bond.zid,
    envelopes: bond.token_ids.length,
    svcond: bond.svcond,
    state: slashed ? 'slashed' : entry.release !== null ? 'released' : 'active',
    slashed,
    slash_state: slashState,
    challenge_id: entry.slashed?.challenge_id ?? entry.slash_applied?.slashed.challenge_id ?? null,
  };
}

function registerDashboardRoutes(router: Router, s: DashboardSources): void {
  const cache = new Map<string, Buffer>();
  const file = (name: string): Buffer => {
    let bytes = cache.get(name);
    if (bytes === undefined) cache.set(name, (bytes = readFileSync(DIR + name)));
    return bytes;
  };

  router.get('/', describes({ contentType: 'text/html', summary: 'The dashboard page' }), (ctx) => {
    ctx.type = FILES['index.html']!;
    ctx.set('Cache-Control', 'no-cache');
    ctx.body = file('index.html');
  });

  router.get('/api/system/stats', responds(systemStatsResponse), async (ctx) => {
    const machine = s.machine.latest() ?? (await s.machine.sample());
    const now = s.nowSvcond();
    const own = s.ownBond();
    ctx.set('Cache-Control', 'no-store');
    ctx.body = {
      svcond: now,
      mesh: s.meshEnabled(),
      mode: s.mode(),
      bond: ownBondView(own, own ? s.slashState(own.bond_id, now) : null),
      seals: { sealed_here: machine.sealed_here, recent: s.machine.recentSeals() },
      warnings: s.warnings(),
      machine,
      history: s.machine.points(),
    };
  });

  router.get('/dashboard/:file', describes({ contentType: 'text/plain', summary: 'The dashboard’s script and style sheet' }), (ctx) => {
    const name = String(ctx.params.file);
    const type = name === 'index.html' || !Object.hasOwn(FILES, name) ? undefined : FILES[name];
    if (type === undefined) throw new ServiceError(404, 'SVC_NOT_FOUND', `no dashboard file ${name}`);
    ctx.type = type;
    ctx.set('Cache-Control', 'no-cache');
    ctx.body = file(name);
  });
}

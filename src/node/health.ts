// Health: the warnings /api/health lists (health/), checked on the tick loop from what the parts expose — the mesh's
// refusals, connections and peer ticks, the outboxes' sizes, the data dir's disk, the worker threads' starts. Wired
// after every part it reads.
import { HealthMonitor } from '../health/monitor.js';
import { WarningBook, type Warning } from '../health/warnings.js';
import type { IdentityService } from '../identity/service.js';
import type { MeshService } from '../mesh/service.js';
import type { Webhooks } from '../webhooks/service.js';
import type { Capability } from './capability.js';
import type { ComputePart } from './compute.js';
import type { ConsensusPart } from './consensus.js';
import type { EconomyPart } from './economy.js';
import type { Foundation } from './foundation.js';

export interface HealthParts {
  mesh: MeshService;
  economy: Pick<EconomyPart, 'transferDelivery' | 'chargeSettlement'>;
  webhooks: Webhooks;
  consensus: Pick<ConsensusPart, 'challenges'>;
  compute: Pick<ComputePart, 'executor' | 'sealer'>;
  identity: Pick<IdentityService, 'remoteKeyCount'>;
}

export interface HealthPart {
  /** The open warnings, as /api/health shows them. */
  warnings: () => Warning[];
  monitor: HealthMonitor;
  capability: Capability;
}

export function wireHealth(f: Foundation, p: HealthParts): HealthPart {
  const { config, time } = f;
  const book = new WarningBook(time.nowMs, f.logger);
  const monitor = new HealthMonitor(
    book,
    {
      dataDir: config.dataDir,
      refusals: () => p.mesh.refusals(),
      connections: () => (p.mesh.enabled ? (p.mesh.p2p?.connectedPeers().length ?? 0) : null),
      bootstrap: config.mesh.bootstrap,
      announce: config.mesh.announce,
      peerTicks: () => p.mesh.peers(),
      nowSvcond: time.nowSvcond,
      nowMs: time.nowMs,
      backlogs: async () => ({
        transfers: p.economy.transferDelivery.queued,
        settlements: p.economy.chargeSettlement.queued,
        'consensus deliveries': p.consensus.challenges.memory().deliveries,
        'webhook deliveries': await p.webhooks.outbox.backlog(config.health.backlogMax),
      }),
      workerStartFailures: () => {
        const failures: Record<string, string> = {};
        const solvers = p.compute.executor.startFailure?.() ?? null;
        const seal = p.compute.sealer.startFailure?.() ?? null;
        if (solvers !== null) failures['solver workers'] = solvers;
        if (seal !== null) failures['seal workers'] = seal;
        return failures;
      },
      remoteKeys: () => (p.mesh.enabled ? p.identity.remoteKeyCount() : null),
    },
    config.health,
  );
  return {
    warnings: () => book.list(),
    monitor,
    capability: { name: 'health', tickers: [{ name: 'health checks', everyTicks: config.health.checkTicks, run: () => monitor.check() }] },
  };
}

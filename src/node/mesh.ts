// The mesh: libp2p gossip and streams between nodes (architecture.md §5). Built before the parts that publish on it;
// it starts after the HTTP server listens, since its tick events carry this node's URL. Every capability's gossip rows
// and stream protocols are registered on it before it starts.
import type { ChainService } from '../chain/service.js';
import { MeshService, type MeshServiceOptions } from '../mesh/service.js';
import type { TickAdvert } from '../mesh/peer-table.js';
import { meshRoutes } from '../http/routes/mesh.js';
import { Port, type Capability, type Listeners } from './capability.js';
import type { Foundation } from './foundation.js';

export interface MeshPart {
  mesh: MeshService;
  /** What this node's tick events say of its operator: bound by the consensus wiring. */
  advert: Port<() => TickAdvert>;
  listeners: Listeners;
  capability: Capability;
}

/** The advert before the consensus wiring binds it: no operator, no free slots. */
const NO_ADVERT: TickAdvert = { mode: 'idle', bondId: null, freeSlots: 0 };

export function wireMesh(f: Foundation, chain: ChainService): MeshPart {
  const { config, counters } = f;
  const advert = new Port<() => TickAdvert>('mesh.advert');
  const options: MeshServiceOptions = {
    store: f.store,
    clock: f.clock,
    config: {
      secret: config.mesh.secret,
      p2pPort: config.mesh.p2pPort,
      bootstrap: config.mesh.bootstrap,
      tickEvery: config.mesh.tickEvery,
      tickRate: config.mesh.tickRate,
      host: config.host,
      announce: config.mesh.announce,
      ...(config.mesh.listen.length > 0 ? { listen: config.mesh.listen } : {}),
      peers: config.mesh.peers,
      relay: config.mesh.relay,
      mdns: config.mesh.mdns,
      upnp: config.mesh.upnp,
    },
    dataDir: config.dataDir,
    // Read by the mesh when it starts, after the HTTP server has its URL.
    httpUrl: '',
    libp2pMetrics: f.metrics.libp2p(),
    headState: () => ({ sealedCount: counters.get('sealed_total'), chainHeadsDigest: chain.headsDigest(), kernelVersion: config.kernel.version }),
    revenue: () => ({
      burned: counters.get('burned_total'),
      foundation: counters.get('foundation_total'),
      pooledCarry: counters.get('foundation_total') - counters.get('foundation_shares_total'),
    }),
    advert: () => advert.get()?.() ?? NO_ADVERT,
    logger: f.logger,
    ...f.options.mesh,
    limits: { snapshotsMax: config.mesh.snapshotRetention, ...f.options.mesh?.limits },
  };
  const mesh = new MeshService(options);
  f.metricsMesh.bind(mesh);
  return {
    mesh,
    advert,
    listeners: {
      gossip: (row) => void mesh.gossip.register(row),
      stream: (p) => void mesh.handleStream(p.protocol, (stream, peer) => p.handle(stream, peer)),
    },
    capability: {
      name: 'mesh',
      routes: [meshRoutes({ mesh, chain })],
      start: async () => {
        options.httpUrl = f.publicUrl.get() ?? '';
        await mesh.start();
      },
      stop: () => mesh.stop(),
    },
  };
}

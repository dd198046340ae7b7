// Identity: keys and their gossip (architecture.md §5). Keys minted here are gossiped on svc/identity/1, assertions
// from their home nodes are applied (a row of the gossip table), and a key nobody told us about is looked up on the
// peers, accepted only as an event signed by its home node; a claim to an identity not known here is weighed against the
// peers that know it; a revocation, which no lookup would ask for, is asserted again for a day. The gossip is wired after the HTTP server listens.
import type { ChainService } from '../chain/service.js';
import { IdentityService } from '../identity/service.js';
import { DemoKeys } from '../identity/demo.js';
import { IDENTITY_ASSERT, identityAssertHandler } from '../mesh/identity-assert.js';
import { meshPeerLinks } from '../mesh/peer-http.js';
import { homeCorroboration } from '../mesh/home-corroboration.js';
import { remoteIdentityLookup, remoteKeyLookup } from '../mesh/key-lookup.js';
import type { MeshService } from '../mesh/service.js';
import { TOPICS } from '../mesh/wire.js';
import { identityRoutes } from '../http/routes/identity.js';
import { meshIdentityRoutes } from '../http/routes/mesh-identity.js';
import type { Capability } from './capability.js';
import { REANNOUNCE_TICKS, type Foundation } from './foundation.js';

export interface IdentityPart {
  identity: IdentityService;
  demoKeys: DemoKeys;
  capability: Capability;
}

export async function wireIdentity(f: Foundation, chain: ChainService, mesh: MeshService): Promise<IdentityPart> {
  const { config, store } = f;
  const identity = new IdentityService({
    store,
    clock: f.clock,
    chain,
    nodeId: () => f.nodeId,
    kernelVersion: config.kernel.version,
    saltSecret: f.keys.salt,
    scryptCost: config.identity.scryptCost,
    keyCacheMax: config.limits.identityCacheMax,
    keysPerIdentity: config.limits.keysPerIdentity,
    remoteKeysMax: config.limits.remoteKeysMax,
  });
  await identity.indexEmbedKeysOnce();
  await identity.indexIdentityKeysOnce();
  // Back from longer than a revocation is asserted again: the keys learnt of other homes are asked of them again.
  if (mesh.enabled) await identity.noteMeshHeard(false);
  if (mesh.enabled) await identity.countRemoteKeys();
  const demoKeys = new DemoKeys(store, identity, { counters: f.counters, clock: f.clock, mintsPerDay: config.limits.demoKeyMintsPerDay });
  const routes = [identityRoutes({ identity, demoKeys }), meshIdentityRoutes({ mesh, identity })];
  if (!mesh.enabled) return { identity, demoKeys, capability: { name: 'identity', routes } };
  const capability: Capability = {
    name: 'identity',
    routes,
    tickers: [
      { name: 'revocation reannounce', everyTicks: f.options.reannounceTicks ?? REANNOUNCE_TICKS, run: () => identity.reannounceRevocations() },
      { name: 'mesh heard', everyTicks: f.options.reannounceTicks ?? REANNOUNCE_TICKS, run: () => identity.noteMeshHeard(mesh.hearsPeers()) },
    ],
    gossip: [
      identityAssertHandler(async (assertion, sender) => {
        await identity.applyAssertion(assertion, sender, 'gossip');
      }),
    ],
    start: () => {
      identity.onAssertions((assertions) => {
        for (const a of assertions) {
          void mesh
            .publish(IDENTITY_ASSERT, a, TOPICS.identity)
            .catch((err: unknown) => f.logger.warn({ err: String(err) }, 'identity assertion not published'));
        }
      });
      const peers = { peers: () => mesh.peers(), nowSvcond: () => mesh.nowSvcond(), overMesh: meshPeerLinks(mesh, f.config.mesh.secret).overMesh };
      identity.onRemoteLookup(remoteKeyLookup(peers), remoteIdentityLookup(peers), () => mesh.peersLearnt());
      identity.onHomeClaim(homeCorroboration({ ...peers, nowMs: f.time.nowMs }));
    },
  };
  return { identity, demoKeys, capability };
}

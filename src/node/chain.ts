// The chain: state machines, their logs and checkpoints. Checkpoints are signed every CHECKPOINT_ROWS rows or on the
// tick loop (chain/checkpoints.ts) and gossiped; the losing home of a slug race marks its machine lost and refunds
// its owner (chain/slug-loss.ts), wired after the HTTP server listens and settled once the mesh has started.
import { CHECKPOINT_EVENT } from '../chain/checkpoints.js';
import { ChainService } from '../chain/service.js';
import { SlugLosses, slugReclaim } from '../chain/slug-loss.js';
import type { IdentityService } from '../identity/service.js';
import { DEFAULT_SLUG_PREFIX } from '../chain/machine-creation.js';
import { SLUG_CLAIM } from '../mesh/machines.js';
import type { MeshService } from '../mesh/service.js';
import { bytesSigner, signText, TOPICS, verifyText } from '../mesh/wire.js';
import { chainRoutes } from '../http/routes/chain.js';
import type { Capability } from './capability.js';
import type { EconomyPart } from './economy.js';
import type { Foundation } from './foundation.js';

/** The chain service with its heads loaded: what every later part writes through. */
export async function openChain(f: Foundation): Promise<ChainService> {
  const chain = new ChainService(
    f.store,
    f.config.limits.identityCacheMax,
    {
      receiptKey: f.keys.receipt,
      sealSigner: bytesSigner(f.nodeIdentity.privateKey),
      phi0: f.config.kernel.phi0,
      nodeId: () => f.nodeId,
    },
    { perIdentity: f.config.limits.contractsPerIdentity, cacheBytes: f.config.limits.contractCacheBytes },
  );
  await chain.loadHeads();
  await chain.contracts.indexDeployersOnce();
  return chain;
}

export interface ChainPart {
  /** Checkpoints, and the slug-loss hooks (before the mesh starts). */
  capability: Capability;
  /** Slug losses a stop left unsettled: settled once the mesh has started. */
  slugLosses: Capability;
}

/** What the chain's routes and slug losses use of the economy and the identities. */
export type ChainNeeds = Pick<EconomyPart, 'ledger' | 'remoteCharges' | 'chargeOutcomes' | 'chargeSettlement'> & { identity: IdentityService };

export function wireChain(f: Foundation, chain: ChainService, mesh: MeshService, owners: ChainNeeds): ChainPart {
  const { time, logger } = f;
  const remoteCharges = {
    payer: owners.remoteCharges,
    outcomes: owners.chargeOutcomes,
    settleSoon: (nonce: string, machineHome: string) => owners.chargeSettlement.soon(nonce, machineHome),
  };
  const routes = [chainRoutes({ identity: owners.identity, chain, mesh, ledger: owners.ledger, remoteCharges })];
  chain.checkpoints.use({
    nodeId: () => f.nodeId,
    sign: (text) => signText(f.nodeIdentity.privateKey, text),
    verify: verifyText,
    nowSvcond: time.nowSvcond,
    publish: async (cp) => {
      if (mesh.enabled) await mesh.publish(CHECKPOINT_EVENT, cp, TOPICS.events);
    },
  });
  const checkpoints = { name: 'checkpoints', run: () => chain.checkpoints.tick() };
  if (!mesh.enabled)
    return { capability: { name: 'chain', gossip: [chain.checkpoints.handler()], tickers: [checkpoints], routes }, slugLosses: { name: 'slug losses' } };
  const losses = new SlugLosses({
    store: f.store,
    chain,
    ledger: owners.ledger,
    identity: owners.identity,
    nodeId: () => f.nodeId,
    nowMs: time.nowMs,
    winnerOf: (slug) => mesh.machines.known(slug),
    confirm: (slug) => mesh.machines.confirmOwn(slug),
    reclaim: slugReclaim({
      defaultSlugPrefix: DEFAULT_SLUG_PREFIX,
      nodeId: () => f.nodeId,
      claimOwn: (claim) => mesh.machines.claimOwn(claim),
      announce: (claim) => mesh.publish(SLUG_CLAIM, claim, TOPICS.events),
    }),
    log: (msg, fields) => logger.info(fields, msg),
  });
  const trackLosses = () => {
    // A loss owed is marked in the batch that decides it (the directory's entry, a creation's), read at start.
    mesh.machines.useMarks(losses);
    chain.trackSlugClaims({
      markOp: (slug) => losses.markOp(slug),
      written: (slug) => void mesh.machines.confirmOwn(slug).catch((err: unknown) => logger.warn({ err: String(err), slug }, 'a new slug not checked')),
    });
    mesh.machines.onWonElsewhere((slug) => {
      void losses.settle(slug).catch((err: unknown) => logger.error({ err: String(err), slug }, 'a lost slug could not be settled'));
    });
  };
  return {
    capability: { name: 'chain', gossip: [chain.checkpoints.handler()], tickers: [checkpoints], routes, start: trackLosses },
    slugLosses: {
      name: 'slug losses',
      // A slug race lost before a stop and not settled then: settled now, once.
      start: async () => {
        await losses.reconcile().catch((err: unknown) => logger.error({ err: String(err) }, 'slug losses could not be settled at start'));
      },
    },
  };
}

// The economy (tally/): wallets, tiers, daily quota, grants, claims, folders, transfers and their delivery, charges
// made here for machines homed elsewhere, and the records of published results. Deliveries and settlements start
// after the mesh: they sign with the node key and find a receiver's home in the peer table.
import { sealingOfBody, type ChainService } from '../chain/service.js';
import { ChargeOutcomes } from '../tally/charge-outcomes.js';
import type { IdentityService } from '../identity/service.js';
import type { MeshService } from '../mesh/service.js';
import { TOPICS } from '../mesh/wire.js';
import { ENVELOPE_SUBS, Ledger } from '../tally/ledger.js';
import { QuotaService } from '../tally/quota.js';
import { Grants } from '../tally/grants.js';
import { TierBook, tierPolicy } from '../tally/tiers.js';
import { ClaimService } from '../tally/claim.js';
import { CLAIM_ADDRESS_EVENT, ClaimAddresses } from '../tally/claim-addresses.js';
import { EnvelopeLocks, Folders } from '../tally/folders.js';
import { Transfers } from '../tally/transfers.js';
import { DebitCertificates } from '../custody/debit-certificate.js';
import { meshPeerLinks } from '../mesh/peer-http.js';
import { TransferDelivery, httpSender, outcomeOf, type DeliverySender } from '../tally/transfer-delivery.js';
import { RemoteCharges } from '../tally/remote-charges.js';
import { settlementLoop, type SettlementLoop } from '../tally/remote-charge-delivery.js';
import { PublishSettings } from '../tally/publish-settings.js';
import { ResultRecords } from '../tally/record.js';
import { ledgerRoutes } from '../http/routes/ledger.js';
import { recordRoutes } from '../http/routes/record.js';
import { tallyRoutes } from '../http/routes/tally.js';
import type { Capability } from './capability.js';
import { verdictMark, type Foundation } from './foundation.js';

export interface EconomyPart {
  ledger: Ledger;
  tiers: TierBook;
  quota: QuotaService;
  grants: Grants;
  claimAddresses: ClaimAddresses;
  claims: ClaimService;
  /** One lock per identity for every change that reads envelope records first: folder moves, transfers, bonds. */
  envelopeLocks: EnvelopeLocks;
  folders: Folders;
  transfers: Transfers;
  transferDelivery: TransferDelivery;
  /** Charges made here for actions at other machines' homes, their settlement loop, and the outcomes of charges made elsewhere. */
  remoteCharges: RemoteCharges;
  chargeSettlement: SettlementLoop;
  chargeOutcomes: ChargeOutcomes;
  publish: PublishSettings;
  results: ResultRecords;
  capability: Capability;
}

export async function wireEconomy(f: Foundation, chain: ChainService, identity: IdentityService, mesh: MeshService): Promise<EconomyPart> {
  const { config, options, store, counters, time } = f;
  const nodeId = () => f.nodeId;
  const ledger = new Ledger(store, counters, chain, {
    initialCredits: options.initialCredits ?? config.limits.initialCredits,
    walletCacheMax: config.limits.identityCacheMax,
  });
  // Envelopes sealed before the machine envelope index: indexed once, at the first start (chain/service.ts).
  await chain.indexOldEnvelopes(store.sub(ENVELOPE_SUBS.envelopes), async (resultId) => sealingOfBody(await ledger.getResult(resultId).catch(() => undefined)));
  const tiers = new TierBook(store, tierPolicy({ dailyAllowance: options.tierDailyAllowance, timeLimitSeconds: options.tierTimeLimitSeconds }));
  await tiers.load();
  const quota = new QuotaService(
    counters,
    {
      anonymousPerDay: config.limits.anonymousComputePerDay,
      demoPerDay: config.limits.demoKeyPerDay,
      enforceDailyQuota: config.limits.enforceDailyQuota,
      dailyAllowance: tiers.policy.dailyAllowance,
    },
    (ops) => store.commit(ops),
  );
  await quota.pruneOldDays(time.nowMs());
  const grants = new Grants({ store, ledger, chain, identity, tiers, operatorTokenDigest: f.operatorTokenDigest, nodeId });
  const claimAddresses = new ClaimAddresses(store, counters, config.mesh.secret);
  const claims = new ClaimService({
    store,
    counters,
    ledger,
    chain,
    identity,
    key: f.keys.claim,
    threshold: config.limits.claimThreshold,
    baseBits: config.limits.claimDifficultyBits,
    addresses: claimAddresses,
  });
  const envelopeLocks = new EnvelopeLocks();
  const folders = new Folders(store, counters, ledger, envelopeLocks);
  const peerUrl = (peerId: string): string | null => mesh.peerUrl(peerId);
  const sign = (type: string, body: unknown) => mesh.signDirect(type, body);
  const transfers = new Transfers({
    store,
    counters,
    chain,
    identity,
    locks: envelopeLocks,
    nodeId,
    nowSvcond: time.nowSvcond,
    nowMs: time.nowMs,
    canDeliver: () => mesh.enabled,
    peerUrl,
    debitCertificates: new DebitCertificates(store),
  });
  const links = meshPeerLinks(mesh, config.mesh.secret);
  const overMesh = httpSender({ sign, links });
  // A receiver homed on this node too (a failover moved one of them here): credited here, no request.
  const send: DeliverySender = async (home, url, deliveries) =>
    home === nodeId() ? (await transfers.receiveAll({ deliveries }, home)).acks.map(outcomeOf) : overMesh(home, url, deliveries);
  const transferDelivery = new TransferDelivery({ transfers, send, peerUrl, logger: f.logger });
  const remoteCharges = new RemoteCharges({ store, ledger, nowSvcond: time.nowSvcond, nowMs: time.nowMs, peerUrl });
  const chargeSettlement = settlementLoop({
    charges: remoteCharges,
    sign,
    links,
    logger: f.logger,
    ...(options.chargeSettleAfterMs !== undefined ? { firstDelayMs: options.chargeSettleAfterMs } : {}),
  });
  const chargeOutcomes = new ChargeOutcomes(store, time.nowMs);
  const publish = new PublishSettings(store, config.limits.identityCacheMax);
  await publish.load();
  const results = new ResultRecords(
    store,
    counters,
    publish,
    nodeId,
    async (id) => (await ledger.getResultBytes(id)) !== undefined,
    // A challenge carries the sealed body, whatever its size (consensus/challenge-wire.ts).
    async (id) => {
      const bytes = await ledger.getResultBytes(id);
      return bytes === undefined ? undefined : (JSON.parse(bytes.toString('utf8')) as Record<string, unknown>);
    },
  );
  // Results published before the by-owner index: indexed once, at the first start (tally/record.ts).
  await results.indexByOwnerOnce();
  claimAddresses.use(async (b) => {
    if (mesh.enabled) await mesh.publish(CLAIM_ADDRESS_EVENT, b, TOPICS.events);
  });
  const capability: Capability = {
    name: 'economy',
    gossip: [claimAddresses.handler(time.nowMs, nodeId)],
    // Tally's literal /api/tally/envelopes/folder and /transfer-bulk are listed before ledger's /api/tally/envelopes/:zid.
    routes: [
      tallyRoutes({ grants, tiers, claims, folders, transfers, mesh }),
      ledgerRoutes({ ledger, quota, tiers }),
      recordRoutes({ identity, mesh, results, publish, verdictOf: (executedBy) => verdictMark(f, executedBy) }),
    ],
    start: async () => {
      await transferDelivery.start();
      await chargeSettlement.start();
    },
    stop: async () => {
      await transferDelivery.stop();
      await chargeSettlement.stop();
    },
  };
  return {
    ledger,
    tiers,
    quota,
    grants,
    claimAddresses,
    claims,
    envelopeLocks,
    folders,
    transfers,
    transferDelivery,
    remoteCharges,
    chargeSettlement,
    chargeOutcomes,
    publish,
    results,
    capability,
  };
}

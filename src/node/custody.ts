// Custody (architecture.md §5, docs/decisions.md "Custody"): the store's gate that holds an identity's ledger writes
// until a majority of its custodians holds them (the replicator), this node's custodian side of /svc/custody/1, and
// the custody routes. Members are the nodes the bond registry knows with an active bond that the node itself
// advertised in a tick event this node heard (kept across restarts: heard-bonds.ts): a bond whose node never spoke
// (or another's) makes no custodian. The check of a transfer credit's debit certificate is custody's, used by the
// custodian and by the receiver's home.
import { chainFetcher, custodyClient, type CustodyClientDeps } from '../custody/client.js';
import { custodySetOf } from '../custody/custody-set.js';
import { Custodian, type ChainPage } from '../custody/custodian.js';
import {
  creditClaimOf,
  debitCertificateSchema,
  DebitCertificates,
  debitCertificateFault,
  type CreditClaim,
  type DebitCheckDeps,
} from '../custody/debit-certificate.js';
import { LedgerOpsReader } from '../custody/ledger-ops.js';
import { CUSTODY_PROTOCOL } from '../custody/protocol.js';
import { Replicator } from '../custody/replicator.js';
import { CustodyView } from '../custody/view.js';
import { HeardBonds } from '../custody/heard-bonds.js';
import { signText, verifyText } from '../mesh/wire.js';
import { custodyRoutes } from '../http/routes/custody.js';
import type { Capability } from './capability.js';
import type { ConsensusPart } from './consensus.js';
import type { EconomyPart } from './economy.js';
import type { Foundation } from './foundation.js';
import type { IdentityPart } from './identity.js';
import type { MeshPart } from './mesh.js';

export interface CustodyPart {
  replicator: Replicator;
  custodian: Custodian;
  view: CustodyView;
  capability: Capability;
}

export async function wireCustody(
  f: Foundation,
  { mesh }: MeshPart,
  consensus: Pick<ConsensusPart, 'bonds'>,
  identity: IdentityPart,
  economy: Pick<EconomyPart, 'ledger' | 'transfers'>,
): Promise<CustodyPart> {
  const { config, store, time } = f;
  const nodeId = () => f.nodeId;
  const secret = config.mesh.secret ?? null;
  // Read once a tick: the registry and the peer table change by events, and every ledger write asks. The adverts
  // heard are kept across restarts (heard-bonds.ts).
  const heardBonds = new HeardBonds(store, (err) => f.logger.warn({ err: String(err) }, 'the custody view could not be written'));
  await heardBonds.load();
  let known: { svcond: number; nodes: string[] } = { svcond: -1, nodes: [] };
  const members = () => {
    const now = time.nowSvcond();
    if (known.svcond === now) return known.nodes;
    const active = consensus.bonds.active();
    const adverts = mesh.peers().flatMap((p) => (p.lastTick === null ? [] : [{ node: p.peerId, bondId: p.bondId }]));
    const heard = heardBonds.update(adverts, new Map(active.map((b) => [b.bond.node, b.bond.bond_id])));
    const nodes = active.filter((b) => b.bond.node === f.nodeId || heard.get(b.bond.node) === b.bond.bond_id).map((b) => b.bond.node);
    known = { svcond: now, nodes };
    return nodes;
  };
  const homeOf = async (zid: string) => (await identity.identity.getIdentity(zid))?.home ?? null;
  // One check of a credit's debit certificate, at the receiver's home and at its custodians.
  const debitCheck: DebitCheckDeps = { members, replicas: config.custody.replicas, homeOf, verify: verifyText };
  const debitFault = (cert: unknown, credit: CreditClaim) => debitCertificateFault(cert, credit, debitCheck);
  economy.transfers.checkDebitsWith((cert, credit) => debitFault(cert, creditClaimOf(credit)));
  const client: CustodyClientDeps | null =
    mesh.enabled && secret !== null
      ? { openStream: (p, proto, signal) => mesh.openStream(p, proto, signal), selfId: nodeId, secret, nowSvcond: time.nowSvcond }
      : null;
  const replicator = new Replicator({
    store,
    reader: new LedgerOpsReader(store),
    nodeId,
    replicas: config.custody.replicas,
    members,
    send: client === null ? null : custodyClient(client),
    verify: verifyText,
    sign: (text) => signText(f.nodeIdentity.privateKey, text),
    certificates: new DebitCertificates(store),
    timeoutMs: config.custody.certifyTimeoutMs,
  });
  store.gate = replicator;
  // A pending debit's certificate, checked against this home's view of the sender's set before each delivery: a set
  // that changed since the debit (a custodian replaced) certifies it again.
  economy.transfers.certifyDebitsWith(async (kept) => {
    const cert = debitCertificateSchema.safeParse(kept).data;
    const t = cert?.entry.transfer;
    if (cert === undefined || t === null || t === undefined) return kept;
    const fault = await debitFault(cert, { zid: t.party, transfer: { ...t, side: 'credit', party: cert.entry.zid } });
    return fault === null ? kept : replicator.recertify(cert);
  });
  const custodian: Custodian = new Custodian({
    store,
    nodeId,
    sign: (text) => signText(f.nodeIdentity.privateKey, text),
    homeOf,
    debitFault,
    fetch: client === null ? null : chainFetcher(client),
    verify: verifyText,
    custodiansOf: async (zid) => {
      const home = await homeOf(zid);
      return home === null ? null : custodySetOf(zid, home, members(), config.custody.replicas).custodians;
    },
    // The home answers from its certified log, a custodian from what it holds.
    chainAt: async (zid, from): Promise<ChainPage> => ((await homeOf(zid)) === f.nodeId ? replicator.page(zid, from) : custodian.page(zid, from)),
    meshSecret: secret,
    nowSvcond: time.nowSvcond,
    logger: f.logger,
  });
  const view = new CustodyView({
    nodeId,
    replicas: config.custody.replicas,
    members,
    homeOf,
    wallet: (zid) => economy.ledger.wallet(zid),
    replicator,
    custodian,
  });
  const capability: Capability = {
    name: 'custody',
    streams: mesh.enabled ? [{ protocol: CUSTODY_PROTOCOL, handle: (stream, peer) => void custodian.serve(stream, peer) }] : [],
    routes: [custodyRoutes(view)],
    stop: async () => {
      store.gate = null;
      await heardBonds.flushed();
    },
  };
  return { replicator, custodian, view, capability };
}

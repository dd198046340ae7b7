// Custody (architecture.md §5, docs/decisions.md "Custody"): the store's gate that holds an identity's ledger writes
// until a majority of its custodians holds them (the replicator), this node's custodian side of /svc/custody/1, and
// the custody routes. Members are the nodes the bond registry knows with an active bond that the node itself
// advertised in a tick event this node heard (kept across restarts: heard-bonds.ts): a bond whose node never spoke
// (or another's) makes no custodian. The check of a transfer credit's debit certificate is custody's, used by the
// custodian and by the receiver's home.
import { chainFetcher, changesFetcher, custodyClient, promiseClient, type CustodyClientDeps } from '../custody/client.js';
import { excludedMember, setOfConfig, type SetConfig } from '../custody/custody-set.js';
import { Custodian, type ChainPage } from '../custody/custodian.js';
import {
  creditClaimOf,
  debitCertificateSchema,
  DebitCertificates,
  debitCertificateFault,
  type CreditClaim,
  type DebitCertificate,
  type DebitCheckDeps,
} from '../custody/debit-certificate.js';
import { LedgerOpsReader } from '../custody/ledger-ops.js';
import { recertifyDebits } from '../custody/pending-debits.js';
import { CUSTODY_PROTOCOL } from '../custody/protocol.js';
import { Replicator } from '../custody/replicator.js';
import { highestEnvelopeSeq, linkOf } from '../custody/replica.js';
import { CustodyView } from '../custody/view.js';
import { HeardBonds } from '../custody/heard-bonds.js';
import { HOME_CHANGE_EVENT, HomeChanges, homeChangeSchema, type HomeChange } from '../custody/home-change.js';
import { HomeHistory } from '../custody/home-history.js';
import { HomeMoves } from '../custody/home-moves.js';
import { HomeCheck } from '../custody/home-check.js';
import { ServiceError } from '../kernel/errors.js';
import { FIRST_EPOCH } from '../custody/entry.js';
import { Failover } from '../custody/failover.js';
import { SetChanges } from '../custody/set-changes.js';
import { headAfter, type Heard } from '../custody/failover-rules.js';
import { GossipError } from '../mesh/gossip-error.js';
import type { GossipHandler } from '../mesh/gossip-handlers.js';
import { signText, TOPICS, verifyText } from '../mesh/wire.js';
import { custodyRoutes } from '../http/routes/custody.js';
import type { ChainService } from '../chain/service.js';
import type { Capability } from './capability.js';
import type { ConsensusPart } from './consensus.js';
import type { EconomyPart } from './economy.js';
import type { Foundation } from './foundation.js';
import type { IdentityPart } from './identity.js';
import type { MeshPart } from './mesh.js';
import { unwrittenCharges } from '../custody/unwritten-charges.js';
import type { Op } from '../store/db.js';

export interface CustodyPart {
  replicator: Replicator;
  custodian: Custodian;
  view: CustodyView;
  homeChanges: HomeChanges;
  homeMoves: HomeMoves;
  /** Null: the mesh does not run. */
  failover: Failover | null;
  /** Null: the mesh does not run. */
  setChanges: SetChanges | null;
  /**
   * The identity's home for a request that reaches this node: this node once it checked it still is the home after
   * its start (home-check.ts), another node when its directory names one (after the check too); 503
   * SVC_CUSTODY_UNAVAILABLE when the check cannot say.
   */
  checkedHome: (zid: string) => Promise<string>;
  capability: Capability;
}

export async function wireCustody(
  f: Foundation,
  { mesh }: MeshPart,
  consensus: Pick<ConsensusPart, 'bonds'>,
  identity: IdentityPart,
  economy: Pick<EconomyPart, 'ledger' | 'transfers' | 'envelopeLocks' | 'tiers'>,
  chain: ChainService,
): Promise<CustodyPart> {
  const { config, store, time } = f;
  const nodeId = () => f.nodeId;
  const secret = config.mesh.secret ?? null;
  // Read once a tick: the registry and the peer table change by events, and every ledger write asks. The adverts
  // heard are kept across restarts (heard-bonds.ts).
  const heardBonds = new HeardBonds(store, (err) => f.logger.warn({ err: String(err) }, 'the custody view could not be written'));
  await heardBonds.load();
  let known: { svcond: number; nodes: string[] } = { svcond: -1, nodes: [] };
  let setChangesRef: SetChanges | null = null;
  const members = () => {
    const now = time.nowSvcond();
    if (known.svcond === now) return known.nodes;
    const active = consensus.bonds.active();
    const adverts = mesh.peers().flatMap((p) => (p.lastTick === null ? [] : [{ node: p.peerId, bondId: p.bondId }]));
    const heard = heardBonds.update(adverts, new Map(active.map((b) => [b.bond.node, b.bond.bond_id])));
    const nodes = active.filter((b) => b.bond.node === f.nodeId || heard.get(b.bond.node) === b.bond.bond_id).map((b) => b.bond.node);
    // The same list while it does not change: the replicator keeps the sets it computed from it (a SHA-256 per member).
    if (!sameList(nodes, known.nodes)) {
      known = { svcond: now, nodes };
      // Sets may be computed from it from now on: the hand-over pass checks the identities' sets under each list.
      setChangesRef?.heard(nodes);
    } else known = { svcond: now, nodes: known.nodes };
    return known.nodes;
  };
  // An identity whose assertion never came here (a late joiner, gossip lost while the mesh re-formed) is asked of the
  // peers: a custodian learns the home that sends it entries, a status read finds it.
  const homeOf = async (zid: string) => (await identity.identity.findIdentity(zid))?.home ?? null;
  const homeChanges = new HomeChanges(store);
  // The unwritten charges this node has counted (custody/unwritten-charges.ts), by identity and entry hash.
  const chargesCounted = store.sub('custody_charges_counted');
  const client: CustodyClientDeps | null =
    mesh.enabled && secret !== null
      ? { openStream: (p, proto, signal) => mesh.openStream(p, proto, signal), selfId: nodeId, secret, nowSvcond: time.nowSvcond }
      : null;
  const fetch = client === null ? null : chainFetcher(client);
  const homeHistory = new HomeHistory({
    homeChanges,
    members,
    replicas: config.custody.replicas,
    verify: verifyText,
    fetch: client === null ? null : changesFetcher(client),
    // The identity's home first (it holds the latest changes), then the other members.
    sources: async (zid) => {
      const home = await homeOf(zid);
      return [...new Set([...(home === null ? [] : [home]), ...members()])].filter((n) => n !== f.nodeId);
    },
    nowMs: () => Date.now(),
    timeoutMs: config.custody.certifyTimeoutMs,
    logger: f.logger,
  });
  // The home of a debit's epoch, with the members its set passed over: the directory's and the latest change's for
  // the epoch of that change (or the first), the one kept with the changes for an earlier epoch (a debit certified
  // before one failover or more, delivered by the new home), else the node that proposed the entries of that epoch
  // this node's custodian signed. Unknown below the latest change: looked up in the changes other nodes keep, in the
  // background (a change that never came here).
  let custodianRef: Custodian | null = null;
  const configAt = async (zid: string, epoch: number): Promise<SetConfig | null> => {
    const latest = await homeChanges.latest(zid);
    if (epoch === (latest?.epoch ?? FIRST_EPOCH)) {
      const home = await homeOf(zid);
      return home === null ? null : { home, ...excludedMember(latest?.excluded) };
    }
    const current = latest?.epoch ?? FIRST_EPOCH;
    const known = (epoch < current ? await homeChanges.configAt(zid, epoch) : null) ?? (await custodianRef?.configInEpoch(zid, epoch)) ?? null;
    if (known === null && epoch < current) homeHistory.learnSoon(zid, epoch);
    return known;
  };
  /** The identity's custody set of now as this node knows it (null: the identity is not known here). */
  const currentSet = async (zid: string) => {
    const at = await configAt(zid, (await homeChanges.latest(zid))?.epoch ?? FIRST_EPOCH);
    return at === null ? null : setOfConfig(zid, at, members(), config.custody.replicas);
  };
  // Set below: applying a home change forgets the replicator's heads of the identity and ends a failover of it.
  let replicatorRef: Replicator | null = null;
  let failoverRef: Failover | null = null;
  let homeCheckRef: HomeCheck | null = null;
  const homeMoves = new HomeMoves({
    store,
    nodeId,
    replicas: config.custody.replicas,
    members,
    verify: verifyText,
    homeChanges,
    envelopeLocks: economy.envelopeLocks,
    identity: identity.identity,
    missedChanges: (zid, after, epoch) => homeHistory.changesUpTo(zid, after, epoch),
    rewriteChains: (ops, write) => chain.rewrite(ops, write),
    forget: (zid) => {
      replicatorRef?.forget(zid);
      failoverRef?.homeMoved(zid);
      economy.ledger.forgetWallet(zid);
      f.counters.forgetIdentity(zid);
      identity.identity.identityRecordWritten(zid);
    },
    replayed: (ops) => {
      f.counters.replayed(ops);
      economy.tiers.replayed(ops);
    },
    // Entries of an epoch this node was the home of, never written here (its log of written entries lacks them).
    unwrittenCharges: async (zid, links) => {
      const ownEpochs = new Set<number>();
      // Epoch 1's home is the node the identity registered on; a later epoch's, the node whose change opened it.
      for (const epoch of new Set(links.map((l) => l.entry.epoch)))
        if (epoch === FIRST_EPOCH ? (await configAt(zid, epoch))?.home === f.nodeId : await homeChanges.opened(zid, epoch, f.nodeId)) ownEpochs.add(epoch);
      // Charges of those epochs, then those this node's log of written entries does not hold at their slot.
      const own = unwrittenCharges(zid, links, (entry) => ownEpochs.has(entry.epoch));
      const logged = replicatorRef === null ? [] : await replicatorRef.loggedHashes(own.map((c) => c.entry));
      const candidates = own.filter((c, i) => logged[i] !== c.hash);
      const marked = await store.getMany(
        chargesCounted,
        candidates.map((c) => `${zid}!${c.hash}`),
      );
      const charges = candidates.filter((_, i) => marked[i] === undefined);
      if (charges.length === 0) return { ops: [], rollback: () => undefined };
      f.logger.warn(
        {
          zid,
          charges: charges.map((c) => ({ entry: c.hash, cost: c.cost, sealed: c.sealed })),
          chargesWritten: own.length - candidates.length,
          epochs: [...ownEpochs],
        },
        'custody: charges certified and never written here are counted in the node’s totals',
      );
      const counted = economy.ledger.unwrittenChargesOps(charges);
      const marks: Op[] = charges.map((c) => ({ type: 'put', sub: chargesCounted, key: `${zid}!${c.hash}`, value: 1 }));
      return { ops: [...counted.ops, ...marks], rollback: counted.rollback };
    },
    fetch,
    timeoutMs: config.custody.certifyTimeoutMs,
    logger: f.logger,
  });
  // One check of a credit's debit certificate, at the receiver's home and at its custodians.
  const debitCheck: DebitCheckDeps = { members, replicas: config.custody.replicas, configAt, verify: verifyText };
  const debitFault = (cert: unknown, credit: CreditClaim) => debitCertificateFault(cert, credit, debitCheck);
  economy.transfers.checkDebitsWith((cert, credit) => debitFault(cert, creditClaimOf(credit)));
  // A delivery to a receiver's old home is refused with the receiver's home change; the sender checks and applies it.
  economy.transfers.followHomesWith({
    latest: (zid) => homeChanges.latest(zid),
    apply: async (shown) => {
      const change = homeChangeSchema.safeParse(shown);
      if (!change.success) return void f.logger.warn({ err: change.error.issues[0]?.message }, 'a malformed home change was shown by a receiver’s old home');
      const { zid, epoch } = change.data;
      try {
        const standing = await homeMoves.apply(change.data);
        if (!standing.apply && standing.why !== 'known')
          f.logger.warn({ zid, epoch, reason: standing.reason }, 'a home change shown by a receiver’s old home was not applied');
      } catch (err) {
        f.logger.warn({ zid, epoch, err: String(err) }, 'a home change shown by a receiver’s old home was not applied');
      }
    },
  });
  // A home change shown with a promise request or its refusal: checked and applied as one heard.
  const learnChange = async (change: HomeChange): Promise<void> => {
    const standing = await homeMoves.apply(change);
    if (!standing.apply && standing.why !== 'known')
      f.logger.info({ zid: change.zid, epoch: change.epoch, reason: standing.reason }, 'custody: a home change shown with a promise was not applied');
  };
  const debitCertificates = new DebitCertificates(store);
  const replicator = new Replicator({
    store,
    reader: new LedgerOpsReader(store),
    nodeId,
    replicas: config.custody.replicas,
    members,
    send: client === null ? null : custodyClient(client),
    verify: verifyText,
    sign: (text) => signText(f.nodeIdentity.privateKey, text),
    certificates: debitCertificates,
    timeoutMs: config.custody.certifyTimeoutMs,
    onHomeChange: (change) =>
      void homeMoves.apply(change).catch((err: unknown) => f.logger.warn({ err: String(err) }, 'a home change shown by a custodian was not applied')),
    // Still the home once any change shown is applied: fenced by an epoch no change made (failover.ts retake).
    ownPromise: async (zid) => {
      const promised = await custodian.promised(zid);
      return promised?.candidate === f.nodeId ? promised.epoch : 0;
    },
    onFenced: (zid) =>
      void failoverRef
        ?.retake(zid)
        .catch((err: unknown) => f.logger.warn({ err: String(err), zid }, 'custody: the fenced home could not take the identity again')),
    // A write of this run certified by a majority shows this node is still the home: the check after a start is done.
    onCertified: (zid) => homeCheckRef?.confirm(zid),
  });
  replicatorRef = replicator;
  store.gate = replicator;
  economy.transfers.custodyWith((zid) => replicator.setOf(zid).custodians.length > 1);
  // A pending debit's certificate, checked against this home's view of the sender's set before each delivery: a set
  // that changed since the debit (a custodian replaced) certifies it again.
  economy.transfers.certifyDebitsWith(async (kept, transfer) => {
    if (kept === null) return certifyLoggedDebit(transfer.from, transfer.transfer_id);
    const cert = debitCertificateSchema.safeParse(kept).data;
    const t = cert?.entry.transfer;
    if (cert === undefined || t === null || t === undefined) return kept;
    const fault = await debitFault(cert, { zid: t.party, transfer: { ...t, side: 'credit', party: cert.entry.zid } });
    return fault === null ? kept : replicator.recertify(cert);
  });
  // A pending debit with no certificate kept (the new home could not certify it when it took the identity over): made
  // from the certified log, under the set of the debit's epoch, as a failover makes it, and kept.
  const certifyLoggedDebit = async (zid: string, transferId: string): Promise<DebitCertificate | null> => {
    if (fetch === null) return null;
    const logged = await replicator.loggedDebit(zid, transferId);
    if (logged === undefined) return null;
    const setAt = async (epoch: number) => {
      const at = await configAt(zid, epoch);
      return at === null ? null : setOfConfig(zid, at, members(), config.custody.replicas);
    };
    const sign = (text: string) => signText(f.nodeIdentity.privateKey, text);
    const [made] = await recertifyDebits(
      { self: f.nodeId, sign, verify: verifyText, fetch, timeoutMs: config.custody.certifyTimeoutMs },
      zid,
      setAt,
      [logged],
      [],
    );
    const certificate = made?.certificate ?? null;
    if (certificate !== null) await store.commit([debitCertificates.putOp(certificate.entry, certificate.signatures)]);
    return certificate;
  };
  const custodian: Custodian = new Custodian({
    store,
    nodeId,
    sign: (text) => signText(f.nodeIdentity.privateKey, text),
    homeOf,
    debitFault,
    homeChange: (zid) => homeChanges.latest(zid),
    learnChange,
    fetch,
    verify: verifyText,
    // The set of now, the home it replaced, and the custodians of an epoch this node is opening (one new to the
    // identity catches up before it signs the epoch's entry).
    custodiansOf: async (zid) => {
      const set = await currentSet(zid);
      if (set === null) return null;
      const previous = await homeChanges.previousHome(zid);
      return [...new Set([...set.custodians, ...(previous === null ? [] : [previous]), ...(failoverRef?.openingSet(zid) ?? [])])];
    },
    // A home of an earlier epoch that is in no set now (not the one the latest change replaced) still takes the
    // chain in place of its copy, and counts the charges it certified and never wrote.
    formerHome: (zid, node) => homeChanges.wasHome(zid, node),
    ownHead: async (zid) => {
      const own = await replicator.certifiedHead(zid);
      return own === null || own.seq === 0 ? null : own;
    },
    ownExcluded: (zid) => replicator.excludedOf(zid),
    // The home answers from its certified log, a custodian from what it holds; a former home whose certified log
    // reaches past what its custodian side holds answers from that log (the head its promise showed); a candidate,
    // from the chain it took.
    chainAt: async (zid, from): Promise<ChainPage> => {
      const opening = failoverRef?.openingPage(zid, from) ?? null;
      if (opening !== null) return opening;
      if ((await homeOf(zid)) === f.nodeId) return replicator.page(zid, from);
      const [own, held] = await Promise.all([replicator.certifiedHead(zid), custodian.head(zid)]);
      return own !== null && own.seq > 0 && (held === null || headAfter(own, held)) ? replicator.page(zid, from) : custodian.page(zid, from);
    },
    changesAfter: (zid, after, limit) => homeChanges.changesAfter(zid, after, limit),
    takingOver: (zid) => failoverRef?.isTaking(zid) ?? false,
    hears: (node) => failoverRef?.hears(node) ?? false,
    meshSecret: secret,
    nowSvcond: time.nowSvcond,
    logger: f.logger,
  });
  custodianRef = custodian;
  const homeCheck = new HomeCheck({
    nodeId,
    homeOf,
    knownEpoch: async (zid) => (await homeChanges.latest(zid))?.epoch ?? FIRST_EPOCH,
    setOf: currentSet,
    certifies: async (zid) => ((await replicator.certifiedHead(zid))?.seq ?? 0) > 0,
    ownPromise: async (zid) => (await custodian.promised(zid))?.epoch ?? 0,
    fetch: client === null ? null : changesFetcher(client),
    apply: async (change) => (await homeMoves.apply(change)).apply,
    onFenced: (zid) =>
      void failoverRef
        ?.retake(zid)
        .catch((err: unknown) => f.logger.warn({ err: String(err), zid }, 'custody: the fenced home could not take the identity again')),
    nowMs: () => Date.now(),
    timeoutMs: config.custody.certifyTimeoutMs,
    logger: f.logger,
  });
  homeCheckRef = homeCheck;
  // Asked by the auth only for an identity whose record it just read names this node: once confirmed, nothing is
  // read again (the record's word stands, as for every request before a restart).
  const checkedHome = async (zid: string): Promise<string> => {
    if (homeCheck.isConfirmed(zid)) return f.nodeId;
    if (await homeCheck.servesAsHome(zid)) return f.nodeId;
    const home = await homeOf(zid);
    if (home !== null && home !== f.nodeId) return home;
    throw new ServiceError(
      503,
      'SVC_CUSTODY_UNAVAILABLE',
      'this node started again as the identity’s home and has not yet confirmed with its custodians that it still is',
      { reason: 'home not confirmed', zid, custodians: (await currentSet(zid))?.custodians ?? [] },
    );
  };
  const view = new CustodyView({
    servesAsHome: (zid) => homeCheck.servesAsHome(zid),
    nodeId,
    currentSet,
    homeOf,
    knownEpoch: async (zid) => (await homeChanges.latest(zid))?.epoch ?? FIRST_EPOCH,
    wallet: (zid) => economy.ledger.wallet(zid),
    replicator,
    custodian,
  });
  const homeChangeRow: GossipHandler<HomeChange> = {
    type: HOME_CHANGE_EVENT,
    body: homeChangeSchema,
    handle: async (change, event) => {
      if (change.home !== event.sender) throw new GossipError('reject', 403, 'SVC_FORBIDDEN', 'a home change is announced by its new home only');
      const standing = await homeMoves.apply(change);
      if (standing.apply) return;
      if (standing.why === 'invalid') throw new GossipError('reject', 403, 'SVC_FORBIDDEN', `the home change does not hold: ${standing.reason}`);
      throw new GossipError('ignore', 409, 'SVC_CONFLICT', standing.reason);
    },
  };
  // The peer table read once a tick, as `members` is.
  let ticks: { svcond: number; byNode: Map<string, Heard> } = { svcond: -1, byNode: new Map() };
  const lastTicks = () => {
    const now = time.nowSvcond();
    if (ticks.svcond !== now)
      ticks = {
        svcond: now,
        byNode: new Map(mesh.peers().flatMap((p) => (p.lastTick === null ? [] : [[p.peerId, { tick: p.lastTick, every: p.every }]]))),
      };
    return ticks.byNode;
  };
  const failover =
    client === null
      ? null
      : new Failover({
          nodeId,
          replicas: config.custody.replicas,
          failoverTicks: config.custody.failoverTicks,
          replaceTicks: config.custody.replaceTicks,
          members,
          nowSvcond: time.nowSvcond,
          lastHeard: (node) => lastTicks().get(node) ?? null,
          // A home never heard since this node started: the longest interval heard, so a growing mesh is waited for.
          tickEvery: () => Math.max(config.mesh.tickEvery, ...[...lastTicks().values()].map((h) => h.every)),
          store,
          custodian,
          homeOf,
          // An earlier epoch's home as the debit check reads it: kept here, else learned (home-history.ts).
          homeChanges: { latest: (zid) => homeChanges.latest(zid), configAt },
          homed: (limit, passing, from) => replicator.homed(limit, passing, from),
          askPromise: promiseClient(client),
          learnChange,
          send: custodyClient(client),
          fetch: fetch!,
          verify: verifyText,
          adopt: async (change, chain, epochEntry, debits) => {
            // The identity's memory is reloaded from the chain: no refused write of it may roll back after that.
            await replicator.quiet(change.zid);
            const kept = debits.flatMap((p) => (p.certificate === null ? [] : [debitCertificates.putOp(p.certificate.entry, p.certificate.signatures)]));
            // Envelopes written here from now on are numbered above the chain's (their index keys end in the seq),
            // after a restart too: the counter is written with the chain.
            const above = highestEnvelopeSeq(chain.entries) - f.counters.get('envelope_seq');
            if (above > 0) f.counters.bump('envelope_seq', above);
            await homeMoves.adopt(change, chain.entries, [...replicator.adoptOps(chain.entries, epochEntry), ...kept, f.counters.persistOp('envelope_seq')]);
            replicator.adopted(epochEntry.entry);
            homeCheck.confirm(change.zid);
            // The custodians of the new set that did not sign the epoch entry get it (and catch up) without waiting
            // for the identity's next write.
            setChanges?.owe(change.zid);
            for (const p of debits)
              if (p.certificate === null)
                f.logger.warn({ zid: change.zid, transfer_id: p.transferId }, 'custody: a pending debit could not be certified again');
            await economy.transfers.resume(debits.map((p) => p.transferId));
          },
          fenceOwn: (zid, epoch) => replicator.fence(zid, epoch),
          homeLog: async (zid) => {
            const head = await replicator.certifiedHead(zid);
            if (head === null || head.seq === 0) return null;
            const links = (await replicator.entries(zid, 1, Number.MAX_SAFE_INTEGER)).map((c) => linkOf(c, c.signatures));
            return { head: { epoch: head.epoch, seq: head.seq, hash: head.hash, ...(head.attempt === undefined ? {} : { attempt: head.attempt }) }, links };
          },
          sign: (text) => signText(f.nodeIdentity.privateKey, text),
          publish: async (change) => void (await mesh.publish(HOME_CHANGE_EVENT, change, TOPICS.events)),
          probe: (node, signal) => mesh.answersPing(node, signal),
          timeoutMs: config.custody.certifyTimeoutMs,
          logger: f.logger,
        });
  failoverRef = failover;
  // The members changed: the identities homed here get their certified heads to the custodians new to their sets.
  const setChanges =
    client === null
      ? null
      : new SetChanges({
          members,
          homed: (limit, from) => replicator.homed(limit, false, from),
          isHome: async (zid) => (await homeOf(zid)) === f.nodeId,
          handOver: (zid, skip) => replicator.handOver(zid, skip),
          sameSetUnder: (zid, lists) => replicator.sameSetUnder(zid, lists),
          logger: f.logger,
        });
  setChangesRef = setChanges;
  f.metricsCustody.bind(() => ({
    replicator: replicator.stats,
    custodian: custodian.stats,
    failover: failover?.stats,
    probes: failover?.probes?.stats,
    set_changes: setChanges?.stats,
  }));
  const capability: Capability = {
    name: 'custody',
    streams: mesh.enabled ? [{ protocol: CUSTODY_PROTOCOL, handle: (stream, peer) => void custodian.serve(stream, peer) }] : [],
    gossip: [homeChangeRow],
    // Twice per failoverTicks: a home unheard is taken over within 1.5 × failoverTicks; the held identities are read then only.
    tickers: [
      ...(failover === null
        ? []
        : [{ name: 'custody-failover', everyTicks: Math.max(1, Math.floor(config.custody.failoverTicks / 2)), run: () => failover.run() }]),
      ...(setChanges === null ? [] : [{ name: 'custody-set-changes', run: () => setChanges.run() }]),
    ],
    routes: [custodyRoutes(view)],
    start: async () => {
      // Copies of identities this node was the home of that still wait for the new home's chain (a stop before it
      // was taken): taken in the background, with the charges made here and never written.
      if (mesh.enabled)
        void homeMoves
          .resume()
          .catch((err: unknown) => f.logger.warn({ err: String(err) }, 'custody: the copies waiting for a new home’s chain were not read'));
    },
    stop: async () => {
      homeMoves.stop();
      setChanges?.stop();
      store.gate = null;
      await heardBonds.flushed();
    },
  };
  return { replicator, custodian, view, homeChanges, homeMoves, failover, setChanges, checkedHome, capability };
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

// Consensus (architecture.md §6): bonds and modes, this node's operator, offloaded execution (this node serves
// /svc/exec for its peers while its operator contributes, and places its own runs per `contribution.offload`),
// challenges with their votes and verdicts, the re-executor (this node's votes) and slashing (the ledger effects).
import { ChallengeService } from '../consensus/challenges.js';
import { BondService } from '../consensus/bonds.js';
import { committeeCandidates } from '../consensus/committee.js';
import { LivenessLog } from '../consensus/liveness.js';
import { ExecHandler } from '../consensus/exec-handler.js';
import { EXEC_PROTOCOL, type ExecRequest } from '../consensus/exec-protocol.js';
import { EXEC_SESSION_PROTOCOL, ExecSessions } from '../consensus/exec-session.js';
import { verifyExecution } from '../consensus/executed-by.js';
import { ModeService } from '../consensus/modes.js';
import { Offloader } from '../consensus/offload.js';
import { NodeOperator } from '../consensus/operator.js';
import { meshPeerLinks } from '../mesh/peer-http.js';
import { isReachable } from '../mesh/peer-table.js';
import { httpPeerLink } from '../consensus/peer-link.js';
import { Reexecutor, rerunDigest } from '../consensus/reexecutor.js';
import { carriedResult, challengedResult, resultFinder } from '../consensus/result-lookup.js';
import { SlashingService, verdictMarkOf } from '../consensus/slashing.js';
import { ticksPerDays } from '../consensus/policy.js';
import { signText, TOPICS, verifyText, type MeshEvent } from '../mesh/wire.js';
import type { DrawEvent, SealedResult } from '../consensus/challenge-wire.js';
import type { ResultLookup } from '../tally/record.js';
import { LONGEST_TIME_LIMIT_SECONDS } from '../tally/tiers.js';
import { consensusRoutes } from '../http/routes/consensus.js';
import { contributeRoutes } from '../http/routes/contribute.js';
import { pohcRoutes } from '../http/routes/pohc.js';
import { Port, type Capability, type StreamProtocol, type Ticker } from './capability.js';
import type { ComputeNeeds, ComputePart } from './compute.js';
import type { EconomyPart } from './economy.js';
import type { IdentityPart } from './identity.js';
import { REANNOUNCE_TICKS, type Foundation } from './foundation.js';
import type { MeshPart } from './mesh.js';

/** Ticks between announcements of recent verdicts again (challenges.reannounceVerdicts). */
const VERDICT_REANNOUNCE_TICKS = 4;
/** Ticks between attempts at the verdict effects still owed here (challenges.retryOwedEffects). */
const OWED_EFFECT_RETRY_TICKS = 2;

/** A tick event whose body is an object (the draw event's shape). */
function isDrawEvent(e: MeshEvent): e is MeshEvent & DrawEvent {
  return e.type === 'tick' && typeof e.body === 'object' && e.body !== null && !Array.isArray(e.body);
}

export interface ConsensusPart {
  bonds: BondService;
  modes: ModeService;
  operator: NodeOperator;
  /** The executor side of /svc/exec/1.0.0. */
  execHandler: ExecHandler;
  /** Placement of solver runs on contributing peers (null when offload is never or there is no mesh). */
  offloader: Offloader | null;
  slashing: SlashingService;
  challenges: ChallengeService;
  reexecutor: Reexecutor;
  /** What re-execution needs about a result: from this node's record if it is the home, else from its home. */
  lookupResult: (resultId: string) => Promise<ResultLookup>;
  capability: Capability;
}

export async function wireConsensus(
  f: Foundation,
  meshPart: MeshPart,
  economy: Pick<EconomyPart, 'ledger' | 'envelopeLocks' | 'results' | 'transfers' | 'grants'>,
  computePart: Pick<ComputePart, 'compute' | 'executor'> & Pick<ComputeNeeds, 'attest' | 'offload' | 'registered'>,
  identityPart: Pick<IdentityPart, 'identity'>,
): Promise<ConsensusPart> {
  const { config, options, store, time, logger } = f;
  const { mesh } = meshPart;
  const { compute, executor } = computePart;
  const nodeId = () => f.nodeId;
  const sign = (text: string) => signText(f.nodeIdentity.privateKey, text);
  const publish = async (type: string, body: unknown) => {
    if (mesh.enabled) await mesh.publish(type, body, TOPICS.consensus);
  };
  const timeLimitSeconds = options.timeLimitSeconds ?? LONGEST_TIME_LIMIT_SECONDS;
  // A bond's release asks which challenges are open against it: the challenges are built on the bonds, after them.
  const openChallenges = new Port<ChallengeService>('bonds.openChallenges');
  const bonds = new BondService({
    store,
    ledger: economy.ledger,
    policy: config.contribution,
    nodeId,
    nowSvcond: time.nowSvcond,
    locks: economy.envelopeLocks,
    sign,
    verify: verifyText,
    publish,
    openChallenges: (bondId) => openChallenges.get()?.openAgainst(bondId) ?? [],
    cooldownTicks: ticksPerDays(config.slashing.cooldownDays),
    homeOf: async (zid) => (await identityPart.identity.findIdentity(zid))?.home ?? null,
  });
  await bonds.load();
  computePart.registered.bind((node) => bonds.registers(node));
  const modes = new ModeService(store, bonds, time.nowSvcond);
  await modes.load();
  const operator = new NodeOperator({ bonds, modes, nodeId: f.nodeId, sign });
  computePart.attest.bind((requestDigest, resultDigest, svcond) => operator.attest(requestDigest, resultDigest, svcond));
  meshPart.advert.bind(() => ({ mode: operator.mode(), bondId: operator.bond()?.bond.bond_id ?? null, freeSlots: executor.freeSlots() }));

  const execHandler = new ExecHandler({
    meshSecret: config.mesh.secret ?? null,
    nowSvcond: time.nowSvcond,
    contributing: () => operator.contributing() !== null,
    resolve: (solverId, inputs) => compute.resolveSolver(solverId, inputs, undefined).inputs,
    run: (solverId, inputs, limit, owner, signal) => executor.run(solverId, inputs, undefined, limit, owner, undefined, signal),
    // The requester's home applies its caller's tier; an executor caps at the longest tier limit.
    timeLimitSeconds,
    attest: (requestDigest, resultDigest, svcond) => operator.attest(requestDigest, resultDigest, svcond),
    ...(options.execAnswer ? { rewrite: options.execAnswer } : {}),
    logger,
  });
  // Modes live at the identity's home, and only a bond's node holds it: a switch away from contributing here is
  // this node's operator's, and preempts what it runs for peers.
  modes.onSwitch((_zid, previous) => {
    if (previous === 'contributing') execHandler.preemptAll();
  });
  const streams: StreamProtocol[] = mesh.enabled
    ? [
        { protocol: EXEC_PROTOCOL, handle: (stream, peer) => void execHandler.serve(stream, peer) },
        { protocol: EXEC_SESSION_PROTOCOL, handle: (stream, peer) => void execHandler.serveSession(stream, peer) },
      ]
    : [];
  const sessions =
    mesh.enabled && config.contribution.offload !== 'never' && !options.execStreamPerRun
      ? new ExecSessions((peerId, protocol, signal) => mesh.openStream(peerId, protocol, signal))
      : null;
  const offloader = mesh.enabled && config.contribution.offload !== 'never' ? wireOffloader(f, meshPart, bonds, executor, sessions) : null;
  if (offloader) computePart.offload.bind((req, gone) => offloader.offload(req, gone));

  const slashing = new SlashingService({
    store,
    ledger: economy.ledger,
    counters: f.counters,
    locks: economy.envelopeLocks,
    bonds,
    modes,
    nodeId,
    nowSvcond: time.nowSvcond,
    challengerShare: config.slashing.challengerShare,
    applyTicks: config.slashing.applyTicks,
    ...(mesh.enabled ? { transfers: economy.transfers } : {}),
    log: (msg, fields) => logger.info(fields, msg),
  });
  // Who was heard contributing, and when: the committee's eligible set, at intake and when a challenge is checked.
  const liveness = new LivenessLog({
    keepTicks: 4 * (config.contribution.liveTicks + config.contribution.deadlineTicks),
    baseEvery: config.mesh.tickEvery,
  });
  // A node with a bond record here is kept before fresh keys, in the peer table and in the liveness log.
  const bonded = (node: string) => bonds.ofNode(node) !== null;
  if (mesh.enabled) mesh.keepPeers(bonded);
  const recordHeard = () => {
    const now = time.nowSvcond();
    liveness.record(f.nodeId, { svcond: now, mode: operator.mode(), bondId: operator.bond()?.bond.bond_id ?? null }, now, true);
    if (!mesh.enabled) return;
    for (const p of mesh.peers())
      if (p.lastTick !== null) liveness.record(p.peerId, { svcond: p.lastTick, mode: p.mode, bondId: p.bondId, every: p.every }, now, bonded(p.peerId));
  };
  f.verdictMarks.bind((executedBy) => verdictMarkOf(bonds, executedBy));
  const lookupResult = resultFinder(economy.results, {
    peers: () => (mesh.enabled ? mesh.peers() : []),
    nowSvcond: time.nowSvcond,
    overMesh: meshPeerLinks(mesh, config.mesh.secret).overMesh,
  });
  const peerLink = mesh.enabled ? httpPeerLink({ sign: (type, body) => mesh.signDirect(type, body), links: meshPeerLinks(mesh, config.mesh.secret) }) : null;
  const challenges = new ChallengeService({
    store,
    policy: config.contribution,
    bonds,
    nodeId,
    nowSvcond: time.nowSvcond,
    sign,
    verify: verifyText,
    publish,
    lookup: async (resultId, carried) => {
      const found = challengedResult(await lookupResult(resultId));
      if (carried === undefined) return found;
      // The challenger's copy where no record holds the result, or its home gave no body to carry.
      if (found === null) return carriedResult((body) => compute.verifyResult(body), resultId, carried);
      return found.sealed === undefined && found.published ? { ...found, sealed: carried as SealedResult } : found;
    },
    verifyResult: (body) => compute.verifyResult(body),
    candidates: () => {
      recordHeard();
      return committeeCandidates(
        bonds.active(),
        (node) => liveness.heardIn(node, 0, Number.MAX_SAFE_INTEGER),
        (bondId) => bonds.settledFrom(bondId),
      );
    },
    livenessCovers: (from, every) => liveness.covers(from, every),
    baseEvery: config.mesh.tickEvery,
    tickEvents: () => (mesh.enabled ? mesh.latestTickEvents().filter(isDrawEvent) : []),
    holdStake: (zid, amount) => slashing.holdStake(zid, amount),
    verifyExecution: (r) => verifyExecution(verifyText, r.executed_by, r.result_digest),
    logger,
    ...(peerLink ? { send: peerLink.send, ask: peerLink.ask } : {}),
    // A sealed result a mesh event carried by digest: the opener's challenge, else the result's home (its lookup).
    sealedSources: (sc) => [
      ...(peerLink
        ? [
            {
              from: `the opener ${sc.challenge.challenger_home}`,
              get: async () => (await peerLink.askChallenge(sc.challenge.challenger_home, sc.challenge.challenge_id))?.result,
            },
          ]
        : []),
      {
        from: `the home of ${sc.challenge.result_id}`,
        get: async () => {
          const found = await lookupResult(sc.challenge.result_id);
          return found.status === 'found' ? found.result : undefined;
        },
      },
    ],
  });
  openChallenges.bind(challenges);
  f.metricsChallenges.bind(challenges);
  challenges.onVerdict((e) => slashing.onVerdict(e));
  const reexecutor = new Reexecutor({
    challenges,
    store,
    nodeId,
    nowSvcond: time.nowSvcond,
    sign,
    execute: (request, stampSvcond) => rerunDigest({ compute, executor, timeLimitSeconds }, request, stampSvcond),
    onError: (challengeId, err) => logger.warn({ challengeId, err: String(err) }, 're-execution failed: no vote cast'),
  });
  await challenges.load();
  await reexecutor.load();

  const tickers: Ticker[] = [
    { name: 'liveness record', run: recordHeard },
    { name: 'challenge deadlines', run: () => challenges.sweepDeadlines() },
    { name: 'challenge deliveries', run: () => challenges.flushDeliveries() },
    { name: 'vote reveals', run: () => reexecutor.revealDue() },
    { name: 'verdict reannounce', everyTicks: VERDICT_REANNOUNCE_TICKS, run: () => challenges.reannounceVerdicts() },
    { name: 'owed verdict effects', everyTicks: OWED_EFFECT_RETRY_TICKS, run: () => challenges.retryOwedEffects() },
  ];
  if (mesh.enabled) tickers.push({ name: 'bond reannounce', everyTicks: options.reannounceTicks ?? REANNOUNCE_TICKS, run: () => bonds.reannounce() });
  const capability: Capability = {
    name: 'consensus',
    gossip: [...bonds.handlers(), ...challenges.handlers()],
    streams,
    tickers,
    routes: [
      contributeRoutes({
        bonds,
        modes,
        challenges,
        bondSlot: { operator: config.contribution.operator, isOperatorToken: (t) => economy.grants.isOperator(t) },
      }),
      consensusRoutes({ challenges, slashing }),
      pohcRoutes({ challengeStateFault: (c) => challenges.checkAgainstState(c), carriedResultFault: (sc) => challenges.resultFault(sc) }),
    ],
    start: async () => {
      // The liveness record starts now, not at the tick loop's first beat: the mesh already hears tick events, and a
      // challenge opened before that beat would be before this node's record, so not checkable here.
      recordHeard();
      // Effects of verdicts recorded before a stop (a crash between a verdict and its effect), votes not yet cast. Not
      // awaited: an effect's ledger write waits for its custodians, who answer once this node is in the mesh again.
      void challenges.resumeEffects().catch((err: unknown) => logger.error({ err: String(err) }, 'a verdict effect could not be applied at start'));
      void reexecutor.resume().catch((err: unknown) => logger.warn({ err: String(err) }, 'resumed re-execution failed'));
    },
    stop: () => sessions?.closeAll(),
  };
  return { bonds, modes, operator, execHandler, offloader, slashing, challenges, reexecutor, lookupResult, capability };
}

function wireOffloader(f: Foundation, { mesh }: MeshPart, bonds: BondService, executor: ComputePart['executor'], sessions: ExecSessions | null): Offloader {
  const { config, options } = f;
  const answerMs = options.offloadAnswerTimeoutMs;
  return new Offloader({
    policy: config.contribution.offload,
    selfId: () => f.nodeId,
    // A peer reached through a relay counts as reachable, connected or not: the offloader dials it when it places a run.
    peers: () => mesh.peers().map((p) => ({ ...p, connected: isReachable(p, f.time.nowSvcond()) })),
    bondOf: (node) => bonds.ofNode(node)?.bond.bond_id ?? null,
    freeSlots: () => executor.freeSlots(),
    meshSecret: config.mesh.secret ?? null,
    open: (peerId, protocol, signal) => mesh.openStream(peerId, protocol, signal),
    ...(sessions
      ? { exchange: (peerId: string, request: ExecRequest, signal: AbortSignal, cancel?: AbortSignal) => sessions.request(peerId, request, signal, cancel) }
      : {}),
    verify: verifyText,
    ...(answerMs !== undefined ? { answerTimeoutMs: () => answerMs } : {}),
    ...(options.offloadSkipMs !== undefined ? { skipPeerMs: options.offloadSkipMs } : {}),
    logger: f.logger,
  });
}

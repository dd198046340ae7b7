// The composition root: the only file that knows every part. Builds store, kernel keys, services and HTTP,
// starts and stops them in order.
import { mkdir } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import pino, { type Logger } from 'pino';
import type { NodeConfig } from './config/schema.js';
import { decodeReceiptSecret, loadOrCreateReceiptSecret, RECEIPT_SECRET_FILE } from './config/receipt-secret.js';
import { systemClock, type Clock } from './kernel/clock.js';
import { deriveKey } from './kernel/receipt.js';
import { Store } from './store/db.js';
import { Counters } from './store/counters.js';
import { ChainService, sealingOfBody } from './chain/service.js';
import { IdentityService } from './identity/service.js';
import { DEFAULT_SLUG_PREFIX } from './chain/machine-creation.js';
import { DemoKeys } from './identity/demo.js';
import { ENVELOPE_SUBS, Ledger } from './tally/ledger.js';
import { SlugLosses } from './chain/slug-loss.js';
import { SLUG_CLAIM } from './mesh/machines.js';
import { QuotaService } from './tally/quota.js';
import { Grants } from './tally/grants.js';
import { LONGEST_TIME_LIMIT_SECONDS, TierBook, tierPolicy, type Tier } from './tally/tiers.js';
import { ClaimService } from './tally/claim.js';
import { CLAIM_ADDRESS_EVENT, ClaimAddresses } from './tally/claim-addresses.js';
import { EnvelopeLocks, Folders } from './tally/folders.js';
import { Transfers } from './tally/transfers.js';
import { TransferDelivery, httpSender } from './tally/transfer-delivery.js';
import { RemoteCharges } from './tally/remote-charges.js';
import { settlementLoop, type SettlementLoop } from './tally/remote-charge-delivery.js';
import { ChargeOutcomes } from './tally/charge-outcomes.js';
import { loadOrCreateOperatorToken, tokenDigest } from './config/operator-token.js';
import { ComputeService } from './compute/service.js';
import { InlineExecutor, WorkerPoolExecutor, solverPoolSize, type SolverExecutor } from './compute/executor.js';
import { InlineSealer, WorkerSealer, type Sealer } from './compute/sealer.js';
import type { SealedSummary } from './compute/service.js';
import { defaultRegistry, type SolverRegistry } from './solvers/registry.js';
import { createApp } from './http/app.js';
import type { HttpKit } from './http/kit.js';
import type { RouteGroup } from './http/route-group.js';
import { discoveryOf } from './http/discovery.js';
import { HungHomes } from './http/home-health.js';
import { SelfApi } from './http/self-request.js';
import { LocalTools } from './http/local-tools.js';
import { Library } from './compute/library.js';
import { timeOf } from './util/time.js';
import { systemRoutes } from './http/routes/system.js';
import { computeRoutes } from './http/routes/compute.js';
import { identityRoutes } from './http/routes/identity.js';
import { tallyRoutes } from './http/routes/tally.js';
import { ledgerRoutes } from './http/routes/ledger.js';
import { meshRoutes } from './http/routes/mesh.js';
import { contributeRoutes } from './http/routes/contribute.js';
import { consensusRoutes } from './http/routes/consensus.js';
import { pohcRoutes } from './http/routes/pohc.js';
import { recordRoutes } from './http/routes/record.js';
import { streamRoutes } from './http/routes/streams.js';
import { batchRoutes } from './http/routes/batch.js';
import { webhookRoutes } from './http/routes/webhooks.js';
import { mcpRoutes } from './http/routes/mcp.js';
import { llmRoutes } from './http/routes/llm.js';
import { reactorRoutes } from './http/routes/reactor.js';
import { mmioRoutes } from './http/routes/mmio.js';
import { genesisRoutes } from './http/routes/genesis.js';
import { agentRoutes } from './http/routes/agents.js';
import { docsRoutes } from './http/routes/docs.js';
import { dashboardRoutes } from './http/routes/dashboard.js';
import { NodeMetrics } from './http/metrics.js';
import { createHttpServer } from './http/server.js';
import { attachStreamSocket } from './http/ws-stream.js';
import { StreamSlots } from './http/stream-slots.js';
import { loadOrCreateNodeKey, type NodeIdentity } from './mesh/identity.js';
import { MeshService, type MeshServiceOptions } from './mesh/service.js';
import { signEvent, TOPICS, type MeshEvent } from './mesh/wire.js';
import { IDENTITY_ASSERT, identityAssertHandler } from './mesh/identity-assert.js';
import { remoteKeyLookup } from './mesh/key-lookup.js';
import { stampAt } from './kernel/clock.js';
import { signText, verifyText } from './mesh/wire.js';
import { BondService } from './consensus/bonds.js';
import { ModeService } from './consensus/modes.js';
import { ChallengeService, type ChallengedResult } from './consensus/challenges.js';
import type { Json } from './store/db.js';
import type { Candidate } from './consensus/committee.js';
import { Reexecutor, rerunDigest } from './consensus/reexecutor.js';
import { SlashingService } from './consensus/slashing.js';
import { signExecution, verifyExecution } from './consensus/executed-by.js';
import { findResult } from './consensus/result-lookup.js';
import { ExecHandler } from './consensus/exec-handler.js';
import { EXEC_PROTOCOL, type ExecAnswer, type ExecRequest } from './consensus/exec-protocol.js';
import { Offloader } from './consensus/offload.js';
import { httpPeerLink } from './consensus/peer-link.js';
import { EXEC_SESSION_PROTOCOL, ExecSessions } from './consensus/exec-session.js';
import { PublishSettings } from './tally/publish-settings.js';
import { ResultRecords, type ResultLookup } from './tally/record.js';
import { CHECKPOINT_EVENT } from './chain/checkpoints.js';
import { StreamService } from './streams/channels.js';
import { StreamHub } from './streams/hub.js';
import { Autotick } from './streams/autotick.js';
import { BatchService } from './compute/batches.js';
import { WebhookRegistry } from './webhooks/registry.js';
import { Outbox } from './webhooks/outbox.js';
import { Dispatcher } from './webhooks/dispatcher.js';
import { httpSender as webhookHttpSender } from './webhooks/sender.js';
import { Webhooks } from './webhooks/service.js';
import { ChatService } from './llm/chat.js';
import { ProviderDirectory } from './llm/directory.js';
import { CredentialStore, credentialKey } from './llm/credentials.js';
import { loadOrCreateCredentialSecret } from './config/credential-secret.js';
import { sessionAtRestKey } from './streams/secure.js';
import { ReactorService } from './reactor/service.js';
import { AgentRuntime, type AgentLimits } from './agents/runtime.js';
import { StreamCount } from './http/routes/agents.js';
import { GenesisService } from './genesis/service.js';
import type { ExecutedBy } from './records/types.js';

export const RESULT_SEALED = 'result.sealed';
const BOND_REANNOUNCE_TICKS = 64;
const TICK_MS = 777.000777;
/** Ticks between announcements of recent verdicts again (challenges.reannounceVerdicts). */
const VERDICT_REANNOUNCE_TICKS = 4;

export { RECEIPT_SECRET_FILE };

export interface NodeOptions {
  clock?: Clock;
  registry?: SolverRegistry;
  logger?: Logger;
  /** Tests: override every tier's time limit to force SVC_TIMEOUT. */
  timeLimitSeconds?: number;
  /** Tests: smaller per-tier time limits (seconds) than part 8's 30 / 120 / 600. */
  tierTimeLimitSeconds?: Partial<Record<Tier, number>>;
  /** Tests: smaller per-tier daily allowances than part 8's 143 … 25 000. */
  tierDailyAllowance?: Partial<Record<Tier, number>>;
  /** Credits a new identity starts with (overrides limits.initialCredits). */
  initialCredits?: number;
  /** Ticks between re-announcements of this node's bond on svc/consensus/1 (default 64, about 50 s). */
  bondReannounceTicks?: number;
  /**
   * Test composition only (architecture.md §8, never config): rewrite what this node answers on /svc/exec/1.0.0 —
   * garbage, a bad signature, or a promise that never settles (a hung executor).
   */
  execAnswer?: (answer: ExecAnswer, request: ExecRequest) => unknown;
  /** How long a home waits for an offloaded run's answer (default: the run's time limit + 2 s). */
  offloadAnswerTimeoutMs?: number;
  /** How long a peer that failed an offloaded run is skipped (default 60 s). */
  offloadSkipMs?: number;
  /** Benchmarks: one stream per offloaded run (/svc/exec/1.0.0) instead of one session per peer (1.1.0). */
  execStreamPerRun?: boolean;
  /**
   * The solver set is `registry` above: a test composes a node with a tampered solver by passing
   * `defaultRegistry().with([{ ...solver, run: tampered }])` (architecture.md §8; never a production flag).
   */
  /** Tests: how webhook deliveries are sent (default: HTTP, webhooks/sender.ts). */
  webhookSender?: import('./webhooks/sender.js').Sender;
  /** Tests: no dispatch timer; deliveries go out on kicks (after seals and enqueues) and on dispatcher.runDue(). */
  webhookManualDispatch?: boolean;
  /** Tests: ms between WebSocket heartbeat pings (default 30 s). */
  wsHeartbeatMs?: number;
  /**
   * Agents: limits (tests, the bench), autoTick false (tests with a ManualClock call node.agents.pump() themselves),
   * the SSE heartbeat interval (default 15 s).
   */
  agents?: { limits?: Partial<AgentLimits>; autoTick?: boolean; heartbeatMs?: number };
  /** Tests: how long after it is made a remote charge not forwarded by this node is first settled (default: its voucher's expiry). */
  chargeSettleAfterMs?: number;
  /** Mesh overrides (tests: autoPulse, redial bounds). */
  mesh?: Partial<Pick<MeshServiceOptions, 'autoPulse' | 'redialMinMs' | 'redialMaxMs' | 'limits'>>;
}

/**
 * The receipt secret's bytes: from config (hex, as SVC_RECEIPT_SECRET), else kept in the data dir (hex, created once,
 * mode 0600). One encoding on every path (config/receipt-secret.ts), so a data dir's file and the env var name one key.
 */
async function receiptSecret(config: NodeConfig): Promise<Buffer> {
  if (config.receiptSecret) return decodeReceiptSecret(config.receiptSecret, 'receiptSecret (SVC_RECEIPT_SECRET)');
  return loadOrCreateReceiptSecret(config.dataDir);
}

export class SvcNode {
  readonly config: NodeConfig;
  readonly logger: Logger;
  readonly clock: Clock;
  store!: Store;
  counters!: Counters;
  chain!: ChainService;
  identity!: IdentityService;
  ledger!: Ledger;
  quota!: QuotaService;
  grants!: Grants;
  tiers!: TierBook;
  claims!: ClaimService;
  claimAddresses!: ClaimAddresses;
  private credentialSecret!: Buffer;
  folders!: Folders;
  transfers!: Transfers;
  transferDelivery!: TransferDelivery;
  /** Charges made here for actions at other machines' homes, their settlement loop, and the outcomes of charges made elsewhere. */
  remoteCharges!: RemoteCharges;
  chargeSettlement!: SettlementLoop;
  chargeOutcomes!: ChargeOutcomes;
  compute!: ComputeService;
  nodeIdentity!: NodeIdentity;
  receiptKey!: Buffer;
  mesh!: MeshService;
  bonds!: BondService;
  modes!: ModeService;
  challenges!: ChallengeService;
  slashing!: SlashingService;
  reexecutor!: Reexecutor;
  private consensusTimer: NodeJS.Timeout | null = null;
  publish!: PublishSettings;
  results!: ResultRecords;
  streams!: StreamService;
  autotick!: Autotick;
  batches!: BatchService;
  webhooks!: Webhooks;
  /** Prometheus metrics (http/metrics.ts); served at metricsUrl when config.metrics.port is set. */
  metrics!: NodeMetrics;
  /** http://host:port/metrics of the metrics listener, or null when it is off. */
  metricsUrl: string | null = null;
  /** The HTTP router (every route; the OpenAPI document and its test walk it). */
  router!: import('@koa/router').default;
  /** Placement of solver runs on contributing peers (null when offload is never or there is no mesh). */
  offloader: Offloader | null = null;
  private execSessions: ExecSessions | null = null;
  reactor!: ReactorService;
  agents!: AgentRuntime;
  readonly agentStreams = new StreamCount();
  private agentTimer: NodeJS.Timeout | null = null;
  /** The executor side of /svc/exec/1.0.0. */
  execHandler!: ExecHandler;
  private executor: SolverExecutor | null = null;
  private sealer: Sealer | null = null;
  private server: Server | null = null;
  private streamSocket: { close(): void; clients(): number } | null = null;
  private reannounceTimer: NodeJS.Timeout | null = null;
  /** Signs state machines' checkpoints every CHECKPOINT_ROWS rows or CHECKPOINT_TICKS ticks (chain/checkpoints.ts). */
  private checkpointTimer: NodeJS.Timeout | null = null;
  private readonly options: NodeOptions;
  url = '';

  constructor(config: NodeConfig, options: NodeOptions = {}) {
    this.config = config;
    this.options = options;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? pino({ level: config.logLevel, base: { svc: 'svc-node' } });
  }

  /** WebSocket stream clients connected now. */
  get wsClients(): number {
    return this.streamSocket?.clients() ?? 0;
  }

  get nodeId(): string {
    return this.nodeIdentity.nodeId;
  }

  async start(): Promise<this> {
    const { config } = this;
    await mkdir(config.dataDir, { recursive: true });
    this.nodeIdentity = await loadOrCreateNodeKey(config.dataDir);
    const secret = await receiptSecret(config);
    this.receiptKey = deriveKey(secret, 'RECEIPT');
    // This node's own secret for what it encrypts at rest (secure-pull session keys, provider credentials): never
    // shared with the mesh, unlike the receipt secret. Read once; each use derives its own key.
    this.credentialSecret = await loadOrCreateCredentialSecret(config.dataDir);
    this.store = await Store.open(join(config.dataDir, 'db'), { sync: config.syncWrites });
    this.metrics = new NodeMetrics({ tick: () => stampAt(this.clock.nowNs()).svcond, mesh: () => this.mesh, challenges: () => this.challenges });
    this.store.onBatch = (ops, seconds) => this.metrics.storeBatch(ops, seconds);
    this.counters = new Counters(this.store, config.limits.identityCacheMax);
    await this.counters.load();
    const nodeId = () => this.nodeIdentity.nodeId;
    this.chain = new ChainService(this.store, config.limits.identityCacheMax, { receiptKey: this.receiptKey, phi0: config.kernel.phi0, nodeId });
    await this.chain.loadHeads();
    this.identity = new IdentityService({
      store: this.store,
      clock: this.clock,
      chain: this.chain,
      nodeId,
      kernelVersion: config.kernel.version,
      saltSecret: deriveKey(secret, 'SALT'),
      keyCacheMax: config.limits.identityCacheMax,
    });
    await this.identity.indexEmbedKeysOnce();
    this.ledger = new Ledger(this.store, this.counters, this.chain, {
      initialCredits: this.options.initialCredits ?? config.limits.initialCredits,
      walletCacheMax: config.limits.identityCacheMax,
    });
    // Envelopes sealed before the machine envelope index (session 13): indexed once, at the first start (chain/service.ts).
    await this.chain.indexOldEnvelopes(this.store.sub(ENVELOPE_SUBS.envelopes), async (resultId) =>
      sealingOfBody(await this.ledger.getResult(resultId).catch(() => undefined)),
    );
    this.tiers = new TierBook(this.store, tierPolicy({ dailyAllowance: this.options.tierDailyAllowance, timeLimitSeconds: this.options.tierTimeLimitSeconds }));
    await this.tiers.load();
    this.quota = new QuotaService(
      this.counters,
      {
        anonymousPerDay: config.limits.anonymousComputePerDay,
        demoPerDay: config.limits.demoKeyPerDay,
        enforceDailyQuota: config.limits.enforceDailyQuota,
        dailyAllowance: this.tiers.policy.dailyAllowance,
      },
      (ops) => this.store.commit(ops),
    );
    await this.quota.pruneOldDays(Number(this.clock.nowNs() / 1_000_000n));
    // The operator token's digest only: the token stays in its 0600 file.
    const operatorTokenDigest = tokenDigest(await loadOrCreateOperatorToken(config.dataDir));
    this.grants = new Grants({
      store: this.store,
      ledger: this.ledger,
      chain: this.chain,
      identity: this.identity,
      tiers: this.tiers,
      operatorTokenDigest,
      nodeId,
    });
    this.claimAddresses = new ClaimAddresses(this.store, this.counters, config.mesh.secret);
    this.claims = new ClaimService({
      store: this.store,
      counters: this.counters,
      ledger: this.ledger,
      chain: this.chain,
      identity: this.identity,
      key: deriveKey(secret, 'CLAIM'),
      threshold: config.limits.claimThreshold,
      baseBits: config.limits.claimDifficultyBits,
      addresses: this.claimAddresses,
    });
    // One lock per identity for every change that reads envelope records first: folder moves, transfers, bonds.
    const envelopeLocks = new EnvelopeLocks();
    this.folders = new Folders(this.store, this.counters, this.ledger, envelopeLocks);
    const peerUrl = (peerId: string): string | null => this.mesh?.peerUrl(peerId) ?? null;
    this.transfers = new Transfers({
      store: this.store,
      counters: this.counters,
      chain: this.chain,
      identity: this.identity,
      locks: envelopeLocks,
      nodeId,
      nowSvcond: () => stampAt(this.clock.nowNs()).svcond,
      nowMs: () => Number(this.clock.nowNs() / 1_000_000n),
      canDeliver: () => this.mesh?.enabled ?? false,
      peerUrl,
    });
    this.transferDelivery = new TransferDelivery({
      transfers: this.transfers,
      send: httpSender({ sign: (type, body) => this.mesh.signDirect(type, body) }),
      peerUrl,
      logger: this.logger,
    });
    this.remoteCharges = new RemoteCharges({
      store: this.store,
      ledger: this.ledger,
      nowSvcond: () => stampAt(this.clock.nowNs()).svcond,
      nowMs: () => Number(this.clock.nowNs() / 1_000_000n),
      peerUrl,
    });
    this.chargeSettlement = settlementLoop({
      charges: this.remoteCharges,
      sign: (type, body) => this.mesh.signDirect(type, body),
      peerUrl,
      logger: this.logger,
      ...(this.options.chargeSettleAfterMs !== undefined ? { firstDelayMs: this.options.chargeSettleAfterMs } : {}),
    });
    this.chargeOutcomes = new ChargeOutcomes(this.store, () => Number(this.clock.nowNs() / 1_000_000n));
    this.publish = new PublishSettings(this.store, config.limits.identityCacheMax);
    await this.publish.load();
    this.results = new ResultRecords(this.store, this.counters, this.publish, nodeId, async (id) => (await this.ledger.getResultBytes(id)) !== undefined);
    // Results published before the by-owner index (session 12): indexed once, at the first start (tally/record.ts).
    await this.results.indexByOwnerOnce();
    const nowMs = () => Number(this.clock.nowNs() / 1_000_000n);
    const webhookRegistry = new WebhookRegistry(this.store, deriveKey(secret, 'WEBHOOK_SECRET'), config.webhooks, nowMs, config.limits.identityCacheMax);
    await webhookRegistry.load();
    const outbox = new Outbox(this.store, webhookRegistry, nowMs);
    this.webhooks = new Webhooks(
      webhookRegistry,
      outbox,
      new Dispatcher({
        outbox,
        registry: webhookRegistry,
        send: this.options.webhookSender ?? webhookHttpSender(config.webhooks, config.webhooks.responseTimeoutMs),
        nowMs,
        resultBytes: (id) => this.ledger.getResultBytes(id),
        onError: (err) => this.logger.warn({ err: String(err) }, 'webhook delivery failed'),
      }),
    );
    const registry = this.options.registry ?? defaultRegistry();
    // An injected registry (tests) holds functions a worker cannot receive: run it inline.
    this.executor = this.metrics.timed(
      this.options.registry || config.solverThreads === 0
        ? new InlineExecutor(registry)
        : new WorkerPoolExecutor({
            size: solverPoolSize(config.solverThreads),
            maxQueuedPerOwner: config.limits.maxQueuedRunsPerIdentity,
            maxQueued: config.limits.maxQueuedRuns,
          }),
    );
    this.sealer = config.sealWorker ? new WorkerSealer(this.receiptKey) : new InlineSealer(this.receiptKey);
    this.compute = new ComputeService({
      clock: this.clock,
      registry,
      executor: this.executor,
      sealer: this.sealer,
      ledger: this.ledger,
      quota: this.quota,
      receiptKey: this.receiptKey,
      proveKey: deriveKey(secret, 'PROVE'),
      phi0: config.kernel.phi0,
      kernelVersion: config.kernel.version,
      tiers: this.tiers,
      upgradeUrl: () => `${this.url}/api/tally/tiers`,
      timeLimitSeconds: this.options.timeLimitSeconds,
      nodeId,
      // After the batch is durable (never before): announce the result to the mesh; send the webhooks it owes.
      onSealed: (summary) => {
        this.metrics.sealed(summary.kind);
        this.announceSealed(summary);
        if (outbox.takeOwed(summary.result_id)) this.webhooks.dispatcher.kick();
      },
      onGateRefused: (kind) => this.metrics.gateRefused(kind),
      outbox,
      onFailed: (failure) => this.webhooks.failed(failure),
      attest: (requestDigest, resultDigest, svcond) => this.attestExecution(requestDigest, resultDigest, svcond),
      records: this.results,
      ...(config.contribution.offload !== 'never' && config.mesh.secret
        ? { placement: { offload: (req) => this.offloader?.offload(req) ?? Promise.resolve(null) } }
        : {}),
    });
    this.streams = new StreamService({
      store: this.store,
      clock: this.clock,
      compute: this.compute,
      resultBytes: (id) => this.ledger.getResultBytes(id),
      linkKey: deriveKey(secret, 'STREAM_LINK'),
      sessionKey: sessionAtRestKey(this.credentialSecret),
      hub: new StreamHub(),
    });
    await this.streams.load();
    this.autotick = new Autotick({
      streams: this.streams,
      clock: this.clock,
      onError: (channel, err) => this.logger.warn({ channel, err: String(err) }, 'autotick failed'),
    });
    this.batches = new BatchService({
      store: this.store,
      clock: this.clock,
      compute: this.compute,
      events: this.webhooks,
      onError: (batch, err) => this.logger.warn({ batch, err: String(err) }, 'batch failed'),
    });
    this.reactor = new ReactorService({ store: this.store, compute: this.compute, clock: this.clock, nodeId, phi0: config.kernel.phi0 });
    this.agents = new AgentRuntime({
      store: this.store,
      clock: this.clock,
      ledger: this.ledger,
      chain: this.chain,
      compute: this.compute,
      nodeId,
      ...(this.options.agents?.limits ? { limits: this.options.agents.limits } : {}),
      log: (msg, fields) => this.logger.warn(fields, msg),
    });
    await this.agents.load();
    const demoKeys = new DemoKeys(this.store, this.identity, { counters: this.counters, clock: this.clock, mintsPerDay: config.limits.demoKeyMintsPerDay });
    const meshOptions: MeshServiceOptions = {
      store: this.store,
      clock: this.clock,
      config: {
        secret: config.mesh.secret,
        p2pPort: config.mesh.p2pPort,
        bootstrap: config.mesh.bootstrap,
        tickEvery: config.mesh.tickEvery,
        host: config.host,
      },
      dataDir: config.dataDir,
      httpUrl: '',
      libp2pMetrics: this.metrics.libp2p(),
      headState: () => ({ sealedCount: this.counters.get('sealed_total'), chainHeadsDigest: this.chain.headsDigest(), kernelVersion: config.kernel.version }),
      revenue: () => ({
        burned: this.counters.get('burned_total'),
        foundation: this.counters.get('foundation_total'),
        pooledCarry: this.counters.get('foundation_total') - this.counters.get('foundation_shares_total'),
      }),
      // The operator is the identity bonded on this node (one bond per node): its mode and bond, and this node's free slots.
      advert: () => {
        const operator = this.bonds.ofNode(this.nodeId);
        return {
          mode: operator ? this.modes.of(operator.bond.zid).mode : 'idle',
          bondId: operator?.bond.bond_id ?? null,
          freeSlots: this.executor?.freeSlots() ?? 0,
        };
      },
      logger: this.logger,
      ...this.options.mesh,
      limits: { snapshotsMax: config.mesh.snapshotRetention, ...this.options.mesh?.limits },
    };
    this.mesh = new MeshService(meshOptions);
    this.bonds = new BondService({
      store: this.store,
      ledger: this.ledger,
      policy: config.contribution,
      nodeId,
      nowSvcond: () => stampAt(this.clock.nowNs()).svcond,
      locks: envelopeLocks,
      sign: (text) => signText(this.nodeIdentity.privateKey, text),
      verify: verifyText,
      publish: async (type, body) => {
        if (this.mesh.enabled) await this.mesh.publish(type, body, TOPICS.consensus);
      },
      openChallenges: (bondId) => this.challenges?.openAgainst(bondId) ?? [],
    });
    await this.bonds.load();
    this.modes = new ModeService(this.store, this.bonds, () => stampAt(this.clock.nowNs()).svcond);
    await this.modes.load();
    this.wireExecution();
    const [bondRow, releaseRow] = this.bonds.handlers();
    this.mesh.gossip.register(bondRow);
    this.mesh.gossip.register(releaseRow);
    this.chain.checkpoints.use({
      nodeId,
      sign: (text) => signText(this.nodeIdentity.privateKey, text),
      verify: verifyText,
      nowSvcond: () => stampAt(this.clock.nowNs()).svcond,
      publish: async (cp) => {
        if (this.mesh.enabled) await this.mesh.publish(CHECKPOINT_EVENT, cp, TOPICS.events);
      },
    });
    this.mesh.gossip.register(this.chain.checkpoints.handler());
    this.claimAddresses.use(async (b) => {
      if (this.mesh.enabled) await this.mesh.publish(CLAIM_ADDRESS_EVENT, b, TOPICS.events);
    });
    this.mesh.gossip.register(
      this.claimAddresses.handler(
        () => Number(this.clock.nowNs() / 1_000_000n),
        () => this.nodeId,
      ),
    );
    this.wireConsensus(envelopeLocks);
    await this.challenges.load();
    // ── HTTP: the kit every route group may use, then the route groups in registration order (literal paths before
    // parameters: tally before ledger). Optional groups are in the list or not.
    const signMeshEvent = (type: string, body: unknown): Promise<MeshEvent> =>
      signEvent(this.nodeIdentity.privateKey, this.nodeId, type, stampAt(this.clock.nowNs()).svcond, body);
    const keylessStreams = new StreamSlots({ perAddress: config.limits.keylessStreamsPerAddress, perNode: config.limits.keylessStreamsPerNode });
    const library = new Library(registry);
    const selfApi = new SelfApi();
    const tools = new LocalTools(registry, selfApi, config.kernel.version);
    const httpKit: HttpKit = {
      config,
      logger: this.logger,
      time: timeOf(this.clock),
      nodeId,
      publicUrl: () => this.url,
      auth: { identity: this.identity, nodeId },
      homes: { peerUrl: (id) => this.mesh.peerUrl(id), hung: new HungHomes() },
      signMeshEvent,
      selfApi,
      discovery: discoveryOf({ config, nodeId, registry, library, tiers: this.tiers, servedOutsideRouter: { wsStream: true, webhooks: true } }),
      metrics: this.metrics,
    };
    const { identity, chain, ledger, mesh, tiers } = this;
    const remoteCharges = {
      payer: this.remoteCharges,
      outcomes: this.chargeOutcomes,
      settleSoon: (nonce: string, machineHome: string) => this.chargeSettlement.soon(nonce, machineHome),
    };
    const routeGroups: RouteGroup[] = [
      systemRoutes({ registry, library, tiers, keylessStreams }),
      computeRoutes({ compute: this.compute }),
      identityRoutes({ identity, demoKeys }),
      tallyRoutes({ grants: this.grants, tiers, claims: this.claims, folders: this.folders, transfers: this.transfers, mesh }),
      ledgerRoutes({ identity, chain, mesh, remoteCharges, ledger, quota: this.quota, tiers }),
      meshRoutes({ mesh, identity, chain }),
      contributeRoutes({ bonds: this.bonds, modes: this.modes, challenges: this.challenges }),
      consensusRoutes({ challenges: this.challenges, slashing: this.slashing }),
      pohcRoutes(),
      recordRoutes({ identity, mesh, results: this.results, publish: this.publish }),
      streamRoutes({ streams: this.streams, mesh }),
      batchRoutes({ batches: this.batches, webhooks: this.webhooks }),
      webhookRoutes({ webhooks: this.webhooks }),
      mcpRoutes({ tools }),
      llmRoutes({ ...(await this.wireLlm()), tiers, tools }),
      reactorRoutes({ reactor: this.reactor }),
      mmioRoutes({
        mmio: {
          queueDepth: () => this.executor?.queueDepth?.() ?? 0,
          agentsRunning: () => this.agents.runningCount(),
          agentsOf: async (zid) => ({ running: this.agents.runningOf(zid), total: await this.agents.totalOf(zid) }),
          streamsOf: (zid) => this.agentStreams.of(zid),
          reactorsOf: (zid) => this.reactor.countOf(zid),
        },
        mesh,
        counters: this.counters,
        ledger,
        quota: this.quota,
        tiers,
      }),
      genesisRoutes({
        genesis: new GenesisService({ store: this.store, clock: this.clock, chain, identity, ledger, receiptKey: this.receiptKey }),
        chain,
        mesh,
      }),
      agentRoutes({ agents: this.agents, streams: this.agentStreams }, { heartbeatMs: this.options.agents?.heartbeatMs ?? 15_000 }),
      docsRoutes(),
      dashboardRoutes(),
    ];
    const { app, router } = createApp(httpKit, routeGroups);
    // ── end of HTTP
    this.router = router;
    this.server = createHttpServer(app.callback(), this.logger);
    this.server.keepAliveTimeout = 5000;
    this.streamSocket = attachStreamSocket(this.server, {
      streams: this.streams,
      nodeId: () => this.nodeId,
      peerUrl: (id) => this.mesh?.peerUrl(id) ?? null,
      identity: this.identity,
      logger: this.logger,
      ...(this.options.wsHeartbeatMs !== undefined ? { heartbeatMs: this.options.wsHeartbeatMs } : {}),
      keylessStreams,
      meshSecret: config.mesh.secret,
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(config.port, config.host, () => resolve());
    });
    const addr = this.server.address() as AddressInfo;
    this.url = config.publicUrl ?? `http://${config.host}:${addr.port}`;
    if (config.metrics.port !== null) this.metricsUrl = await this.metrics.listen(config.metrics.host, config.metrics.port);
    meshOptions.httpUrl = this.url;
    this.wireIdentityGossip();
    const slugLosses = this.wireSlugLosses();
    await this.mesh.start();
    // A slug race lost before a stop and not settled then (chain/slug-loss.ts): settled now, once.
    if (slugLosses) await slugLosses.reconcile().catch((err: unknown) => this.logger.error({ err: String(err) }, 'slug losses could not be settled at start'));
    // After the mesh: a delivery signs with the node key and finds the receiver's home in the peer table.
    await this.transferDelivery.start();
    await this.chargeSettlement.start();
    // Effects of verdicts recorded before a stop (a crash between a verdict and its effect), votes not yet cast.
    await this.challenges.resumeEffects().catch((err: unknown) => this.logger.error({ err: String(err) }, 'a verdict effect could not be applied at start'));
    void this.reexecutor.resume().catch((err: unknown) => this.logger.warn({ err: String(err) }, 'resumed re-execution failed'));
    this.autotick.start();
    // Deliveries owed before a stop or a crash resume on their schedule.
    if (!this.options.webhookManualDispatch) this.webhooks.dispatcher.start();
    // Batches a stop left unfinished: their items without an outcome run now.
    await this.batches.resume();
    let consensusTicks = 0;
    this.consensusTimer = setInterval(() => {
      void this.challenges.sweepDeadlines().catch(() => undefined);
      void this.challenges.flushDeliveries().catch(() => undefined);
      if (++consensusTicks % VERDICT_REANNOUNCE_TICKS === 0) void this.challenges.reannounceVerdicts().catch(() => undefined);
    }, TICK_MS);
    this.consensusTimer.unref();
    this.checkpointTimer = setInterval(() => void this.chain.checkpoints.tick().catch(() => undefined), TICK_MS);
    this.checkpointTimer.unref();
    if (this.options.agents?.autoTick !== false) {
      // Polled a few times per tick: each agent runs once per tick it is due (AgentRuntime.pump).
      this.agentTimer = setInterval(() => void this.agents.pump().catch(() => undefined), TICK_MS / 4);
      this.agentTimer.unref();
    }
    if (this.mesh.enabled) {
      const every = (this.options.bondReannounceTicks ?? BOND_REANNOUNCE_TICKS) * TICK_MS;
      this.reannounceTimer = setInterval(() => void this.bonds.reannounce().catch(() => undefined), every);
      this.reannounceTimer.unref();
    }
    this.logger.info(
      { url: this.url, node: this.nodeId, dataDir: config.dataDir, multiaddrs: this.mesh.multiaddrs(), mesh: this.mesh.enabled, metrics: this.metricsUrl },
      'listening',
    );
    return this;
  }

  /** AI chat (llm/): free messages and charges on this node's counters and ledger; providers from config. */
  private async wireLlm(): Promise<{ chat: ChatService; directory: ProviderDirectory; credentials: CredentialStore }> {
    const llm = this.config.llm;
    const chat = new ChatService({
      counters: this.counters,
      ledger: this.ledger,
      commit: (ops) => this.store.commit(ops),
      nowMs: () => Number(this.clock.nowNs() / 1_000_000n),
      freeMessagesPerDay: llm.freeMessagesPerDay,
      maxToolSteps: llm.maxToolSteps,
      timeoutMs: llm.timeoutMs,
    });
    // Identities' own provider keys, encrypted under a key derived from the credential secret (0600, data dir).
    const credentials = new CredentialStore(this.store, credentialKey(this.credentialSecret), () => Number(this.clock.nowNs() / 1_000_000n), llm.baseUrls);
    return { chat, directory: new ProviderDirectory(llm.provider, credentials), credentials };
  }

  /**
   * Identity assertions (architecture.md §5): keys minted here are gossiped on svc/identity/1, assertions from
   * their home nodes are applied (a row of the gossip handler table, registered before the mesh starts), and a key
   * nobody told us about is looked up on the peers, accepted only as an event signed by its home node.
   */
  private wireIdentityGossip(): void {
    if (!this.mesh.enabled) return;
    this.identity.onAssertions((assertions) => {
      for (const a of assertions) {
        void this.mesh
          .publish(IDENTITY_ASSERT, a, TOPICS.identity)
          .catch((err: unknown) => this.logger.warn({ err: String(err) }, 'identity assertion not published'));
      }
    });
    this.mesh.gossip.register(
      identityAssertHandler(async (assertion, sender) => {
        await this.identity.applyAssertion(assertion, sender);
        // A machine's admin key names its slug: the signer (its home) holds that machine.
        await this.mesh.machines.learnFromAssertion(assertion, sender);
      }),
    );
    this.identity.onRemoteLookup(remoteKeyLookup({ peers: () => this.mesh.peers(), nowSvcond: () => this.mesh.nowSvcond() }));
  }

  /** The losing home of a slug race marks its machine lost and refunds its owner (chain/slug-loss.ts). */
  private wireSlugLosses(): SlugLosses | null {
    if (!this.mesh.enabled) return null;
    const losses = new SlugLosses({
      store: this.store,
      chain: this.chain,
      ledger: this.ledger,
      identity: this.identity,
      nodeId: () => this.nodeId,
      nowMs: () => Number(this.clock.nowNs() / 1_000_000n),
      winnerOf: (slug) => this.mesh.machines.known(slug),
      confirm: (slug) => this.mesh.machines.confirmOwn(slug),
      reclaim: async (m) => {
        if (m.slug.startsWith(DEFAULT_SLUG_PREFIX)) return false;
        const claim = { slug: m.slug, home: this.nodeId, svcond: m.genesis_svcond, created_unix_ms: m.created_unix_ms };
        await this.mesh.machines.claimOwn(claim);
        void this.mesh.publish(SLUG_CLAIM, claim, TOPICS.events).catch(() => undefined);
        return true;
      },
      log: (msg, fields) => this.logger.info(fields, msg),
    });
    // A loss owed is marked in the batch that decides it (the directory's entry, a creation's), read at start.
    this.mesh.machines.useMarks(losses);
    this.chain.trackSlugClaims({
      markOp: (slug) => losses.markOp(slug),
      written: (slug) =>
        void this.mesh.machines.confirmOwn(slug).catch((err: unknown) => this.logger.warn({ err: String(err), slug }, 'a new slug not checked')),
    });
    this.mesh.machines.onWonElsewhere((slug) => {
      void losses.settle(slug).catch((err: unknown) => this.logger.error({ err: String(err), slug }, 'a lost slug could not be settled'));
    });
    return losses;
  }

  /**
   * Challenges, votes and verdicts (architecture.md §6): the challenge service with its three gossip rows, the
   * re-executor (this node's votes), and the ledger effects at home (stakes here, the bond when this node holds it).
   */
  private wireConsensus(envelopeLocks: EnvelopeLocks): void {
    const now = () => stampAt(this.clock.nowNs()).svcond;
    const sign = (text: string) => signText(this.nodeIdentity.privateKey, text);
    this.slashing = new SlashingService({
      store: this.store,
      ledger: this.ledger,
      counters: this.counters,
      locks: envelopeLocks,
      bonds: this.bonds,
      modes: this.modes,
      nodeId: () => this.nodeId,
      nowSvcond: now,
      log: (msg, fields) => this.logger.info(fields, msg),
    });
    this.challenges = new ChallengeService({
      store: this.store,
      policy: this.config.contribution,
      bonds: this.bonds,
      nodeId: () => this.nodeId,
      nowSvcond: now,
      sign,
      verify: verifyText,
      publish: async (type, body) => {
        if (this.mesh.enabled) await this.mesh.publish(type, body, TOPICS.consensus);
      },
      lookup: (resultId) => this.challengedResult(resultId),
      candidates: () => this.committeeCandidates(),
      holdStake: (zid, amount) => this.slashing.holdStake(zid, amount),
      verifyExecution: (r) => verifyExecution(verifyText, r.executed_by, r.result_digest),
      ...(this.mesh.enabled ? httpPeerLink({ sign: (type, body) => this.mesh.signDirect(type, body), peerUrl: (node) => this.mesh.peerUrl(node) }) : {}),
    });
    this.challenges.onVerdict((e) => this.slashing.onVerdict(e));
    this.reexecutor = new Reexecutor({
      challenges: this.challenges,
      nodeId: () => this.nodeId,
      nowSvcond: now,
      sign,
      execute: (request, stampSvcond) =>
        rerunDigest(
          { compute: this.compute, executor: this.executor!, timeLimitSeconds: this.options.timeLimitSeconds ?? LONGEST_TIME_LIMIT_SECONDS },
          request,
          stampSvcond,
        ),
      onError: (challengeId, err) => this.logger.warn({ challengeId, err: String(err) }, 're-execution failed: no vote cast'),
    });
    const [openedRow, voteRow, verdictRow] = this.challenges.handlers();
    this.mesh.gossip.register(openedRow);
    this.mesh.gossip.register(voteRow);
    this.mesh.gossip.register(verdictRow);
  }

  /**
   * Nodes that may sit on a committee: every active bond, contributing when its node says so — this node from its
   * operator's mode, a peer from its latest tick event (mode and the same bond id).
   */
  private committeeCandidates(): Candidate[] {
    const peers = new Map(this.mesh.peers().map((p) => [p.peerId, p]));
    return this.bonds.active().map(({ bond }) => {
      const peer = peers.get(bond.node);
      const contributing =
        bond.node === this.nodeId ? this.modes.of(bond.zid).mode === 'contributing' : peer?.mode === 'contributing' && peer.bondId === bond.bond_id;
      return { node: bond.node, bondSvcond: bond.svcond, contributing };
    });
  }

  /** What a challenge needs of a result: exec's lookup (this node's record, else the result's home). */
  private async challengedResult(resultId: string): Promise<ChallengedResult | null> {
    const r = await this.lookupResult(resultId);
    if (r.status === 'unknown') return null;
    if (r.status === 'unpublished')
      return { result_id: resultId, request: null, stamp_svcond: 0, result_digest: '', executed_by: null, owner: null, published: false };
    return {
      result_id: r.result_id,
      request: r.request as Json,
      stamp_svcond: r.svcond,
      result_digest: r.result_digest,
      executed_by: r.executed_by,
      owner: r.owner,
      published: true,
    };
  }

  /**
   * Offloaded execution (architecture.md §6): this node serves /svc/exec/1.0.0 for its peers (it answers only while
   * its operator is contributing), and places its own solver runs per `contribution.offload`.
   */
  private wireExecution(): void {
    const { config } = this;
    const executor = this.executor!;
    const nowSvcond = () => stampAt(this.clock.nowNs()).svcond;
    this.execHandler = new ExecHandler({
      meshSecret: config.mesh.secret ?? null,
      nowSvcond,
      contributing: () => this.operatorContributing() !== null,
      resolve: (solverId, inputs) => this.compute.resolveSolver(solverId, inputs, undefined).inputs,
      run: (solverId, inputs, limit, owner) => executor.run(solverId, inputs, undefined, limit, owner),
      // The requester's home applies its caller's tier; an executor caps at the longest tier limit.
      timeLimitSeconds: this.options.timeLimitSeconds ?? LONGEST_TIME_LIMIT_SECONDS,
      attest: (requestDigest, resultDigest, svcond) => this.attestExecution(requestDigest, resultDigest, svcond),
      ...(this.options.execAnswer ? { rewrite: this.options.execAnswer } : {}),
      logger: this.logger,
    });
    // Modes live at the identity's home, and only a bond's node holds it: a switch away from contributing here is
    // this node's operator's, and preempts what it runs for peers.
    this.modes.onSwitch((_zid, previous) => {
      if (previous === 'contributing') this.execHandler.preemptAll();
    });
    if (!this.mesh.enabled) return;
    void this.mesh.handleStream(EXEC_PROTOCOL, (stream, peer) => void this.execHandler.serve(stream, peer));
    void this.mesh.handleStream(EXEC_SESSION_PROTOCOL, (stream, peer) => void this.execHandler.serveSession(stream, peer));
    if (config.contribution.offload === 'never') return;
    const answerMs = this.options.offloadAnswerTimeoutMs;
    const sessions = this.options.execStreamPerRun ? null : new ExecSessions((peerId, protocol, signal) => this.mesh.openStream(peerId, protocol, signal));
    this.execSessions = sessions;
    this.offloader = new Offloader({
      policy: config.contribution.offload,
      selfId: () => this.nodeId,
      peers: () => this.mesh.peers(),
      bondOf: (node) => this.bonds.ofNode(node)?.bond.bond_id ?? null,
      freeSlots: () => executor.freeSlots(),
      meshSecret: config.mesh.secret ?? null,
      open: (peerId, protocol, signal) => this.mesh.openStream(peerId, protocol, signal),
      ...(sessions ? { exchange: (peerId: string, request: ExecRequest, signal: AbortSignal) => sessions.request(peerId, request, signal) } : {}),
      verify: verifyText,
      ...(answerMs !== undefined ? { answerTimeoutMs: () => answerMs } : {}),
      ...(this.options.offloadSkipMs !== undefined ? { skipPeerMs: this.options.offloadSkipMs } : {}),
      logger: this.logger,
    });
  }

  /** This node's operator's bond while it is contributing, else null. */
  private operatorContributing(): { bond_id: string } | null {
    const operator = this.bonds?.ofNode(this.nodeId);
    if (!operator || this.modes.of(operator.bond.zid).mode !== 'contributing') return null;
    return operator.bond;
  }

  /**
   * executed_by for a run this node executes (its operator's bond, signed with this node's key), or null when its
   * operator is not contributing: every run a contributing node executes carries its bond (architecture.md §6).
   */
  attestExecution(requestDigest: string, resultDigest: string, svcond: number): ExecutedBy | null {
    const bond = this.operatorContributing();
    if (bond === null) return null;
    const key = this.nodeIdentity.privateKey;
    return signExecution((text) => signText(key, text), { node: this.nodeId, bond_id: bond.bond_id, svcond, request_digest: requestDigest }, resultDigest);
  }

  /** What re-execution needs about a result: from this node's record if it is the home, else from its home. */
  lookupResult(resultId: string): Promise<ResultLookup> {
    return findResult(
      this.results,
      { peers: () => (this.mesh.enabled ? this.mesh.peers() : []), nowSvcond: () => stampAt(this.clock.nowNs()).svcond },
      resultId,
    );
  }

  /** A compact signed announcement of a sealed result on svc/events/1 (what re-execution will key on). */
  private announceSealed(announcement: SealedSummary): void {
    if (!this.mesh?.enabled) return;
    void this.mesh
      .publish(RESULT_SEALED, announcement, TOPICS.events)
      .catch((err: unknown) => this.logger.warn({ err: String(err) }, 'sealed-result announcement not published'));
  }

  /** Stop accepting, finish in-flight requests, leave the mesh, close LevelDB. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    this.streamSocket?.close();
    this.streamSocket = null;
    if (this.autotick) await this.autotick.stop();
    if (this.batches) await this.batches.stop();
    if (this.webhooks) await this.webhooks.dispatcher.stop();
    this.agentStreams.endAll();
    if (server) {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
    }
    if (this.reannounceTimer) clearInterval(this.reannounceTimer);
    this.reannounceTimer = null;
    if (this.metrics) await this.metrics.close();
    if (this.transferDelivery) await this.transferDelivery.stop();
    if (this.chargeSettlement) await this.chargeSettlement.stop();
    if (this.consensusTimer) clearInterval(this.consensusTimer);
    this.consensusTimer = null;
    this.execSessions?.closeAll();
    if (this.checkpointTimer) clearInterval(this.checkpointTimer);
    this.checkpointTimer = null;
    if (this.agentTimer) clearInterval(this.agentTimer);
    this.agentTimer = null;
    if (this.agents) await this.agents.close();
    if (this.mesh) await this.mesh.stop();
    if (this.executor) await this.executor.close();
    if (this.sealer) await this.sealer.close();
    if (this.store) await this.store.close();
    this.logger.info({ node: this.nodeIdentity?.nodeId }, 'stopped');
  }
}

export async function startNode(config: NodeConfig, options: NodeOptions = {}): Promise<SvcNode> {
  return new SvcNode(config, options).start();
}

// The composition root: the only file that knows every part. Builds store, kernel keys, services and HTTP,
// starts and stops them in order.
import { mkdir } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import pino, { type Logger } from 'pino';
import type { NodeConfig } from './config/schema.js';
import { decodeReceiptSecret, loadOrCreateReceiptSecret, RECEIPT_SECRET_FILE } from './config/receipt-secret.js';
import { systemClock, type Clock } from './kernel/clock.js';
import { deriveKey } from './kernel/receipt.js';
import { Store } from './store/db.js';
import { Counters } from './store/counters.js';
import { ChainService } from './chain/service.js';
import { IdentityService } from './identity/service.js';
import { DemoKeys } from './identity/demo.js';
import { Ledger } from './tally/ledger.js';
import { QuotaService } from './tally/quota.js';
import { Grants } from './tally/grants.js';
import { ClaimService } from './tally/claim.js';
import { EnvelopeLocks, Folders } from './tally/folders.js';
import { loadOrCreateOperatorToken, tokenDigest } from './config/operator-token.js';
import { ComputeService } from './compute/service.js';
import { InlineExecutor, WorkerPoolExecutor, solverPoolSize, type SolverExecutor } from './compute/executor.js';
import { InlineSealer, WorkerSealer, type Sealer } from './compute/sealer.js';
import type { SealedSummary } from './compute/service.js';
import { defaultRegistry, type SolverRegistry } from './solvers/registry.js';
import { createApp } from './http/app.js';
import { createHttpServer } from './http/server.js';
import { loadOrCreateNodeKey, type NodeIdentity } from './mesh/identity.js';
import { MeshService, type MeshServiceOptions } from './mesh/service.js';
import { signEvent, TOPICS, type MeshEvent } from './mesh/wire.js';
import { IDENTITY_ASSERT, identityAssertHandler } from './mesh/identity-assert.js';
import { remoteKeyLookup } from './mesh/key-lookup.js';
import { stampAt } from './kernel/clock.js';
import { signText, verifyText } from './mesh/wire.js';
import { BondService } from './consensus/bonds.js';
import { ModeService } from './consensus/modes.js';

export const RESULT_SEALED = 'result.sealed';
const BOND_REANNOUNCE_TICKS = 64;
const TICK_MS = 777.000777;

export { RECEIPT_SECRET_FILE };

export interface NodeOptions {
  clock?: Clock;
  registry?: SolverRegistry;
  logger?: Logger;
  /** Tests: override the tier time limit to force SVC_TIMEOUT. */
  timeLimitSeconds?: number;
  /** Credits a new identity starts with (overrides limits.initialCredits). */
  initialCredits?: number;
  /** Ticks between re-announcements of this node's bond on svc/consensus/1 (default 64, about 50 s). */
  bondReannounceTicks?: number;
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

export function keyFingerprint(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 16);
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
  claims!: ClaimService;
  folders!: Folders;
  compute!: ComputeService;
  nodeIdentity!: NodeIdentity;
  receiptKey!: Buffer;
  mesh!: MeshService;
  bonds!: BondService;
  modes!: ModeService;
  private executor: SolverExecutor | null = null;
  private sealer: Sealer | null = null;
  private server: Server | null = null;
  private reannounceTimer: NodeJS.Timeout | null = null;
  private readonly options: NodeOptions;
  url = '';

  constructor(config: NodeConfig, options: NodeOptions = {}) {
    this.config = config;
    this.options = options;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? pino({ level: config.logLevel, base: { svc: 'svc-node' } });
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
    this.store = await Store.open(join(config.dataDir, 'db'), { sync: config.syncWrites });
    this.counters = new Counters(this.store, config.limits.identityCacheMax);
    await this.counters.load();
    const nodeId = () => this.nodeIdentity.nodeId;
    this.chain = new ChainService(this.store, config.limits.identityCacheMax);
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
    this.ledger = new Ledger(this.store, this.counters, this.chain, {
      initialCredits: this.options.initialCredits ?? config.limits.initialCredits,
      walletCacheMax: config.limits.identityCacheMax,
    });
    this.quota = new QuotaService(
      this.counters,
      {
        anonymousPerDay: config.limits.anonymousComputePerDay,
        demoPerDay: config.limits.demoKeyPerDay,
        freeDailyComputations: config.limits.freeDailyComputations,
        enforceDailyQuota: config.limits.enforceDailyQuota,
      },
      (ops) => this.store.commit(ops),
    );
    await this.quota.pruneOldDays(Number(this.clock.nowNs() / 1_000_000n));
    // The operator token's digest only: the token stays in its 0600 file.
    const operatorTokenDigest = tokenDigest(await loadOrCreateOperatorToken(config.dataDir));
    this.grants = new Grants({ store: this.store, ledger: this.ledger, chain: this.chain, identity: this.identity, operatorTokenDigest, nodeId });
    this.claims = new ClaimService({
      store: this.store,
      counters: this.counters,
      ledger: this.ledger,
      chain: this.chain,
      identity: this.identity,
      key: deriveKey(secret, 'CLAIM'),
      threshold: config.limits.claimThreshold,
      baseBits: config.limits.claimDifficultyBits,
    });
    this.folders = new Folders(this.store, this.counters, this.ledger, new EnvelopeLocks());
    const registry = this.options.registry ?? defaultRegistry();
    // An injected registry (tests) holds functions a worker cannot receive: run it inline.
    this.executor =
      this.options.registry || config.solverThreads === 0
        ? new InlineExecutor(registry)
        : new WorkerPoolExecutor({
            size: solverPoolSize(config.solverThreads),
            tier: config.limits.tier,
            maxQueuedPerOwner: config.limits.maxQueuedRunsPerIdentity,
          });
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
      tier: config.limits.tier,
      timeLimitSeconds: this.options.timeLimitSeconds,
      nodeId,
      // After the batch is durable (never before): announce the result to the mesh.
      onSealed: (summary) => this.announceSealed(summary),
    });
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
      sign: (text) => signText(this.nodeIdentity.privateKey, text),
      verify: verifyText,
      publish: async (type, body) => {
        if (this.mesh.enabled) await this.mesh.publish(type, body, TOPICS.consensus);
      },
    });
    await this.bonds.load();
    this.modes = new ModeService(this.store, this.bonds, () => stampAt(this.clock.nowNs()).svcond);
    await this.modes.load();
    const [bondRow, releaseRow] = this.bonds.handlers();
    this.mesh.gossip.register(bondRow);
    this.mesh.gossip.register(releaseRow);
    const signMeshEvent = (type: string, body: unknown): Promise<MeshEvent> =>
      signEvent(this.nodeIdentity.privateKey, this.nodeId, type, stampAt(this.clock.nowNs()).svcond, body);
    const { app } = createApp({
      config,
      logger: this.logger,
      clock: this.clock,
      compute: this.compute,
      identity: this.identity,
      chain: this.chain,
      ledger: this.ledger,
      quota: this.quota,
      counters: this.counters,
      grants: this.grants,
      claims: this.claims,
      folders: this.folders,
      demoKeys,
      nodeId,
      publicUrl: () => this.url,
      mesh: this.mesh,
      signMeshEvent,
      contribution: { bonds: this.bonds, modes: this.modes },
    });
    this.server = createHttpServer(app.callback(), this.logger);
    this.server.keepAliveTimeout = 5000;
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(config.port, config.host, () => resolve());
    });
    const addr = this.server.address() as AddressInfo;
    this.url = config.publicUrl ?? `http://${config.host}:${addr.port}`;
    meshOptions.httpUrl = this.url;
    this.wireIdentityGossip();
    await this.mesh.start();
    if (this.mesh.enabled) {
      const every = (this.options.bondReannounceTicks ?? BOND_REANNOUNCE_TICKS) * TICK_MS;
      this.reannounceTimer = setInterval(() => void this.bonds.reannounce().catch(() => undefined), every);
      this.reannounceTimer.unref();
    }
    this.logger.info({ url: this.url, node: this.nodeId, dataDir: config.dataDir, multiaddrs: this.mesh.multiaddrs(), mesh: this.mesh.enabled }, 'listening');
    return this;
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
    if (server) {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
    }
    if (this.reannounceTimer) clearInterval(this.reannounceTimer);
    this.reannounceTimer = null;
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

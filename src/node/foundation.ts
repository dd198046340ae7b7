// What every capability stands on: config and options, the logger, one Time, the keys derived from the node's
// secrets, the node key, the store, the counters and the metrics.
import { STORE_DIR } from '../store/store-dir.js';
import { chmod, readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import pino, { type Logger } from 'pino';
import type { NodeConfig } from '../config/schema.js';
import { decodeReceiptSecret, loadOrCreateReceiptSecret, RECEIPT_SECRET_FILE } from '../config/receipt-secret.js';
import { CREDENTIAL_SECRET_FILE, loadOrCreateCredentialSecret } from '../config/credential-secret.js';
import { loadOrCreateOperatorToken, matchesToken, OPERATOR_TOKEN_FILE, tokenDigest } from '../config/operator-token.js';
import { NODE_VERSION } from '../config/version.js';
import { systemClock, type Clock } from '../kernel/clock.js';
import { deriveKey } from '../kernel/receipt.js';
import { Store } from '../store/db.js';
import { settleStorageFormat, STORAGE_FORMAT, type StorageFormat } from '../store/format.js';
import { Counters } from '../store/counters.js';
import { NodeMetrics, type CustodyCounts } from '../http/metrics.js';
import { MachineStats } from '../http/machine-stats.js';
import { loadOrCreateNodeKey, NODE_KEY_FILE, type NodeIdentity } from '../mesh/identity.js';
import type { DataDirFile } from '../store/backup.js';
import { adminRoutes } from '../http/routes/admin.js';
import type { MeshService, MeshServiceOptions } from '../mesh/service.js';
import type { ChallengeService } from '../consensus/challenges.js';
import type { VerdictMark } from '../consensus/slashing.js';
import type { ExecAnswer, ExecRequest } from '../consensus/exec-protocol.js';
import type { SolverRegistry } from '../solvers/registry.js';
import type { Tier } from '../tally/tiers.js';
import type { AgentLimits } from '../agents/runtime.js';
import type { Sender } from '../webhooks/sender.js';
import { makeDirs } from '../util/make-dirs.js';
import { ConfigError } from '../config/error.js';
import { timeOf, type Time } from '../util/time.js';
import { Port, type Capability } from './capability.js';

/** Ticks between a node's re-announcements (NodeOptions.reannounceTicks): about 50 s. */
export const REANNOUNCE_TICKS = 64;

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
  /**
   * Ticks between re-announcements of what gossip alone would not bring to a node that missed it: this node's bond, its
   * recent key revocations (default REANNOUNCE_TICKS).
   */
  reannounceTicks?: number;
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
  webhookSender?: Sender;
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
  /** Milliseconds between samples of the machine's health (default 5000; 0: no timer, tests call node.machine.sample()). */
  machineSampleMs?: number;
  /** Tests: the storage format and its migrations (default: this release's, store/format.ts). */
  storageFormat?: StorageFormat;
  /** Mesh overrides (tests: autoPulse, redial bounds, a connection gater that partitions the node). */
  mesh?: Partial<Pick<MeshServiceOptions, 'autoPulse' | 'redialMinMs' | 'redialMaxMs' | 'limits' | 'peerSetTiming' | 'connectionGater'>>;
}

/** Keys derived from the receipt secret, and the credential secret (this node's own, never shared with the mesh). */
export interface NodeKeys {
  receipt: Buffer;
  prove: Buffer;
  salt: Buffer;
  claim: Buffer;
  webhookSecret: Buffer;
  streamLink: Buffer;
  /** What this node encrypts at rest (secure-pull session keys, provider credentials): each use derives its own key. */
  credentialSecret: Buffer;
}

export interface Foundation {
  config: NodeConfig;
  options: NodeOptions;
  logger: Logger;
  /**
   * Where the ready line ('listening': URL, node, multiaddrs) goes: the logger, or, when the node's own logger is set
   * above info, a logger of that one line on stdout in the same shape. Whatever the level, the port of a node started
   * with --port 0 can be read (svc-node cluster reads it). A logger the embedding program passes in is left as it is.
   */
  readyLogger: Logger;
  clock: Clock;
  time: Time;
  keys: NodeKeys;
  nodeIdentity: NodeIdentity;
  nodeId: string;
  store: Store;
  counters: Counters;
  /** Prometheus metrics (http/metrics.ts); the mesh, the challenges and custody are bound when they are wired. */
  metrics: NodeMetrics;
  metricsMesh: Port<MeshService>;
  metricsChallenges: Port<ChallengeService>;
  metricsCustody: Port<CustodyCounts>;
  /** The machine's health, sampled on a timer (http/machine-stats.ts); the HTTP part starts it once every part is wired. */
  machine: MachineStats;
  /** What the record rows and verify answers say of a result's bond (consensus/slashing.ts verdictMarkOf), bound by the consensus part. */
  verdictMarks: Port<(executedBy: { bond_id?: unknown } | null | undefined) => VerdictMark>;
  /** This node's public URL, bound when the HTTP server listens ('' until then). */
  publicUrl: Port<string>;
  /** SHA-256 of the operator token (config/operator-token.ts): the operator routes compare digests, the token stays in its file. */
  operatorTokenDigest: Buffer;
  /** Closes the store: first in the node's list, so last to stop. Serves the store's backup route. */
  capability: Capability;
}

/**
 * The receipt secret's bytes: from config (hex, as SVC_RECEIPT_SECRET), else kept in the data dir (hex, created once,
 * mode 0600). One encoding on every path (config/receipt-secret.ts), so a data dir's file and the env var name one key.
 */
/** The data dir's files a backup carries with the store: the node's secrets (docs/operating.md, Keys and secrets). */
export const DATA_DIR_SECRETS: readonly string[] = [NODE_KEY_FILE, RECEIPT_SECRET_FILE, OPERATOR_TOKEN_FILE, CREDENTIAL_SECRET_FILE];

/**
 * Where a running node writes the loopback URL of its HTTP server (not a secret): how `svc-node backup --data-dir`
 * reaches the node that holds the data dir's store.
 */
export const LOCAL_URL_FILE = 'local-url';

/** Those of the secret files that `dataDir` holds (a receipt secret given by config has no file). */
export async function readDataDirSecrets(dataDir: string): Promise<DataDirFile[]> {
  const files: DataDirFile[] = [];
  for (const name of DATA_DIR_SECRETS) {
    try {
      files.push({ name, bytes: await readFile(join(dataDir, name)) });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return files;
}

async function receiptSecret(config: NodeConfig): Promise<Buffer> {
  if (config.receiptSecret) return decodeReceiptSecret(config.receiptSecret, 'receiptSecret (SVC_RECEIPT_SECRET)');
  return loadOrCreateReceiptSecret(config.dataDir);
}

/**
 * The data dir, made if missing, readable by this user only: the store in it holds password and equation hashes and
 * webhook delivery answers, which no other account of the machine should read. One made earlier with the umask's 0755
 * is made private at start (said once in the log), if it is this user's own and empty or a node's (its key or store
 * in it). A directory others use is not taken over: /tmp (the sticky bit), another user's, or one holding other
 * files is a ConfigError, and its mode stays as it was.
 */
async function privateDataDir(dir: string, logger: Logger): Promise<void> {
  const made = await makeDirs(dir, 0o700);
  const st = await stat(dir);
  const mode = st.mode & 0o7777;
  if ((mode & 0o077) === 0) return;
  if (made === undefined) {
    const entries = await readdir(dir);
    const why =
      (mode & 0o1000) !== 0
        ? 'is shared with other users (mode ' + mode.toString(8) + ', like /tmp)'
        : process.getuid !== undefined && st.uid !== process.getuid()
          ? 'belongs to another user'
          : entries.length > 0 && !entries.includes(NODE_KEY_FILE) && !entries.includes(STORE_DIR)
            ? "holds files that are not a node's"
            : null;
    if (why !== null)
      throw new ConfigError(
        `data dir ${dir} ${why} and is readable by others; a node makes its data dir private (0700): give --data-dir or SVC_DATA_DIR a directory of its own, e.g. ${join(dir, 'svc-node')}`,
      );
  }
  await chmod(dir, 0o700);
  logger.warn({ dataDir: dir, was: mode.toString(8) }, 'the data dir was readable by other users: made private (0700)');
}

export async function openFoundation(config: NodeConfig, options: NodeOptions): Promise<Foundation> {
  const clock = options.clock ?? systemClock;
  const time = timeOf(clock);
  const base = { svc: 'svc-node' };
  const logger = options.logger ?? pino({ level: config.logLevel, base });
  const readyLogger = options.logger !== undefined || logger.isLevelEnabled('info') ? logger : pino({ level: 'info', base });
  await privateDataDir(config.dataDir, logger);
  const nodeIdentity = await loadOrCreateNodeKey(config.dataDir);
  const secret = await receiptSecret(config);
  const keys: NodeKeys = {
    receipt: deriveKey(secret, 'RECEIPT'),
    prove: deriveKey(secret, 'PROVE'),
    salt: deriveKey(secret, 'SALT'),
    claim: deriveKey(secret, 'CLAIM'),
    webhookSecret: deriveKey(secret, 'WEBHOOK_SECRET'),
    streamLink: deriveKey(secret, 'STREAM_LINK'),
    credentialSecret: await loadOrCreateCredentialSecret(config.dataDir),
  };
  const store = await Store.open(join(config.dataDir, STORE_DIR), { sync: config.syncWrites });
  // Before anything reads the store: its format written, migrated, or refused (and the store closed again).
  const format = await settleStorageFormat(store, options.storageFormat ?? STORAGE_FORMAT, (message) => logger.warn(message)).catch(async (err: unknown) => {
    await store.close();
    throw err;
  });
  const operatorTokenDigest = tokenDigest(await loadOrCreateOperatorToken(config.dataDir));
  const metricsMesh = new Port<MeshService>('metrics.mesh');
  const metricsChallenges = new Port<ChallengeService>('metrics.challenges');
  const metricsCustody = new Port<CustodyCounts>('metrics.custody');
  const metrics = new NodeMetrics({
    tick: time.nowSvcond,
    mesh: () => metricsMesh.get(),
    challenges: () => metricsChallenges.get(),
    custody: () => metricsCustody.get()?.(),
  });
  store.onBatch = (ops, seconds) => metrics.storeBatch(ops, seconds);
  const counters = new Counters(store, config.limits.identityCacheMax);
  await counters.load();
  const machine = new MachineStats(
    {
      dataDir: config.dataDir,
      nowMs: time.nowMs,
      requests: () => metrics.requestTotals(),
      commits: () => metrics.commits(),
      sealedHere: () => counters.get('sealed_total'),
    },
    options.machineSampleMs ?? 5000,
    metrics.registry,
  );
  return {
    config,
    options,
    logger,
    readyLogger,
    clock,
    time,
    keys,
    nodeIdentity,
    nodeId: nodeIdentity.nodeId,
    store,
    counters,
    metrics,
    metricsMesh,
    metricsChallenges,
    metricsCustody,
    machine,
    verdictMarks: new Port('verdictMarks'),
    publicUrl: new Port<string>('publicUrl'),
    operatorTokenDigest,
    capability: {
      name: 'store',
      routes: [
        adminRoutes({
          db: store.db,
          files: () => readDataDirSecrets(config.dataDir),
          nodeVersion: NODE_VERSION,
          storageFormat: format.version,
          isOperator: (token) => matchesToken(token, operatorTokenDigest),
        }),
      ],
      stop: () => store.close(),
    },
  };
}

/** A result's verdict mark (record rows, verify answers): none until the consensus part has bound the lookup. */
export function verdictMark(f: Pick<Foundation, 'verdictMarks'>, executedBy: { bond_id?: unknown } | null | undefined): VerdictMark {
  return f.verdictMarks.get()?.(executedBy) ?? { verdict: null, challenge_id: null };
}

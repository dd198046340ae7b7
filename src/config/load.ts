// Loads and layers the configuration. A bad configuration is a ConfigError with a one-line reason.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { configSchema, type NodeConfig } from './schema.js';
import { ConfigError } from './error.js';

export { ConfigError };

const DEFAULT_FILE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'config', 'default.json');

type Partial = Record<string, unknown>;

/** Environment variables and the config path they set (dots = nesting). */
export const ENV_MAP: Record<string, { path: string; kind: 'string' | 'int' | 'bool' | 'list' | 'number' | 'intOrAuto' }> = {
  SVC_HOST: { path: 'host', kind: 'string' },
  SVC_PORT: { path: 'port', kind: 'int' },
  SVC_DATA_DIR: { path: 'dataDir', kind: 'string' },
  SVC_RECEIPT_SECRET: { path: 'receiptSecret', kind: 'string' },
  SVC_LOG_LEVEL: { path: 'logLevel', kind: 'string' },
  SVC_SYNC_WRITES: { path: 'syncWrites', kind: 'bool' },
  SVC_SOLVER_THREADS: { path: 'solverThreads', kind: 'intOrAuto' },
  SVC_SEAL_WORKER: { path: 'sealWorker', kind: 'bool' },
  SVC_PUBLIC_URL: { path: 'publicUrl', kind: 'string' },
  SVC_ENFORCE_DAILY_QUOTA: { path: 'limits.enforceDailyQuota', kind: 'bool' },
  SVC_INITIAL_CREDITS: { path: 'limits.initialCredits', kind: 'int' },
  SVC_DEMO_KEY_MINTS_PER_DAY: { path: 'limits.demoKeyMintsPerDay', kind: 'int' },
  SVC_CLAIM_THRESHOLD: { path: 'limits.claimThreshold', kind: 'int' },
  SVC_CLAIM_DIFFICULTY_BITS: { path: 'limits.claimDifficultyBits', kind: 'int' },
  SVC_MAX_QUEUED_RUNS_PER_IDENTITY: { path: 'limits.maxQueuedRunsPerIdentity', kind: 'int' },
  SVC_MAX_QUEUED_RUNS: { path: 'limits.maxQueuedRuns', kind: 'int' },
  SVC_IDENTITY_CACHE_MAX: { path: 'limits.identityCacheMax', kind: 'int' },
  SVC_KEYLESS_STREAMS_PER_ADDRESS: { path: 'limits.keylessStreamsPerAddress', kind: 'int' },
  SVC_KEYLESS_STREAMS_PER_NODE: { path: 'limits.keylessStreamsPerNode', kind: 'int' },
  SVC_STREAM_CHANNELS_PER_IDENTITY: { path: 'limits.streamChannelsPerIdentity', kind: 'int' },
  SVC_SECURE_SESSIONS_PER_IDENTITY: { path: 'limits.secureSessionsPerIdentity', kind: 'int' },
  SVC_REACTORS_PER_IDENTITY: { path: 'limits.reactorsPerIdentity', kind: 'int' },
  SVC_KEYS_PER_IDENTITY: { path: 'limits.keysPerIdentity', kind: 'int' },
  SVC_REMOTE_KEYS_MAX: { path: 'limits.remoteKeysMax', kind: 'int' },
  SVC_AUTH_PER_MINUTE: { path: 'limits.authPerMinute', kind: 'int' },
  SVC_CONTRACTS_PER_IDENTITY: { path: 'limits.contractsPerIdentity', kind: 'int' },
  SVC_CONTRACT_CACHE_BYTES: { path: 'limits.contractCacheBytes', kind: 'int' },
  SVC_KEYED_STREAMS_PER_IDENTITY: { path: 'limits.keyedStreamsPerIdentity', kind: 'int' },
  SVC_IDENTITY_SCRYPT_COST: { path: 'identity.scryptCost', kind: 'int' },
  SVC_P2P_PORT: { path: 'mesh.p2pPort', kind: 'int' },
  SVC_BOOTSTRAP: { path: 'mesh.bootstrap', kind: 'list' },
  SVC_MESH_SECRET: { path: 'mesh.secret', kind: 'string' },
  SVC_MESH_TICK_EVERY: { path: 'mesh.tickEvery', kind: 'int' },
  SVC_MESH_TICK_RATE: { path: 'mesh.tickRate', kind: 'number' },
  SVC_MESH_SNAPSHOT_RETENTION: { path: 'mesh.snapshotRetention', kind: 'int' },
  SVC_MESH_FORWARD_TIMEOUT_MS: { path: 'mesh.forwardTimeoutMs', kind: 'int' },
  SVC_ANNOUNCE: { path: 'mesh.announce', kind: 'list' },
  SVC_LISTEN: { path: 'mesh.listen', kind: 'list' },
  SVC_MDNS: { path: 'mesh.mdns', kind: 'bool' },
  SVC_UPNP: { path: 'mesh.upnp', kind: 'bool' },
  SVC_MESH_PEERS_TARGET: { path: 'mesh.peers.target', kind: 'int' },
  SVC_MESH_PEERS_MAX: { path: 'mesh.peers.max', kind: 'int' },
  SVC_RELAY_SERVE: { path: 'mesh.relay.serve', kind: 'bool' },
  SVC_RELAY_RESERVE: { path: 'mesh.relay.reserve', kind: 'string' },
  SVC_CONTRIBUTION_BOND_ENVELOPES: { path: 'contribution.bondEnvelopes', kind: 'int' },
  SVC_CUSTODY_REPLICAS: { path: 'custody.replicas', kind: 'int' },
  SVC_CUSTODY_CERTIFY_TIMEOUT_MS: { path: 'custody.certifyTimeoutMs', kind: 'int' },
  SVC_CUSTODY_FAILOVER_TICKS: { path: 'custody.failoverTicks', kind: 'int' },
  SVC_CUSTODY_REPLACE_TICKS: { path: 'custody.replaceTicks', kind: 'int' },
  SVC_CONTRIBUTION_COMMITTEE_SIZE: { path: 'contribution.committeeSize', kind: 'int' },
  SVC_CONTRIBUTION_SETTLE_TICKS: { path: 'contribution.settleTicks', kind: 'int' },
  SVC_CONTRIBUTION_DEADLINE_TICKS: { path: 'contribution.deadlineTicks', kind: 'int' },
  SVC_CONTRIBUTION_LIVE_TICKS: { path: 'contribution.liveTicks', kind: 'int' },
  SVC_CONTRIBUTION_CHALLENGE_STAKE: { path: 'contribution.challengeStake', kind: 'int' },
  SVC_CONTRIBUTION_BOND_TERM_DAYS: { path: 'contribution.bondTermDays', kind: 'int' },
  SVC_CONTRIBUTION_OFFLOAD: { path: 'contribution.offload', kind: 'string' },
  SVC_CONTRIBUTION_OPERATOR: { path: 'contribution.operator', kind: 'string' },
  SVC_SLASHING_APPLY_TICKS: { path: 'slashing.applyTicks', kind: 'int' },
  SVC_SLASHING_COOLDOWN_DAYS: { path: 'slashing.cooldownDays', kind: 'int' },
  SVC_SLASHING_CHALLENGER_SHARE: { path: 'slashing.challengerShare', kind: 'number' },
  SVC_WEBHOOK_ALLOW_LOOPBACK: { path: 'webhooks.allowLoopback', kind: 'bool' },
  SVC_WEBHOOK_ALLOW_HOSTS: { path: 'webhooks.allowHosts', kind: 'list' },
  SVC_LLM_ALLOW_LOOPBACK: { path: 'llm.baseUrls.allowLoopback', kind: 'bool' },
  SVC_LLM_ALLOW_HOSTS: { path: 'llm.baseUrls.allowHosts', kind: 'list' },
  SVC_METRICS_PORT: { path: 'metrics.port', kind: 'int' },
  SVC_METRICS_HOST: { path: 'metrics.host', kind: 'string' },
};

function parseScalar(name: string, raw: string, kind: string): unknown {
  switch (kind) {
    case 'int': {
      if (!/^-?\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be an integer, got "${raw}"`);
      return Number(raw);
    }
    case 'intOrAuto':
      if (raw.trim().toLowerCase() === 'auto') return 'auto';
      return parseScalar(name, raw, 'int');
    case 'number': {
      // Number(' ') is 0: a blank value is no number.
      const n = raw.trim() === '' ? NaN : Number(raw);
      if (!Number.isFinite(n)) throw new ConfigError(`${name} must be a number, got "${raw}"`);
      return n;
    }
    case 'bool': {
      const v = raw.trim().toLowerCase();
      if (['1', 'true', 'yes', 'on'].includes(v)) return true;
      if (['0', 'false', 'no', 'off'].includes(v)) return false;
      throw new ConfigError(`${name} must be true or false, got "${raw}"`);
    }
    case 'list':
      return raw
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
    default:
      return raw;
  }
}

function setPath(target: Partial, path: string, value: unknown): void {
  const parts = path.split('.');
  let obj = target;
  for (const p of parts.slice(0, -1)) {
    if (typeof obj[p] !== 'object' || obj[p] === null) obj[p] = {};
    obj = obj[p] as Partial;
  }
  obj[parts[parts.length - 1]!] = value;
}

function merge(base: Partial, over: Partial): Partial {
  const out: Partial = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v && typeof v === 'object' && !Array.isArray(v) && base[k] && typeof base[k] === 'object' && !Array.isArray(base[k])) {
      out[k] = merge(base[k] as Partial, v as Partial);
    } else {
      out[k] = v;
    }
  }
  return out;
}

function readJson(file: string): Partial {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read config file ${file}: ${(err as Error).message}`);
  }
  try {
    const value = JSON.parse(text) as unknown;
    if (!value || typeof value !== 'object' || Array.isArray(value)) throw new Error('not a JSON object');
    return value as Partial;
  } catch (err) {
    throw new ConfigError(`config file ${file} is not valid JSON: ${(err as Error).message}`);
  }
}

export interface LoadOptions {
  configFile?: string;
  env?: NodeJS.ProcessEnv;
  /** CLI flags already mapped to config paths (e.g. {port: 9000, 'mesh.secret': 'x'}). */
  flags?: Record<string, unknown>;
  /** Programmatic overrides (tests): applied last. */
  overrides?: Partial;
}

export function loadConfig(options: LoadOptions = {}): NodeConfig {
  let layered = readJson(DEFAULT_FILE);
  if (options.configFile) layered = merge(layered, readJson(options.configFile));
  const env = options.env ?? process.env;
  const fromEnv: Partial = {};
  for (const [name, spec] of Object.entries(ENV_MAP)) {
    const raw = env[name];
    if (raw !== undefined && raw !== '') setPath(fromEnv, spec.path, parseScalar(name, raw, spec.kind));
  }
  layered = merge(layered, fromEnv);
  const fromFlags: Partial = {};
  for (const [path, value] of Object.entries(options.flags ?? {})) if (value !== undefined) setPath(fromFlags, path, value);
  layered = merge(layered, fromFlags);
  if (options.overrides) layered = merge(layered, options.overrides);
  const parsed = configSchema.safeParse(layered);
  if (!parsed.success) {
    // Every problem at once, so an operator fixes them in one pass, not one per start.
    const where = (issue: { path: PropertyKey[] }) => issue.path.map(String).join('.') || '(root)';
    const [first, ...more] = parsed.error.issues;
    const rest = more.map((issue) => `; at ${where(issue)}: ${issue.message}`).join('');
    throw new ConfigError(`invalid configuration at ${where(first!)}: ${first!.message}${rest}`);
  }
  return parsed.data;
}

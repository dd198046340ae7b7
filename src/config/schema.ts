// The node's configuration, validated with zod. Layers: config/default.json < --config FILE < SVC_* env < CLI flags.
import { z } from 'zod';
import { multiaddr } from '@multiformats/multiaddr';
import { RECEIPT_SECRET_HEX, RECEIPT_SECRET_RULE } from './receipt-secret.js';
import { DEFAULT_SCRYPT_COST, MAX_SCRYPT_COST, MIN_SCRYPT_COST } from './scrypt-cost.js';

function isMultiaddr(text: string): boolean {
  try {
    multiaddr(text);
    return text.startsWith('/');
  } catch {
    return false;
  }
}

/** Listen addresses that name no interface: a URL made of one reaches whoever dials it locally. */
const UNSPECIFIED_HOSTS = new Set(['0.0.0.0', '::', '[::]', '0:0:0:0:0:0:0:0']);

export const configSchema = z
  .object({
    host: z.string().min(1),
    port: z.number().int().min(0).max(65535),
    dataDir: z.string().min(1),
    /** The receipt secret as hex (receipt-secret.ts); when null the node generates one and keeps it in the data dir. */
    receiptSecret: z.string().trim().regex(RECEIPT_SECRET_HEX, RECEIPT_SECRET_RULE).nullable(),
    logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    /** fsync every batch. */
    syncWrites: z.boolean(),
    /** Worker threads for solver runs: a number (0 = run on the main thread), or `auto` = every core but one, at least 1. */
    solverThreads: z.union([z.literal('auto'), z.number().int().min(0).max(64)]),
    sealWorker: z.boolean(),
    /** URL other nodes use to reach this node's HTTP API; defaults to http://host:port. */
    publicUrl: z.string().url().nullable(),
    kernel: z
      .object({
        version: z.string().regex(/^\d+\.\d+\.\d+$/),
        phi0: z.number().finite(),
      })
      .strict(),
    limits: z
      .object({
        provePerMinute: z.number().int().positive(),
        demoKeyPerDay: z.number().int().positive(),
        anonymousComputePerDay: z.number().int().positive(),
        enforceDailyQuota: z.boolean(),
        freeDailyComputations: z.number().int().positive(),
        /** Credits a new identity starts with (the daily-claim amount). */
        initialCredits: z.number().int().min(0),
        /** Own demo keys one IP may mint per UTC day (POST /api/demo-key/mint); counted in the store. */
        demoKeyMintsPerDay: z.number().int().min(0),
        /** The daily claim opens while an identity's balance (free + paid) is below this. */
        claimThreshold: z.number().int().min(1),
        /** Zero bits of the claim's proof of work for an address's first 32 claims in an hour. */
        claimDifficultyBits: z.number().int().min(0).max(24),
        /** Solver runs one caller (ZID, demo key, anonymous IP) may have waiting for a worker; beyond it 429. */
        maxQueuedRunsPerIdentity: z.number().int().min(1).max(1000),
        /** Solver runs waiting for a worker node-wide, whoever the callers; beyond it 429 with Retry-After. */
        maxQueuedRuns: z.number().int().min(1).max(100_000).default(256),
        /**
         * Identities whose wallet, counters, chain head and key record are kept in memory (each cache bounded by it,
         * least recently used first out; a miss reads the store). docs/performance.md, "Memory".
         */
        identityCacheMax: z.number().int().min(1).max(10_000_000).default(4096),
        /** Keyless long-lived streams (pulse SSE, /ws/stream by pull link or relayed) one caller address (IPv6: its /64) may hold open; beyond it 429. */
        keylessStreamsPerAddress: z.number().int().min(1).max(100_000).default(16),
        /** Keyless long-lived streams open on the node, whoever the callers; beyond it 429 with Retry-After. */
        keylessStreamsPerNode: z.number().int().min(1).max(1_000_000).default(1024),
        /** Open stream channels one identity may own; beyond it 409 (closing one frees a slot). */
        streamChannelsPerIdentity: z.number().int().min(1).max(1_000_000).default(256),
        /** Unexpired secure-pull sessions on the channels of one identity; beyond it 429 until one expires. */
        secureSessionsPerIdentity: z.number().int().min(1).max(1_000_000).default(256),
        /** Reactors one identity may hold; beyond it 409 (closing one frees a slot). */
        reactorsPerIdentity: z.number().int().min(1).max(1_000_000).default(256),
        /** Registrations and logins (each an scrypt of the secret) per minute per caller address; beyond it 429. */
        authPerMinute: z.number().int().min(1).max(1_000_000).default(30),
        /** Live (unrevoked, unexpired) sk_ and sk_test_ keys one identity may hold on this node; beyond it 409. */
        keysPerIdentity: z.number().int().min(1).max(1_000_000).default(1000),
        /**
         * Key records of identities homed elsewhere that gossip may add to this node's store; past it, an assertion of a
         * key not held here is ignored (not stored, not relayed) and the key is asked of its home when presented.
         */
        remoteKeysMax: z.number().int().min(1).max(100_000_000).default(100_000),
        /** Contracts one identity may deploy on this node (never deleted); beyond it 409. */
        contractsPerIdentity: z.number().int().min(1).max(1_000_000).default(1000),
        /** Estimated bytes of parsed contracts kept in memory, all together (least recently used out; a miss rebuilds). */
        contractCacheBytes: z
          .number()
          .int()
          .min(65_536)
          .max(2 ** 40)
          .default(64 * 1024 * 1024),
        /** /ws/stream sockets opened with a key on the channels of one identity; beyond it 429 until one closes. */
        keyedStreamsPerIdentity: z.number().int().min(1).max(1_000_000).default(2048),
      })
      .strict(),
    mesh: z
      .object({
        p2pPort: z.number().int().min(0).max(65535),
        bootstrap: z.array(z.string().min(1).refine(isMultiaddr, 'each bootstrap peer must be a multiaddr such as /ip4/127.0.0.1/tcp/4001/p2p/<peer id>')),
        secret: z.string().min(16).nullable(),
        /** The shortest interval between this node's tick events, in ticks: the floor of the interval that grows with the mesh. */
        tickEvery: z.number().int().min(1).max(1000),
        /**
         * Tick events per second a node accepts from the whole mesh: a node's interval grows to ⌈N_heard / (tickRate · 0.777 s)⌉
         * ticks so that this holds at any size (docs/decisions.md, "Mesh: a tick period that grows with the mesh").
         */
        tickRate: z.number().min(0.01).max(100_000).default(8),
        /** Oracle snapshots kept (one per 4 ticks; 10 000 ≈ 8.6 h); the oldest are deleted as new ones are written. */
        snapshotRetention: z.number().int().min(1).max(1_000_000),
        /** How long a home node has to show life when a request is forwarded to it (answer, or its health probe). */
        forwardTimeoutMs: z.number().int().min(50).max(120_000),
        // Joining a public mesh (docs/decisions.md, "Mesh: discovery", "Mesh: a healthy peer set", "Mesh: reachability").
        /** Multiaddrs other nodes should dial (a port forward's public address); tick events carry them instead of the listen addresses. */
        announce: z
          .array(z.string().min(1).refine(isMultiaddr, 'each announced address must be a multiaddr such as /ip4/203.0.113.7/tcp/4001'))
          .max(8)
          .default([]),
        /**
         * Multiaddrs libp2p listens on instead of host:p2pPort ([]: that one). Only '/p2p-circuit': a node that opens no
         * port and is reached through the relay it reserves a slot on.
         */
        listen: z
          .array(z.string().min(1).refine(isMultiaddr, 'each listen address must be a multiaddr such as /ip4/0.0.0.0/tcp/4001 or /p2p-circuit'))
          .max(8)
          .default([]),
        /** Find peers on the LAN by multicast DNS. */
        mdns: z.boolean().default(false),
        /** Ask the router for a port mapping (UPnP IGD). */
        upnp: z.boolean().default(false),
        /** Connections kept open at least (known peers are dialled while under it) and at most (the worst-scored pruned above it). */
        peers: z
          .object({ target: z.number().int().min(1).max(1_000).default(8), max: z.number().int().min(1).max(10_000).default(24) })
          .strict()
          .refine((p) => p.max >= p.target, 'mesh.peers.max must be at least mesh.peers.target')
          .default({ target: 8, max: 24 }),
        /** Circuit relay v2: serve as a relay (with limits), and reserve a slot on one ('auto': when behind NAT). */
        relay: z
          .object({
            serve: z.boolean().default(true),
            reserve: z.enum(['auto', 'always', 'never']).default('auto'),
            maxReservations: z.number().int().min(0).max(10_000).default(32),
            durationLimitMs: z.number().int().min(1_000).max(86_400_000).default(600_000),
            dataLimitBytes: z
              .number()
              .int()
              .min(1_024)
              .max(Number.MAX_SAFE_INTEGER)
              .default(64 * 1024 * 1024),
          })
          .strict()
          .default({ serve: true, reserve: 'auto', maxReservations: 32, durationLimitMs: 600_000, dataLimitBytes: 64 * 1024 * 1024 }),
      })
      .strict(),
    /** Contributing nodes (architecture.md §6; consensus/policy.ts): bonds, committees, challenges, offloading. */
    contribution: z
      .object({
        /** Envelopes a bond holds immovable (spec part 8: 1000; a local cluster or a test may lower it). At most 1500: the attestation lists every token id and a mesh event body is at most 64 KiB. */
        bondEnvelopes: z.number().int().min(1).max(1_500),
        /** Nodes that re-execute a challenged result; the quorum is ⌊k/2⌋ + 1. */
        committeeSize: z.number().int().min(1).max(99),
        /** Ticks a bond attestation must have aged, at a challenge's tick, for its node to sit on the committee. */
        settleTicks: z.number().int().min(0).max(1_000_000),
        /** Ticks after a challenge opens by which a quorum must have voted, else no_quorum. */
        deadlineTicks: z.number().int().min(1).max(1_000_000),
        /**
         * A node sits on a committee only if one of its tick events, saying it contributes with its bond, is at most
         * this many ticks older than the challenge's tick (docs/decisions.md, "Consensus: live eligibility").
         */
        liveTicks: z.number().int().min(1).max(1_000_000).default(32),
        /** Credits a challenger stakes: burned when the challenge is rejected, returned otherwise. */
        challengeStake: z.number().int().min(0).max(1_000_000),
        /** Days a bond is committed for (status counts them down). */
        bondTermDays: z.number().int().min(1).max(3650),
        /** Place solver runs on contributing peers: never, when this node's workers are all busy, or always. */
        offload: z.enum(['never', 'when-busy', 'always']),
        /** The identity that owns this node's bond slot (consensus/bond-slot.ts); null: the one bonding with the operator token. */
        operator: z
          .string()
          .regex(/^zid_[0-9a-f]{32}$/, 'a zid: zid_ and 32 hex characters')
          .nullable()
          .default(null),
      })
      .strict(),
    /**
     * What follows an upheld verdict (consensus/slashing.ts, docs/decisions.md "Slashing"): how long the bond's home has
     * to apply it before every node treats the bond as slashed anyway, the re-bond cooldown of a slashed operator, and
     * the successful challenger's share of the slashed envelopes.
     */
    slashing: z
      .object({
        /** Ticks after the challenge's deadline by which the bond's home must have applied the slashing (128 ≈ 100 s). */
        applyTicks: z.number().int().min(1).max(1_000_000).default(128),
        /** Days a slashed operator cannot bond again, counted from the challenge's tick (0: none). */
        cooldownDays: z.number().int().min(0).max(3650).default(30),
        /** Share of the slashed envelopes a challenger whose claim was the deciding digest receives (rounded down). */
        challengerShare: z.number().min(0).max(1).default(0.25),
      })
      .strict()
      .default({ applyTicks: 128, cooldownDays: 30, challengerShare: 0.25 }),
    /**
     * Custody of identities' ledgers (src/custody/, docs/decisions.md "Custody"): how many nodes hold each identity's
     * certified entries (its home first), and how long a write waits for a majority of them.
     */
    custody: z
      .object({
        /** R: custodians per identity, the home included (1: the home alone, as a node without peers always is). */
        replicas: z.number().int().min(1).max(7).default(3),
        /** Milliseconds a ledger write waits for its majority before it answers 503 SVC_CUSTODY_UNAVAILABLE. */
        certifyTimeoutMs: z.number().int().min(50).max(60_000).default(5000),
        /**
         * Tick intervals of its home (its tick events' `every`: 1 tick on a small mesh) an identity's home may go
         * unheard before its first live custodian takes it over (a failover: the next live one waits twice as long).
         */
        failoverTicks: z.number().int().min(2).max(10_000).default(8),
        /**
         * Tick intervals of its own a custodian may go unheard before the homes of its identities replace it in their
         * sets (a reconfiguration: a new epoch of the same home). Long against a restart or an upgrade (768 × 0.777 s
         * ≈ 10 minutes on a small mesh), so a node that comes back keeps its place; above failoverTicks, so a home
         * taken over is a custodian of its identities again rather than passed over.
         */
        replaceTicks: z.number().int().min(4).max(1_000_000).default(768),
      })
      .strict()
      .default({ replicas: 3, certifyTimeoutMs: 5000, failoverTicks: 8, replaceTicks: 768 }),
    /** How identities' secrets are kept (identity/secret-hash.ts). */
    identity: z
      .object({
        /**
         * log2 of scrypt's N for the secrets of identities registered here (a password, a ZK equation's digest): 14 is
         * 16 MiB and ~0.1 s of one core a registration or login. Each record keeps the cost it was made with.
         */
        scryptCost: z.number().int().min(MIN_SCRYPT_COST).max(MAX_SCRYPT_COST).default(DEFAULT_SCRYPT_COST),
      })
      .strict()
      .default({ scryptCost: DEFAULT_SCRYPT_COST }),
    /** Webhooks (webhooks/): which URLs they may call, and the receivers' response window (spec 6.3: 30 s). */
    webhooks: z
      .object({
        /** Loopback and private addresses allowed (SVC_WEBHOOK_ALLOW_LOOPBACK=true; tests and local receivers only). */
        allowLoopback: z.boolean().default(false),
        /** Hosts webhooks may call (exact, or `*.example.com`); empty = any public host. */
        allowHosts: z.array(z.string().min(1).max(253)).default([]),
        responseTimeoutMs: z.number().int().min(100).max(30_000).default(30_000),
      })
      .strict()
      .default({ allowLoopback: false, allowHosts: [], responseTimeoutMs: 30_000 }),
    /** POST /api/llm/chat (llm/chat.ts): the node's own provider, if any, and the chat's bounds. */
    llm: z
      .object({
        /**
         * A provider every identity's chat may use when it has no credential of its own (the operator's key, kept in
         * the config file). Null: identities use their own credentials, else the offline assistant answers.
         */
        provider: z
          .object({ kind: z.string().min(1), baseUrl: z.string().url().optional(), apiKey: z.string().min(1), model: z.string().min(1).optional() })
          .strict()
          .nullable()
          .default(null),
        /** Free chat messages per identity and UTC day (spec 5.9 and part 8: 10); then pageChat credits each. */
        freeMessagesPerDay: z.number().int().min(0).default(10),
        /** Rounds of tool calls one chat message may make before the model must answer. */
        maxToolSteps: z.number().int().min(1).max(32).default(6),
        /** How long one provider call may take. */
        timeoutMs: z.number().int().min(100).max(600_000).default(60_000),
        /**
         * Where an identity's provider credential may point its base URL (the node calls it): public hosts only unless
         * allowLoopback; allowHosts (exact, or `*.example.com`) narrows it. The operator's own provider is not limited.
         */
        baseUrls: z
          .object({ allowLoopback: z.boolean().default(false), allowHosts: z.array(z.string().min(1).max(253)).default([]) })
          .strict()
          .default({ allowLoopback: false, allowHosts: [] }),
      })
      .strict()
      .default({ provider: null, freeMessagesPerDay: 10, maxToolSteps: 6, timeoutMs: 60_000, baseUrls: { allowLoopback: false, allowHosts: [] } }),
    /** The warnings of /api/health (health/monitor.ts; docs/operating.md, "Warnings"): how often they are checked, and their bounds. */
    health: z
      .object({
        /** Ticks between two rounds of checks (4 ≈ 3 s). */
        checkTicks: z.number().int().min(1).max(10_000).default(4),
        /** Seconds without a refused handshake (or a stale event) before that warning clears. */
        handshakeWindowSeconds: z.number().int().min(1).max(86_400).default(120),
        /** Seconds with no mesh connection, bootstrap peers configured, before MESH_NO_PEERS. */
        noPeersGraceSeconds: z.number().int().min(0).max(86_400).default(30),
        /** Ticks a peer's tick event may be stamped away from this node's clock on arrival (2 ≈ 1.6 s). */
        clockSkewTicks: z.number().int().min(1).max(120).default(2),
        /** DISK_LOW when the data dir's file system has less than this share free … */
        diskFreeMinPercent: z.number().min(0).max(100).default(5),
        /** … or fewer bytes free than this (512 MiB). */
        diskFreeMinBytes: z
          .number()
          .int()
          .min(0)
          .default(512 * 2 ** 20),
        /** BACKLOG_GROWING when an outbox holds this many items, or grew at this many checks without shrinking between. */
        backlogMax: z.number().int().min(1).max(10_000_000).default(1000),
        backlogGrowthChecks: z.number().int().min(1).max(10_000).default(20),
        /** Seconds between TCP probes of the mesh.announce addresses. */
        announceProbeSeconds: z.number().int().min(1).max(86_400).default(60),
      })
      .strict()
      .default({
        checkTicks: 4,
        handshakeWindowSeconds: 120,
        noPeersGraceSeconds: 30,
        clockSkewTicks: 2,
        diskFreeMinPercent: 5,
        diskFreeMinBytes: 512 * 2 ** 20,
        backlogMax: 1000,
        backlogGrowthChecks: 20,
        announceProbeSeconds: 60,
      }),
    /** Prometheus metrics (GET /metrics) on a listener of their own, never the API port; off when port is null. */
    metrics: z
      .object({
        /** Port of the metrics listener: null = off, 0 = any free port. */
        port: z.number().int().min(0).max(65535).nullable().default(null),
        /** Interface of the metrics listener (loopback by default: a scraper on the same host or a tunnel). */
        host: z.string().min(1).default('127.0.0.1'),
      })
      .strict()
      .default({ port: null, host: '127.0.0.1' }),
  })
  .strict()
  // A mesh node tells its peers its URL (tick events) and they forward its identities' requests there: listening on
  // every interface, the default http://host:port would be http://0.0.0.0:… — the peer's own machine, not this one.
  .refine((c) => c.publicUrl !== null || c.mesh.secret === null || !UNSPECIFIED_HOSTS.has(c.host), {
    message: 'a mesh node listening on every interface (host 0.0.0.0 or ::) needs publicUrl (SVC_PUBLIC_URL), the URL its peers reach it at',
    path: ['publicUrl'],
  });

export type NodeConfig = z.infer<typeof configSchema>;

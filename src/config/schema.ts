// The node's configuration, validated with zod. Layers: config/default.json < --config FILE < SVC_* env < CLI flags.
import { z } from 'zod';
import { multiaddr } from '@multiformats/multiaddr';

function isMultiaddr(text: string): boolean {
  try {
    multiaddr(text);
    return text.startsWith('/');
  } catch {
    return false;
  }
}

export const configSchema = z
  .object({
    host: z.string().min(1),
    port: z.number().int().min(0).max(65535),
    dataDir: z.string().min(1),
    /** HMAC key for receipts; when null the node generates one and keeps it in the data dir. */
    receiptSecret: z.string().min(16).nullable(),
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
        proveperMinute: z.number().int().positive(),
        demoKeyPerDay: z.number().int().positive(),
        anonymousComputePerDay: z.number().int().positive(),
        enforceDailyQuota: z.boolean(),
        freeDailyComputations: z.number().int().positive(),
        tier: z.enum(['free', 'standard', 'professional']),
        /** Credits a new identity starts with (the daily-claim amount). */
        initialCredits: z.number().int().min(0),
        /** Solver runs one caller (ZID, demo key, anonymous IP) may have waiting for a worker; beyond it 429. */
        maxQueuedRunsPerIdentity: z.number().int().min(1).max(1000),
      })
      .strict(),
    mesh: z
      .object({
        p2pPort: z.number().int().min(0).max(65535),
        bootstrap: z.array(z.string().min(1).refine(isMultiaddr, 'each bootstrap peer must be a multiaddr such as /ip4/127.0.0.1/tcp/4001/p2p/<peer id>')),
        secret: z.string().min(16).nullable(),
        tickEvery: z.number().int().min(1).max(1000),
        /** Oracle snapshots kept (one per 4 ticks; 10 000 ≈ 8.6 h); the oldest are deleted as new ones are written. */
        snapshotRetention: z.number().int().min(1).max(1_000_000),
      })
      .strict(),
  })
  .strict();

export type NodeConfig = z.infer<typeof configSchema>;

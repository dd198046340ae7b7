// What the routes get from the composition root (node.ts): services only, never the store directly.
import type { Logger } from 'pino';
import type { Clock } from '../kernel/clock.js';
import type { NodeConfig } from '../config/schema.js';
import type { ComputeService } from '../compute/service.js';
import type { IdentityService } from '../identity/service.js';
import type { ChainService } from '../chain/service.js';
import type { Ledger } from '../tally/ledger.js';
import type { QuotaService } from '../tally/quota.js';
import type { Counters } from '../store/counters.js';
import type { DemoKeys } from '../identity/demo.js';
import type { MeshService } from '../mesh/service.js';
import type { Grants } from '../tally/grants.js';
import type { TierBook } from '../tally/tiers.js';
import type { ClaimService } from '../tally/claim.js';
import type { Folders } from '../tally/folders.js';
import type { Transfers } from '../tally/transfers.js';

export interface HttpServices {
  config: NodeConfig;
  logger: Logger;
  clock: Clock;
  compute: ComputeService;
  identity: IdentityService;
  chain: ChainService;
  ledger: Ledger;
  quota: QuotaService;
  counters: Counters;
  grants: Grants;
  /** Identities' tiers and what each tier allows. */
  tiers: TierBook;
  claims: ClaimService;
  folders: Folders;
  transfers: Transfers;
  demoKeys: DemoKeys;
  nodeId: () => string;
  /** This node's HTTP URL as other nodes reach it. */
  publicUrl: () => string;
  /** A mesh event signed by this node's Ed25519 key at the current tick. */
  signMeshEvent: (type: string, body: unknown) => Promise<import('../mesh/wire.js').MeshEvent>;
  /** The mesh; null only in configurations without one (never in a running node). */
  mesh: MeshService | null;
  /** Bonds and modes (consensus/); absent only in configurations built without them. */
  contribution?: { bonds: import('../consensus/bonds.js').BondService; modes: import('../consensus/modes.js').ModeService };
  /** Challenges, votes, verdicts and their ledger effects (consensus/); absent only in configurations built without them. */
  consensus?: { challenges: import('../consensus/challenges.js').ChallengeService; slashing: import('../consensus/slashing.js').SlashingService };
  /** The record of published results and the publish settings (tally/record.ts, tally/publish-settings.ts). */
  record?: { results: import('../tally/record.js').ResultRecords; publish: import('../tally/publish-settings.js').PublishSettings };
  /** Stream channels (streams/channels.ts); absent only in configurations built without them. */
  streams?: import('../streams/channels.js').StreamService;
  /** Batch computations (compute/batches.ts). */
  batches?: import('../compute/batches.js').BatchService;
  /** Webhooks (webhooks/); absent only in configurations built without them. */
  webhooks?: import('../webhooks/service.js').Webhooks;
  /** AI chat (llm/): the chat service and where its providers come from; absent in configurations built without it. */
  llm?: {
    chat: import('../llm/chat.js').ChatService;
    directory: import('../llm/directory.js').ProviderDirectory;
    credentials?: import('../llm/credentials.js').CredentialStore;
  };
  /** Reactors (reactor/service.ts); absent only in configurations built without them. */
  reactor?: import('../reactor/service.js').ReactorService;
  /** Agents (agents/runtime.ts) and their SSE stream's open count and heartbeat. */
  agents?: import('../agents/runtime.js').AgentRuntime;
  agentStream?: { count: import('./routes/agents.js').StreamCount; heartbeatMs: number };
  /** Slots of keyless long-lived streams (stream-slots.ts), shared with /ws/stream; absent: the pulse stream makes its own from limits.*. */
  keylessStreams?: import('./stream-slots.js').StreamSlots;
  /** Genesis documents (genesis/service.ts). */
  genesis?: import('../genesis/service.js').GenesisService;
  /** Live values of the MMIO registers this node shows (http/routes/mmio.ts). */
  mmio?: import('./routes/mmio.js').MmioSources;
  /** Prometheus metrics (http/metrics.ts): requests by route, status and latency. Absent: not counted. */
  metrics?: import('./metrics.js').NodeMetrics;
  /**
   * Charges made at a caller's home for an action at a machine's home elsewhere (tally/remote-charges.ts): the payer's
   * records, the machine home's outcomes, and the nudge that asks about a charge now.
   */
  remoteCharges?: {
    payer: import('../tally/remote-charges.js').RemoteCharges;
    outcomes: import('../tally/charge-outcomes.js').ChargeOutcomes;
    settleSoon: (nonce: string, machineHome: string) => void;
  };
  /** Extra route groups (the mesh) register themselves here. */
  extraRouters?: ((router: import('@koa/router').default) => void)[];
}

// Success bodies of routes, as zod schemas that routes declare with responds() (validate.ts) for the OpenAPI
// document. Loose objects: the fields named are promised (spec part 9 item 4: responses grow, fields keep their
// meaning); more may come. test/http/openapi.test.ts checks real responses against them.
import { z } from 'zod';
import { VERIFY_REASONS, type VerifyReason } from '../compute/verify-result.js';
import { WARNING_CODES } from '../health/warnings.js';

const int = z.number().int();
const peerId = z.string().min(1);
const tick = int.min(0);

export const healthResponse = z.looseObject({
  ok: z.literal(true),
  status: z.literal('live'),
  node: peerId,
  kernel_version: z.string(),
  svcond: tick,
  uptime_s: int.min(0),
  warnings: z.array(z.object({ code: z.enum(WARNING_CODES), message: z.string(), since: z.string(), count: int.min(1) })),
});

export const discoveryResponse = z.looseObject({
  ok: z.literal(true),
  node: peerId,
  kernel_version: z.string(),
  counts: z.looseObject({ libraries: int, categories: int, solvers: int, keys: int }),
  endpoints: z.array(z.object({ method: z.string(), path: z.string() })),
  not_here: z.array(z.string()),
});

const clockFields = {
  zeqond_sec: z.number(),
  zeqond_sec_exact: z.number(),
  zeqond_ns: int,
  pulse_hz: z.number(),
  svcond: tick,
  phase: z.number().min(0).lt(1),
  unix_ns: z.string().regex(/^[0-9]+$/),
};

export const pulseResponse = z.looseObject({ ...clockFields, R_t: z.number(), next_tick_in_ms: z.number().min(0), node: peerId });
export const clockResponse = z.looseObject(clockFields);
export const fieldStatusResponse = z.looseObject({
  node: peerId,
  svcond: int,
  phase: z.number().min(0).max(1),
  R_t: z.number(),
  modulation: z.looseObject({ amplitude: z.number(), pulse_hz: z.number(), phi0: z.number(), deviation: z.number().min(0), within_bound: z.boolean() }),
  gate: z.looseObject({ tolerance: z.number(), precision_bound: z.number() }),
  parity: z.looseObject({ variance_threshold: z.number() }),
  mesh: z.looseObject({ enabled: z.boolean(), coherenceScore: z.number().nullable(), peers: int, recentGossipCount: int }),
});

export const demoKeyResponse = z.looseObject({ key: z.string().startsWith('sk_'), plan: z.literal('demo'), dailyLimit: int });

const step = z.looseObject({ step: int, name: z.string(), passed: z.boolean() });

export const proveResponse = z.looseObject({
  receipt: z.looseObject({
    keyPrefix: z.literal('PROVE'),
    domain: z.string(),
    operatorIds: z.array(z.string()),
    value: z.number(),
    unit: z.string(),
    steps: z.array(step),
    R_t: z.number(),
    svcond: tick,
  }),
  signature: z.string().regex(/^[0-9a-f]{64}$/),
  algorithm: z.literal('HMAC-SHA256'),
});

export const proveVerifyResponse = z.looseObject({
  valid: z.boolean(),
  R_t: z.number().nullable(),
  svcond: tick.nullable(),
  operatorIds: z.array(z.string()),
  keyPrefix: z.literal('PROVE'),
});

export const operatorsResponse = z.looseObject({ count: int, operators: z.array(z.looseObject({ id: z.string() })) });
export const categoriesResponse = z.looseObject({ categories: z.array(z.looseObject({ domain: z.string(), operators: z.array(z.string()) })) });

export const kernelResponse = z.looseObject({
  version: z.string(),
  interface_version: z.string(),
  clock: z.looseObject({ pulse_hz: z.number(), zeqond_ns: int }),
  rules: z.array(z.looseObject({ id: z.string(), title: z.string(), text: z.string() })),
  domains: z.array(z.string()),
  operators: int,
  solvers: z.array(z.string()),
});

export const capabilitiesResponse = z.looseObject({
  node: peerId,
  kernel_version: z.string(),
  storage: z.string(),
  methods: z.array(z.string()),
  solvers: z.array(z.looseObject({ id: z.string(), kind: z.string(), endpoint: z.string() })),
  limits: z.looseObject({}),
  mesh: z.looseObject({ enabled: z.boolean() }),
});

export const libSearchResponse = z.looseObject({ query: z.string() });

/** The dashboard's data (GET /api/system/stats): machine-stats.ts's sample and the node's own bond, seals and warnings. */
export const systemStatsResponse = z.looseObject({
  svcond: tick,
  mesh: z.boolean(),
  mode: z.string(),
  bond: z.looseObject({ bond_id: z.string(), envelopes: int.min(0), state: z.enum(['active', 'released', 'slashed']), slashed: z.boolean() }).nullable(),
  seals: z.looseObject({ sealed_here: int.min(0), recent: z.array(z.looseObject({ result_id: z.string(), kind: z.string(), svcond: tick })) }),
  warnings: z.array(z.looseObject({ code: z.string(), message: z.string(), since: z.string(), count: int.min(0) })),
  machine: z.looseObject({
    sampled_at_ms: z.number(),
    window_s: z.number().min(0),
    requests: z.looseObject({
      total: int.min(0),
      by_group: z.record(z.string(), z.looseObject({ total: int.min(0) })),
      latency_ms: z.looseObject({ p50: z.number().nullable(), p99: z.number().nullable() }),
    }),
    cpu: z.looseObject({ percent: z.number().min(0) }),
    memory: z.looseObject({ rss_bytes: int.min(0), heap_used_bytes: int.min(0), heap_total_bytes: int.min(0) }),
    disk: z.looseObject({ data_dir_bytes: int.min(0), free_bytes: z.number().nullable(), total_bytes: z.number().nullable() }),
    event_loop_ms: z.looseObject({ p50: z.number(), p99: z.number(), max: z.number() }),
    queues: z.record(z.string(), int.min(0)),
    peers: z.array(z.looseObject({ peer_id: z.string(), health: z.enum(['live', 'late', 'silent', 'dead', 'misconfigured']) })),
    sealed_here: int.min(0),
  }),
  history: z.array(z.looseObject({ at_ms: z.number() })),
});

/** A sealed result (spec 2.2): the CKO, the receipts, the envelope and the charge. */
export const sealedResponse = z.looseObject({
  result_id: z.string(),
  result_digest: z.string().regex(/^[0-9a-f]{64}$/),
  kind: z.string(),
  node: peerId,
  kernel_version: z.string(),
  svcond: tick,
  phase: z.number(),
  R_t: z.number(),
  value: z.unknown(),
  unit: z.string().nullable(),
  svcProof: z.string(),
  cko: z.looseObject({ svcProof: z.string(), svcond: tick }),
  svcond_receipt: z.looseObject({ hmac: z.string(), svcond: tick }),
  envelope: z.looseObject({ token_id: z.string(), tick: tick }).nullable(),
  tally_charge: z.looseObject({ action: z.string(), charged: z.number() }).nullable(),
  executed_by: z.looseObject({ node: z.string() }).nullable(),
});

const verifyReason = z.enum(Object.keys(VERIFY_REASONS) as [VerifyReason, ...VerifyReason[]]);
export const verifyResponse = z.looseObject({
  valid: z.boolean(),
  proof_valid: z.boolean(),
  receipt_valid: z.boolean(),
  seal_signature_valid: z.boolean(),
  result_digest_valid: z.boolean(),
  sealed_by: z.string().nullable(),
  sealer_known: z.boolean(),
  result_id: z.unknown(),
  svcond: z.unknown(),
  reason: verifyReason.nullable(),
  reasons: z.array(z.object({ code: verifyReason, message: z.string() })),
});

export const registerV3Response = z.looseObject({
  zid: z.string().regex(/^zid_[0-9a-f]{32}$/),
  state_machine: z.looseObject({ slug: z.string(), owner: z.string(), is_public: z.boolean() }),
  admin_key: z.string().startsWith('zsm_'),
});

export const balanceResponse = z.looseObject({ zid: z.string(), free: z.number(), paid: z.number(), total: z.number() });

export const costsResponse = z.looseObject({
  costs: z.array(z.looseObject({ action: z.string(), credits: z.number(), served: z.boolean() })),
  split: z.looseObject({ burned_percent: z.number(), foundation_percent: z.number() }),
});

export const tiersResponse = z.looseObject({
  tiers: z.array(z.looseObject({ tier: z.string(), daily_allowance: z.number(), time_limit_seconds: z.number() })),
  daily_allowance_enforced: z.boolean(),
});

/** How other nodes reach a node (mesh/reachability.ts). */
const reachability = z.looseObject({
  reachability: z.enum(['public', 'relayed', 'private', 'unknown']),
  relays: z.array(z.string()),
  announce: z.array(z.string()),
});

export const meshStatusResponse = z.looseObject({
  nodeId: peerId,
  enabled: z.boolean(),
  coherenceScore: z.number().nullable(),
  peers: z.array(z.looseObject({ peerId: z.string() })),
  meshSize: int,
  multiaddrs: z.array(z.string()),
  /** The floor of the tick interval, the interval the node's tick events declare now, and the nodes heard that set it. */
  tickEvery: int,
  every: int,
  nodesHeard: int,
  svcond: tick,
  reachability,
});

/** GET /api/mesh/peers: the persisted peer store with each peer's connection and score. */
export const meshPeersResponse = z.looseObject({
  nodeId: peerId,
  reachability,
  connections: z.looseObject({ target: int, max: int, open: int, relayed: int, known: int }),
  peers: z.array(
    z.looseObject({
      peerId: z.string(),
      addrs: z.array(z.string()),
      lastSeen: int.nullable(),
      lastFailure: int.nullable(),
      failures: int,
      connection: z.enum(['direct', 'relayed']).nullable(),
      score: z.number().nullable(),
      url: z.string().nullable(),
      lastTick: tick.nullable(),
    }),
  ),
});

/** A signed network snapshot of the transparency oracle (one every 4 ticks). */
export const networkSnapshot = z.looseObject({
  svcond: tick,
  node: peerId,
  sealedCount: int.min(0),
  chainHeadsDigest: z.string(),
  kernelVersion: z.string(),
  peers: z.array(
    z.looseObject({
      peerId: z.string(),
      url: z.string().nullable(),
      lastTick: tick.nullable(),
      sealedCount: int.nullable(),
      chainHeadsDigest: z.string().nullable(),
    }),
  ),
  signature: z.string(),
});

export const transparencyHistoryResponse = z.looseObject({ count: int, snapshots: z.array(networkSnapshot) });

export const meshEventsResponse = z.looseObject({
  count: int,
  order: z.enum(['arrival', 'tick']),
  events: z.array(
    z.looseObject({
      id: z.string(),
      topic: z.string(),
      via: z.enum(['gossip', 'http', 'self']),
      receivedSvcond: tick,
      arrival: int,
      event: z.looseObject({ type: z.string(), sender: peerId, svcond: tick, body: z.unknown(), signature: z.string() }),
    }),
  ),
});

export const challengeListResponse = z.looseObject({
  total: int,
  limit: int,
  offset: int,
  state: z.string().nullable(),
  counts: z.record(z.string(), z.number()),
  items: z.array(z.looseObject({ challenge_id: z.string(), state: z.string(), result_id: z.string(), votes: int, svcond: tick })),
});

export const contributionPolicyResponse = z.looseObject({
  bond: z.looseObject({ envelopes: int, term_days: int }),
  modes: z.looseObject({ values: z.array(z.enum(['idle', 'contributing', 'experimenting'])) }),
  committee: z.looseObject({ size: int, quorum: int, settle_ticks: int }),
  challenge: z.looseObject({ stake: z.number(), deadline_ticks: int }),
  outcomes: z.array(z.looseObject({ verdict: z.string() })),
});

export const whoamiResponse = z.looseObject({
  kind: z.enum(['identity', 'demo', 'anonymous']),
  zid: z.string().optional(),
  machine: z.string().optional(),
});

export const contributeStatusResponse = z.looseObject({
  zid: z.string(),
  node: peerId,
  bonded: z.boolean(),
  bond: z.looseObject({ bond_id: z.string() }).nullable(),
  mode: z.enum(['idle', 'contributing', 'experimenting']),
});

export const chainValidationResponse = z.looseObject({
  slug: z.string(),
  valid: z.boolean(),
  rows: int.min(0),
  head: z.string(),
  first_bad: z.object({ seq: int, reason: z.string() }).nullable(),
});

/** A reactor as its routes show it (reactor.ts reactorView): open (201), state, step (with the step's figures). */
export const reactorResponse = z.looseObject({
  id: z.string().min(1),
  kind: z.enum(['solver', 'chain']),
  owner: z.string(),
  home: z.string(),
  step: int.min(0),
  opened_svcond: tick,
  last_svcond: tick.nullable(),
  last_result_id: z.string().nullable(),
  value: z.number().nullable(),
  unit: z.string().nullable(),
  state: z.unknown(),
});
export const reactorStepResponse = reactorResponse.extend({ ms: z.number().min(0), result: z.looseObject({}) });

/** A webhook as its routes show it (webhooks/registry.ts webhookView); registration adds the secret, shown once. */
export const webhookResponse = z.looseObject({
  id: z.string().min(1),
  url: z.string(),
  events: z.array(z.string()),
  headers: z.record(z.string(), z.string()),
  metadata: z.record(z.string(), z.unknown()),
  status: z.string(),
  last_delivery_at: z.string().nullable(),
  failure_count: int.min(0),
  created_at: z.string(),
});
export const webhookCreatedResponse = webhookResponse.extend({ secret: z.string().min(1), secret_notice: z.string() });
export const webhookListResponse = z.looseObject({ webhooks: z.array(webhookResponse) });

/** GET /api/chain/:slug/checkpoint: the signed head of a chain's log (chain/checkpoints.ts). */
export const checkpointResponse = z.looseObject({
  format: z.literal('svc-chain-checkpoint/1'),
  slug: z.string().min(1),
  home: peerId,
  tree_size: int.min(0),
  root_hash: z.string().regex(/^[0-9a-f]{64}$/),
  svcond: tick,
  signature: z.string().min(1),
});

/** POST /api/svc/shift: the metric shift a variance applies at a phase (kernel/parity.ts). */
export const shiftResponse = z.looseObject({
  applied: z.boolean(),
  variance: z.number(),
  threshold: z.number(),
  elapsed_ticks: z.number(),
  delta_alpha: z.number(),
  phase: z.number(),
  svcond: tick,
});

/** An embed key as GET/DELETE /api/chain/:slug/embed-keys answer it: its id and times, never the key. */
const embedKeyItem = z
  .object({
    key_id: z.string().regex(/^zsm_pub_[0-9a-f]{8}$/),
    kind: z.literal('zsm_pub'),
    minted_by: z.string().nullable(),
    created_at: z.string(),
    revoked_at: z.string().nullable(),
  })
  .strict();

export const embedKeyResponse = embedKeyItem.extend({ slug: z.string().min(1) }).strict();

export const embedKeysResponse = z
  .object({ slug: z.string().min(1), total: int.min(0), limit: int.min(1), offset: int.min(0), items: z.array(embedKeyItem) })
  .strict();

/** GET /api/chain/:slug/tally/envelopes: the envelopes sealed with rows of the machine, newest first. */
export const machineEnvelopesResponse = z
  .object({
    slug: z.string().min(1),
    total: int.min(0),
    limit: int.min(1),
    offset: int.min(0),
    items: z.array(
      z.object({ seq: int.min(1), token_id: z.string().regex(/^env_[0-9a-f]{24}$/), envelope: z.looseObject({ token_id: z.string() }).nullable() }).strict(),
    ),
  })
  .strict();

/** POST /api/mesh/chain-caller: a `chain.caller` mesh event signed by the identity's home (http/chain-delegation.ts). */
export const chainCallerResponse = z
  .object({
    type: z.literal('chain.caller'),
    sender: peerId,
    svcond: tick,
    body: z.object({
      zid: z.string(),
      key_id: z.string(),
      method: z.string(),
      path: z.string(),
      body_sha256: z.string().regex(/^[0-9a-f]{64}$/),
      nonce: z.string().regex(/^[0-9a-f]{32}$/),
      /** For a charged route (a contract transition): what the caller's home charged, and the machine's home it is good at. */
      charge: z
        .object({
          action: z.string(),
          cost: z.number().int(),
          charged: z.number().int(),
          burned: z.number().int(),
          foundation: z.number().int(),
          funded_by: z.enum(['free', 'paid']),
          machine_home: peerId,
        })
        .optional(),
    }),
    signature: z.string().min(1),
  })
  .strict();

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

/** POST /api/playground/compute: the same computation, stamped and signed but not sealed (no id, envelope or charge). */
export const playgroundResponse = sealedResponse.extend({
  result_id: z.null(),
  envelope: sealedResponse.shape.envelope.optional(),
  tally_charge: sealedResponse.shape.tally_charge.optional(),
  executed_by: sealedResponse.shape.executed_by.optional(),
});

/** POST /api/svc/auto: the solver the query routed to and its sealed result. */
export const autoResponse = z.looseObject({
  solver: z.string(),
  confidence: z.number(),
  matched: z.array(z.string()),
  ignored_constants: z.array(z.string()),
  result: sealedResponse,
});

/** POST /api/svc/lattice: an operator chain swept over one input, signed. */
export const latticeResponse = z.looseObject({
  kind: z.literal('lattice'),
  domain: z.string(),
  operators: z.array(z.string()),
  sweep: z.looseObject({ key: z.string(), values: z.array(z.number()) }),
  values: z.array(z.number()),
  unit: z.string(),
  svcond: tick,
  svcProof: z.string(),
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
  /** false: no mesh secret, the node runs alone (no peers, no connections). */
  enabled: z.boolean(),
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

const isoTime = z.string().describe('ISO 8601 time');
const zidString = z.string().regex(/^zid_[0-9a-f]{32}$/);

/** Identity routes (routes/identity.ts). */
export const registerResponse = z.looseObject({ zid: zidString, message: z.string() });
export const sessionResponse = z.looseObject({ zid: zidString, expiresAt: isoTime });
export const okResponse = z.looseObject({ ok: z.literal(true) });
export const sessionCheckResponse = z.looseObject({ valid: z.boolean(), zid: zidString.nullable(), expiresAt: isoTime.nullable() });
export const sessionKeyResponse = z.looseObject({ sessionKey: z.string().min(1), expiresAt: isoTime });
export const apiKeyMintedResponse = z.looseObject({ key: z.string().min(1), key_id: z.string(), kind: z.string(), plan: z.string(), message: z.string() });
export const saltResponse = z.looseObject({
  email: z.string(),
  salt: z.string(),
  algorithm: z.literal('scrypt'),
  params: z.looseObject({ N: int, r: int, p: int, keylen: int }),
});
export const demoKeyMintedResponse = demoKeyResponse.extend({ message: z.string() });
/** A key as listed and revoked (routes/identity.ts keyView): never the key nor its digest. */
export const keyViewResponse = z.looseObject({
  key_id: z.string(),
  kind: z.string(),
  scope: z.enum(['identity', 'machine', 'embed']),
  slug: z.string().nullable(),
  plan: z.string(),
  created_at: isoTime.nullable(),
  expires_at: isoTime.nullable(),
  last_used_at: isoTime.nullable(),
  revoked_at: isoTime.nullable(),
});
export const keyListResponse = z.looseObject({ zid: zidString, total: int.min(0), keys: z.array(keyViewResponse) });
export const keyMintedResponse = keyViewResponse.extend({ key: z.string().min(1), message: z.string() });

/** A mesh event signed by a node (mesh/events.ts): what node-to-node routes answer. */
export const signedMeshEventResponse = z.looseObject({ type: z.string(), sender: peerId, svcond: tick, body: z.unknown(), signature: z.string().min(1) });

/** A charge as a sealed answer shows it (records/types.ts TallyCharge). */
const tallyCharge = z.looseObject({ action: z.string(), cost: z.number(), charged: z.number(), funded_by: z.string() });
/** A row of a machine's audit log (chain/service.ts AuditRow). */
const auditRow = z.looseObject({
  seq: int.min(0),
  svcond: tick,
  transitionType: z.string(),
  payload_sha256: z.string(),
  prev_hash: z.string(),
  hash: z.string(),
});
const hex64 = z.string().regex(/^[0-9a-f]{64}$/);
const checkpoint = z.looseObject({ slug: z.string(), home: peerId, tree_size: int.min(0), root_hash: hex64, svcond: tick, signature: z.string() });

/** Chain routes (routes/chain.ts). */
export const machineCreatedResponse = z.looseObject({
  slug: z.string(),
  owner: zidString,
  genesis_svcond: tick,
  is_public: z.boolean(),
  admin_key: z.string().startsWith('zsm_'),
  tally_charge: tallyCharge.nullable(),
  message: z.string(),
});
export const exploreResponse = z.looseObject({ slug: z.string(), head: z.looseObject({ seq: int.min(0), hash: z.string() }), rows: z.array(auditRow) });
export const machineListResponse = z.looseObject({
  zid: zidString.nullable(),
  total: int.min(0),
  limit: int,
  offset: int,
  node: peerId,
  items: z.array(z.looseObject({ slug: z.string(), status: z.enum(['active', 'lost']) })),
});
export const machineSettingsResponse = z.looseObject({
  slug: z.string(),
  owner: zidString,
  genesis_svcond: tick,
  is_public: z.boolean(),
  inject_agent_rail: z.boolean(),
  inject_pulse_orb: z.boolean(),
  roles: z.record(z.string(), z.string()),
  home: peerId,
  status: z.enum(['active', 'lost']),
});
export const machineChargesResponse = z.looseObject({
  slug: z.string(),
  total: int.min(0),
  credits_charged: z.number(),
  limit: int,
  offset: int,
  items: z.array(z.looseObject({})),
});
export const machineTallySummaryResponse = z.looseObject({
  slug: z.string(),
  owner: zidString,
  charges: int.min(0),
  credits_charged: z.number(),
  envelopes: int.min(0),
  rows: int.min(0),
});
export const chainEventResponse = z.looseObject({ slug: z.string(), row: auditRow, envelope: z.looseObject({ token_id: z.string() }).optional() });
/** A deployed contract as its routes show it (chain/contracts.ts ContractView). */
export const contractResponse = z.looseObject({
  contract_id: z.string(),
  slug: z.string(),
  name: z.string(),
  state: z.string(),
  vars: z.record(z.string(), z.unknown()),
  transitions_applied: int.min(0),
  deployed_seq: int.min(0),
});
export const contractDeployedResponse = contractResponse.extend({ row: auditRow });
export const contractDetailResponse = contractResponse.extend({ definition: z.looseObject({ states: z.array(z.string()) }) });
export const contractListResponse = z.looseObject({
  slug: z.string(),
  contracts: z.array(z.looseObject({ contract_id: z.string(), name: z.string(), deployed_seq: int.min(0) })),
});
export const transitionResponse = contractResponse.extend({
  from: z.string(),
  event: z.string(),
  transition: z.unknown(),
  /** The zid that sent the event: the row commits it, and a `{"caller": "zid"}` operand read it. */
  caller: z.string(),
  row: auditRow,
  tally_charge: tallyCharge.nullable(),
});
export const embedKeyMintedResponse = z.looseObject({
  slug: z.string(),
  embed_key: z.string().startsWith('zsm_pub_'),
  key_id: z.string(),
  kind: z.literal('zsm_pub'),
  message: z.string(),
});
export const embedRowResponse = z.looseObject({ slug: z.string(), row: auditRow });
export const inclusionProofResponse = z.looseObject({
  slug: z.string(),
  seq: int.min(1),
  leaf_index: int.min(0),
  tree_size: int.min(0),
  encoding: z.enum(['hex', 'base64']),
  leaf_hash: z.string(),
  audit_path: z.array(z.string()),
  root_hash: z.string(),
  checkpoint: checkpoint.nullable(),
});
export const consistencyProofResponse = z.looseObject({
  slug: z.string(),
  tree_size_1: int.min(0),
  tree_size_2: int.min(0),
  encoding: z.enum(['hex', 'base64']),
  root_hash_1: z.string(),
  root_hash_2: z.string(),
  consistency_path: z.array(z.string()),
});
export const chainExportResponse = z.looseObject({
  format: z.string(),
  slug: z.string(),
  home: peerId,
  rows: z.array(auditRow),
  checkpoints: z.array(checkpoint),
});
export const forksResponse = z.looseObject({
  count: int.min(0),
  recent: z.array(z.looseObject({ slug: z.string(), home: z.string(), tree_size: int })),
  evidence: z.array(z.looseObject({})),
});

/** Mesh identity routes (routes/mesh-identity.ts). */
export const meshIdentityResponse = z.looseObject({ nodeId: peerId, zid: z.string(), verified: z.boolean(), home: peerId.nullable(), svcond: tick });
export const meshMachineViewResponse = z.looseObject({ nodeId: peerId, slug: z.string(), home: peerId.nullable() });
export const meshVerifyResponse = z.looseObject({
  zid: z.string(),
  verified: z.boolean(),
  consensusReached: z.boolean(),
  coherenceScore: z.number().nullable(),
  quorum: int.min(1),
  meshNodes: z.array(z.looseObject({ nodeId: peerId, verified: z.boolean(), svcond: tick.nullable() })),
});

/** Custody (routes/custody.ts): where an identity's ledger is held, and how final what this node answers is. */
const custodyFinality = z.enum(['local', 'certified', 'held', 'none']);
export const custodyResponse = z.looseObject({
  zid: z.string(),
  epoch: int.min(0),
  home: peerId,
  custodians: z.array(peerId),
  certified_seq: int.min(0),
  finality: custodyFinality,
  balance: z.looseObject({ free: int, paid: int }).nullable(),
});
const signatureOf = z.looseObject({ node: peerId, signature: z.string() });
export const custodyEntriesResponse = z.looseObject({
  zid: z.string(),
  seq: int.min(0),
  finality: custodyFinality,
  entries: z.array(
    z.looseObject({
      entry: z.looseObject({ zid: z.string(), epoch: int, seq: int, prev_hash: z.string() }),
      hash: z.string(),
      signatures: z.array(signatureOf),
    }),
  ),
});

/** Mesh routes (routes/mesh.ts). */
export const gossipAcceptedResponse = z.looseObject({ accepted: z.boolean(), duplicate: z.boolean(), id: z.string() });
const dnsRecord = z.looseObject({ name: z.string(), peerId: peerId, url: z.string(), multiaddrs: z.array(z.string()), svcond: tick, registrar: peerId });
export const dnsRecordResponse = dnsRecord;
export const dnsRegisteredResponse = z.looseObject({ name: z.string(), won: z.literal(true), record: dnsRecord, winner: z.looseObject({ peerId: peerId }) });
export const dnsLookupResponse = z.looseObject({ peerId: z.string(), names: z.array(dnsRecord) });
export const dnsStatusResponse = z.looseObject({ names: int.min(0), maxNames: int, ownedByThisNode: int.min(0), conflicts: int.min(0) });
export const transparencyBreakdownResponse = z.looseObject({
  svcond: tick.nullable(),
  nodes: z.array(
    z.looseObject({
      nodeId: peerId,
      self: z.boolean(),
      url: z.string().nullable(),
      lastTick: tick.nullable(),
      sealedCount: int.nullable(),
      chainHeadsDigest: z.string().nullable(),
    }),
  ),
  totalSealed: int.min(0),
  reportingNodes: int.min(0),
});
export const transparencyRevenueResponse = z.looseObject({
  svcond: tick.nullable(),
  burned: z.number(),
  foundation: z.number(),
  total: z.number(),
  burnedShare: z.number().min(0).max(1),
  foundationShare: z.number().min(0).max(1),
});

/** MCP (routes/mcp.ts): the discovery JSON, and a JSON-RPC 2.0 exchange over Streamable HTTP. */
export const mcpDiscoveryResponse = z.looseObject({
  ok: z.literal(true),
  name: z.string(),
  node: peerId,
  url: z.string(),
  machine_hash: z.string(),
  mcp: z.looseObject({ endpoint: z.string(), transport: z.string(), methods: z.array(z.string()) }),
  counts: z.looseObject({ tools: int.min(1) }),
  tools: z.array(z.looseObject({ name: z.string(), description: z.string() })),
  not_here: z.array(z.string()),
});
export const jsonRpcRequest = z.looseObject({
  jsonrpc: z.literal('2.0'),
  id: z.union([z.string(), z.number()]).optional(),
  method: z.string().describe('initialize, tools/list, tools/call, …'),
  params: z.record(z.string(), z.unknown()).optional(),
});
export const jsonRpcResponse = z.looseObject({
  jsonrpc: z.literal('2.0'),
  id: z.union([z.string(), z.number()]).nullable(),
  result: z.record(z.string(), z.unknown()).optional(),
  error: z.looseObject({ code: int, message: z.string() }).optional(),
});

/** Chat and provider credentials (routes/llm.ts). */
export const chatResponse = z.looseObject({
  reply: z.looseObject({ role: z.literal('assistant'), content: z.string() }),
  provider: z.string(),
  model: z.string().nullable(),
  tool_calls: z.array(z.looseObject({})),
  steps: int.min(0),
  stopped: z.enum(['answer', 'step_cap']),
  result: z.looseObject({}).nullable(),
  free_message: z.boolean(),
  free_messages_left: int.min(0),
  tally_charge: tallyCharge.nullable(),
});
const credentialView = z.looseObject({
  id: z.string(),
  kind: z.string(),
  base_url: z.string().nullable(),
  model: z.string().nullable(),
  label: z.string().nullable(),
  prefix: z.string(),
  created_at: isoTime,
});
export const credentialResponse = credentialView;
export const credentialListResponse = z.looseObject({ credentials: z.array(credentialView) });
export const credentialDeletedResponse = z.looseObject({ id: z.string(), deleted: z.literal(true) });
export const credentialTestResponse = z.looseObject({
  id: z.string(),
  ok: z.boolean(),
  provider: z.string(),
  model: z.string().nullable(),
  error: z.looseObject({ code: z.string(), message: z.string() }).optional(),
});

/** Reactor reads (routes/reactor.ts; reactor/service.ts). */
const invariantReading = z.looseObject({
  name: z.string(),
  unit: z.string(),
  initial: z.number(),
  value: z.number(),
  drift: z.number(),
  rel_drift: z.number(),
});
export const reactorObserveResponse = z.looseObject({
  id: z.string(),
  step: int.min(0),
  svcond: tick,
  phase: z.number(),
  R_t: z.number(),
  measurement: z.looseObject({ value: z.unknown(), unit: z.string().nullable(), result_id: z.string().nullable(), svcond: tick.nullable() }).nullable(),
  invariant: invariantReading.nullable(),
  state: z.unknown(),
});
export const reactorTrajectoryResponse = z.looseObject({
  id: z.string(),
  total: int.min(0),
  offset: int.min(0),
  limit: int.min(1),
  items: z.array(z.looseObject({ step: int.min(1), svcond: tick, result_id: z.string() })),
});
export const reactorTelemetryResponse = z.looseObject({
  id: z.string(),
  solver: z.string().nullable(),
  steps: int.min(0),
  opened_svcond: tick,
  last_svcond: tick.nullable(),
  ticks: int.min(0),
  invariant: invariantReading.nullable(),
  ms_per_step: z.looseObject({ mean: z.number().nullable(), last: z.number().nullable() }),
});
export const reactorNextResponse = z.looseObject({
  id: z.string(),
  step: int.min(1),
  committed: z.literal(false),
  value: z.unknown(),
  unit: z.string().nullable(),
  state: z.unknown(),
  invariant: invariantReading.nullable(),
});

/** MMIO (routes/mmio.ts): a bank of registers with their live values. */
const register = z.looseObject({ name: z.string(), offset: int.min(0), type: z.string(), unit: z.string(), description: z.string(), value: z.unknown() });
export const mmioMapResponse = z.looseObject({
  version: z.string(),
  node: peerId,
  svcond: tick,
  registers: z.array(register),
  caller_registers: z.looseObject({ path: z.string(), auth: z.string(), registers: z.array(z.looseObject({ name: z.string() })) }),
});
export const mmioCallerResponse = z.looseObject({ version: z.string(), zid: zidString, svcond: tick, registers: z.array(register) });

/** POST /api/genesis/execute: the sealed genesis (201), or the same answer again for the same document (200). */
export const genesisResponse = z.looseObject({
  kind: z.literal('genesis'),
  document_digest: hex64,
  owner: zidString,
  slug: z.string(),
  svcond: tick,
  rows: z.array(z.looseObject({ seq: int })),
  replayed: z.boolean(),
  svcProof: z.string(),
});

/** An agent as its routes show it (routes/agents.ts agentView). */
export const agentResponse = z.looseObject({
  id: z.string(),
  owner: zidString,
  slug: z.string(),
  home: peerId,
  status: z.string(),
  stop_reason: z.string().nullable(),
  parent: z.string().nullable(),
  depth: int.min(0),
  children: z.array(z.string()),
  spawned_svcond: tick,
  next_svcond: tick.nullable(),
  ticks: int.min(0),
  state: z.unknown(),
  program: z.looseObject({ every: int.min(1) }),
});
export const agentListResponse = z.looseObject({ total: int.min(0), offset: int.min(0), limit: int.min(1), items: z.array(agentResponse) });

const wallet = z.looseObject({ free: z.number(), paid: z.number(), total: z.number() });
const envelope = z.looseObject({ token_id: z.string().regex(/^env_[0-9a-f]{24}$/) });

/** Tally routes (routes/tally.ts, ledger.ts, record.ts). */
export const folderMoveResponse = z.looseObject({
  zid: zidString,
  folder: z.string(),
  moved: int.min(0),
  folders: z.array(z.looseObject({ folder: z.string(), count: int.min(0) })),
});
/** A transfer as its sender and receiver see it (tally/transfer-wire.ts TransferView). */
export const transferResponse = z.looseObject({
  transfer_id: z.string(),
  state: z.string(),
  from: zidString,
  to: zidString,
  from_home: peerId,
  to_home: peerId,
  count: int.min(0),
  token_ids: z.array(z.string()),
  face_value_total: z.number(),
  picked_by: z.enum(['token_ids', 'count']),
  seed: z.string().nullable(),
  attempts: int.min(0),
  last_error: z.string().nullable(),
  created_svcond: tick,
  delivered_svcond: tick.nullable(),
});
export const claimStatusResponse = z.looseObject({
  claimable: z.boolean(),
  reason: z.enum(['claimable', 'already_claimed_today', 'balance_not_low', 'hourly_cap']),
  amount: z.number(),
  threshold: z.number(),
  difficulty: int.min(0),
  challenge: z.string().nullable(),
  balance: wallet,
  expires_unix_ms: int.nullable(),
});
export const claimResponse = z.looseObject({ zid: zidString, amount: z.number(), day: z.string(), balance: wallet, audit: auditRow });
export const grantResponse = z.looseObject({ grant_id: z.string(), zid: zidString, credits: z.number(), tier: z.string(), balance: wallet, audit: auditRow });
export const usageResponse = z.looseObject({
  used: int.min(0),
  bundle: z.number(),
  remaining: z.number().min(0),
  overage: z.number().min(0),
  enforced: z.boolean(),
  tier: z.string(),
  daily_allowance: z.number(),
  allowance_remaining: z.number().min(0),
});
export const envelopeListResponse = z.looseObject({
  zid: zidString,
  total: int.min(0),
  limit: int,
  offset: int,
  folder: z.string().nullable(),
  items: z.array(envelope),
});
export const envelopeFoldersResponse = z.looseObject({ zid: zidString, folders: z.array(z.looseObject({ folder: z.string(), count: int.min(0) })) });
export const publishSettingResponse = z.looseObject({
  zid: zidString,
  publish_default: z.boolean(),
  source: z.enum(['default', 'set']),
  since_svcond: tick.nullable(),
  node_default: z.boolean(),
  applies_to: z.string(),
});
export const recordResponse = z.looseObject({
  node: peerId,
  owner: zidString.nullable(),
  results: z.array(z.looseObject({ result_id: z.string() })),
});

/** Consensus routes (routes/consensus.ts, contribute.ts, pohc.ts). */
const challengeSummary = z.looseObject({
  challenge_id: z.string(),
  state: z.string(),
  result_id: z.string(),
  challenger: zidString,
  executor: peerId,
  bond_id: z.string(),
  claimed_digest: hex64,
  svcond: tick,
  deadline_svcond: tick,
  committee: z.array(peerId),
  votes: int.min(0),
  outcome: z.string().nullable(),
});
export const challengeOpenedResponse = challengeSummary.extend({ stake: z.number(), eligible: z.unknown(), quorum: int.min(1) });
export const challengeDetailResponse = z.looseObject({
  challenge_id: z.string(),
  state: z.string(),
  challenge: z.looseObject({ challenge: z.looseObject({ challenge_id: z.string() }), signature: z.string() }),
  committee: z.array(peerId),
  quorum: int.min(1),
  votes: z.array(z.looseObject({})),
  /** Member votes heard after their round's deadline + grace here: evidence, never counted. */
  votes_heard_late: z.array(z.looseObject({})),
  verdict: z.looseObject({ outcome: z.string() }).nullable(),
  ticks_taken: int.nullable(),
  stake: z.looseObject({ amount: z.number(), effect: z.string() }).nullable(),
  slashing: z.looseObject({}).nullable(),
  document: z.looseObject({}).nullable(),
});
const bondView = z.looseObject({
  bond_id: z.string(),
  node: peerId,
  token_ids_count: int.min(1),
  since_svcond: tick,
  term_days: z.number(),
  days_remaining: z.number(),
  attestation: z.unknown(),
});
export const bondResponse = bondView.extend({ zid: zidString, token_ids: z.array(z.string()), record: z.looseObject({ bond_id: z.string() }) });
export const releaseResponse = z.looseObject({ zid: zidString, bond_id: z.string(), released_svcond: tick, mode: z.string(), attestation: z.unknown() });
export const modeResponse = z.looseObject({
  zid: zidString,
  mode: z.enum(['idle', 'contributing', 'experimenting']),
  previous: z.string().nullable(),
  since_svcond: tick,
  bond_id: z.string().nullable(),
});
export const pohcResponse = z.looseObject({
  name: z.string(),
  guarantee: z.string(),
  topic: z.string(),
  events: z.record(z.string(), z.string()),
  committee: z.looseObject({ size: int, quorum: int }),
  fold: z.array(z.string()),
  lifecycle: z.array(z.looseObject({ from: z.string(), on: z.string(), to: z.string() })),
  effects: z.record(z.string(), z.string()),
  verify: z.string(),
});
export const pohcVerifyResponse = z.looseObject({
  valid: z.boolean(),
  challenge_id: z.string(),
  outcome: z.string(),
  folded_outcome: z.string().nullable(),
  deciding_digest: z.string().nullable(),
  tally: z.record(z.string(), z.number()),
  counted_votes: int.min(0),
  equivocators: z.array(z.string()),
  non_member_votes: int.min(0),
  bad_signatures: int.min(0),
  reasons: z.array(z.string()),
});

/** A stream channel as its routes show it (streams/channels.ts channelView). */
export const channelResponse = z.looseObject({
  id: z.string(),
  owner: zidString,
  inputs: z.unknown(),
  outputFormat: z.string(),
  template: z.string().nullable(),
  autotick: z.boolean(),
  tickIntervalZeqonds: z.number(),
  tick_count: int.min(0),
  last_result_id: z.string().nullable(),
  last_svcond: tick.nullable(),
  status: z.string(),
  created_svcond: tick,
});
export const channelCreatedResponse = channelResponse.extend({ key: z.string().startsWith('stk_'), key_notice: z.string() });
export const pullLinkResponse = z.looseObject({ url: z.string(), ws_url: z.string(), sig: z.string(), expires_at: isoTime });
export const secureOpenResponse = z.looseObject({
  session: z.string(),
  server_public_key: z.string(),
  algorithm: z.literal('AES-256-GCM'),
  key_agreement: z.literal('X25519'),
  kdf: z.looseObject({ name: z.string(), salt: z.string(), info: z.string(), length: int }),
  expires_at: isoTime,
});
export const secureFrameResponse = z.looseObject({ session: z.string(), seq: int.min(1), algorithm: z.literal('AES-256-GCM'), nonce: z.string() });

/** Webhook actions and deliveries (routes/webhooks.ts; webhooks/outbox.ts deliveryView). */
export const webhookDeletedResponse = z.looseObject({ id: z.string(), deleted: z.literal(true) });
export const webhookTestResponse = z.looseObject({ delivery_id: z.string(), test_id: z.string() });
export const deliveryListResponse = z.looseObject({
  deliveries: z.array(
    z.looseObject({
      id: z.string(),
      webhook_id: z.string(),
      event: z.string(),
      status: z.string(),
      attempt: int.min(0),
      response_status: int.nullable(),
      next_retry_at: isoTime.nullable(),
      created_at: isoTime,
    }),
  ),
});

/** Batches (routes/batch.ts; compute/batches.ts). */
export const batchAcceptedResponse = z.looseObject({ id: z.string(), status: z.literal('accepted'), total: int.min(1), status_url: z.string() });
export const batchResponse = z.looseObject({
  id: z.string(),
  status: z.enum(['running', 'complete']),
  completed: int.min(0),
  failed: int.min(0),
  total: int.min(1),
  percentage: z.number().min(0).max(100),
  results: z.array(z.looseObject({ index: int.min(0), status: z.string() })),
});

/** POST /api/svc/operator-spec: the accepted inputs of one operator, of a domain, or of a solver. */
const specInput = z.looseObject({ key: z.string(), unit: z.string() });
export const operatorSpecBody = z
  .object({
    operator: z.string().optional().describe('an operator id, e.g. MECH_KINETIC_ENERGY'),
    domain: z.string().optional().describe('a domain, e.g. mechanics'),
    solver: z.string().optional().describe('a solver id, e.g. heat'),
  })
  .strict();
export const operatorSpecResponse = z.union([
  z.looseObject({
    operator: z.string(),
    domain: z.string(),
    formula: z.string(),
    unit: z.string(),
    inputs: z.array(specInput),
    accepted_keys: z.array(z.string()),
  }),
  z.looseObject({ domain: z.string(), operators: z.array(z.string()), inputs: z.array(specInput), accepted_keys: z.array(z.string()) }),
  z.looseObject({ solver: z.string(), endpoint: z.string(), stateful: z.boolean(), inputs: z.array(specInput), accepted_keys: z.array(z.string()) }),
]);

/** GET /api/openapi.json: this document. */
export const openApiResponse = z.looseObject({
  openapi: z.literal('3.1.0'),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.looseObject({}),
});

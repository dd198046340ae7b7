// Compute: the pipeline of architecture.md §3 — the solver executor (a worker pool), the sealer, the compute service
// and batches. The engine (executor, sealer) stops after everything that runs on it; batches resume last at start
// (their items run through the whole node) and stop first.
import type { ExecutedBy } from '../records/types.js';
import { RESULTS_SEALED, SealAnnouncer, resultsSealedBody } from '../compute/announce.js';
import { BatchService } from '../compute/batches.js';
import { InlineExecutor, WorkerPoolExecutor, solverPoolSize, type SolverExecutor } from '../compute/executor.js';
import { InlineSealer, WorkerSealer, type Sealer } from '../compute/sealer.js';
import { ComputeService, type SolverPlacement } from '../compute/service.js';
import type { MeshService } from '../mesh/service.js';
import { bytesSigner, TOPICS, verifyText } from '../mesh/wire.js';
import { TICK_SECONDS_EXACT } from '../kernel/clock.js';
import { defaultRegistry } from '../solvers/registry.js';
import type { Ledger } from '../tally/ledger.js';
import type { QuotaService } from '../tally/quota.js';
import type { ResultRecords } from '../tally/record.js';
import type { TierBook } from '../tally/tiers.js';
import type { Webhooks } from '../webhooks/service.js';
import { batchRoutes } from '../http/routes/batch.js';
import { computeRoutes } from '../http/routes/compute.js';
import { Port, type Capability } from './capability.js';
import { verdictMark, type Foundation } from './foundation.js';

/** executed_by for a run; the request digest is asked for only when the node signs one (contributing). */
export type Attest = (requestDigest: () => string, resultDigest: string, svcond: number) => ExecutedBy | null;
/** Does the bond registry hold a bond (active or released) of this node, so its key is known to the mesh? */
export type RegisteredNode = (node: string) => boolean;
export type Offload = SolverPlacement['offload'];

export interface ComputeNeeds {
  ledger: Ledger;
  quota: QuotaService;
  tiers: TierBook;
  results: ResultRecords;
  webhooks: Webhooks;
  mesh: MeshService;
  /** executed_by of this node's own runs (the consensus wiring binds its operator's). */
  attest: Port<Attest>;
  /** Placement of solver runs on peers (the consensus wiring binds its offloader, when there is one). */
  offload: Port<Offload>;
  /** Nodes the bond registry holds (the consensus wiring binds it): known sealers even while silent. */
  registered: Port<RegisteredNode>;
}

/** The ports compute reads and the consensus wiring binds (it is wired after compute). */
export function computePorts(): Pick<ComputeNeeds, 'attest' | 'offload' | 'registered'> {
  return {
    attest: new Port<Attest>('compute.attest'),
    offload: new Port<Offload>('compute.offload'),
    registered: new Port<RegisteredNode>('compute.registered'),
  };
}

export interface ComputePart {
  executor: SolverExecutor;
  sealer: Sealer;
  compute: ComputeService;
  batches: BatchService;
  /** Stops the executor and the sealer. */
  engine: Capability;
  /** Resumes and stops batches. */
  batchRuns: Capability;
}

export function wireCompute(f: Foundation, needs: ComputeNeeds): ComputePart {
  const { config, options, metrics } = f;
  const { webhooks, mesh } = needs;
  const registry = options.registry ?? defaultRegistry();
  // An injected registry (tests) holds functions a worker cannot receive: run it inline.
  const executor = metrics.timed(
    options.registry || config.solverThreads === 0
      ? new InlineExecutor(registry)
      : new WorkerPoolExecutor({
          size: solverPoolSize(config.solverThreads),
          maxQueuedPerOwner: config.limits.maxQueuedRunsPerIdentity,
          maxQueued: config.limits.maxQueuedRuns,
        }),
  );
  const sealer = config.sealWorker ? new WorkerSealer(f.keys.receipt) : new InlineSealer(f.keys.receipt);
  const announcer = new SealAnnouncer({
    enabled: () => mesh.enabled,
    publish: (type, body) => mesh.publish(type, body, TOPICS.events),
    intervalMs: () => mesh.tickInterval() * TICK_SECONDS_EXACT * 1000,
    onError: (err) => f.logger.warn({ err: String(err) }, 'sealed-result announcement not published'),
  });
  const compute = new ComputeService({
    clock: f.clock,
    registry,
    executor,
    sealer,
    ledger: needs.ledger,
    quota: needs.quota,
    receiptKey: f.keys.receipt,
    sealSigner: bytesSigner(f.nodeIdentity.privateKey),
    // A sealer this node knows: itself, a peer whose signed tick event (with the mesh's handshake) it has heard, or a
    // node whose bond the registry holds (a bonded node silent for a while, or one whose bond was released).
    isKnownNode: (node) => node === f.nodeId || mesh.peers().some((p) => p.peerId === node && p.lastTick !== null) || (needs.registered.get()?.(node) ?? false),
    verifySignature: verifyText,
    proveKey: f.keys.prove,
    phi0: config.kernel.phi0,
    kernelVersion: config.kernel.version,
    tiers: needs.tiers,
    upgradeUrl: () => `${f.publicUrl.get() ?? ''}/api/tally/tiers`,
    timeLimitSeconds: options.timeLimitSeconds,
    nodeId: () => f.nodeId,
    // After the batch is durable (never before): announce the result to the mesh; send the webhooks it owes.
    // A result's value is shown (the dashboard) and announced only when its owner publishes it (private by default).
    onSealed: (summary, published) => {
      metrics.sealed(summary.kind);
      if (published) f.machine.sealed(summary);
      announcer.sealed(summary, published);
      if (webhooks.outbox.takeOwed(summary.result_id)) webhooks.dispatcher.kick();
    },
    onGateRefused: (kind) => metrics.gateRefused(kind),
    outbox: webhooks.outbox,
    onFailed: (failure) => webhooks.failed(failure),
    attest: (requestDigest, resultDigest, svcond) => needs.attest.get()?.(requestDigest, resultDigest, svcond) ?? null,
    records: needs.results,
    ...(config.contribution.offload !== 'never' && config.mesh.secret
      ? { placement: { offload: (req, gone) => needs.offload.get()?.(req, gone) ?? Promise.resolve(null) } }
      : {}),
  });
  const batches = new BatchService({
    store: f.store,
    clock: f.clock,
    compute,
    resultBytes: (id) => needs.ledger.getResultBytes(id),
    events: webhooks,
    onError: (batch, err) => f.logger.warn({ batch, err: String(err) }, 'batch failed'),
  });
  return {
    executor,
    sealer,
    compute,
    batches,
    engine: {
      name: 'compute',
      routes: [computeRoutes({ compute, verdictOf: (executedBy) => verdictMark(f, executedBy) })],
      // Checked at every node; nothing else to apply (the event is kept in the accepted-event log).
      gossip: [{ type: RESULTS_SEALED, body: resultsSealedBody, handle: () => undefined }],
      stop: async () => {
        announcer.stop();
        await executor.close();
        await sealer.close();
      },
    },
    batchRuns: {
      name: 'batches',
      routes: [batchRoutes({ batches, webhooks })],
      // Batches a stop left unfinished: their items without an outcome run now.
      start: async () => {
        await batches.resume();
      },
      stop: () => batches.stop(),
    },
  };
}

// Prometheus metrics of a node (prom-client): one registry per node (several nodes share a process in tests and in
// `svc-node cluster`), fed through seams the node's wiring (node/) connects — the store's onBatch, the compute service's onSealed and
// onGateRefused, a timing wrapper around the solver executor, the HTTP middleware here — and read at scrape time
// from the mesh's and the challenges' own counts. Domain services never import prom-client. libp2p's metrics come
// from @libp2p/prometheus-metrics into a registry of their own, scraped with this one.
//
// Served on a listener of its own (config `metrics.port`, on `metrics.host`, default 127.0.0.1; off when null), never
// on the public API port: metrics name routes, peers and volumes an operator may not want to publish.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Context, Middleware, Next } from 'koa';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { prometheusMetrics } from '@libp2p/prometheus-metrics';
import type { SolverExecutor } from '../compute/executor.js';
import type { MeshService } from '../mesh/service.js';
import type { ChallengeService } from '../consensus/challenges.js';
import { STATES } from '../consensus/challenge-lifecycle.js';
import { OUTCOMES } from '../consensus/verdict.js';
import { errorBody } from './errors.js';
import { traceIdSource } from './trace.js';
import type { ErrorCode } from '../kernel/errors.js';

/**
 * Node's default metrics (CPU, memory, GC, event-loop lag) describe the process, not a node: collected once per
 * process into a registry of their own and appended to every node's scrape. (Per node, each would also start an
 * event-loop-delay monitor that is never stopped: tests start hundreds of nodes in one process.)
 */
let processRegistry: Registry | null = null;
function processMetrics(): Registry {
  if (processRegistry === null) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/** Upper bounds (seconds) of the request latency histogram's buckets, then +Inf: the one bounded histogram of requests. */
export const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** One (method, route)'s requests: counts by status and the latency histogram (per-bucket counts, not cumulative). */
interface RouteStats {
  method: string;
  route: string;
  statuses: Map<number, number>;
  buckets: number[];
  sum: number;
  count: number;
}

/**
 * Requests by route, kept in plain numbers on the request path (one map lookup, no label hashing or validation:
 * prom-client's labelled inc and observe cost ~4 µs a request) and turned into the two families at scrape.
 */
class RequestStats {
  readonly routes = new Map<string, RouteStats>();
  /** The route group of each route template (createApp names them as the groups register). */
  readonly groups = new Map<string, string>();

  record(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${route}`;
    let r = this.routes.get(key);
    if (r === undefined) {
      r = { method, route, statuses: new Map(), buckets: new Array<number>(LATENCY_BUCKETS.length + 1).fill(0), sum: 0, count: 0 };
      this.routes.set(key, r);
    }
    r.statuses.set(status, (r.statuses.get(status) ?? 0) + 1);
    let i = 0;
    while (i < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[i]!) i++;
    r.buckets[i]!++;
    r.sum += seconds;
    r.count++;
  }

  /** Every route's requests summed: by route group and status class, and the latency buckets. */
  totals(): RequestTotals {
    const byGroup = new Map<string, number[]>();
    const buckets = new Array<number>(LATENCY_BUCKETS.length + 1).fill(0);
    let count = 0;
    for (const r of this.routes.values()) {
      const group = this.groups.get(r.route) ?? 'other';
      let classes = byGroup.get(group);
      if (classes === undefined) byGroup.set(group, (classes = [0, 0, 0, 0, 0]));
      for (const [status, n] of r.statuses) classes[statusClassIndex(status)]! += n;
      r.buckets.forEach((n, i) => (buckets[i]! += n));
      count += r.count;
    }
    return { byGroup, buckets, count };
  }

  /** A histogram family in prom-client's metric shape (name, help, get()), read from the numbers above. */
  histogram(name: string, help: string): Parameters<Registry['registerMetric']>[0] {
    const routes = this.routes;
    const family = () => {
      const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
      for (const r of routes.values()) {
        let acc = 0;
        LATENCY_BUCKETS.forEach((le, i) => {
          acc += r.buckets[i]!;
          values.push({ labels: { method: r.method, route: r.route, le }, value: acc, metricName: `${name}_bucket` });
        });
        values.push({ labels: { method: r.method, route: r.route, le: '+Inf' }, value: r.count, metricName: `${name}_bucket` });
        values.push({ labels: { method: r.method, route: r.route }, value: r.sum, metricName: `${name}_sum` });
        values.push({ labels: { method: r.method, route: r.route }, value: r.count, metricName: `${name}_count` });
      }
      return { name, help, type: 'histogram', aggregator: 'sum', values };
    };
    return { name, help, get: async () => family(), reset: () => routes.clear() } as unknown as Parameters<Registry['registerMetric']>[0];
  }
}

/** Status classes, in the order of RequestTotals' per-group arrays. */
export const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const;

function statusClassIndex(status: number): number {
  return Math.min(4, Math.max(0, Math.floor(status / 100) - 1));
}

/** Requests since the node started, summed over routes. */
export interface RequestTotals {
  /** By route group (unmatched paths: 'other'): counts by status class, in STATUS_CLASSES order. */
  byGroup: Map<string, number[]>;
  /** Latency bucket counts (not cumulative): LATENCY_BUCKETS, then +Inf. */
  buckets: number[];
  count: number;
}

/** Custody's counts since start, by part, then by event (each part's own stats; a part not running is absent). */
export type CustodyCounts = () => Record<string, Readonly<Record<string, number>> | undefined>;

/** What the scrape reads from the running node (each may be absent while it starts). */
export interface MetricsSources {
  tick: () => number;
  mesh: () => MeshService | undefined;
  challenges: () => ChallengeService | undefined;
  custody: () => ReturnType<CustodyCounts> | undefined;
}

export class NodeMetrics {
  readonly registry = new Registry();
  /** libp2p's metrics: a registry per libp2p start (its metrics register once per registry). */
  private libp2pRegistry: Registry | null = null;
  private readonly requests = new RequestStats();
  private readonly seals: Counter<'kind'>;
  private readonly gateRefusals: Counter<'kind'>;
  private readonly solverRuns: Counter<'solver' | 'outcome'>;
  private readonly solverSeconds: Histogram<'solver'>;
  private readonly batchOps: Histogram;
  private readonly commitSeconds: Histogram;
  private server: Server | null = null;
  /** LevelDB batches written and their write time summed (the seal batch latency's mean over a window). */
  private readonly commitTotals = { batches: 0, seconds: 0 };

  constructor(sources: MetricsSources) {
    const r = this.registry;
    processMetrics();
    const requests = this.requests;
    new Counter({
      name: 'svc_http_requests_total',
      help: 'HTTP requests by method, route and status',
      labelNames: ['method', 'route', 'status'],
      registers: [r],
      collect() {
        this.reset();
        for (const s of requests.routes.values())
          for (const [status, n] of s.statuses) this.inc({ method: s.method, route: s.route, status: String(status) }, n);
      },
    });
    r.registerMetric(
      requests.histogram(
        'svc_http_request_duration_seconds',
        'HTTP request latency by method and route (to the end of the handler; an SSE stream to its start)',
      ),
    );
    this.seals = new Counter({ name: 'svc_seals_total', help: 'Results sealed (durable), by kind', labelNames: ['kind'], registers: [r] });
    this.gateRefusals = new Counter({
      name: 'svc_gate_refusals_total',
      help: 'Results the tolerance gate refused (nothing sealed), by kind',
      labelNames: ['kind'],
      registers: [r],
    });
    this.solverRuns = new Counter({
      name: 'svc_solver_runs_total',
      help: 'Solver runs on this node, by solver and outcome',
      labelNames: ['solver', 'outcome'],
      registers: [r],
    });
    this.solverSeconds = new Histogram({
      name: 'svc_solver_run_seconds',
      help: 'Solver run time on this node (queue wait included), by solver',
      labelNames: ['solver'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [r],
    });
    this.batchOps = new Histogram({
      name: 'svc_store_batch_ops',
      help: 'Ops per LevelDB batch (group commit)',
      buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000],
      registers: [r],
    });
    this.commitSeconds = new Histogram({ name: 'svc_store_commit_seconds', help: 'LevelDB batch write time', buckets: LATENCY_BUCKETS, registers: [r] });
    new Gauge({
      name: 'svc_tick',
      help: 'The current tick (svcond)',
      registers: [r],
      collect() {
        this.set(sources.tick());
      },
    });
    new Gauge({
      name: 'svc_mesh_peers',
      help: 'Mesh peers listed in status: connected now, or heard (a tick event) in the last 120 ticks',
      labelNames: ['state'],
      registers: [r],
      async collect() {
        const mesh = sources.mesh();
        const peers = mesh ? (await mesh.status()).peers : [];
        const connected = peers.filter((p) => p.connected).length;
        this.set({ state: 'connected' }, connected);
        this.set({ state: 'heard' }, peers.length - connected);
      },
    });
    // Read from the mesh's own counts at scrape: a counter set to the mesh's total (reset, then incremented by it).
    new Counter({
      name: 'svc_gossip_verdicts_total',
      help: 'Gossip messages by the validator verdict (accept, ignore, reject)',
      labelNames: ['verdict'],
      registers: [r],
      async collect() {
        const mesh = sources.mesh();
        if (!mesh) return;
        this.reset();
        for (const [verdict, n] of Object.entries((await mesh.status()).gossipVerdicts)) this.inc({ verdict }, n);
      },
    });
    new Counter({
      name: 'svc_gossip_rejected_total',
      help: 'Mesh events refused, by entrance (gossip, http) and reason',
      labelNames: ['entrance', 'reason'],
      registers: [r],
      async collect() {
        const mesh = sources.mesh();
        if (!mesh) return;
        this.reset();
        const { rejected } = await mesh.status();
        for (const [entrance, reasons] of Object.entries(rejected)) for (const [reason, n] of Object.entries(reasons)) this.inc({ entrance, reason }, n);
      },
    });
    new Gauge({
      name: 'svc_challenges',
      help: 'Challenges this node knows, by state',
      labelNames: ['state'],
      registers: [r],
      collect() {
        // Every stored challenge, from the counts kept with each write (the ones in memory are a bounded part).
        const counts = sources.challenges()?.countsByState();
        for (const state of STATES) this.set({ state }, counts?.[state] ?? 0);
      },
    });
    new Gauge({
      name: 'svc_consensus_refused',
      help: 'Challenges and verdicts this node refused since it started: failing a check against its own state, or forged',
      labelNames: ['kind'],
      registers: [r],
      collect() {
        const stats = sources.challenges()?.stats();
        this.set({ kind: 'challenge' }, stats?.refused_challenges ?? 0);
        this.set({ kind: 'verdict' }, stats?.refused_verdicts ?? 0);
      },
    });
    new Counter({
      name: 'svc_custody_events_total',
      help: 'Custody since the node started, by part (replicator, custodian, failover, probes, set_changes) and event',
      labelNames: ['part', 'event'],
      registers: [r],
      collect() {
        const parts = sources.custody();
        if (!parts) return;
        this.reset();
        for (const [part, counts] of Object.entries(parts))
          for (const [event, n] of Object.entries(counts ?? {})) this.inc({ part, event: snakeCase(event) }, n);
      },
    });
    new Gauge({
      name: 'svc_verdicts',
      help: 'Verdicts recorded on this node, by outcome',
      labelNames: ['outcome'],
      registers: [r],
      collect() {
        // A verdict's outcome is its challenge's state.
        const counts = sources.challenges()?.countsByState();
        for (const outcome of OUTCOMES) this.set({ outcome }, counts?.[outcome] ?? 0);
      },
    });
  }

  sealed(kind: string): void {
    this.seals.inc({ kind });
  }

  gateRefused(kind: string): void {
    this.gateRefusals.inc({ kind });
  }

  storeBatch(ops: number, seconds: number): void {
    this.batchOps.observe(ops);
    this.commitSeconds.observe(seconds);
    this.commitTotals.batches++;
    this.commitTotals.seconds += seconds;
  }

  /** LevelDB batches written since start and their write time summed. */
  commits(): { batches: number; seconds: number } {
    return { ...this.commitTotals };
  }

  /** Requests since start, by route group and status class, with the latency buckets. */
  requestTotals(): RequestTotals {
    return this.requests.totals();
  }

  /** Name the route group of a route template (its requests are summed under it; a template two groups share counts under the first). */
  routeGroup(route: string, group: string): void {
    if (!this.requests.groups.has(route)) this.requests.groups.set(route, group);
  }

  /** The executor, its runs counted and timed by solver (a proxy: everything else is the executor's own). */
  timed<E extends SolverExecutor>(executor: E): E {
    const runs = this.solverRuns;
    const seconds = this.solverSeconds;
    const run: SolverExecutor['run'] = async (solverId, inputs, state, limit, owner, tier, signal) => {
      const end = seconds.startTimer({ solver: solverId });
      try {
        const out = await executor.run(solverId, inputs, state, limit, owner, tier, signal);
        runs.inc({ solver: solverId, outcome: 'ok' });
        return out;
      } catch (err) {
        runs.inc({ solver: solverId, outcome: (err as { code?: string }).code ?? 'error' });
        throw err;
      } finally {
        end();
      }
    };
    return new Proxy(executor, {
      get(target, prop) {
        if (prop === 'run') return run;
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  }

  /** libp2p's metrics factory (createLibp2p's `metrics`). */
  libp2p(): ReturnType<typeof prometheusMetrics> {
    return (components) => {
      this.libp2pRegistry = new Registry();
      // The library keeps its metric objects by name in one map per process: not preserved, so this start registers
      // its own in its own registry (another node's, or an earlier start's, stay in theirs and keep counting).
      return prometheusMetrics({ registry: this.libp2pRegistry, collectDefaultMetrics: false, preserveExistingMetrics: false })(components);
    };
  }

  /** Requests by the route that answered them (its path template, never the raw path), status and latency. */
  middleware(): Middleware {
    const requests = this.requests;
    return async function metrics(ctx: Context, next: Next): Promise<void> {
      const started = performance.now();
      try {
        await next();
      } finally {
        const route = (ctx as unknown as { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
        requests.record(ctx.method, route, ctx.status, (performance.now() - started) / 1000);
      }
    };
  }

  /** The exposition text: this node's metrics, the process's, then libp2p's. */
  async text(): Promise<string> {
    const parts = [await this.registry.metrics(), await processMetrics().metrics()];
    if (this.libp2pRegistry) parts.push(await this.libp2pRegistry.metrics());
    return parts.join('\n');
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** Serve GET /metrics on host:port (0 = any free port); returns the URL. */
  async listen(host: string, port: number): Promise<string> {
    const traceId = traceIdSource();
    // Errors in the part-7 shape, as on the API port.
    const fail = (res: ServerResponse, status: number, code: ErrorCode, message: string, headers: Record<string, string> = {}) => {
      const id = traceId();
      res
        .writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'x-trace-id': id, ...headers })
        .end(JSON.stringify(errorBody(id, status, code, message)));
    };
    const server = createServer((req, res) => {
      const path = (req.url ?? '').split('?')[0];
      if (path !== '/metrics') return fail(res, 404, 'SVC_NOT_FOUND', `only GET /metrics here, not ${path}`);
      if (req.method !== 'GET' && req.method !== 'HEAD') return fail(res, 405, 'SVC_METHOD_NOT_ALLOWED', 'only GET /metrics here', { allow: 'GET, HEAD' });
      this.text().then(
        (body) => res.writeHead(200, { 'content-type': this.contentType }).end(body),
        (err: unknown) => fail(res, 500, 'SVC_INTERNAL_ERROR', `metrics failed: ${String(err)}`),
      );
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    const addr = server.address() as AddressInfo;
    return `http://${host.includes(':') ? `[${host}]` : host}:${addr.port}/metrics`;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    this.registry.clear();
  }
}

/** A stats member's name as a label value: handedOver → handed_over. */
function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

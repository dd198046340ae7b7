// The machine's health, sampled on a timer: request and error rates by route group and status class, latency p50/p99
// (from the HTTP middleware's bounded histogram, metrics.ts), CPU, memory, the data dir's size and the disk's free
// space, event-loop delay, queue depths and backlogs, peers by health. One sample feeds both the dashboard's data
// (GET /api/system/stats) and the svc_machine_* families of /metrics, so the two never disagree. Domain services are
// read through the sources the node's wiring hands over (node/http.ts); none of them imports this module.
import { lstat, readdir, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { Gauge, type Registry } from 'prom-client';
import { LATENCY_BUCKETS, STATUS_CLASSES, type RequestTotals } from './metrics.js';

/** Samples kept for the sparklines (at the default period, ten minutes). */
export const HISTORY_POINTS = 120;
/** The window of the per-minute rates and of the latency percentiles. */
const WINDOW_MS = 60_000;
/** A backlog is counted up to this many entries (a larger one shows as this figure: bounded work per sample). */
export const BACKLOG_COUNT_MAX = 100_000;
/** Own seals listed on the dashboard. */
const RECENT_SEALS = 12;

export type StatusClass = (typeof STATUS_CLASSES)[number];

/** Queue depths and backlogs, read at each sample. */
export interface QueueDepths {
  /** Solver runs waiting for a worker. */
  solver_waiting: number;
  /** Sealed bodies handed to the seal worker and not back yet. */
  sealing: number;
  /** Store commits accepted and not yet on disk. */
  store_commits: number;
  /** Webhook deliveries due or waiting for a retry. */
  webhooks: number;
  /** Cross-node transfers not yet delivered. */
  transfers: number;
  /** Remote charges not yet settled by their home. */
  settlements: number;
  /** Consensus events (challenges, votes, verdicts) not yet acknowledged by their receiver. */
  consensus_deliveries: number;
}

export type PeerHealth = 'live' | 'late' | 'silent' | 'dead' | 'misconfigured';
export const PEER_HEALTH: readonly PeerHealth[] = ['live', 'late', 'silent', 'dead', 'misconfigured'];

export interface PeerView {
  peer_id: string;
  url: string | null;
  health: PeerHealth;
  connected: boolean;
  last_tick: number | null;
  /** Seconds since its last tick event (null: none heard). */
  last_heard_s: number | null;
  /** The tick interval the peer is judged by (seconds between its tick events). */
  interval_s: number;
  handshake_failures: number;
  mode: string | null;
  bond_id: string | null;
}

/** What the sampler reads from the node (node/http.ts binds them once every part is wired). */
export interface MachineWatch {
  queues: () => Promise<QueueDepths>;
  peers: () => Promise<PeerView[]>;
}

export interface SealSummary {
  result_id: string;
  kind: string;
  solver: string | null;
  operators: string[] | null;
  svcond: number;
  value: number;
  unit: string;
}

export interface MachineSources {
  dataDir: string;
  /** Wall-clock milliseconds (the node's Time): when a sample was taken. */
  nowMs: () => number;
  requests: () => RequestTotals;
  commits: () => { batches: number; seconds: number };
  /** Results sealed by this node since its data dir was made. */
  sealedHere: () => number;
}

export interface RequestWindow {
  requests: number;
  errors: number;
  by_class: Record<StatusClass, number>;
  per_minute: number;
  errors_per_minute: number;
}

export interface MachineSample {
  sampled_at_ms: number;
  /** Seconds the window rates and percentiles cover (up to 60; less just after start). */
  window_s: number;
  requests: {
    /** Since the node started. */
    total: number;
    by_class: Record<StatusClass, number>;
    /** In the window; errors are 4xx and 5xx answers. */
    window: RequestWindow;
    by_group: Record<string, { total: number; by_class: Record<StatusClass, number>; window: RequestWindow }>;
    /** Latency in the window, from the bounded histogram (null: no request in the window). */
    latency_ms: { p50: number | null; p99: number | null };
    /** The histogram since start: bucket upper bounds (seconds; the last is +Inf) and counts per bucket. */
    histogram: { le_s: (number | '+Inf')[]; counts: number[] };
  };
  /** Process CPU time over the last sample period, as a percentage of one core. */
  cpu: { percent: number; user_s: number; system_s: number };
  memory: { rss_bytes: number; heap_used_bytes: number; heap_total_bytes: number };
  disk: { data_dir_bytes: number; free_bytes: number | null; total_bytes: number | null };
  /** Event-loop delay of the process over its last window (monitorEventLoopDelay). */
  event_loop_ms: { p50: number; p99: number; max: number };
  queues: QueueDepths;
  /** Mean LevelDB batch write time in the window (each sealing batch is one), null with none. */
  seal_batch_ms: number | null;
  peers: PeerView[];
  sealed_here: number;
}

export interface HistoryPoint {
  at_ms: number;
  requests_per_minute: number;
  errors_per_minute: number;
  p99_ms: number | null;
  cpu_percent: number;
  rss_bytes: number;
  event_loop_p99_ms: number;
  backlog: number;
}

/** Totals at one sample: what the next samples subtract from. */
interface Mark {
  /** performance.now() at the sample. */
  atMs: number;
  byGroup: Map<string, number[]>;
  buckets: number[];
  commits: { batches: number; seconds: number };
}

const NO_QUEUES: QueueDepths = { solver_waiting: 0, sealing: 0, store_commits: 0, webhooks: 0, transfers: 0, settlements: 0, consensus_deliveries: 0 };

/**
 * The event loop is the process's: one monitor per process however many nodes share it (tests start hundreds),
 * running while some node samples, its window reset at most once a second and read by all.
 */
const eventLoop = {
  histogram: null as IntervalHistogram | null,
  users: 0,
  resetAt: 0,
  last: { p50: 0, p99: 0, max: 0 },
  acquire(): void {
    if (this.users++ > 0) return;
    this.histogram = monitorEventLoopDelay({ resolution: 20 });
    this.histogram.enable();
    this.resetAt = performance.now();
  },
  release(): void {
    if (--this.users > 0) return;
    this.histogram?.disable();
    this.histogram = null;
  },
  read(): { p50: number; p99: number; max: number } {
    const h = this.histogram;
    const now = performance.now();
    if (h !== null && h.count > 0 && now - this.resetAt >= 1000) {
      const ms = (ns: number) => round(ns / 1e6, 3);
      this.last = { p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max) };
      h.reset();
      this.resetAt = now;
    }
    return this.last;
  },
};

export class MachineStats {
  private watch: MachineWatch | null = null;
  private readonly marks: Mark[] = [];
  private readonly history: HistoryPoint[] = [];
  private readonly seals: SealSummary[] = [];
  private latestSample: MachineSample | null = null;
  private cpuMark: { usage: NodeJS.CpuUsage; at: number } | null = null;
  private timer: NodeJS.Timeout | null = null;
  private sampling: Promise<MachineSample> | null = null;
  private readonly marksKept: number;

  /**
   * @param periodMs time between samples (0: no timer; `sample()` is called by hand).
   */
  constructor(
    private readonly s: MachineSources,
    readonly periodMs: number,
    registry: Registry,
  ) {
    this.marksKept = Math.max(HISTORY_POINTS, periodMs > 0 ? Math.ceil(WINDOW_MS / periodMs) + 2 : HISTORY_POINTS);
    registerGauges(registry, () => this.latestSample);
  }

  /** A result this node sealed (durable): the dashboard lists the latest. */
  sealed(summary: SealSummary): void {
    this.seals.push(summary);
    if (this.seals.length > RECENT_SEALS) this.seals.shift();
  }

  recentSeals(): SealSummary[] {
    return [...this.seals].reverse();
  }

  latest(): MachineSample | null {
    return this.latestSample;
  }

  points(): HistoryPoint[] {
    return [...this.history];
  }

  /** Start sampling (a first sample now, then every period). */
  async start(watch: MachineWatch): Promise<void> {
    this.watch = watch;
    eventLoop.acquire();
    await this.sample();
    if (this.periodMs > 0) {
      this.timer = setInterval(() => void this.sample().catch(() => undefined), this.periodMs);
      this.timer.unref();
    }
  }

  async stop(): Promise<void> {
    if (this.watch === null) return;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.sampling?.catch(() => undefined);
    this.watch = null;
    eventLoop.release();
  }

  /** Take a sample now (one at a time: a call during a sample gets that sample). */
  sample(): Promise<MachineSample> {
    this.sampling ??= this.take().finally(() => (this.sampling = null));
    return this.sampling;
  }

  private async take(): Promise<MachineSample> {
    const watch = this.watch;
    // Windows on the monotonic clock (the node's Time may be a test's manual clock); the sample is stamped with Time.
    const atMs = performance.now();
    const totals = this.s.requests();
    const mark: Mark = { atMs, byGroup: totals.byGroup, buckets: totals.buckets, commits: this.s.commits() };
    const [queues, peers, disk] = await Promise.all([
      watch ? watch.queues().catch(() => this.latestSample?.queues ?? NO_QUEUES) : NO_QUEUES,
      watch ? watch.peers().catch(() => this.latestSample?.peers ?? []) : [],
      diskOf(this.s.dataDir).catch(() => this.latestSample?.disk ?? { data_dir_bytes: 0, free_bytes: null, total_bytes: null }),
    ]);
    const previous = this.marks[this.marks.length - 1] ?? null;
    const base = this.windowBase(atMs) ?? mark;
    this.marks.push(mark);
    if (this.marks.length > this.marksKept) this.marks.shift();

    const windowS = Math.max(0, (atMs - base.atMs) / 1000);
    const byGroup: MachineSample['requests']['by_group'] = {};
    const allTotal = zeroClasses();
    const allWindow = zeroClasses();
    for (const [group, classes] of mark.byGroup) {
      const before = base.byGroup.get(group) ?? [0, 0, 0, 0, 0];
      const total = classesOf(classes);
      const inWindow = classesOf(classes.map((n, i) => n - before[i]!));
      for (const c of STATUS_CLASSES) {
        allTotal[c] += total[c];
        allWindow[c] += inWindow[c];
      }
      byGroup[group] = { total: sum(classes), by_class: total, window: windowOf(inWindow, windowS) };
    }
    const windowBuckets = mark.buckets.map((n, i) => n - base.buckets[i]!);
    const cpu = this.cpu();
    const memory = process.memoryUsage();
    const commitsInWindow = mark.commits.batches - base.commits.batches;
    const sample: MachineSample = {
      sampled_at_ms: this.s.nowMs(),
      window_s: round(windowS, 3),
      requests: {
        total: totals.count,
        by_class: allTotal,
        window: windowOf(allWindow, windowS),
        by_group: byGroup,
        latency_ms: { p50: quantileMs(windowBuckets, 0.5), p99: quantileMs(windowBuckets, 0.99) },
        histogram: { le_s: [...LATENCY_BUCKETS, '+Inf'], counts: [...mark.buckets] },
      },
      cpu,
      memory: { rss_bytes: memory.rss, heap_used_bytes: memory.heapUsed, heap_total_bytes: memory.heapTotal },
      disk,
      event_loop_ms: eventLoop.read(),
      queues,
      seal_batch_ms: commitsInWindow > 0 ? round(((mark.commits.seconds - base.commits.seconds) / commitsInWindow) * 1000, 3) : null,
      peers,
      sealed_here: this.s.sealedHere(),
    };
    this.latestSample = sample;
    this.history.push(pointOf(sample, previous, mark));
    if (this.history.length > HISTORY_POINTS) this.history.shift();
    return sample;
  }

  /** The newest mark at least a window old, else the oldest kept (null before the first). */
  private windowBase(atMs: number): Mark | null {
    let base: Mark | null = this.marks[0] ?? null;
    for (const m of this.marks) {
      if (atMs - m.atMs >= WINDOW_MS) base = m;
      else break;
    }
    return base;
  }

  private cpu(): MachineSample['cpu'] {
    const usage = process.cpuUsage();
    const at = performance.now();
    const mark = this.cpuMark;
    this.cpuMark = { usage, at };
    const user = usage.user / 1e6;
    const system = usage.system / 1e6;
    if (mark === null || at <= mark.at) return { percent: 0, user_s: round(user, 3), system_s: round(system, 3) };
    const usedMs = (usage.user - mark.usage.user + usage.system - mark.usage.system) / 1000;
    return { percent: round((usedMs / (at - mark.at)) * 100, 1), user_s: round(user, 3), system_s: round(system, 3) };
  }
}

/** A peer's health from what the mesh knows of it, judged against its tick interval. */
export function peerHealth(p: { connected: boolean; ticksSinceHeard: number | null; intervalTicks: number; handshakeFailures: number }): PeerHealth {
  const fresh = p.ticksSinceHeard !== null && p.ticksSinceHeard <= 2 * p.intervalTicks + 1;
  // Refused handshakes and nothing valid heard lately: it speaks, but with another mesh secret.
  if (p.handshakeFailures > 0 && !fresh) return 'misconfigured';
  if (p.ticksSinceHeard === null) return p.connected ? 'silent' : 'dead';
  if (fresh) return 'live';
  // Missed a few ticks but within the recent window: late; longer and not connected: dead.
  return p.connected || p.ticksSinceHeard <= 8 * p.intervalTicks ? 'late' : 'dead';
}

function zeroClasses(): Record<StatusClass, number> {
  return { '1xx': 0, '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 };
}

function classesOf(counts: number[]): Record<StatusClass, number> {
  const out = zeroClasses();
  STATUS_CLASSES.forEach((c, i) => (out[c] = counts[i] ?? 0));
  return out;
}

function windowOf(byClass: Record<StatusClass, number>, windowS: number): RequestWindow {
  const requests = sum(Object.values(byClass));
  const errors = byClass['4xx'] + byClass['5xx'];
  const perMinute = (n: number) => (windowS > 0 ? round((n / windowS) * 60, 2) : 0);
  return { requests, errors, by_class: byClass, per_minute: perMinute(requests), errors_per_minute: perMinute(errors) };
}

function sum(values: number[]): number {
  let n = 0;
  for (const v of values) n += v;
  return n;
}

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** The q-quantile of per-bucket counts, interpolated within its bucket (the +Inf bucket answers its lower bound). */
export function quantileMs(buckets: number[], q: number): number | null {
  const n = sum(buckets);
  if (n === 0) return null;
  const rank = q * n;
  let acc = 0;
  for (let i = 0; i < buckets.length; i++) {
    const c = buckets[i]!;
    if (c > 0 && acc + c >= rank) {
      const lower = i === 0 ? 0 : LATENCY_BUCKETS[i - 1]!;
      const upper = LATENCY_BUCKETS[i] ?? lower;
      return round((lower + (upper - lower) * ((rank - acc) / c)) * 1000, 3);
    }
    acc += c;
  }
  return round(LATENCY_BUCKETS[LATENCY_BUCKETS.length - 1]! * 1000, 3);
}

function pointOf(s: MachineSample, previous: Mark | null, mark: Mark): HistoryPoint {
  // Rates between this sample and the one before (the sparklines' resolution), not over the minute.
  let requests = 0;
  let errors = 0;
  for (const [group, classes] of mark.byGroup) {
    const before = previous?.byGroup.get(group) ?? [0, 0, 0, 0, 0];
    requests += sum(classes) - sum(before);
    errors += classes[3]! - before[3]! + classes[4]! - before[4]!;
  }
  const minutes = previous === null ? 0 : (mark.atMs - previous.atMs) / 60_000;
  return {
    at_ms: s.sampled_at_ms,
    requests_per_minute: minutes > 0 ? round(requests / minutes, 2) : 0,
    errors_per_minute: minutes > 0 ? round(errors / minutes, 2) : 0,
    p99_ms: s.requests.latency_ms.p99,
    cpu_percent: s.cpu.percent,
    rss_bytes: s.memory.rss_bytes,
    event_loop_p99_ms: s.event_loop_ms.p99,
    backlog: s.queues.webhooks + s.queues.transfers + s.queues.settlements + s.queues.consensus_deliveries,
  };
}

/** The data dir's size (every file under it) and the free and total space of its file system. */
async function diskOf(dir: string): Promise<MachineSample['disk']> {
  const [bytes, fs] = await Promise.all([sizeOf(dir), statfs(dir)]);
  return { data_dir_bytes: bytes, free_bytes: fs.bavail * fs.bsize, total_bytes: fs.blocks * fs.bsize };
}

async function sizeOf(path: string): Promise<number> {
  const entries = await readdir(path, { withFileTypes: true }).catch(() => null);
  if (entries === null) return 0;
  let bytes = 0;
  for (const e of entries) {
    const full = join(path, e.name);
    if (e.isDirectory()) bytes += await sizeOf(full);
    else
      bytes += await lstat(full).then(
        (st) => st.size,
        () => 0,
      );
  }
  return bytes;
}

/** The svc_machine_* families: read from the latest sample at scrape, never computed twice. */
function registerGauges(registry: Registry, latest: () => MachineSample | null): void {
  const gauge = (name: string, help: string, labelNames: string[], set: (g: Gauge<string>, s: MachineSample) => void) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        const s = latest();
        this.reset();
        if (s !== null) set(this, s);
      },
    });
  gauge('svc_machine_requests_per_minute', 'HTTP requests per minute over the last minute, by route group and status class', ['group', 'class'], (g, s) => {
    for (const [group, v] of Object.entries(s.requests.by_group))
      for (const c of STATUS_CLASSES)
        if (v.window.by_class[c] > 0) g.set({ group, class: c }, round((v.window.by_class[c] / Math.max(s.window_s, 1e-9)) * 60, 2));
  });
  gauge('svc_machine_requests_window', 'HTTP requests in the last minute (the window of the rates), by status class', ['class'], (g, s) => {
    for (const c of STATUS_CLASSES) g.set({ class: c }, s.requests.window.by_class[c]);
  });
  gauge('svc_machine_latency_seconds', 'HTTP request latency over the last minute, by quantile (from the bounded histogram)', ['quantile'], (g, s) => {
    if (s.requests.latency_ms.p50 !== null) g.set({ quantile: '0.5' }, s.requests.latency_ms.p50 / 1000);
    if (s.requests.latency_ms.p99 !== null) g.set({ quantile: '0.99' }, s.requests.latency_ms.p99 / 1000);
  });
  gauge('svc_machine_cpu_percent', 'Process CPU time over the last sample period, percent of one core', [], (g, s) => g.set(s.cpu.percent));
  gauge('svc_machine_memory_bytes', 'Process memory by kind (rss, heap_used, heap_total)', ['kind'], (g, s) => {
    g.set({ kind: 'rss' }, s.memory.rss_bytes);
    g.set({ kind: 'heap_used' }, s.memory.heap_used_bytes);
    g.set({ kind: 'heap_total' }, s.memory.heap_total_bytes);
  });
  gauge('svc_machine_data_dir_bytes', 'Size of the data dir on disk (LevelDB and key files)', [], (g, s) => g.set(s.disk.data_dir_bytes));
  gauge('svc_machine_disk_free_bytes', 'Free space (for this user) on the data dir’s file system', [], (g, s) => {
    if (s.disk.free_bytes !== null) g.set(s.disk.free_bytes);
  });
  gauge('svc_machine_disk_total_bytes', 'Size of the data dir’s file system', [], (g, s) => {
    if (s.disk.total_bytes !== null) g.set(s.disk.total_bytes);
  });
  gauge('svc_machine_event_loop_delay_seconds', 'Event-loop delay over its last window, by quantile (1 = max)', ['quantile'], (g, s) => {
    g.set({ quantile: '0.5' }, s.event_loop_ms.p50 / 1000);
    g.set({ quantile: '0.99' }, s.event_loop_ms.p99 / 1000);
    g.set({ quantile: '1' }, s.event_loop_ms.max / 1000);
  });
  gauge('svc_machine_queue_depth', 'Queue depths and backlogs by queue', ['queue'], (g, s) => {
    for (const [queue, n] of Object.entries(s.queues)) g.set({ queue }, n);
  });
  gauge('svc_machine_seal_batch_seconds', 'Mean LevelDB batch write time over the last minute (each sealing batch is one)', [], (g, s) => {
    if (s.seal_batch_ms !== null) g.set(s.seal_batch_ms / 1000);
  });
  gauge('svc_machine_peers', 'Mesh peers by health (live, late, silent, dead, misconfigured)', ['health'], (g, s) => {
    for (const h of PEER_HEALTH) g.set({ health: h }, s.peers.filter((p) => p.health === h).length);
  });
  gauge('svc_machine_sealed_here', 'Results this node has sealed since its data dir was made', [], (g, s) => g.set(s.sealed_here));
}

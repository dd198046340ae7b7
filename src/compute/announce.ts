// The sealed-result announcement: what this node sealed, told to the mesh in one signed `results.sealed` event on
// svc/events/1 per tick interval, never one per seal. An event costs every node that accepts it a few milliseconds of
// CPU (docs/scale.md), so one event per seal made each seal of one node cost every other node as much as the seal cost
// its home, and a busy node sealing thousands a second swamped the mesh. Announced at the node's tick interval (the
// `every` of its tick events, which grows with the mesh), the announcements of the whole mesh stay within the budget
// its tick events keep. Each counts the seals since the last one and lists the newest ANNOUNCED_MAX of those whose
// owners publish them (a result is private by default: its value is not told to the mesh). A seal is added after its
// batch is durable (never before); the feed is best effort: a failed publish or a stop before the interval ends loses
// only announcements, nothing sealed.
import { z } from 'zod';
import type { SealedSummary } from './service.js';

export const RESULTS_SEALED = 'results.sealed';
/** Summaries one announcement lists at most (the newest): at ≤ ~500 bytes each, far under a mesh event's 64 KiB. */
export const ANNOUNCED_MAX = 64;

const summarySchema = z.object({
  result_id: z.string().max(128),
  result_digest: z.string().regex(/^[0-9a-f]{64}$/),
  kind: z.enum(['compute', 'solver']),
  solver: z.string().max(64).nullable(),
  operators: z.array(z.string().max(64)).max(16).nullable(),
  svcond: z.number().int().nonnegative(),
  value: z.number(),
  unit: z.string().max(64),
});

/** The body of a `results.sealed` event: the gossip table's row checks it at every node. */
export const resultsSealedBody = z
  .object({
    /** Results sealed since the previous announcement (from_svcond … to_svcond), listed or not. */
    count: z.number().int().positive(),
    from_svcond: z.number().int().nonnegative(),
    to_svcond: z.number().int().nonnegative(),
    /** The newest of them whose owners publish them, in the order they were sealed (none: all private). */
    results: z.array(summarySchema).max(ANNOUNCED_MAX),
  })
  .refine((b) => b.results.length <= b.count && b.from_svcond <= b.to_svcond, { message: 'count below the results listed, or from_svcond after to_svcond' });

export type ResultsSealed = z.infer<typeof resultsSealedBody>;

export interface SealAnnouncerDeps {
  /** False while the node has no mesh: nothing is kept or announced. */
  enabled: () => boolean;
  /** Publish an event of this type on the events topic. */
  publish: (type: string, body: ResultsSealed) => Promise<unknown>;
  /** Milliseconds from a seal to its announcement at most: the node's tick interval. */
  intervalMs: () => number;
  onError: (err: unknown) => void;
}

export class SealAnnouncer {
  private pending: SealedSummary[] = [];
  private count = 0;
  // The ticks the interval's seals span: the least and the greatest (seals finish in any order of their ticks).
  private fromSvcond = 0;
  private toSvcond = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly deps: SealAnnouncerDeps) {}

  /** A result whose seal is durable: counted with the others of its interval, and listed when its owner publishes it. */
  sealed(summary: SealedSummary, listed: boolean): void {
    if (!this.deps.enabled()) return;
    if (this.count === 0) {
      this.fromSvcond = summary.svcond;
      this.toSvcond = summary.svcond;
    } else {
      this.fromSvcond = Math.min(this.fromSvcond, summary.svcond);
      this.toSvcond = Math.max(this.toSvcond, summary.svcond);
    }
    this.count++;
    if (listed) {
      this.pending.push(summary);
      if (this.pending.length > ANNOUNCED_MAX) this.pending.shift();
    }
    if (this.timer === null) {
      this.timer = setTimeout(() => this.flush(), this.deps.intervalMs());
      this.timer.unref();
    }
  }

  /** Announce what is pending now (the timer's end; a test). */
  flush(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.count === 0) return;
    const results = this.pending;
    const body: ResultsSealed = {
      count: this.count,
      from_svcond: this.fromSvcond,
      to_svcond: this.toSvcond,
      results,
    };
    this.pending = [];
    this.count = 0;
    if (!this.deps.enabled()) return;
    void this.deps.publish(RESULTS_SEALED, body).catch(this.deps.onError);
  }

  /** Stop the timer; what is pending is dropped (the mesh stops with the node). */
  stop(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.pending = [];
    this.count = 0;
  }
}

// Direct probes of homes whose tick events are overdue (failover.ts). A home that ticks every e ticks is silent for e
// ticks while alive, so its silence says nothing until e has passed; then a probe (a libp2p ping: a round trip, so a
// connection left open by a dead peer does not answer for it) says whether it is gone, and a failover need not wait
// failoverTicks × e ticks for it. At most one probe of a node is in flight; a failure counts for the silence it was
// made in only (the home's last tick heard then), so an answer or a tick event heard starts the count again.

/** Does `node` answer directly? Resolves false (or rejects) when it does not within the signal. */
export type Probe = (node: string, signal: AbortSignal) => Promise<boolean>;

export class HomeProbes {
  /** By node: the silence (its last tick heard) whose probes all failed, and the tick the first of them was made. */
  private readonly failing = new Map<string, { silence: number; since: number }>();
  private readonly inFlight = new Set<string>();
  readonly stats = { probes: 0, failed: 0 };

  constructor(
    private readonly probe: Probe,
    private readonly timeoutMs: number,
  ) {}

  /**
   * The tick since which every probe of `node` in this silence failed (null: none failed yet, or it answered). `silence`
   * names the silence (the node's last tick heard, or the start of watching); `overdue` false (it ticked in time) forgets
   * the node. An overdue node is probed again each call, one probe at a time.
   */
  unreachableSince(node: string, now: number, silence: number, overdue: boolean): number | null {
    if (!overdue) {
      this.failing.delete(node);
      return null;
    }
    const known = this.failing.get(node);
    if (known !== undefined && known.silence !== silence) this.failing.delete(node);
    if (!this.inFlight.has(node)) void this.probeOnce(node, now, silence);
    return this.failing.get(node)?.since ?? null;
  }

  private async probeOnce(node: string, now: number, silence: number): Promise<void> {
    this.inFlight.add(node);
    this.stats.probes++;
    try {
      const answered = await this.probe(node, AbortSignal.timeout(this.timeoutMs)).catch(() => false);
      if (answered) {
        this.failing.delete(node);
        return;
      }
      this.stats.failed++;
      const known = this.failing.get(node);
      if (known === undefined || known.silence !== silence) this.failing.set(node, { silence, since: now });
    } finally {
      this.inFlight.delete(node);
    }
  }
}

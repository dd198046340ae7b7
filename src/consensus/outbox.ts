// Direct delivery of consensus events to the one node that needs them (architecture.md §6). Gossip keeps no history
// and a node just restarted may sit outside a topic's mesh for a while, so the events a verdict depends on are also
// sent point to point, and sent again until the receiver acknowledges them:
//   - the opener sends the challenge to each committee member and to the bond's home (until the deadline + grace);
//   - a member sends its vote to the opener (until the deadline + grace);
//   - the opener sends the verdict to the bond's home, which applies the slashing (until acknowledged).
// Each event is signed afresh at every attempt (a new tick, so the receiver's duplicate cache does not swallow a
// retry); the receiver's handling is idempotent. Attempts back off (1, 2, 4 … ticks, at most maxBackoffTicks).
// Tick-driven (flush is called on the consensus timer); no clock of its own. In memory and bounded: what must survive
// a restart is derived again from the stored challenges (ChallengeService.resumeDeliveries).

export interface Delivery {
  /** One delivery per key (e.g. `verdict!<challenge id>!<node>`): adding a key already queued changes nothing. */
  key: string;
  node: string;
  type: string;
  body: () => unknown;
  /** The last tick at which an attempt is worth making (null: until acknowledged). */
  until: number | null;
  /** Called once the receiver acknowledged. */
  onDone?: () => void | Promise<void>;
}

export type SendFn = (node: string, type: string, body: unknown) => Promise<void>;

interface Slot {
  d: Delivery;
  next: number;
  backoff: number;
  busy: boolean;
}

export class Outbox {
  private readonly slots = new Map<string, Slot>();
  readonly stats = { sent: 0, failed: 0, expired: 0, dropped: 0 };

  constructor(
    private readonly o: {
      send: SendFn;
      nowSvcond: () => number;
      maxBackoffTicks?: number;
      /** Deliveries queued at most (a further one is dropped and counted; gossip still carries it). */
      maxItems?: number;
    },
  ) {}

  /** Queue a delivery and make its first attempt now (not awaited). */
  add(d: Delivery): void {
    if (this.slots.has(d.key)) return;
    if (this.slots.size >= (this.o.maxItems ?? 4096)) {
      this.stats.dropped++;
      return;
    }
    const slot: Slot = { d, next: this.o.nowSvcond(), backoff: 1, busy: false };
    this.slots.set(d.key, slot);
    void this.attempt(slot);
  }

  has(key: string): boolean {
    return this.slots.has(key);
  }

  size(): number {
    return this.slots.size;
  }

  /** Attempt every delivery that is due; drop those past their last tick. */
  async flush(): Promise<void> {
    const now = this.o.nowSvcond();
    const due: Promise<void>[] = [];
    for (const slot of this.slots.values()) {
      if (slot.busy) continue;
      if (slot.d.until !== null && now > slot.d.until) {
        this.slots.delete(slot.d.key);
        this.stats.expired++;
        continue;
      }
      if (slot.next <= now) due.push(this.attempt(slot));
    }
    await Promise.all(due);
  }

  private async attempt(slot: Slot): Promise<void> {
    slot.busy = true;
    try {
      await this.o.send(slot.d.node, slot.d.type, slot.d.body());
      this.slots.delete(slot.d.key);
      this.stats.sent++;
      await slot.d.onDone?.();
    } catch {
      this.stats.failed++;
      slot.next = this.o.nowSvcond() + slot.backoff;
      slot.backoff = Math.min(slot.backoff * 2, this.o.maxBackoffTicks ?? 16);
    } finally {
      slot.busy = false;
    }
  }
}

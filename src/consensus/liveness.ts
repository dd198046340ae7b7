// Who was heard, and when (architecture.md §6, live eligibility): the tick events this node heard from each node —
// their own signed tick (svcond), the mode and bond id they advertised — kept for a bounded window, so a challenge's
// eligible set can be judged at the challenge's tick from this node's own record, not the opener's word. The window
// starts when this node started recording: before it, nothing is known (`covers`). Pure: ticks are given by the
// caller; bounded in nodes and in ticks per node.

import { BoundedMap } from '../util/bounded-map.js';

/** One tick event heard: the sender's own tick, and what it advertised about its operator. */
export interface Heard {
  svcond: number;
  mode: string | null;
  bondId: string | null;
}

export interface LivenessLogOptions {
  /** Ticks of history kept behind the newest tick recorded. */
  keepTicks: number;
  /** Nodes kept at most (the one heard longest ago goes first). */
  maxNodes?: number;
  /** Tick events kept per node at most (the oldest go first). */
  maxPerNode?: number;
}

export class LivenessLog {
  /** Node → its tick events; a node heard again moves to the newest end, so the one heard longest ago goes first. */
  private readonly byNode: BoundedMap<string, Heard[]>;
  /** The first tick recorded: the log says nothing about the ticks before it. */
  private start: number | null = null;
  private newest = 0;

  constructor(private readonly o: LivenessLogOptions) {
    this.byNode = new BoundedMap(o.maxNodes ?? 4096);
  }

  /** A tick event of `node` at its tick `h.svcond` (one already recorded, or older than the node's latest, is skipped). */
  record(node: string, h: Heard, now: number): void {
    if (this.start === null) this.start = now;
    this.newest = Math.max(this.newest, now);
    let list = this.byNode.get(node);
    if (list && list.length > 0 && list[list.length - 1]!.svcond >= h.svcond) return;
    if (!list) list = [];
    this.byNode.delete(node);
    this.byNode.set(node, list);
    list.push({ svcond: h.svcond, mode: h.mode, bondId: h.bondId });
    const floor = this.newest - this.o.keepTicks;
    while (list.length > 0 && (list[0]!.svcond < floor || list.length > (this.o.maxPerNode ?? 1024))) list.shift();
  }

  /** Does the log hold every tick event heard from `from` on (it started recording by then and still keeps it)? */
  covers(from: number): boolean {
    return this.start !== null && this.start <= from && from >= this.newest - this.o.keepTicks;
  }

  /** The tick events of `node` whose tick is in [from, to], oldest first. */
  heardIn(node: string, from: number, to: number): Heard[] {
    return (this.byNode.get(node) ?? []).filter((h) => h.svcond >= from && h.svcond <= to);
  }

  /** Nodes with a tick event recorded. */
  nodes(): string[] {
    return [...this.byNode.keys()];
  }
}

// Who was heard, and when (architecture.md §6, live eligibility): the tick events this node heard from each node —
// their own signed tick (svcond), the mode and bond id they advertised — kept for a bounded window, so a challenge's
// eligible set can be judged at the challenge's tick from this node's own record, not the opener's word. The window
// starts when this node started recording: before it, nothing is known (`covers`). Pure: ticks are given by the
// caller; bounded in nodes and in ticks per node.
// A node's tick events come every `every` ticks, its own interval, which grows with the mesh (mesh/tick-interval.ts):
// "heard within liveTicks" is read in the sender's intervals (liveSpan), so a node of a large mesh, ticking seldom,
// is no less live for it.

import { BoundedMap } from '../util/bounded-map.js';

/** One tick event heard: the sender's own tick, and what it advertised about its operator. */
export interface Heard {
  svcond: number;
  mode: string | null;
  bondId: string | null;
  /** The interval (ticks) the sender declared in that tick event; absent: judged on liveTicks alone. */
  every?: number;
}

/**
 * A span of ticks read in the sender's intervals: `ticks` as written for the mesh's base interval (mesh.tickEvery),
 * stretched by every / base for a tick event declaring a longer interval, so a node of a large mesh may miss as many
 * of its events as one of a small mesh before it drops out (docs/decisions.md, "Consensus: live eligibility"). A
 * tick event declaring no interval, or one no longer than the base, is read in ticks.
 */
export function inSenderIntervals(ticks: number, every: number | undefined, baseEvery: number): number {
  return every !== undefined && every > baseEvery ? Math.ceil((ticks * every) / baseEvery) : ticks;
}

/** How much further back than liveTicks a tick event of interval `every` keeps its sender live. */
export function liveReach(liveTicks: number, every: number | undefined, baseEvery: number): number {
  return inSenderIntervals(liveTicks, every, baseEvery) - liveTicks;
}

export interface LivenessLogOptions {
  /** Ticks of history kept behind the newest tick recorded. */
  keepTicks: number;
  /** Nodes kept at most (the one heard longest ago goes first). */
  maxNodes?: number;
  /** Tick events kept per node at most (the oldest go first). */
  maxPerNode?: number;
  /** The mesh's base tick interval (mesh.tickEvery, default 4): keepTicks is read in the sender's intervals against it. */
  baseEvery?: number;
}

export class LivenessLog {
  /**
   * Node → its tick events; a node heard again moves to the newest end, so the one heard longest ago goes first. Two
   * tiers, each bounded: nodes holding a bond (what committees are drawn from; a bond costs tokens) and the rest (a
   * peer id costs nothing), so fresh keys ticking evict only each other.
   */
  private readonly bonded: BoundedMap<string, Heard[]>;
  private readonly others: BoundedMap<string, Heard[]>;
  /** The first tick recorded: the log says nothing about the ticks before it. */
  private start: number | null = null;
  private newest = 0;

  constructor(private readonly o: LivenessLogOptions) {
    this.bonded = new BoundedMap(o.maxNodes ?? 4096);
    this.others = new BoundedMap(o.maxNodes ?? 4096);
  }

  /**
   * A tick event of `node` at its tick `h.svcond` (one already recorded, or older than the node's latest, is skipped).
   * `bonded`: this node's registry holds a bond of `node` (its history moves to the bonded tier).
   */
  record(node: string, h: Heard, now: number, bonded = false): void {
    if (this.start === null) this.start = now;
    this.newest = Math.max(this.newest, now);
    let list = this.bonded.get(node) ?? this.others.get(node);
    if (list && list.length > 0 && list[list.length - 1]!.svcond >= h.svcond) return;
    if (!list) list = [];
    this.bonded.delete(node);
    this.others.delete(node);
    (bonded ? this.bonded : this.others).set(node, list);
    list.push(
      h.every === undefined ? { svcond: h.svcond, mode: h.mode, bondId: h.bondId } : { svcond: h.svcond, mode: h.mode, bondId: h.bondId, every: h.every },
    );
    // An event is kept keepTicks back, read in its sender's intervals: as long as it can make its sender live in a
    // window a challenge still checks. The node's latest event is always kept.
    const expired = (e: Heard) => e.svcond < this.newest - this.keepFor(e.every);
    while (list.length > 1 && (expired(list[0]!) || list.length > (this.o.maxPerNode ?? 1024))) list.shift();
  }

  /**
   * Does the log hold every tick event heard from `from` on (it started recording by then and still keeps it)? `every`:
   * for tick events of that interval, which are kept longer.
   */
  covers(from: number, every?: number): boolean {
    return this.start !== null && this.start <= from && from >= this.newest - this.keepFor(every);
  }

  private keepFor(every: number | undefined): number {
    return inSenderIntervals(this.o.keepTicks, every, this.o.baseEvery ?? 4);
  }

  /** The tick events of `node` whose tick is in [from, to], oldest first. */
  heardIn(node: string, from: number, to: number): Heard[] {
    return (this.bonded.get(node) ?? this.others.get(node) ?? []).filter((h) => h.svcond >= from && h.svcond <= to);
  }

  /** Nodes with a tick event recorded. */
  nodes(): string[] {
    return [...this.bonded.keys(), ...this.others.keys()];
  }
}

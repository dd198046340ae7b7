// The tick period that grows with the mesh (docs/scale.md, "Where it breaks, and the change that keeps it flat").
// Every node's tick events reach every node, so a mesh of N nodes each ticking every e ticks costs each node
// N / (e · 0.777 s) events a second. Each node picks its own interval so that this stays near the rate R a node is
// willing to accept, whatever N is:
//   e = max(tickEvery, ⌈N_heard / (R · 0.777 s)⌉)
// where N_heard counts the nodes it heard recently, itself included; it says e in its tick events (`every`), so that
// receivers judge its liveness against e and not against their own interval. Hysteresis: the interval rises as soon
// as the mesh needs it and falls only once the mesh has shrunk by LOWER_MARGIN, so a mesh near a boundary does not flap.
// Pure: the caller gives N_heard and the interval in use.
import { TICK_SECONDS_EXACT } from '../kernel/clock.js';

/**
 * The longest interval a tick event may declare (≈ 53 minutes): what ≈ 25,000 nodes need at R = 8 (a larger mesh
 * then costs each node more than R). A receiver keeps a node live for a few of its intervals, so the cap bounds how
 * long a node that stops can still look alive.
 */
export const MAX_TICK_INTERVAL = 4096;

/** The mesh-wide tick events a node accepts per second by default (docs/decisions.md, "Mesh: a tick period that grows with the mesh"). */
export const DEFAULT_TICK_RATE = 8;

/**
 * A shorter interval is taken only when the mesh heard, grown by this factor, still fits it: the interval set at N
 * nodes falls again below ≈ 0.8 N, so a mesh whose size wanders around a boundary keeps one interval.
 */
export const LOWER_MARGIN = 1.25;

export interface TickIntervalInput {
  /** Distinct nodes heard recently, this node included (≥ 1). */
  heard: number;
  /** The configured floor, mesh.tickEvery. */
  floor: number;
  /** Tick events per second a node accepts, mesh-wide (mesh.tickRate). */
  rate: number;
  /** The interval in use now. */
  current: number;
}

/** The interval at which `heard` nodes, each ticking at it, send a node at most `rate` events a second. */
export function intervalFor(heard: number, floor: number, rate: number): number {
  const needed = Math.ceil(Math.max(1, heard) / (rate * TICK_SECONDS_EXACT));
  return Math.min(MAX_TICK_INTERVAL, Math.max(floor, needed));
}

/** The interval to tick at next: up at once when the mesh needs it, down only past the hysteresis margin. */
export function nextTickInterval(i: TickIntervalInput): number {
  const up = intervalFor(i.heard, i.floor, i.rate);
  if (up >= i.current) return up;
  const down = intervalFor(i.heard * LOWER_MARGIN, i.floor, i.rate);
  return Math.min(i.current, down);
}

/**
 * Where in its interval a node ticks: a phase from its id, so that nodes started together (a cluster, a mass join) do
 * not all send on the same tick once their interval is long. `hex` is any hex digest of the node id.
 */
export function tickPhase(hex: string, every: number): number {
  return Number.parseInt(hex.slice(0, 8), 16) % every;
}

/** Is `now` in a later slot of the interval than `last` (the tick of the node's previous tick event; null: none yet)? */
export function tickDue(now: number, last: number | null, every: number, phase: number): boolean {
  if (last === null) return true;
  return Math.floor((now - phase) / every) > Math.floor((last - phase) / every);
}

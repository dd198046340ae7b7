// The system clock of rule 3: tick period exactly 777 000 777 ns. svcond and phase come from BigInt
// nanoseconds of an injectable time source, so every node agrees on ticks without talking.

export const TICK_NS = 777_000_777n;
export const TICK_NS_NUMBER = 777_000_777;
export const TICK_SECONDS_EXACT = 0.777000777;
export const TICK_SECONDS_DISPLAY = 0.777;
export const PULSE_HZ = 1.287;

export interface Clock {
  /** Unix time in nanoseconds. */
  nowNs(): bigint;
}

// Wall time anchored once, then advanced by the monotonic high-resolution timer (ns resolution, never backwards).
const anchorNs = BigInt(Date.now()) * 1_000_000n - process.hrtime.bigint();
export const systemClock: Clock = {
  nowNs: () => anchorNs + process.hrtime.bigint(),
};

/** A clock tests can set and advance. */
export class ManualClock implements Clock {
  constructor(private ns: bigint) {}
  nowNs(): bigint {
    return this.ns;
  }
  set(ns: bigint): void {
    this.ns = ns;
  }
  advanceTicks(n: number): void {
    this.ns += TICK_NS * BigInt(n);
  }
}

export interface TickStamp {
  /** Unix time of the stamp in ns, as a decimal string (JSON cannot carry a bigint). */
  unix_ns: string;
  /** Tick number floor(unix_ns / T). */
  svcond: number;
  /** Position inside the tick, (unix_ns mod T) / T, in [0, 1). */
  phase: number;
}

export function stampAt(ns: bigint): TickStamp {
  const svcond = ns / TICK_NS;
  const within = ns % TICK_NS;
  return { unix_ns: ns.toString(), svcond: Number(svcond), phase: Number(within) / TICK_NS_NUMBER };
}

export function stamp(clock: Clock): TickStamp {
  return stampAt(clock.nowNs());
}

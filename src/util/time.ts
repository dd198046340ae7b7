// The node's one reading of "now", in the three units its parts use: unix nanoseconds (stamps), the tick (svcond) and
// unix milliseconds (expiries, schedules). Every part takes a Time instead of converting a Clock's reading itself.
import { TICK_NS, TICK_NS_NUMBER, type Clock } from '../kernel/clock.js';

export interface Time {
  /** Unix time in nanoseconds. */
  nowNs(): bigint;
  /** The current tick, floor(unix_ns / 777 000 777). */
  nowSvcond(): number;
  /** Unix time in whole milliseconds. */
  nowMs(): number;
}

/** One tick in milliseconds (777.000777), for timers. */
export const TICK_MS = TICK_NS_NUMBER / 1e6;

export function timeOf(clock: Clock): Time {
  return {
    nowNs: () => clock.nowNs(),
    nowSvcond: () => Number(clock.nowNs() / TICK_NS),
    nowMs: () => Number(clock.nowNs() / 1_000_000n),
  };
}

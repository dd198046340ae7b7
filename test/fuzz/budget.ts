// A time budget for a fuzz property that load cannot turn into "interrupted after 0 tests". fast-check's own
// interruptAfterTimeLimit starts its clock when fc.assert is called and races every run against what is left of it:
// on a loaded machine the first request of a route could take longer than the whole budget, be cut mid-flight, and
// fail the property with no run done (fast-check counts an interrupt with no success as a failure). Here instead:
// every run that starts is awaited to its end (a hang is the test's own timeout, or the caller's deadline), the first
// `minRuns` always run, and past `capMs` the remaining runs pass without sending anything. On a quiet machine it
// checks what the time cap allowed before; under load at least `minRuns` per property.

export interface RunGate {
  /** True when the next run should be sent (called once per run, before it starts). */
  open(): boolean;
  /** Runs sent so far. */
  readonly ran: number;
}

export function runGate(capMs: number, minRuns: number, now: () => number = Date.now): RunGate {
  let started: number | null = null;
  let ran = 0;
  return {
    open() {
      // The clock starts at the first run, not when the property was built: set-up is not spent from the budget.
      started ??= now();
      if (ran < minRuns || now() - started < capMs) {
        ran++;
        return true;
      }
      return false;
    },
    get ran() {
      return ran;
    },
  };
}

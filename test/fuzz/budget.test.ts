// The fuzz suite's run gate (budget.ts) against fast-check's interruptAfterTimeLimit, on a property whose runs are slow
// as on a loaded machine: the interrupt cuts the first run and fails the property with none done; the gate sends its
// floor of runs, each to its end, and then lets the rest pass.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { runGate } from './budget.js';

const slowRun = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

describe('runGate', () => {
  it("fast-check's own time cap fails a property whose first run outlasts it (the load flake)", async () => {
    await expect(
      fc.assert(
        fc.asyncProperty(fc.integer(), () => slowRun(60)),
        { seed: 1, numRuns: 10, interruptAfterTimeLimit: 20, markInterruptAsFailure: false },
      ),
    ).rejects.toThrow(/interrupted after 0 tests/);
  });

  it('the gate sends its floor of runs to the end, then no more once the cap has passed', async () => {
    const gate = runGate(20, 3);
    let finished = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer(), async () => {
        if (!gate.open()) return;
        await slowRun(60);
        finished++;
      }),
      { seed: 1, numRuns: 10 },
    );
    expect(gate.ran).toBe(3);
    expect(finished).toBe(3);
  });

  it('on a quiet clock every run within the cap is sent; the clock starts at the first run', () => {
    let now = 1_000;
    const gate = runGate(100, 2, () => now);
    now = 50_000; // set-up time before the first run is not spent from the budget
    const sent = [];
    for (let i = 0; i < 10; i++) {
      sent.push(gate.open());
      now += 30;
    }
    expect(sent).toEqual([true, true, true, true, false, false, false, false, false, false]);
    expect(gate.ran).toBe(4);
  });
});

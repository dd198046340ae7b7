// Solver runs held open until their client leaves: a node's ComputeService.solve patched on the instance (the test
// run imports modules once for every file, so module mocks are unreliable), recording each run the route told that
// its client had gone (http/client-gone.ts). A test of a route that starts a run on someone's behalf (an MCP tool, a
// chat's tool call) sees through it whether leaving reached the run.
import type { ComputeService } from '../../src/compute/service.js';

export interface HeldSolves {
  /** Runs started (held) so far. */
  started: number;
  /** The abort reason of each run whose client left, in order. */
  gone: unknown[];
  /** The node's own solve again; runs still held fail. */
  restore(): void;
}

export function holdSolves(compute: ComputeService): HeldSolves {
  const release: (() => void)[] = [];
  const held: HeldSolves = {
    started: 0,
    gone: [],
    restore: () => {
      delete (compute as { solve?: unknown }).solve;
      for (const r of release.splice(0)) r();
    },
  };
  compute.solve = (_caller, _solver, _inputs, _state, _extra, _hooks, gone) =>
    new Promise((_resolve, reject) => {
      held.started++;
      release.push(() => reject(new Error('held run released at the end of the test')));
      gone?.addEventListener(
        'abort',
        () => {
          held.gone.push(gone.reason);
          reject(gone.reason as Error);
        },
        { once: true },
      );
    });
  return held;
}

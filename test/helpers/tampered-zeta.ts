// Preloaded (--import) into a node process under test: its `zeta` solver lies — each run's outputs carry one extra
// member, so its value and check still pass the gate but its result digest is not the one an honest node computes.
// A Byzantine executor or voter composed in the test (architecture.md §8), never a flag of the production config.
// Run the node with SVC_SOLVER_THREADS=0: the patched solver lives in this thread's module graph.
import { solvers } from '../../src/solvers/groups/discrete.js';

const i = solvers.findIndex((s) => s.id === 'zeta');
const real = solvers[i]!;
solvers[i] = {
  ...real,
  run: (inputs, state) => {
    const out = real.run(inputs, state);
    return { ...out, outputs: { ...out.outputs, tampered: 1 } };
  },
};

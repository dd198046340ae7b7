// Preloaded (--import) into a built node process under test (dist/, which test/global-setup.ts builds): its `zeta`
// solver lies — each run's outputs carry one extra member, so its value and check still pass the gate but its result
// digest is not the one an honest node computes. A Byzantine executor or voter composed in the test (architecture.md
// §8), never a flag of the production config. Run the node with SVC_SOLVER_THREADS=0: the patched solver lives in this
// thread's module graph (the same module the node imports: one URL, one instance).
import { solvers } from '../../dist/solvers/groups/discrete.js';

const i = solvers.findIndex((s) => s.id === 'zeta');
const real = solvers[i];
solvers[i] = {
  ...real,
  run: (inputs, state) => {
    const out = real.run(inputs, state);
    return { ...out, outputs: { ...out.outputs, tampered: 1 } };
  },
};

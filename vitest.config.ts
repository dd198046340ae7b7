import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

// Files that start node processes or a mesh: two run at a time, after the rest (they mostly wait on ticks, and one of
// them at a time left a core idle; three at a time starved the in-process meshes and took longer), so nothing else
// competes with them. Files that assert on time limits or draw in
// a browser run one at a time after them. Everything else runs on every core. Each worker imports the module graph
// once for all the files it runs (isolate: false; importing it again per file cost more than most files' tests):
// each file stops the nodes it starts, restores what it patches, and test/setup.ts gives each file a fresh fetch pool.
const paired = [
  'test/cluster/**/*.test.ts',
  'test/cli/**/*.test.ts',
  'test/http/economy.test.ts',
  'test/docs/receipt-secret.test.ts',
  'test/docs/operating-nginx.test.ts',
  'test/docs/readme-blocks.test.ts',
  'test/webhooks/crash.test.ts',
  'test/health/workers-warning.test.ts',
  'test/fault/faults.test.ts',
];
const alone = ['test/http/fairness.test.ts', 'test/http/compute.test.ts', 'test/http/dashboard.test.ts', 'test/cluster/tick-interval.test.ts'];

export default defineConfig({
  test: {
    setupFiles: ['test/setup.ts'],
    env: {
      // Solver and seal workers of in-process nodes run the build global-setup has just made (src/compute/executor.ts).
      SVC_WORKERS_FROM_BUILD: '1',
      // Identities' secrets at scrypt's lowest cost (N = 2^10, ~6 ms) in every node the tests start, in process or
      // as a process (which inherits it): at the default's ~0.1 s of a core, registrations and logins cost minutes
      // of the suite. Each record keeps its cost (test/identity/secret-hash.test.ts).
      SVC_IDENTITY_SCRYPT_COST: '10',
      // The suite registers and logs in hundreds of identities from 127.0.0.1; the per-address limit has its own tests.
      SVC_AUTH_PER_MINUTE: '1000000',
    },
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'parallel',
          include: ['test/**/*.test.ts'],
          exclude: [...paired, ...alone],
          isolate: false,
          maxWorkers: availableParallelism(),
          sequence: { groupOrder: 0 },
        },
      },
      { extends: true, test: { name: 'paired', include: paired, exclude: alone, isolate: false, maxWorkers: 2, sequence: { groupOrder: 1 } } },
      { extends: true, test: { name: 'alone', include: alone, isolate: false, maxWorkers: 1, sequence: { groupOrder: 2 } } },
    ],
  },
});

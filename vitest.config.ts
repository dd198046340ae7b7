import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

// Files that start node processes or a mesh, or assert on time limits: they run one at a time, after the rest, so
// no other test file competes with them for the (two) cores. Everything else runs on every core. One at a time, they
// share one module graph (isolate: false): each file stops the nodes it starts, and test/setup.ts gives each file a
// fresh fetch pool.
const alone = [
  'test/cluster/**/*.test.ts',
  'test/cli/**/*.test.ts',
  'test/http/fairness.test.ts',
  'test/http/compute.test.ts',
  'test/http/economy.test.ts',
  'test/docs/receipt-secret.test.ts',
  'test/docs/operating-nginx.test.ts',
  'test/docs/readme-blocks.test.ts',
  'test/http/dashboard.test.ts',
  'test/webhooks/crash.test.ts',
  'test/fault/faults.test.ts',
];

// Files that start nothing (no node, server, worker or process) and touch no process-wide state share one module
// graph per worker instead of importing it again for each file: for most of them the import costs more CPU than
// their tests. The rest keep a fresh graph each (a node's sockets, timers and patched methods stay in their file).
const STARTS_SOMETHING =
  /startTestNode|from '\.\/helpers|createLibp2p|MeshHost|startMesh|startNodePair|new SvcNode|helpers\/(node|mesh|cli)|spawn|fork\(|new Worker|createServer|\.listen\(|process\.env\.\w+ *=|vi\.(mock|stub|spy|useFakeTimers)|HeapFlags/;
function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    return e.isDirectory() ? testFiles(path) : e.name.endsWith('.test.ts') ? [path] : [];
  });
}
const shared = testFiles('test').filter((f) => !STARTS_SOMETHING.test(readFileSync(f, 'utf8')));

export default defineConfig({
  test: {
    setupFiles: ['test/setup.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: { name: 'shared', include: shared, exclude: alone, isolate: false, maxWorkers: availableParallelism(), sequence: { groupOrder: 0 } },
      },
      {
        extends: true,
        test: {
          name: 'parallel',
          include: ['test/**/*.test.ts'],
          exclude: [...alone, ...shared],
          maxWorkers: availableParallelism(),
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: { name: 'alone', include: alone, isolate: false, maxWorkers: 1, sequence: { groupOrder: 2 } },
      },
    ],
  },
});

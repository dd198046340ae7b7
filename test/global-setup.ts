// Before any test file: bring dist/ up to date with src/ (incremental tsc, a second or two when nothing changed), so
// the tests that start the svc-node command run the build (test/helpers/cli.ts) and never an older one. Every
// temporary directory the run makes (os.tmpdir() in the test workers and in every process they start, which inherit
// TMPDIR) is made inside one directory of the run's own, removed when the run ends: a test that forgets its data
// directory, or a node killed before it could clean up, leaves nothing behind. Each of the config's projects runs its
// global setup too: only the first does the work (nested, the paths grew past Chromium's limit for its socket).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const RUN_DIR_ENV = 'SVC_TEST_RUN_DIR';

export default function setup(): () => void {
  if (process.env[RUN_DIR_ENV] !== undefined) return () => undefined;
  const root = join(import.meta.dirname, '..');
  execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.json')], { cwd: root, stdio: 'inherit' });
  const outer = process.env.TMPDIR;
  const runDir = mkdtempSync(join(tmpdir(), 'svc-suite-'));
  process.env.TMPDIR = runDir;
  process.env[RUN_DIR_ENV] = runDir;
  return () => {
    if (outer === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = outer;
    delete process.env[RUN_DIR_ENV];
    rmSync(runDir, { recursive: true, force: true });
  };
}

// Before any test file: bring dist/ up to date with src/ (incremental tsc, a second or two when nothing changed), so
// the tests that start the svc-node command run the build (test/helpers/cli.ts) and never an older one. Every
// temporary directory the run makes (os.tmpdir() in the test workers and in every process they start, which inherit
// TMPDIR) is made inside one directory of the run's own, removed when the run ends: a test that forgets its data
// directory, or a node killed before it could clean up, leaves nothing behind.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const root = join(import.meta.dirname, '..');
  execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.json')], { cwd: root, stdio: 'inherit' });
  const outer = process.env.TMPDIR;
  const runDir = mkdtempSync(join(tmpdir(), 'svc-suite-'));
  process.env.TMPDIR = runDir;
  return () => {
    if (outer === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = outer;
    rmSync(runDir, { recursive: true, force: true });
  };
}

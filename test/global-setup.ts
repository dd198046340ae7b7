// Before any test file: bring dist/ up to date with src/ (incremental tsc, a second or two when nothing changed), so
// the tests that start the svc-node command run the build (test/helpers/cli.ts) and never an older one.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

export default function setup(): void {
  const root = join(import.meta.dirname, '..');
  execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.json')], { cwd: root, stdio: 'inherit' });
}

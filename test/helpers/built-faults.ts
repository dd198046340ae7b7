// The faults a node process under test is composed with (architecture.md §8), for a BUILT node (dist/, which CI
// builds before the tests): one `data:` module preloaded with --import, patching the built modules as the source
// helpers patch the sources through tsx — test/helpers/tampered-zeta.ts (zeta's outputs carry an extra member),
// slow-disk.ts (every LevelDB batch written SLOW_DISK_MS late) and deaf-consensus.ts (SIGUSR2 toggles hearing
// svc/consensus/1 on gossipsub). Keep the three in step with those files. A built node starts in a fraction of the
// time a tsx one takes (no transform of the sources at every start).
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export type Fault = 'tampered-zeta' | 'slow-disk' | 'deaf-consensus';

/** node arguments that start `svc-node` with `faults`: the built CLI with one preload, else the sources through tsx. */
export function nodeWithFaults(root: string, faults: Fault[]): string[] {
  const built = join(root, 'dist/cli/index.js');
  if (!existsSync(built))
    return ['--import', 'tsx', ...faults.flatMap((f) => ['--import', join(root, `test/helpers/${f}.ts`)]), join(root, 'src/cli/index.ts')];
  const dist = (p: string) => JSON.stringify(pathToFileURL(join(root, 'dist', p)).href);
  const abstractLevel = JSON.stringify(pathToFileURL(createRequire(join(root, 'package.json')).resolve('abstract-level')).href);
  const parts: Record<Fault, string> = {
    'tampered-zeta': `import { solvers } from ${dist('solvers/groups/discrete.js')};
const i = solvers.findIndex((s) => s.id === 'zeta');
const real = solvers[i];
solvers[i] = { ...real, run: (inputs, state) => { const out = real.run(inputs, state); return { ...out, outputs: { ...out.outputs, tampered: 1 } }; } };`,
    'slow-disk': `import { AbstractChainedBatch } from ${abstractLevel};
const delayMs = Number(process.env.SLOW_DISK_MS ?? 0);
const write = AbstractChainedBatch.prototype.write;
AbstractChainedBatch.prototype.write = async function (...args) { await new Promise((r) => setTimeout(r, delayMs)); return write.apply(this, args); };`,
    'deaf-consensus': `import { MeshService } from ${dist('mesh/service.js')};
import { TOPICS } from ${dist('mesh/wire.js')};
let deaf = false;
process.on('SIGUSR2', () => { deaf = !deaf; process.stdout.write(JSON.stringify({ msg: deaf ? 'deaf to consensus gossip' : 'hearing consensus gossip' }) + '\\n'); });
const validate = MeshService.prototype.validateGossip;
MeshService.prototype.validateGossip = function (topic, ...rest) { return deaf && topic === TOPICS.consensus ? Promise.resolve('ignore') : validate.call(this, topic, ...rest); };`,
  };
  // Imports first (a module's imports are hoisted anyway), the polyfill before anything of libp2p.
  const code = [`import ${dist('polyfill.js')};`, ...faults.map((f) => parts[f])].join('\n');
  return ['--import', `data:text/javascript,${encodeURIComponent(code)}`, built];
}

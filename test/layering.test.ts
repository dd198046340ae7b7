// The pure core's layering (architecture.md "Rules of the house"): numerics/ imports only numerics/; kernel/ imports
// kernel/ and numerics/, never solvers/; solvers/ imports solvers/, kernel/ and numerics/; none of the three imports
// another folder of src (no I/O, services, http, mesh, store, util). Every import and export-from of every file is
// read, static and dynamic, type-only included.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'src');

/** Folders of src each pure folder may import from. */
const ALLOWED: Record<string, readonly string[]> = {
  numerics: ['numerics'],
  kernel: ['kernel', 'numerics'],
  solvers: ['solvers', 'kernel', 'numerics'],
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return /\.(ts|mts|cts)$/.test(e.name) ? [p] : [];
  });
}

/** Every module specifier in a file: import/export … from '…', import '…', import('…'), require('…'). */
export function specifiers(text: string): string[] {
  const out: string[] = [];
  const patterns = [
    /\b(?:import|export)\s[^;'"]*?\bfrom\s*['"]([^'"]+)['"]/g,
    /\bimport\s*['"]([^'"]+)['"]/g,
    /\b(?:import|require)\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const re of patterns) for (const m of text.matchAll(re)) out.push(m[1]!);
  return out;
}

/** The src folder a relative specifier lands in (null for packages and node: builtins, '' for src itself). */
function targetFolder(file: string, spec: string): string | null {
  if (!spec.startsWith('.')) return null;
  const rel = relative(SRC, resolve(dirname(file), spec));
  if (rel.startsWith('..')) return '..';
  return rel.includes(sep) ? rel.split(sep)[0]! : '';
}

export function forbiddenImports(): string[] {
  const found: string[] = [];
  for (const [folder, allowed] of Object.entries(ALLOWED)) {
    for (const file of sourceFiles(join(SRC, folder))) {
      for (const spec of specifiers(readFileSync(file, 'utf8'))) {
        const target = targetFolder(file, spec);
        if (target !== null && !allowed.includes(target)) found.push(`${relative(SRC, file)} imports ${spec} (${target || 'src root'})`);
      }
    }
  }
  return found;
}

describe('layering of kernel/, numerics/ and solvers/', () => {
  it('finds the imports of every form', () => {
    const text = [
      "import { a } from '../x/a.js';",
      "import type { B } from '../y/b.js';",
      "export { c } from './c.js';",
      "export * from '../z/d.js';",
      "import '../side.js';",
      "const e = await import('../dyn/e.js');",
      "import {\n  f,\n  g,\n} from '../multi/line.js';",
      "import { createHash } from 'node:crypto';",
    ].join('\n');
    expect(specifiers(text).sort()).toEqual(
      ['../dyn/e.js', '../multi/line.js', '../side.js', '../x/a.js', '../y/b.js', '../z/d.js', './c.js', 'node:crypto'].sort(),
    );
  });

  it('no file imports across the rule (kernel → solvers, numerics → kernel, any → other folders of src)', () => {
    expect(forbiddenImports()).toEqual([]);
  });

  it('each of the three folders has files, so the scan is not vacuous', () => {
    for (const folder of Object.keys(ALLOWED)) expect(sourceFiles(join(SRC, folder)).length).toBeGreaterThan(5);
  });
});

// The pure core's layering (architecture.md "Rules of the house"): numerics/ imports only numerics/; kernel/ imports
// kernel/ and numerics/, never solvers/; solvers/ imports solvers/, kernel/ and numerics/; none of the three imports
// another folder of src (no I/O, services, http, mesh, store, util). Every import and export-from of every file is
// read, static and dynamic, type-only included.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Linter } from 'eslint';
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

describe('the ESLint rule holds the same layering', () => {
  /** The entries of eslint.config.js that restrict imports (the layering rule), without the type-aware rest. */
  const layerEntries = async (): Promise<Linter.Config[]> => {
    const config = (await import(pathToFileURL(resolve(SRC, '..', 'eslint.config.js')).href)).default as Linter.Config[];
    return config.filter((c) => c.files && c.rules?.['no-restricted-imports']);
  };
  /** Every folder and root module of src, as an import names it. */
  const srcEntries = (): string[] =>
    readdirSync(SRC, { withFileTypes: true })
      .filter((e) => e.isDirectory() || /\.ts$/.test(e.name))
      .map((e) => (e.isDirectory() ? e.name : e.name.replace(/\.ts$/, '.js')));

  it('refuses an import of every other folder of src (those added after the rule too), from any depth of a pure folder', async () => {
    const linter = new Linter({ cwd: resolve(SRC, '..') });
    const entries = await layerEntries();
    expect(entries.length).toBe(3);
    const missed: string[] = [];
    for (const [folder, allowed] of Object.entries(ALLOWED)) {
      for (const target of srcEntries()) {
        const spec = (up: string) => (target.endsWith('.js') ? `${up}${target}` : `${up}${target}/probe.js`);
        for (const [file, up] of [
          [`src/${folder}/probe.js`, '../'],
          [`src/${folder}/sub/probe.js`, '../../'],
        ] as const) {
          const messages = linter.verify(`import { p } from '${spec(up)}';\nexport const q = p;\n`, entries, resolve(SRC, '..', file));
          const refused = messages.some((m) => m.ruleId === 'no-restricted-imports');
          if (refused === allowed.includes(target)) missed.push(`${file} → ${spec(up)}: ${refused ? 'refused' : 'allowed'}`);
        }
      }
    }
    expect(missed).toEqual([]);
  });
});

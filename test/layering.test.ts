// The layering of src (architecture.md "Rules of the house"). The pure core: numerics/ imports only numerics/; kernel/
// imports kernel/ and numerics/, never solvers/; solvers/ imports solvers/, kernel/ and numerics/; none of the three
// imports another folder of src (no I/O, services, http, mesh, store, util). Every import and export-from of every
// file is read, static and dynamic, type-only included. Across all of src: no two folders import each other in a
// cycle (of value imports; of type-only ones neither), and only the composition root (src/node/, src/node.ts) and the
// CLI import the composition root.
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

/**
 * The specifiers of a file's value imports: those of specifiers() less the type-only ones (`import type …`,
 * `export type … from`, and an import or export-from whose every name is `type X`), which vanish from the build.
 */
export function valueSpecifiers(text: string): string[] {
  const typeOnly = /\b(?:import|export)\s+(?:type\s[^;'"]*?|\{(?:\s*type\s[^,}]*,?)+\s*\})\s*from\s*['"][^'"]+['"]/g;
  return specifiers(text.replace(typeOnly, ''));
}

/**
 * The part of src a path lies in: its top folder, or a root module's name without extension (so src/node.ts and
 * src/node/ are both 'node'); null outside src.
 */
export function unitOf(path: string): string | null {
  const rel = relative(SRC, path);
  if (rel.startsWith('..')) return null;
  return rel.split(sep)[0]!.replace(/\.(?:ts|js)$/, '');
}

/** From part → to part → the files of the first that import the second. */
export type FolderGraph = Map<string, Map<string, string[]>>;

/** The graph of src's parts, from every value import of every file, or every import at all (within a part left out). */
export function folderGraph(imports: 'value' | 'all' = 'value'): FolderGraph {
  const read = imports === 'value' ? valueSpecifiers : specifiers;
  const graph: FolderGraph = new Map();
  for (const file of sourceFiles(SRC)) {
    const from = unitOf(file)!;
    for (const spec of read(readFileSync(file, 'utf8'))) {
      if (!spec.startsWith('.')) continue;
      const to = unitOf(resolve(dirname(file), spec));
      if (to === null || to === from) continue;
      const edges = graph.get(from) ?? new Map<string, string[]>();
      graph.set(from, edges);
      const files = edges.get(to) ?? [];
      edges.set(to, files);
      if (!files.includes(relative(SRC, file))) files.push(relative(SRC, file));
    }
  }
  return graph;
}

/** A cycle of the graph as the parts along it, the first repeated at the end (a → b → a), or null when it has none. */
export function findCycle(graph: FolderGraph): string[] | null {
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (part: string): string[] | null => {
    const at = path.indexOf(part);
    if (at >= 0) return [...path.slice(at), part];
    if (done.has(part)) return null;
    path.push(part);
    for (const next of [...(graph.get(part)?.keys() ?? [])].sort()) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    done.add(part);
    return null;
  };
  for (const part of [...graph.keys()].sort()) {
    const cycle = visit(part);
    if (cycle) return cycle;
  }
  return null;
}

/** Each step of a cycle with the files that make it: 'a → b: a/x.ts, a/y.ts'. */
export function cycleSteps(graph: FolderGraph, cycle: readonly string[]): string[] {
  return cycle.slice(1).map((to, i) => `${cycle[i]} → ${to}: ${graph.get(cycle[i]!)!.get(to)!.join(', ')}`);
}

/** Files outside the composition root and the CLI that import the composition root (src/node/ or src/node.ts). */
export function compositionRootImports(): string[] {
  const found: string[] = [];
  for (const file of sourceFiles(SRC)) {
    const part = unitOf(file);
    if (part === 'node' || part === 'cli') continue;
    for (const spec of specifiers(readFileSync(file, 'utf8'))) {
      if (spec.startsWith('.') && unitOf(resolve(dirname(file), spec)) === 'node') found.push(`${relative(SRC, file)} imports ${spec}`);
    }
  }
  return found;
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

describe('no cycle between the folders of src', () => {
  it('tells value imports from type-only ones', () => {
    const text = [
      "import { a } from '../x/a.js';",
      "import type { B } from '../y/b.js';",
      "import { type C, type D } from '../y/c.js';",
      "import {\n  type E,\n  f,\n} from '../x/e.js';",
      "export type { G } from '../y/g.js';",
      "export { h } from '../x/h.js';",
      "const i = await import('../x/i.js');",
    ].join('\n');
    expect(valueSpecifiers(text).sort()).toEqual(['../x/a.js', '../x/e.js', '../x/h.js', '../x/i.js']);
  });

  it('finds a made-up cycle and names the files along it, and finds none where there is none', () => {
    const graph: FolderGraph = new Map([
      ['a', new Map([['b', ['a/one.ts']]])],
      ['b', new Map([['c', ['b/two.ts', 'b/three.ts']]])],
      ['c', new Map([['a', ['c/four.ts']]])],
      ['d', new Map([['a', ['d/five.ts']]])],
    ]);
    const cycle = findCycle(graph);
    expect(cycle).toEqual(['a', 'b', 'c', 'a']);
    expect(cycleSteps(graph, cycle!)).toEqual(['a → b: a/one.ts', 'b → c: b/two.ts, b/three.ts', 'c → a: c/four.ts']);
    graph.get('c')!.delete('a');
    expect(findCycle(graph)).toBeNull();
  });

  it('no folder of src imports another that imports it back, through any number of folders (value imports)', () => {
    const graph = folderGraph();
    const cycle = findCycle(graph);
    expect(cycle && cycleSteps(graph, cycle)).toBeNull();
  });

  it('nor counting type-only imports: the shared record types sit below the folders that share them (records/)', () => {
    const graph = folderGraph('all');
    const cycle = findCycle(graph);
    expect(cycle && cycleSteps(graph, cycle)).toBeNull();
  });

  it('records/, the shared record types, sits low: it imports only kernel/ and store/', () => {
    const imported = [...(folderGraph('all').get('records')?.keys() ?? [])];
    expect(imported.filter((to) => to !== 'kernel' && to !== 'store')).toEqual([]);
  });

  it('the graph is the whole of src, so the check is not vacuous', () => {
    const graph = folderGraph();
    expect(graph.size).toBeGreaterThan(15);
    expect([...graph.get('tally')!.keys()]).toContain('records');
  });

  it('only the composition root and the CLI import the composition root, whether src/node.ts or src/node/', () => {
    expect(unitOf(join(SRC, 'node.ts'))).toBe('node');
    expect(unitOf(join(SRC, 'node.js'))).toBe('node');
    expect(unitOf(join(SRC, 'node', 'node.ts'))).toBe('node');
    expect(compositionRootImports()).toEqual([]);
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

// The documents stay true of the tree: every relative link and every `src/…`/`test/…`/`scripts/…` path they name
// exists, README's Layout links each document, and the glossary defines the terms a newcomer meets first.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const DOCS = ['README.md', 'docs/decisions.md', 'docs/performance.md', 'docs/protocol.md', 'docs/glossary.md', 'docs/operating.md'];
const read = (f: string): string => readFileSync(join(ROOT, f), 'utf8');

describe('docs', () => {
  it('every document exists and README.md links each from its Layout section', () => {
    const readme = read('README.md');
    const layout = readme.slice(readme.indexOf('## Layout'));
    for (const f of DOCS.slice(1)) {
      expect(existsSync(join(ROOT, f)), f).toBe(true);
      expect(layout, f).toContain(`](${f})`);
    }
  });

  it('relative links resolve, and the source paths the documents name exist', () => {
    for (const f of DOCS) {
      const text = read(f);
      for (const m of text.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
        const target = m[1]!;
        if (/^[a-z]+:/.test(target)) continue;
        expect(existsSync(resolve(dirname(join(ROOT, f)), target)), `${f} links ${target}`).toBe(true);
      }
      for (const m of text.matchAll(/`((?:src|test|scripts)\/[A-Za-z0-9_./-]+?\.(?:ts|mts|json))`/g)) {
        expect(existsSync(join(ROOT, m[1]!)), `${f} names ${m[1]}`).toBe(true);
      }
    }
  });

  it('the glossary defines the terms of the issue, each with where it lives', () => {
    const g = read('docs/glossary.md');
    const entries = [...g.matchAll(/^- \*\*(.+?)\*\*(.*(?:\n {2}.*)*)/gm)].map((m) => ({ term: m[1]!, text: m[2]! }));
    for (const term of [
      'svcond',
      'KO42',
      'CKO',
      'R_t',
      'Envelope',
      'Home node',
      'ZID',
      'Tally',
      'Seal',
      'Receipt',
      'Result digest',
      'Mesh secret',
      'Handshake',
      'Tick event',
      'Transparency oracle',
    ]) {
      const e = entries.find((x) => x.term.toLowerCase().startsWith(term.toLowerCase()));
      expect(e, term).toBeDefined();
      expect(e!.text, term).toMatch(/`src\//);
    }
  });

  it('a name a document places in a source file ("`name` in `src/…`") is in that file', () => {
    const missing: string[] = [];
    let checked = 0;
    for (const f of [...DOCS, 'docs/sealing.md', 'docs/chain.md']) {
      // A list of names before one file: "`a`, `b` and `c` in `src/x.ts`" (no sentence break between).
      for (const m of read(f).matchAll(/((?:`[A-Za-z_][A-Za-z0-9_.]*`(?:,|,? and|,? or|\/)?\s+)+)in\s+`((?:src|scripts)\/[A-Za-z0-9_./-]+\.ts)`/g)) {
        const file = join(ROOT, m[2]!);
        if (!existsSync(file)) continue; // the test above names it
        const text = readFileSync(file, 'utf8');
        for (const n of m[1]!.matchAll(/`([A-Za-z_][A-Za-z0-9_.]*)`/g)) {
          const name = n[1]!.split('.').pop()!;
          checked++;
          if (!new RegExp(`\\b${name}\\b`).test(text)) missing.push(`${f}: ${n[1]} in ${m[2]}`);
        }
      }
    }
    expect(missing).toEqual([]);
    expect(checked).toBeGreaterThan(20);
  });
});

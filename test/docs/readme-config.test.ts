// README's Configuration table is the operator's one list of settings: every leaf of the loaded configuration has a
// row, and every SVC_* variable the loader reads is named in the row of the setting it sets.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENV_MAP, loadConfig } from '../../src/config/load.js';

const ROOT = join(import.meta.dirname, '..', '..');

/** The table's rows: setting → the env column's text. */
function configTable(): Map<string, string> {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const from = readme.indexOf('## Configuration');
  const section = readme.slice(from, readme.indexOf('\n## ', from + 1));
  const rows = new Map<string, string>();
  for (const m of section.matchAll(/^\| ([A-Za-z0-9.]+) \|([^|]*)\|/gm)) if (m[1] !== 'setting') rows.set(m[1]!, m[2]!.trim());
  return rows;
}

/** Dotted paths of a configuration's leaves (a null or an array is a leaf: it is set whole). */
function leaves(value: unknown, prefix = ''): string[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return [prefix];
  return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) => leaves(v, prefix ? `${prefix}.${k}` : k));
}

describe('README configuration table', () => {
  it('has a row for every setting the node loads', () => {
    const rows = configTable();
    const missing = leaves(loadConfig({ env: {} })).filter((path) => !rows.has(path));
    expect(missing).toEqual([]);
  });

  it('names every SVC_* variable in the row of the setting it sets', () => {
    const rows = configTable();
    const wrong = Object.entries(ENV_MAP)
      .filter(([name, spec]) => rows.get(spec.path) !== `\`${name}\``)
      .map(([name, spec]) => `${name} → ${spec.path}: ${rows.get(spec.path) ?? 'no row'}`);
    expect(wrong).toEqual([]);
  });

  it('lists no setting the node does not have', () => {
    const known = new Set(leaves(loadConfig({ env: {} })));
    expect([...configTable().keys()].filter((path) => !known.has(path))).toEqual([]);
  });
});

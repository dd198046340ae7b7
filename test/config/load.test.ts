// The configuration's limit names: the per-minute prove limit is spelt provePerMinute everywhere.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';

describe('config limits', () => {
  it('reads limits.provePerMinute from the defaults and from a config file', () => {
    expect(loadConfig({ env: {} }).limits.provePerMinute).toBe(10);
    const dir = mkdtempSync(join(tmpdir(), 'svc-config-'));
    const file = join(dir, 'node.json');
    writeFileSync(file, JSON.stringify({ limits: { provePerMinute: 3 } }));
    expect(loadConfig({ env: {}, configFile: file }).limits.provePerMinute).toBe(3);
  });

  it('refuses the old misspelt key proveperMinute with a ConfigError naming it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-config-'));
    const file = join(dir, 'node.json');
    writeFileSync(file, JSON.stringify({ limits: { proveperMinute: 3 } }));
    expect(() => loadConfig({ env: {}, configFile: file })).toThrow(ConfigError);
    expect(() => loadConfig({ env: {}, configFile: file })).toThrow(/proveperMinute/);
  });
});

// The configuration's limit names (the per-minute prove limit is spelt provePerMinute everywhere), and the checks
// across settings.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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

  it('names every problem of a configuration in one message', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-config-'));
    const file = join(dir, 'node.json');
    writeFileSync(file, JSON.stringify({ port: 'x', limits: { bogus: 1 }, mesh: { tickRate: 0 } }));
    let message = '';
    try {
      loadConfig({ env: {}, configFile: file });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/^invalid configuration at /);
    for (const where of ['at port:', 'at limits:', 'bogus', 'at mesh.tickRate:']) expect(message, where).toContain(where);
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('checks across settings', () => {
  const secret = 'a-mesh-secret-of-16+';
  it('a mesh node on every interface needs publicUrl: its peers would be sent to 0.0.0.0', () => {
    for (const host of ['0.0.0.0', '::']) {
      expect(() => loadConfig({ env: { SVC_HOST: host, SVC_MESH_SECRET: secret } })).toThrow(/invalid configuration at publicUrl: .*SVC_PUBLIC_URL/);
      expect(loadConfig({ env: { SVC_HOST: host, SVC_MESH_SECRET: secret, SVC_PUBLIC_URL: 'http://203.0.113.7:8787' } }).publicUrl).toBe(
        'http://203.0.113.7:8787',
      );
      // Alone (no mesh), nobody is told the URL: the node starts.
      expect(loadConfig({ env: { SVC_HOST: host } }).host).toBe(host);
    }
    expect(loadConfig({ env: { SVC_MESH_SECRET: secret } }).host).toBe('127.0.0.1');
  });

  it('a blank number in the environment is refused, not read as 0', () => {
    expect(() => loadConfig({ env: { SVC_SLASHING_CHALLENGER_SHARE: ' ' } })).toThrow('SVC_SLASHING_CHALLENGER_SHARE must be a number, got " "');
    expect(loadConfig({ env: { SVC_SLASHING_CHALLENGER_SHARE: '0.25' } }).slashing.challengerShare).toBe(0.25);
  });
});
